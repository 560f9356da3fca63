#include "banyan/partitioner/model.hpp"

#include "detail.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <unordered_set>

namespace banyan::partitioner {
namespace {

std::string fmt(double x) { return detail::format_number(x, 6); }

bool nonneg_finite(double x) { return std::isfinite(x) && x >= 0; }

}  // namespace

namespace detail {

children::children(const tree& t) : first(t.size() + 1, 0), kids(t.size() > 0 ? t.size() - 1 : 0) {
  for (std::size_t v = 1; v < t.size(); ++v) ++first[t.parent[v] + 1];
  for (std::size_t v = 0; v < t.size(); ++v) first[v + 1] += first[v];
  std::vector<std::int64_t> pos(first.begin(), first.end() - 1);
  for (std::size_t v = 1; v < t.size(); ++v) kids[pos[t.parent[v]]++] = static_cast<vertex_id>(v);
}

}  // namespace detail

std::string tree::name(vertex_id v) const {
  if (static_cast<std::size_t>(v) < path.size()) return path[v];
  return "#" + std::to_string(v);
}

bool cluster::uniform_cost() const {
  const std::size_t k = nodes.size();
  for (std::size_t i = 0; i < link_cost.size(); ++i) {
    if (i / k != i % k && link_cost[i] != 1.0) return false;
  }
  return true;
}

node_id cluster::find(const std::string& name) const {
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].name == name) return static_cast<node_id>(i);
  }
  return no_node;
}

result<void> validate(const tree& t) {
  const std::size_t n = t.size();
  if (n == 0) return error{errc::not_a_tree, "tree has no components"};
  if (t.cpu.size() != n || t.weight.size() != n || (!t.memory.empty() && t.memory.size() != n) ||
      (!t.path.empty() && t.path.size() != n)) {
    return error{errc::invalid, "tree arrays differ in size"};
  }
  if (t.parent[0] != no_vertex) return error{errc::not_a_tree, "vertex 0 (" + t.name(0) + ") is not the root"};
  for (std::size_t v = 1; v < n; ++v) {
    if (t.parent[v] < 0 || static_cast<std::size_t>(t.parent[v]) >= v) {
      return error{errc::not_a_tree, "component " + t.name(static_cast<vertex_id>(v)) + ": parent index " +
                                         std::to_string(t.parent[v]) + " does not precede it"};
    }
  }
  for (std::size_t v = 0; v < n; ++v) {
    const auto name = t.name(static_cast<vertex_id>(v));
    if (!nonneg_finite(t.cpu[v]))
      return error{errc::invalid,
                   "component " + name + ": cpu load " + fmt(t.cpu[v]) + " is not a non-negative number"};
    if (!t.memory.empty() && !nonneg_finite(t.memory[v]))
      return error{errc::invalid,
                   "component " + name + ": memory " + fmt(t.memory[v]) + " is not a non-negative number"};
    if (!nonneg_finite(t.weight[v]))
      return error{errc::invalid,
                   "edge to " + name + ": traffic " + fmt(t.weight[v]) + " is not a non-negative number"};
  }
  if (t.weight[0] != 0) return error{errc::invalid, "root " + t.name(0) + " has edge traffic but no parent"};
  return {};
}

result<void> validate(const cluster& c) {
  const std::size_t k = c.size();
  if (k == 0) return error{errc::invalid, "cluster has no nodes"};
  std::unordered_set<std::string> names;
  for (const auto& nd : c.nodes) {
    const std::string where = nd.line ? "line " + std::to_string(nd.line) + ": " : "";
    if (nd.name.empty()) return error{errc::invalid, where + "node without a name"};
    if (!names.insert(nd.name).second) return error{errc::invalid, where + "node `" + nd.name + "` appears twice"};
    if (!nonneg_finite(nd.cpu.amount))
      return error{errc::invalid, where + "node `" + nd.name + "`: cpu capacity " + fmt(nd.cpu.amount) +
                                      " is not a non-negative number"};
    if (nd.memory && !nonneg_finite(nd.memory->amount))
      return error{errc::invalid, where + "node `" + nd.name + "`: memory capacity is not a non-negative number"};
  }
  if (!c.link_cost.empty()) {
    if (c.link_cost.size() != k * k) {
      return error{errc::invalid, "link_cost matrix has " + std::to_string(c.link_cost.size()) + " entries; " +
                                      std::to_string(k) + " nodes need " + std::to_string(k * k)};
    }
    for (std::size_t a = 0; a < k; ++a) {
      for (std::size_t b = 0; b < k; ++b) {
        const double x = c.link_cost[a * k + b];
        const std::string at = "link_cost[" + std::to_string(a) + "][" + std::to_string(b) + "] (" + c.nodes[a].name +
                               " -> " + c.nodes[b].name + ")";
        if (!nonneg_finite(x)) return error{errc::invalid, at + " = " + fmt(x) + " is not a non-negative number"};
        if (a == b && x != 0) return error{errc::invalid, at + " = " + fmt(x) + " must be 0"};
        if (x != c.link_cost[b * k + a])
          return error{errc::invalid, at + " = " + fmt(x) + " differs from its mirror " + fmt(c.link_cost[b * k + a]) +
                                          "; link costs must be symmetric"};
      }
    }
  }
  return {};
}

result<problem> make_problem(tree t, cluster c) {
  if (auto r = validate(t); !r) return r.error();
  if (auto r = validate(c); !r) return r.error();
  problem p;
  const std::size_t k = c.size();
  double total_cpu = 0, total_mem = 0;
  for (double x : t.cpu) total_cpu += x;
  for (double x : t.memory) total_mem += x;
  const bool mem_constrained =
      std::any_of(c.nodes.begin(), c.nodes.end(), [](const node_spec& n) { return n.memory.has_value(); });
  p.cpu_capacity.resize(k);
  if (mem_constrained) p.memory_capacity.assign(k, std::numeric_limits<double>::infinity());
  double cap_cpu = 0, cap_mem = 0, max_cpu_node = 0, max_mem_node = 0;
  for (std::size_t i = 0; i < k; ++i) {
    const auto& nd = c.nodes[i];
    p.cpu_capacity[i] = nd.cpu.percent ? nd.cpu.amount / 100.0 * total_cpu : nd.cpu.amount;
    cap_cpu += p.cpu_capacity[i];
    max_cpu_node = std::max(max_cpu_node, p.cpu_capacity[i]);
    if (nd.memory) {
      p.memory_capacity[i] = nd.memory->percent ? nd.memory->amount / 100.0 * total_mem : nd.memory->amount;
    }
    if (mem_constrained) {
      cap_mem += p.memory_capacity[i];
      max_mem_node = std::max(max_mem_node, p.memory_capacity[i]);
    }
  }
  if (!within_capacity(total_cpu, cap_cpu)) {
    const auto [load, cap] = detail::format_apart(total_cpu, cap_cpu);
    return error{errc::over_capacity, "total cpu load " + load + " exceeds total cpu capacity " + cap + " of " +
                                          std::to_string(k) + " nodes"};
  }
  if (mem_constrained && t.has_memory() && !within_capacity(total_mem, cap_mem)) {
    const auto [load, cap] = detail::format_apart(total_mem, cap_mem);
    return error{errc::over_capacity, "total memory " + load + " exceeds total memory capacity " + cap};
  }
  for (std::size_t v = 0; v < t.size(); ++v) {
    // A component must fit on at least one node in every dimension at once.
    bool fits = false;
    for (std::size_t i = 0; i < k && !fits; ++i) {
      fits = within_capacity(t.cpu[v], p.cpu_capacity[i]) &&
             (!mem_constrained || !t.has_memory() || within_capacity(t.memory[v], p.memory_capacity[i]));
    }
    if (!fits) {
      const auto [cpu, max_cpu] = detail::format_apart(t.cpu[v], max_cpu_node);
      const auto [mem, max_mem] = detail::format_apart(t.has_memory() ? t.memory[v] : 0.0, max_mem_node);
      std::string what = "component " + t.name(static_cast<vertex_id>(v)) + " (cpu " + cpu;
      if (t.has_memory()) what += ", memory " + mem;
      return error{errc::over_capacity, what + ") is heavier than every node (largest cpu capacity " + max_cpu +
                                            (mem_constrained ? ", largest memory capacity " + max_mem : "") + ")"};
    }
  }
  if (!t.has_memory()) p.memory_capacity.clear();
  p.t = std::move(t);
  p.c = std::move(c);
  return p;
}

evaluation evaluate(const problem& p, const mapping& m) {
  const auto& t = p.t;
  const std::size_t n = t.size(), k = p.k();
  assert(m.size() == n);
  evaluation e;
  e.cpu_load.assign(k, 0);
  const bool mem = !p.memory_capacity.empty();
  if (mem) e.memory_load.assign(k, 0);
  for (std::size_t v = 0; v < n; ++v) {
    const node_id a = m[v];
    assert(a >= 0 && static_cast<std::size_t>(a) < k);
    e.cpu_load[a] += t.cpu[v];
    if (mem) e.memory_load[a] += t.memory[v];
    if (v > 0) {
      const node_id b = m[t.parent[v]];
      if (a != b) {
        ++e.cut_edges;
        e.cost += t.weight[v] * p.c.cost(b, a);
      }
    }
  }
  e.feasible = true;
  auto check = [&](double load, double cap, node_id i, const char* dim) {
    const double u = cap > 0 ? load / cap : (load > 0 ? std::numeric_limits<double>::infinity() : 0);
    e.max_utilisation = std::max(e.max_utilisation, u);
    if (!within_capacity(load, cap) && e.feasible) {
      e.feasible = false;
      const auto [l, c] = detail::format_apart(load, cap);
      e.violation = "node `" + p.c.nodes[i].name + "` " + dim + " load " + l + " exceeds capacity " + c;
    }
  };
  for (std::size_t i = 0; i < k; ++i) {
    check(e.cpu_load[i], p.cpu_capacity[i], static_cast<node_id>(i), "cpu");
    if (mem && std::isfinite(p.memory_capacity[i]))
      check(e.memory_load[i], p.memory_capacity[i], static_cast<node_id>(i), "memory");
  }
  return e;
}

double max_possible_cost(const problem& p) {
  double w = 0, c = 1;
  for (double x : p.t.weight) w += x;
  for (double x : p.c.link_cost) c = std::max(c, x);
  return w * c;
}

}  // namespace banyan::partitioner
