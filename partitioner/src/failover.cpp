#include "banyan/partitioner/failover.hpp"

#include "detail.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace banyan::partitioner {

result<failover_plan> place_lost(const problem& p, const mapping& current, node_id lost,
                                 const std::vector<bool>& alive) {
  const tree& t = p.t;
  const auto n = static_cast<vertex_id>(t.size());
  const auto k = static_cast<node_id>(p.k());
  if (current.size() != t.size() || alive.size() != p.k() || lost < 0 || lost >= k) {
    return error{errc::invalid, "failover: " + std::to_string(current.size()) + " assignments for " +
                                    std::to_string(n) + " components, " + std::to_string(alive.size()) +
                                    " liveness flags for " + std::to_string(k) + " nodes, lost node " +
                                    std::to_string(lost)};
  }
  auto at = [](auto i) { return static_cast<std::size_t>(i); };
  if (std::none_of(alive.begin(), alive.end(), [](bool a) { return a; }))
    return error{errc::invalid, "failover: no node is left to take the subtrees of `" + p.c.nodes[at(lost)].name + "`"};

  std::vector<std::vector<vertex_id>> children(t.size());
  for (vertex_id v = 1; v < n; ++v) children[at(t.parent[at(v)])].push_back(v);
  std::vector<double> used(p.k(), 0.0);
  for (vertex_id v = 0; v < n; ++v)
    if (current[at(v)] != lost) used[at(current[at(v)])] += t.cpu[at(v)];

  // The lost part of each maximal lost subtree: the root and its descendants on `lost`, reached
  // through lost vertices only (a descendant on a survivor keeps its node).
  struct part {
    vertex_id root;
    std::vector<vertex_id> members;
    double cpu = 0;
  };
  std::vector<part> parts;
  for (vertex_id v = 0; v < n; ++v) {
    if (current[at(v)] != lost || (v != 0 && current[at(t.parent[at(v)])] == lost)) continue;
    part s{v, {}, 0};
    std::vector<vertex_id> stack{v};
    while (!stack.empty()) {
      const vertex_id u = stack.back();
      stack.pop_back();
      s.members.push_back(u);
      s.cpu += t.cpu[at(u)];
      for (vertex_id c : children[at(u)])
        if (current[at(c)] == lost) stack.push_back(c);
    }
    parts.push_back(std::move(s));
  }
  std::stable_sort(parts.begin(), parts.end(), [](const part& a, const part& b) { return a.cpu > b.cpu; });

  failover_plan plan{current, {}};
  for (const part& s : parts) {
    // Edges leaving the part: (member, parent) for the root, (child, member) for children elsewhere.
    auto added_cost = [&](node_id to) {
      double cost = 0;
      if (s.root != 0) cost += t.weight[at(s.root)] * p.c.cost(to, plan.next[at(t.parent[at(s.root)])]);
      for (vertex_id u : s.members)
        for (vertex_id c : children[at(u)])
          if (current[at(c)] != lost) cost += t.weight[at(c)] * p.c.cost(to, plan.next[at(c)]);
      return cost;
    };
    node_id best = no_node;
    double best_cost = 0, best_room = 0, most_room = -std::numeric_limits<double>::infinity();
    for (node_id q = 0; q < k; ++q) {
      if (!alive[at(q)]) continue;
      const double room = p.cpu_capacity[at(q)] - used[at(q)];
      most_room = std::max(most_room, room);
      if (!within_capacity(used[at(q)] + s.cpu, p.cpu_capacity[at(q)])) continue;
      const double cost = added_cost(q);
      if (best == no_node || cost < best_cost || (cost == best_cost && room > best_room)) {
        best = q;
        best_cost = cost;
        best_room = room;
      }
    }
    if (best == no_node) {
      const double left = std::max(0.0, most_room);
      return error{errc::over_capacity,
                   "failover: `" + t.name(s.root) + "` (cpu load " + detail::format_number(s.cpu, 6) +
                       ") fits on no surviving node: the most capacity left is " + detail::format_number(left, 6) +
                       ", short by " + detail::format_number(s.cpu - left, 6)};
    }
    for (vertex_id u : s.members) plan.next[at(u)] = best;
    used[at(best)] += s.cpu;
    plan.moves.push_back({s.root, best, s.cpu});
  }
  return plan;
}

}  // namespace banyan::partitioner
