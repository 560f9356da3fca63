// The plan file (docs/formats.md, "Periodic plan"): per subtree its node and awake intervals over one
// horizon, the deployment it is for and the predicted reliability of each workflow.
#include "banyan/partitioner/periodic.hpp"

#include "detail.hpp"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <map>
#include <ostream>

namespace banyan::partitioner::periodic {
namespace {

using partitioner::detail::format_number;

std::string quoted(const std::string& s) {
  YAML::Emitter e;
  e << YAML::DoubleQuoted << s;
  return e.c_str();
}

// Awake runs as [from, to) slot pairs in [0, T]; a run across the end of the horizon is two.
std::vector<std::pair<std::size_t, std::size_t>> runs(const std::vector<std::uint8_t>& awake) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (std::size_t t = 0; t < awake.size();) {
    if (!awake[t]) {
      ++t;
      continue;
    }
    std::size_t end = t;
    while (end < awake.size() && awake[end]) ++end;
    out.emplace_back(t, end);
    t = end;
  }
  return out;
}

}  // namespace

void write_plan(std::ostream& out, const workload& w, const plan_file& p) {
  out << "# banyan periodic plan: when each subtree is awake and where (docs/formats.md)\n";
  out << "format: banyan-periodic-plan\nversion: 1\n";
  out << "deployment: {file: " << quoted(p.deployment) << ", fingerprint: " << quoted(p.deployment_fingerprint)
      << "}\n";
  out << "policy: " << quoted(p.s.policy) << "\nalgorithm: " << quoted(p.algorithm) << "\n";
  out << "slot: " << format_number(w.slot, 12) << "  # seconds\nhorizon: " << format_number(w.horizon, 12)
      << "  # seconds; the plan repeats\n";
  out << "cost: " << format_number(p.cost, 10) << "  # predicted, per horizon\n";
  out << "monte_carlo: {samples: " << p.samples << ", seed: " << p.seed << "}\n";
  out << "workflows:\n";
  for (const auto& r : p.reliability) {
    out << "  - {name: " << quoted(r.name) << ", target: " << format_number(r.target, 10)
        << ", predicted: " << format_number(r.predicted, 10) << ", low: " << format_number(r.low, 10)
        << ", high: " << format_number(r.high, 10) << "}\n";
  }
  out << "subtrees:\n";
  for (std::size_t s = 0; s < w.subtrees.size(); ++s) {
    out << "  - path: " << quoted(w.subtrees[s].path)
        << "\n    node: " << quoted(w.nodes[static_cast<std::size_t>(p.s.node[s])].name) << "\n";
    if (p.s.keep_alive[s] > 0) out << "    keep_alive: " << format_number(p.s.keep_alive[s], 10) << "\n";
    out << "    awake: [";
    bool first = true;
    for (const auto& [from, to] : runs(p.s.awake[s])) {
      out << (first ? "" : ", ") << "[" << format_number(static_cast<double>(from) * w.slot, 12) << ", "
          << format_number(static_cast<double>(to) * w.slot, 12) << "]";
      first = false;
    }
    out << "]  # seconds [from, to)\n";
  }
}

result<plan_file> parse_plan(const std::string& text, const std::string& name, const workload& w) {
  YAML::Node doc;
  try {
    doc = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return error{errc::parse, name + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg};
  }
  auto at = [&](const YAML::Node& n) { return name + ":" + std::to_string(n.Mark().line + 1); };
  auto fail = [&](const YAML::Node& n, const std::string& what) { return error{errc::invalid, at(n) + ": " + what}; };
  if (!doc.IsMap() || !doc["version"] || doc["version"].Scalar() != "1")
    return error{errc::invalid, name + ": not a periodic plan (expected `version: 1`)"};
  plan_file p;
  const YAML::Node dep = doc["deployment"];
  if (dep && dep.IsMap()) {
    if (dep["file"]) p.deployment = dep["file"].Scalar();
    if (dep["fingerprint"]) p.deployment_fingerprint = dep["fingerprint"].Scalar();
  }
  if (!w.deployment_fingerprint.empty() && p.deployment_fingerprint != w.deployment_fingerprint)
    return fail(dep ? dep : doc,
                "this plan is for another deployment (fingerprint " +
                    (p.deployment_fingerprint.empty() ? std::string("none") : p.deployment_fingerprint) +
                    ", the deployment given has " + w.deployment_fingerprint + ")");
  try {
    if (doc["slot"] && std::abs(doc["slot"].as<double>() - w.slot) > 1e-9)
      return fail(doc["slot"], "slot " + doc["slot"].Scalar() + " s differs from the workload's");
    if (doc["horizon"] && std::abs(doc["horizon"].as<double>() - w.horizon) > 1e-9)
      return fail(doc["horizon"], "horizon " + doc["horizon"].Scalar() + " s differs from the workload's");
    if (doc["policy"]) p.s.policy = doc["policy"].Scalar();
    if (doc["algorithm"]) p.algorithm = doc["algorithm"].Scalar();
    if (doc["cost"]) p.cost = doc["cost"].as<double>();
    std::map<std::string, std::size_t> index;
    for (std::size_t s = 0; s < w.subtrees.size(); ++s) index[w.subtrees[s].path] = s;
    const std::size_t T = w.slots();
    p.s.node.assign(w.subtrees.size(), no_node);
    p.s.awake.assign(w.subtrees.size(), std::vector<std::uint8_t>(T, 0));
    p.s.keep_alive.assign(w.subtrees.size(), 0);
    const YAML::Node subs = doc["subtrees"];
    if (!subs || !subs.IsSequence()) return fail(doc, "`subtrees` must be a list");
    for (const auto& e : subs) {
      const std::string path = e["path"] ? e["path"].Scalar() : "";
      auto it = index.find(path);
      if (it == index.end()) return fail(e, "unknown subtree `" + path + "` (not in workload " + w.name + ")");
      const std::size_t s = it->second;
      const std::string node = e["node"] ? e["node"].Scalar() : "";
      for (std::size_t n = 0; n < w.nodes.size(); ++n) {
        if (w.nodes[n].name == node) p.s.node[s] = static_cast<node_id>(n);
      }
      if (p.s.node[s] == no_node) return fail(e, "subtree `" + path + "`: unknown node `" + node + "`");
      if (e["keep_alive"]) p.s.keep_alive[s] = e["keep_alive"].as<double>();
      for (const auto& iv : e["awake"]) {
        if (!iv.IsSequence() || iv.size() != 2) return fail(iv, "an awake interval is [from, to] in seconds");
        const double from = iv[0].as<double>(), to = iv[1].as<double>();
        if (from < 0 || to > w.horizon + 1e-9 || to < from)
          return fail(iv, "awake interval [" + iv[0].Scalar() + ", " + iv[1].Scalar() + "] is outside the horizon");
        const auto first = static_cast<std::size_t>(std::floor(from / w.slot + 1e-9));
        const auto last = std::min(T, static_cast<std::size_t>(std::ceil(to / w.slot - 1e-9)));
        for (std::size_t t = first; t < last; ++t) p.s.awake[s][t] = 1;
      }
    }
    for (std::size_t s = 0; s < w.subtrees.size(); ++s) {
      if (p.s.node[s] == no_node) return fail(subs, "subtree `" + w.subtrees[s].path + "` has no entry");
    }
    if (const auto mc = doc["monte_carlo"]) {
      if (mc["samples"]) p.samples = mc["samples"].as<std::uint64_t>();
      if (mc["seed"]) p.seed = mc["seed"].as<std::uint64_t>();
    }
    for (const auto& r : doc["workflows"]) {
      workflow_reliability x;
      x.name = r["name"].Scalar();
      x.target = r["target"].as<double>();
      x.predicted = r["predicted"].as<double>();
      x.low = r["low"].as<double>();
      x.high = r["high"].as<double>();
      p.reliability.push_back(x);
    }
  } catch (const YAML::Exception& e) {
    return error{errc::invalid, name + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg};
  }
  return p;
}

result<plan_file> load_plan(const std::string& path, const workload& w) {
  auto text = partitioner::detail::read_file(path);
  if (!text) return text.error();
  return parse_plan(*text, path, w);
}

result<plan_file> load_plan(const std::string& path, const deployment& d, workload& shape) {
  auto text = partitioner::detail::read_file(path);
  if (!text) return text.error();
  YAML::Node doc;
  try {
    doc = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    return error{errc::parse, path + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg};
  }
  if (!doc.IsMap() || !doc["slot"] || !doc["horizon"] || !doc["subtrees"] || !doc["subtrees"].IsSequence())
    return error{errc::invalid, path + ": not a periodic plan (expected `slot`, `horizon` and `subtrees`)"};
  shape = workload{};
  shape.name = path;
  try {
    shape.slot = doc["slot"].as<double>();
    shape.horizon = doc["horizon"].as<double>();
  } catch (const YAML::Exception& e) {
    return error{errc::invalid, path + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg};
  }
  if (!(shape.slot > 0) || !(shape.horizon >= shape.slot))
    return error{errc::invalid, path + ":" + std::to_string(doc["slot"].Mark().line + 1) +
                                    ": the slot must be positive and at most the horizon"};
  for (const auto& n : d.c.nodes) shape.nodes.push_back({n.name, n.cpu.amount, 0});
  for (const auto& e : doc["subtrees"]) {
    subtree_spec s;
    s.path = e["path"] ? e["path"].Scalar() : "";
    s.line = e.Mark().line + 1;
    if (s.path.empty() || s.path.front() != '/')
      return error{errc::invalid, path + ":" + std::to_string(s.line) + ": a subtree's `path` must be absolute"};
    shape.subtrees.push_back(std::move(s));
  }
  shape.deployment_fingerprint = fingerprint(d);
  return parse_plan(*text, path, shape);
}

}  // namespace banyan::partitioner::periodic
