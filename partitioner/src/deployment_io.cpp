// Writing cluster and deployment YAML, and converting between mappings and assignments.
#include "banyan/partitioner/io.hpp"

#include <yaml-cpp/yaml.h>

#include <ostream>
#include <sstream>
#include <unordered_map>

namespace banyan::partitioner {
namespace {

std::string num(double x) {
  std::ostringstream s;
  s.precision(10);
  s << x;
  return s.str();
}

std::string cap(const capacity_spec& c) { return c.percent ? "\"" + num(c.amount) + "%\"" : num(c.amount); }

// YAML-safe scalar: plain when it cannot be misread, double-quoted otherwise.
std::string scalar(const std::string& s) {
  // A path of plain characters is a plain scalar (a leading '/' is never special in YAML); this
  // skips yaml-cpp's emitter for the 10^5-10^6 assignment lines of a big deployment.
  const bool plain = s.size() > 1 && s[0] == '/' && std::all_of(s.begin(), s.end(), [](char c) {
                       return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' ||
                              c == '_' || c == '-' || c == '.';
                     });
  if (plain) return s;
  YAML::Emitter e;
  e << s;
  return e.c_str();
}

void write_nodes(std::ostream& out, const cluster& c) {
  out << "version: 1\nnodes:\n";
  for (const auto& n : c.nodes) {
    out << "  - name: " << scalar(n.name) << "\n";
    if (!n.endpoint.empty()) out << "    endpoint: " << scalar(n.endpoint) << "\n";
    out << "    capacity: {cpu: " << cap(n.cpu);
    if (n.memory) out << ", memory: " << cap(*n.memory);
    out << "}\n";
    if (!n.group.empty()) out << "    group: " << scalar(n.group) << "\n";
  }
  if (!c.link_cost.empty() && !c.uniform_cost()) {
    const std::size_t k = c.size();
    out << "link_cost:\n  matrix:\n";
    for (std::size_t a = 0; a < k; ++a) {
      out << "    - [";
      for (std::size_t b = 0; b < k; ++b) out << (b ? ", " : "") << num(c.link_cost[a * k + b]);
      out << "]\n";
    }
  }
}

}  // namespace

void write_cluster(std::ostream& out, const cluster& c) { write_nodes(out, c); }

std::vector<assignment> assignments_of(const problem& p, const mapping& m) {
  std::vector<assignment> out;
  for (std::size_t v = 0; v < p.t.size(); ++v) {
    if (v == 0 || m[v] != m[p.t.parent[v]]) out.push_back({p.t.name(static_cast<vertex_id>(v)), m[v], 0});
  }
  return out;
}

void write_deployment(std::ostream& out, const problem& p, const mapping& m, const std::vector<std::string>& header) {
  for (const auto& h : header) out << "# " << h << "\n";
  write_nodes(out, p.c);
  out << "assignments:  # subtree path -> node; unassigned components stay with their parent\n";
  std::vector<std::string> node_names;
  for (const auto& n : p.c.nodes) node_names.push_back(scalar(n.name));
  // Streamed as assignments_of would list them, without building that list (800,000 on a star).
  for (std::size_t v = 0; v < p.t.size(); ++v) {
    if (v == 0 || m[v] != m[p.t.parent[v]])
      out << "  " << scalar(p.t.name(static_cast<vertex_id>(v))) << ": " << node_names[m[v]] << "\n";
  }
  // Each assignment's load: its root's and those of the components that stay with it (the nearest
  // assigned ancestor). Vertices are top-down, so one pass from the leaves up sums them.
  std::vector<double> region(p.t.cpu.begin(), p.t.cpu.end());
  bool any = false;
  for (std::size_t v = p.t.size(); v-- > 1;) {
    any = any || region[v] > 0;
    if (m[v] == m[p.t.parent[v]]) region[p.t.parent[v]] += region[v];
  }
  if (!any && (p.t.size() == 0 || region[0] <= 0)) return;
  out << "loads:  # per assignment: the CPU load of the components it places (a failover weighs it against "
         "capacity)\n";
  for (std::size_t v = 0; v < p.t.size(); ++v) {
    if (v == 0 || m[v] != m[p.t.parent[v]])
      out << "  " << scalar(p.t.name(static_cast<vertex_id>(v))) << ": " << num(region[v]) << "\n";
  }
}

result<mapping> mapping_of(const tree& t, const deployment& d) {
  std::unordered_map<std::string, vertex_id> index;
  index.reserve(t.size() * 2);
  for (std::size_t v = 0; v < t.size(); ++v)
    index.emplace(t.name(static_cast<vertex_id>(v)), static_cast<vertex_id>(v));
  mapping m(t.size(), -1);
  for (const auto& a : d.assignments) {
    auto it = index.find(a.path);
    if (it == index.end())
      return error{errc::invalid, (d.name.empty() ? std::string("deployment") : d.name) + ":" + std::to_string(a.line) +
                                      ": assignment `" + a.path + "` names no component of this app"};
    m[it->second] = a.node;
  }
  if (m[0] < 0)
    return error{errc::invalid, (d.name.empty() ? std::string("deployment") : d.name) + ": the root `" + t.name(0) +
                                    "` has no assignment"};
  for (std::size_t v = 1; v < t.size(); ++v) {
    if (m[v] < 0) m[v] = m[t.parent[v]];
  }
  return m;
}

}  // namespace banyan::partitioner
