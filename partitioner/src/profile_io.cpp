// Profile JSON (docs/formats.md) <-> tree. Components are renumbered breadth-first from the root so
// that the tree invariant (parent index < child index) holds whatever the file order.
#include "banyan/partitioner/io.hpp"

#include "detail.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

#include <iomanip>
#include <unordered_map>

namespace banyan::partitioner {
namespace {

using json = nlohmann::json;

// 1-based line and column of byte offset `pos` in `text`.
std::string line_col(const std::string& text, std::size_t pos) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < pos && i < text.size(); ++i) {
    if (text[i] == '\n') { ++line; col = 1; } else { ++col; }
  }
  return std::to_string(line) + ":" + std::to_string(col);
}

// Finds where nlohmann-json gave up: a SAX pass that builds nothing and records the position and
// token of the first error (json::parse reports number overflow as out_of_range, with no position).
struct error_locator : nlohmann::json_sax<json> {
  std::size_t end = 0;  // bytes read when the error was seen (just past the token)
  std::string token;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string& last_token, const nlohmann::detail::exception&) override {
    end = position;
    token = last_token;
    return false;
  }
};

struct reader {
  const std::string& name;
  error fail(const std::string& where, const std::string& what, errc code = errc::invalid) const {
    return error{code, name + ": " + where + ": " + what};
  }
  // Reads an optional non-negative number; a present non-number or negative is an error.
  result<double> number(const json& obj, const char* key, const std::string& where, bool required) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) {
      if (required) return fail(where, std::string("missing `") + key + "`");
      return 0.0;
    }
    if (!it->is_number()) return fail(where + "." + key, "expected a number, got " + it->dump());
    const double x = it->get<double>();
    if (!(x >= 0) || !std::isfinite(x)) return fail(where + "." + key, "must be a non-negative number, got " + it->dump());
    return x;
  }
};

}  // namespace

namespace detail {

// The full reader: a JSON document, every error named. Valid files normally take the streaming
// reader (profile_stream.cpp); this one runs when that says "not mine", to find the message.
result<tree> parse_profile_full(const std::string& text, const std::string& name, const profile_options& o) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    // e.byte is 1-based position of the offending byte.
    const std::size_t at = e.byte > 0 ? e.byte - 1 : 0;
    std::string what = e.what();
    if (auto p = what.find("syntax error"); p != std::string::npos) what = what.substr(p);
    return error{errc::parse, name + ":" + line_col(text, at) + ": " + what};
  } catch (const json::out_of_range&) {
    // A number too large for a double (1e999, -1e999): point at the token itself.
    error_locator loc;
    json::sax_parse(text, &loc);
    const std::size_t at = loc.end >= loc.token.size() ? loc.end - loc.token.size() : 0;
    return error{errc::parse, name + ":" + line_col(text, at) + ": number `" + loc.token +
                                  "` is out of range (beyond about 1.8e308)"};
  }
  reader r{name};
  if (!doc.is_object()) return r.fail("top level", "expected a JSON object");
  if (auto f = doc.find("format"); f != doc.end() && (!f->is_string() || *f != "banyan-profile")) {
    return r.fail("format", "expected \"banyan-profile\", got " + f->dump());
  }
  if (auto v = doc.find("version"); v == doc.end() || !v->is_number_integer() || *v != 1) {
    return r.fail("version", v == doc.end() ? "missing (expected 1)" : "unsupported version " + v->dump() + " (expected 1)");
  }
  auto comps = doc.find("components");
  if (comps == doc.end() || !comps->is_array() || comps->empty()) return r.fail("components", "expected a non-empty array");

  const std::size_t n = comps->size();
  std::vector<std::string> path(n), parent_path(n);
  std::vector<double> cpu(n), mem(n);
  bool any_mem = false;
  std::unordered_map<std::string, std::size_t> index;
  index.reserve(n * 2);
  std::size_t root = n;
  for (std::size_t i = 0; i < n; ++i) {
    const json& c = (*comps)[i];
    const std::string where = "components[" + std::to_string(i) + "]";
    if (!c.is_object()) return r.fail(where, "expected an object");
    auto p = c.find("path");
    if (p == c.end() || !p->is_string() || p->get_ref<const std::string&>().empty() || p->get_ref<const std::string&>()[0] != '/') {
      return r.fail(where + ".path", "expected an absolute path string such as \"/app/x\"");
    }
    path[i] = *p;
    const std::string who = where + " (" + path[i] + ")";
    if (!index.emplace(path[i], i).second) return r.fail(who, "duplicate path; components[" + std::to_string(index[path[i]]) + "] has it too", errc::not_a_tree);
    auto par = c.find("parent");
    if (par == c.end()) return r.fail(who, "missing `parent` (null for the root)");
    if (par->is_null()) {
      if (root != n) return r.fail(who, "second root: " + path[root] + " also has parent null", errc::not_a_tree);
      root = i;
    } else if (par->is_string()) {
      parent_path[i] = *par;
    } else {
      return r.fail(who + ".parent", "expected a path string or null, got " + par->dump());
    }
    auto load = c.find("load");
    if (load != c.end() && !load->is_object()) return r.fail(who + ".load", "expected an object");
    if (load != c.end()) {
      auto x = r.number(*load, "cpu", who + ".load", false);
      if (!x) return x.error();
      cpu[i] = *x;
      if (load->contains("memory")) {
        auto y = r.number(*load, "memory", who + ".load", false);
        if (!y) return y.error();
        mem[i] = *y;
        any_mem = any_mem || *y > 0;
      }
    }
  }
  if (root == n) return r.fail("components", "no root (no component has parent null)", errc::not_a_tree);

  std::vector<std::size_t> parent(n, n);
  std::vector<std::vector<std::size_t>> kids(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (i == root) continue;
    auto it = index.find(parent_path[i]);
    if (it == index.end()) return r.fail("components[" + std::to_string(i) + "] (" + path[i] + ")", "unknown parent `" + parent_path[i] + "`", errc::not_a_tree);
    if (it->second == i) return r.fail("components[" + std::to_string(i) + "] (" + path[i] + ")", "is its own parent", errc::not_a_tree);
    parent[i] = it->second;
    kids[it->second].push_back(i);
  }
  // Breadth-first from the root; anything not reached lies on a cycle (or hangs below one).
  std::vector<std::size_t> order{root};
  std::vector<vertex_id> renum(n, no_vertex);
  renum[root] = 0;
  for (std::size_t h = 0; h < order.size(); ++h) {
    for (std::size_t c : kids[order[h]]) {
      renum[c] = static_cast<vertex_id>(order.size());
      order.push_back(c);
    }
  }
  if (order.size() != n) {
    for (std::size_t i = 0; i < n; ++i) {
      if (renum[i] >= 0) continue;
      // Walk up to find a vertex that is on the cycle itself.
      std::size_t v = i;
      for (std::size_t steps = 0; steps < n; ++steps) v = parent[v];
      return r.fail("components", "cycle through " + path[v] + " (its ancestors lead back to it, never to the root " + path[root] + ")", errc::not_a_tree);
    }
  }
  tree t;
  t.path.resize(n);
  t.parent.resize(n);
  t.cpu.resize(n);
  t.weight.assign(n, 0.0);
  if (any_mem && o.with_memory) t.memory.resize(n);
  for (std::size_t h = 0; h < n; ++h) {
    const std::size_t i = order[h];
    t.path[h] = path[i];
    t.parent[h] = h == 0 ? no_vertex : renum[parent[i]];
    t.cpu[h] = cpu[i];
    if (!t.memory.empty()) t.memory[h] = mem[i];
  }
  if (auto edges = doc.find("edges"); edges != doc.end()) {
    if (!edges->is_array()) return r.fail("edges", "expected an array");
    const char* unit = o.unit == traffic_unit::bytes ? "bytes" : "messages";
    for (std::size_t e = 0; e < edges->size(); ++e) {
      const json& ed = (*edges)[e];
      const std::string where = "edges[" + std::to_string(e) + "]";
      if (!ed.is_object() || !ed.contains("parent") || !ed.contains("child") || !ed["parent"].is_string() || !ed["child"].is_string()) {
        return r.fail(where, "expected {\"parent\": path, \"child\": path, ...}");
      }
      const std::string pp = ed["parent"], cp = ed["child"];
      auto ci = index.find(cp);
      if (ci == index.end()) return r.fail(where, "unknown child `" + cp + "`");
      if (ci->second == root || parent_path[ci->second] != pp) {
        return r.fail(where, "`" + pp + "` -> `" + cp + "` is not a tree edge (the parent of " + cp + " is " +
                                 (ci->second == root ? std::string("none") : "`" + parent_path[ci->second] + "`") + ")");
      }
      auto w = r.number(ed, unit, where, false);
      if (!w) return w.error();
      t.weight[renum[ci->second]] += *w;
    }
  }
  return t;
}

}  // namespace detail

result<tree> parse_profile(const std::string& text, const std::string& name, const profile_options& o) {
  if (auto t = detail::parse_profile_stream(text, o)) return std::move(*t);
  return detail::parse_profile_full(text, name, o);
}

result<tree> load_profile(const std::string& path, const profile_options& o) {
  if (auto t = detail::read_profile_stream(path, o)) return std::move(*t);
  auto text = detail::read_file(path);
  if (!text) return text.error();
  return detail::parse_profile_full(*text, path, o);
}

void write_profile(std::ostream& out, const tree& t, const std::string& mode) {
  // Streamed by hand rather than through a json object: a 10^6-component tree would need GBs.
  auto q = [](const std::string& s) { return json(s).dump(); };
  out << "{\n  \"format\": \"banyan-profile\", \"version\": 1, \"mode\": " << q(mode) << ",\n  \"components\": [\n";
  out << std::setprecision(9);
  const detail::children ch(t);
  for (std::size_t v = 0; v < t.size(); ++v) {
    const auto x = static_cast<vertex_id>(v);
    out << "    {\"path\": " << q(t.name(x)) << ", \"parent\": " << (v == 0 ? "null" : q(t.name(t.parent[v])))
        << ", \"kind\": \"" << (ch.count(x) ? "composite" : "leaf") << "\", \"load\": {\"cpu\": " << t.cpu[v];
    if (t.has_memory()) out << ", \"memory\": " << t.memory[v];
    out << "}}" << (v + 1 < t.size() ? ",\n" : "\n");
  }
  out << "  ],\n  \"edges\": [\n";
  bool first = true;
  for (std::size_t v = 1; v < t.size(); ++v) {
    if (t.weight[v] == 0) continue;
    out << (first ? "" : ",\n") << "    {\"parent\": " << q(t.name(t.parent[v])) << ", \"child\": " << q(t.name(static_cast<vertex_id>(v)))
        << ", \"messages\": " << t.weight[v] << "}";
    first = false;
  }
  out << "\n  ]\n}\n";
}

}  // namespace banyan::partitioner
