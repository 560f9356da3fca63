// Cluster and deployment YAML (docs/formats.md). Errors carry file:line:col from yaml-cpp marks.
#include "banyan/partitioner/io.hpp"

#include "detail.hpp"

#include "banyan/base/log.hpp"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <unordered_map>

namespace banyan::partitioner {
namespace {

struct yreader {
  const std::string& name;
  std::string at(const YAML::Node& n) const {
    const auto m = n.Mark();
    if (m.is_null()) return name;
    return name + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
  }
  error fail(const YAML::Node& n, const std::string& what, errc code = errc::invalid) const {
    return error{code, at(n) + ": " + what};
  }
  result<double> number(const YAML::Node& n, const std::string& what) const {
    if (!n.IsScalar()) return fail(n, what + ": expected a number");
    try {
      const double x = n.as<double>();
      if (!std::isfinite(x) || x < 0)
        return fail(n, what + ": must be a non-negative number, got `" + n.Scalar() + "`");
      return x;
    } catch (const YAML::Exception&) {
      if (out_of_range(n.Scalar()))
        return fail(n, what + ": number `" + n.Scalar() + "` is out of range (beyond about 1.8e308)");
      return fail(n, what + ": expected a number, got `" + n.Scalar() + "`");
    }
  }
  // True when `s` is a whole decimal number whose magnitude overflows a double (yaml-cpp then
  // reports only a failed conversion).
  static bool out_of_range(const std::string& s) {
    if (s.empty()) return false;
    errno = 0;
    char* end = nullptr;
    const double x = std::strtod(s.c_str(), &end);
    return end == s.c_str() + s.size() && errno == ERANGE && std::isinf(x);
  }
  // A number, or "<p>%" (percentage of the tree's total load).
  result<capacity_spec> capacity(const YAML::Node& n, const std::string& what) const {
    if (n.IsScalar() && !n.Scalar().empty() && n.Scalar().back() == '%') {
      const std::string s = n.Scalar().substr(0, n.Scalar().size() - 1);
      try {
        std::size_t used = 0;
        const double x = std::stod(s, &used);
        if (used != s.size() || !std::isfinite(x) || x < 0) throw std::invalid_argument(s);
        return capacity_spec{x, true};
      } catch (const std::out_of_range&) {
        return fail(n, what + ": percentage `" + n.Scalar() + "` is out of range");
      } catch (const std::exception&) {
        return fail(n, what + ": expected a number or a percentage such as \"40%\", got `" + n.Scalar() + "`");
      }
    }
    auto x = number(n, what);
    if (!x) return x.error();
    return capacity_spec{*x, false};
  }
};

// A YAML syntax error, or a value yaml-cpp could not convert, as `name:line:col: what`.
error yaml_error(const std::string& name, const YAML::Exception& e) {
  return error{errc::parse,
               name + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) + ": " + e.msg};
}

result<YAML::Node> parse_yaml(const std::string& text, const std::string& name) {
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    return yaml_error(name, e);
  }
}

result<cluster> read_cluster(const YAML::Node& doc, const std::string& name) {
  yreader r{name};
  if (!doc.IsDefined() || doc.IsNull())
    return error{errc::invalid, name + ": empty (expected a mapping with `version` and `nodes`)"};
  if (!doc.IsMap()) {
    const std::string got = doc.IsScalar() ? "`" + log::escape(doc.Scalar(), 40) + "`" : "a list";
    return r.fail(doc, "expected a mapping with `version` and `nodes`, got " + got);
  }
  const YAML::Node version = doc["version"];
  if (!version) return r.fail(doc, "missing `version: 1`");
  if (!version.IsScalar() || version.Scalar() != "1")
    return r.fail(version, "unsupported version `" + YAML::Dump(version) + "` (expected 1)");
  const YAML::Node nodes = doc["nodes"];
  if (!nodes || !nodes.IsSequence() || nodes.size() == 0)
    return r.fail(nodes ? nodes : doc, "`nodes` must be a non-empty list");
  cluster c;
  std::set<std::string> names;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const YAML::Node nd = nodes[i];
    if (!nd.IsMap()) return r.fail(nd, "node entry must be a mapping with `name` and `capacity`");
    node_spec s;
    s.line = nd.Mark().is_null() ? 0 : nd.Mark().line + 1;
    const YAML::Node nm = nd["name"];
    if (!nm || !nm.IsScalar() || nm.Scalar().empty()) return r.fail(nd, "node without a `name`");
    s.name = nm.Scalar();
    // A name is printed in logs and terminals and travels in every frame: printable ASCII, no space.
    for (std::size_t k = 0; k < s.name.size(); ++k) {
      const auto c = static_cast<unsigned char>(s.name[k]);
      if (c <= 0x20 || c >= 0x7f || c == '`') {
        char byte[8];
        std::snprintf(byte, sizeof byte, "0x%02x", c);
        return r.fail(nm, "node name has byte " + std::string(byte) + " at offset " + std::to_string(k) +
                              ": use printable ASCII without spaces or backticks");
      }
    }
    if (s.name.size() > 255)
      return r.fail(nm, "node name of " + std::to_string(s.name.size()) + " bytes (at most 255)");
    if (!names.insert(s.name).second) return r.fail(nm, "node `" + s.name + "` appears twice");
    if (const YAML::Node ep = nd["endpoint"]) {
      if (!ep.IsScalar()) return r.fail(ep, "node `" + s.name + "`: endpoint must be a string");
      s.endpoint = ep.Scalar();
      if (s.endpoint.rfind("tcp://", 0) != 0 && s.endpoint.rfind("ipc://", 0) != 0 &&
          s.endpoint.rfind("inproc://", 0) != 0) {
        return r.fail(
            ep, "node `" + s.name + "`: endpoint `" + s.endpoint + "` must start with tcp://, ipc:// or inproc://");
      }
    }
    if (const YAML::Node g = nd["group"]) s.group = g.Scalar();
    const YAML::Node cap = nd["capacity"];
    if (!cap || !cap.IsMap()) return r.fail(nd, "node `" + s.name + "`: missing `capacity: {cpu: ...}`");
    if (!cap["cpu"]) return r.fail(cap, "node `" + s.name + "`: capacity has no `cpu`");
    auto cpu = r.capacity(cap["cpu"], "node `" + s.name + "` capacity.cpu");
    if (!cpu) return cpu.error();
    s.cpu = *cpu;
    if (cap["memory"]) {
      auto mem = r.capacity(cap["memory"], "node `" + s.name + "` capacity.memory");
      if (!mem) return mem.error();
      s.memory = *mem;
    }
    c.nodes.push_back(std::move(s));
  }
  const std::size_t k = c.nodes.size();
  if (const YAML::Node lc = doc["link_cost"]) {
    if (!lc.IsMap()) return r.fail(lc, "`link_cost` must be a mapping with `groups` or `matrix`");
    if (lc["groups"] && lc["matrix"]) return r.fail(lc, "`link_cost` has both `groups` and `matrix`; give one");
    if (const YAML::Node g = lc["groups"]) {
      if (!g.IsMap() || !g["same"] || !g["other"]) return r.fail(g, "`groups` needs `same` and `other` costs");
      auto same = r.number(g["same"], "link_cost.groups.same");
      if (!same) return same.error();
      auto other = r.number(g["other"], "link_cost.groups.other");
      if (!other) return other.error();
      for (const auto& nd : c.nodes) {
        if (nd.group.empty())
          return error{errc::invalid, name + ":" + std::to_string(nd.line) + ": node `" + nd.name +
                                          "` has no `group`, which link_cost.groups needs"};
      }
      c.link_cost.assign(k * k, 0);
      for (std::size_t a = 0; a < k; ++a) {
        for (std::size_t b = 0; b < k; ++b) {
          if (a != b) c.link_cost[a * k + b] = c.nodes[a].group == c.nodes[b].group ? *same : *other;
        }
      }
    } else if (const YAML::Node mx = lc["matrix"]) {
      if (!mx.IsSequence() || mx.size() != k)
        return r.fail(mx, "`matrix` must have one row per node (" + std::to_string(k) + ")");
      c.link_cost.assign(k * k, 0);
      for (std::size_t a = 0; a < k; ++a) {
        const YAML::Node row = mx[a];
        if (!row.IsSequence() || row.size() != k)
          return r.fail(row, "matrix row " + std::to_string(a) + " (" + c.nodes[a].name + ") must have " +
                                 std::to_string(k) + " entries");
        for (std::size_t b = 0; b < k; ++b) {
          auto x = r.number(row[b], "link_cost.matrix[" + std::to_string(a) + "][" + std::to_string(b) + "]");
          if (!x) return x.error();
          c.link_cost[a * k + b] = *x;
        }
      }
      // Checked here rather than only in validate() so that the error names the entry's line:col.
      for (std::size_t a = 0; a < k; ++a) {
        for (std::size_t b = 0; b < k; ++b) {
          const double x = c.link_cost[a * k + b], mirror = c.link_cost[b * k + a];
          const std::string at = "link_cost.matrix[" + std::to_string(a) + "][" + std::to_string(b) + "] (" +
                                 c.nodes[a].name + " -> " + c.nodes[b].name + ") = " + mx[a][b].Scalar();
          if (a == b && x != 0) return r.fail(mx[a][b], at + ": a node's cost to itself must be 0");
          if (a < b && x != mirror) {
            return r.fail(mx[a][b], at + " differs from its mirror [" + std::to_string(b) + "][" + std::to_string(a) +
                                        "] = " + mx[b][a].Scalar() + " (at " + r.at(mx[b][a]) +
                                        "); link costs must be symmetric");
          }
        }
      }
    } else {
      return r.fail(lc, "`link_cost` needs `groups` or `matrix`");
    }
  }
  if (auto ok = validate(c); !ok) return error{ok.error().code, name + ": " + ok.error().message};
  return c;
}

}  // namespace

result<cluster> parse_cluster(const std::string& text, const std::string& name) {
  auto doc = parse_yaml(text, name);
  if (!doc) return doc.error();
  try {
    return read_cluster(*doc, name);
  } catch (const YAML::Exception& e) {
    return yaml_error(name, e);
  }
}

result<cluster> load_cluster(const std::string& path) {
  auto text = detail::read_file(path);
  if (!text) return text.error();
  return parse_cluster(*text, path);
}

result<deployment> parse_deployment(const std::string& text, const std::string& name) {
  auto doc = parse_yaml(text, name);
  if (!doc) return doc.error();
  try {
    auto c = read_cluster(*doc, name);
    if (!c) return c.error();
    yreader r{name};
    deployment d;
    d.name = name;
    d.c = std::move(*c);
    const YAML::Node nodes = (*doc)["nodes"];
    std::set<std::string> endpoints;
    for (std::size_t i = 0; i < d.c.nodes.size(); ++i) {
      const auto& nd = d.c.nodes[i];
      if (nd.endpoint.empty()) return r.fail(nodes[i], "node `" + nd.name + "` has no endpoint");
      // `tcp://{host}:7100` on every node is one port on each node's host (the runtime checks the
      // endpoints again once `{host}` is replaced from the launcher's host list).
      if (nd.endpoint.find("{host}") == std::string::npos && !endpoints.insert(nd.endpoint).second)
        return r.fail(nodes[i]["endpoint"],
                      "node `" + nd.name + "`: endpoint `" + nd.endpoint + "` is used by another node too");
      const YAML::Node join = nodes[i]["join"];
      if (join && (!join.IsScalar() || (join.Scalar() != "start" && join.Scalar() != "later")))
        return r.fail(join, "node `" + nd.name + "`: `join` must be `start` (the default) or `later`");
      d.joins_later.push_back(join && join.Scalar() == "later");
    }
    bool all_later = true;
    for (bool later : d.joins_later) all_later = all_later && later;
    if (all_later) return r.fail(nodes, "every node has `join: later`: at least one node must start the deployment");
    // CURVE key files (`curve: {public: FILE, secret: FILE}`): every node has them, or none has.
    bool any_curve = false;
    for (std::size_t i = 0; i < d.c.nodes.size(); ++i) any_curve = any_curve || nodes[i]["curve"];
    const auto base = std::filesystem::path(name).parent_path();
    for (std::size_t i = 0; any_curve && i < d.c.nodes.size(); ++i) {
      const std::string& node = d.c.nodes[i].name;
      const YAML::Node cv = nodes[i]["curve"];
      if (!cv)
        return r.fail(nodes[i],
                      "node `" + node + "` has no `curve` keys but other nodes have: give every node keys, or none");
      if (!cv.IsMap()) return r.fail(cv, "node `" + node + "`: `curve` must be a mapping {public: FILE, secret: FILE}");
      curve_key_files keys;
      for (auto it = cv.begin(); it != cv.end(); ++it) {
        const std::string key = it->first.Scalar();
        if (key != "public" && key != "secret")
          return r.fail(it->first,
                        "node `" + node + "`: unknown curve key `" + key + "` (expected `public` and `secret`)");
        if (!it->second.IsScalar() || it->second.Scalar().empty())
          return r.fail(it->second, "node `" + node + "`: curve." + key + " must name a key file");
        const std::filesystem::path file = it->second.Scalar();
        (key == "public" ? keys.public_file : keys.secret_file) = (file.is_relative() ? base / file : file).string();
      }
      if (keys.public_file.empty())
        return r.fail(cv, "node `" + node + "`: curve needs `public` (the node's .pub file from banyan keygen)");
      keys.line = cv.Mark().is_null() ? 0 : cv.Mark().line + 1;
      keys.column = cv.Mark().is_null() ? 0 : cv.Mark().column + 1;
      d.curve.push_back(std::move(keys));
    }
    const YAML::Node as = (*doc)["assignments"];
    if (!as || !as.IsMap() || as.size() == 0)
      return r.fail(as ? as : *doc, "missing `assignments` (subtree path -> node)");
    std::set<std::string> seen;
    for (auto it = as.begin(); it != as.end(); ++it) {
      const YAML::Node key = it->first, val = it->second;
      const std::string path = key.Scalar();
      if (path.empty() || path[0] != '/')
        return r.fail(key, "assignment path `" + path + "` must be absolute (start with /)");
      if (!seen.insert(path).second) return r.fail(key, "path `" + path + "` is assigned twice");
      if (!val.IsScalar()) return r.fail(val, "assignment of `" + path + "` must name a node");
      const node_id id = d.c.find(val.Scalar());
      if (id < 0) return r.fail(val, "assignment of `" + path + "`: unknown node `" + val.Scalar() + "`");
      d.assignments.push_back({path, id, key.Mark().is_null() ? 0 : key.Mark().line + 1});
    }
    // Optional: per assignment, the CPU load of the components it places (the unit of the nodes'
    // capacities), which a failover's placement weighs against the survivors' capacity.
    if (const YAML::Node loads = (*doc)["loads"]) {
      if (!loads.IsMap()) return r.fail(loads, "`loads` must be a mapping (assigned subtree path -> CPU load)");
      std::unordered_map<std::string, std::size_t> assigned;  // a big deployment has 10^5-10^6 of them
      for (std::size_t i = 0; i < d.assignments.size(); ++i) assigned.emplace(d.assignments[i].path, i);
      for (auto it = loads.begin(); it != loads.end(); ++it) {
        const std::string path = it->first.Scalar();
        auto a = assigned.find(path);
        if (a == assigned.end())
          return r.fail(it->first, "loads: `" + path + "` is not an assigned path (give loads per assignment)");
        auto load = r.number(it->second, "load of `" + path + "`");
        if (!load) return load.error();
        d.assignments[a->second].load = *load;
      }
    }
    return d;
  } catch (const YAML::Exception& e) {
    return yaml_error(name, e);
  }
}

result<deployment> load_deployment(const std::string& path) {
  auto text = detail::read_file(path);
  if (!text) return text.error();
  return parse_deployment(*text, path);
}

}  // namespace banyan::partitioner
