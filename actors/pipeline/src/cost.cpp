#include <banyan/pipeline/cost.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <optional>

namespace banyan::pipeline {

costs uniform_costs(int n, double t_f, double t_i, double t_w, double mem) {
  costs c;
  c.units.assign(n, stage_cost{t_f, t_i + t_w, t_i, t_w, mem, 0, 0});
  return c;
}

namespace {

result<stage_cost> parse_unit(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) return error{errc::invalid, where + ": expected an object with t_f, t_b, ..."};
  auto num = [&](const char* key, double& out, bool& present) -> std::optional<error> {
    present = false;
    if (!j.contains(key)) return std::nullopt;
    const auto& v = j.at(key);
    if (!v.is_number()) return error{errc::invalid, where + "." + key + ": expected a number"};
    out = v.get<double>();
    if (!(out >= 0) || out > 1e300) return error{errc::invalid, where + "." + key + ": must be a finite number >= 0"};
    present = true;
    return std::nullopt;
  };
  for (const auto& [key, _] : j.items()) {
    static const char* known[] = {"t_f", "t_b", "t_i", "t_w", "mem", "comm_bytes", "static_mem", "name"};
    if (std::find(std::begin(known), std::end(known), key) == std::end(known))
      return error{errc::invalid, where + ": unknown key `" + key +
                                      "` (known: t_f, t_b, t_i, t_w, mem, comm_bytes, static_mem, name)"};
  }
  stage_cost c;
  bool has_f, has_b, has_i, has_w, has;
  if (auto e = num("t_f", c.t_f, has_f)) return *e;
  if (!has_f) return error{errc::invalid, where + ": missing t_f"};
  if (auto e = num("t_b", c.t_b, has_b)) return *e;
  if (auto e = num("t_i", c.t_i, has_i)) return *e;
  if (auto e = num("t_w", c.t_w, has_w)) return *e;
  if (auto e = num("mem", c.mem, has)) return *e;
  if (auto e = num("comm_bytes", c.comm_bytes, has)) return *e;
  if (auto e = num("static_mem", c.static_mem, has)) return *e;
  if (has_b && has_i && has_w) {
    if (std::abs(c.t_i + c.t_w - c.t_b) > 1e-9 * std::max(1.0, c.t_b))
      return error{errc::invalid, where + ": t_b must equal t_i + t_w"};
  } else if (has_b && has_i) {
    if (c.t_i > c.t_b) return error{errc::invalid, where + ": t_i is larger than t_b"};
    c.t_w = c.t_b - c.t_i;
  } else if (has_b && has_w) {
    if (c.t_w > c.t_b) return error{errc::invalid, where + ": t_w is larger than t_b"};
    c.t_i = c.t_b - c.t_w;
  } else if (has_b) {
    c.t_i = c.t_w = c.t_b / 2;
  } else if (has_i && has_w) {
    c.t_b = c.t_i + c.t_w;
  } else {
    return error{errc::invalid, where + ": give t_b, or t_i and t_w"};
  }
  return c;
}

}  // namespace

result<costs> parse_costs(std::string_view json_text, const std::string& source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::parse_error& e) {
    return error{errc::parse, source + ": not valid JSON: " + e.what()};
  }
  if (!j.is_object()) return error{errc::invalid, source + ": expected a JSON object with \"stages\" or \"layers\""};
  costs c;
  const bool has_stages = j.contains("stages"), has_layers = j.contains("layers");
  if (has_stages == has_layers) return error{errc::invalid, source + ": give exactly one of \"stages\" and \"layers\""};
  const char* key = has_stages ? "stages" : "layers";
  c.per_layer = has_layers;
  const auto& list = j.at(key);
  if (!list.is_array() || list.empty())
    return error{errc::invalid, source + ": \"" + key + "\" must be a non-empty array"};
  for (std::size_t i = 0; i < list.size(); ++i) {
    auto u = parse_unit(list[i], source + ": " + key + "[" + std::to_string(i) + "]");
    if (!u) return u.error();
    c.units.push_back(*u);
  }
  for (const char* k : {"latency", "bandwidth"}) {
    if (!j.contains(k)) continue;
    if (!j.at(k).is_number() || j.at(k).get<double>() < 0)
      return error{errc::invalid, source + ": \"" + k + "\" must be a number >= 0"};
    (std::string(k) == "latency" ? c.latency : c.bandwidth) = j.at(k).get<double>();
  }
  return c;
}

std::string write_costs(const costs& c, const std::vector<std::string>& names) {
  assert(names.empty() || names.size() == c.units.size());
  nlohmann::json units = nlohmann::json::array();
  for (std::size_t i = 0; i < c.units.size(); ++i) {
    const auto& u = c.units[i];
    nlohmann::json e = nlohmann::json::object();
    if (!names.empty()) e["name"] = names[i];
    e["t_f"] = u.t_f, e["t_b"] = u.t_b, e["t_i"] = u.t_i, e["t_w"] = u.t_w;
    e["mem"] = u.mem, e["comm_bytes"] = u.comm_bytes, e["static_mem"] = u.static_mem;
    units.push_back(std::move(e));
  }
  nlohmann::json j = nlohmann::json::object();
  j[c.per_layer ? "layers" : "stages"] = std::move(units);
  j["latency"] = c.latency;
  j["bandwidth"] = c.bandwidth;
  return j.dump(2) + "\n";
}

result<std::vector<stage_cost>> stage_costs(const costs& c, int S) {
  const int n = static_cast<int>(c.units.size());
  if (S <= 0) return error{errc::invalid, "stage count must be positive, got " + std::to_string(S)};
  if (!c.per_layer) {
    if (S == n) return c.units;
    if (S % n != 0)
      return error{errc::invalid, "costs give " + std::to_string(n) + " stages; cannot split them into " +
                                      std::to_string(S) + " (need a multiple of " + std::to_string(n) + ")"};
    const int v = S / n;
    std::vector<stage_cost> out;
    for (const auto& u : c.units)
      for (int i = 0; i < v; ++i)
        out.push_back({u.t_f / v, u.t_b / v, u.t_i / v, u.t_w / v, u.mem / v, u.comm_bytes, u.static_mem / v});
    return out;
  }
  auto cuts = balanced_cuts(c, S);
  if (!cuts) return cuts.error();
  return stages_from_cuts(c, *cuts);
}

result<std::vector<int>> balanced_cuts(const costs& c, int S) {
  const int n = static_cast<int>(c.units.size());
  if (S <= 0) return error{errc::invalid, "stage count must be positive, got " + std::to_string(S)};
  if (n < S)
    return error{errc::invalid,
                 "costs give " + std::to_string(n) + " layers, fewer than the " + std::to_string(S) + " stages wanted"};
  // best[j][i] = min over cuts of the first i layers into j groups of the slowest group.
  std::vector<double> prefix(n + 1, 0);
  for (int i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + c.units[i].t_f + c.units[i].t_b;
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(S + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<int>> cut(S + 1, std::vector<int>(n + 1, 0));
  best[0][0] = 0;
  for (int j = 1; j <= S; ++j)
    for (int i = j; i <= n; ++i)
      for (int k = j - 1; k < i; ++k) {
        const double v = std::max(best[j - 1][k], prefix[i] - prefix[k]);
        if (v < best[j][i]) best[j][i] = v, cut[j][i] = k;
      }
  std::vector<int> bounds(S + 1, n);
  for (int j = S, i = n; j > 0; --j) bounds[j - 1] = i = cut[j][i];
  return bounds;
}

std::vector<stage_cost> stages_from_cuts(const costs& c, const std::vector<int>& cuts) {
  assert(cuts.size() >= 2 && cuts.front() == 0 && cuts.back() == static_cast<int>(c.units.size()));
  std::vector<stage_cost> out;
  for (std::size_t j = 0; j + 1 < cuts.size(); ++j) {
    assert(cuts[j] < cuts[j + 1]);
    stage_cost s{0, 0, 0, 0, 0, 0, 0};
    for (int i = cuts[j]; i < cuts[j + 1]; ++i) {
      const auto& u = c.units[i];
      s.t_f += u.t_f, s.t_b += u.t_b, s.t_i += u.t_i, s.t_w += u.t_w, s.mem += u.mem, s.static_mem += u.static_mem;
      s.comm_bytes = u.comm_bytes;  // the last layer's output leaves the stage
    }
    out.push_back(s);
  }
  return out;
}

double slowest_stage(const costs& c, const std::vector<int>& cuts) {
  double worst = 0;
  for (const auto& s : stages_from_cuts(c, cuts)) worst = std::max(worst, s.t_f + s.t_b);
  return worst;
}

}  // namespace banyan::pipeline
