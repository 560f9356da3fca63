#include "banyan/broker/placement.hpp"

#include <algorithm>
#include <set>
#include <unordered_set>

namespace banyan {

region_plan plan_region(const component_tree& tree, const route& r, const std::vector<node_id>& node_of,
                        routing_mode mode, vertex_id entry, vertex_id from) {
  region_plan plan;
  node_id self = node_of[entry];
  const auto& targets = r.targets();
  switch (mode) {
    case routing_mode::flat_p2p:
      // From the publisher: local targets here, one copy straight to each remote target. Arriving
      // elsewhere: exactly the target the copy was sent to.
      for (std::uint32_t i = 0; i < targets.size(); ++i) {
        vertex_id t = targets[i].component;
        if (entry != r.publisher()) {
          if (t == entry) plan.local_targets.push_back(i);
        } else if (node_of[t] == self) {
          plan.local_targets.push_back(i);
        } else {
          plan.hops.push_back({node_of[t], t, no_vertex});
        }
      }
      return plan;
    case routing_mode::flat_node: {
      // One copy per subscribing node, straight from the publisher; a node delivers to all its targets.
      std::set<node_id> sent;
      for (std::uint32_t i = 0; i < targets.size(); ++i) {
        vertex_id t = targets[i].component;
        if (node_of[t] == self) plan.local_targets.push_back(i);
        else if (entry == r.publisher() && sent.insert(node_of[t]).second)
          plan.hops.push_back({node_of[t], t, no_vertex});
      }
      return plan;
    }
    case routing_mode::hier: break;
  }
  // In hier mode the route's edges are its Steiner tree.
  std::unordered_set<vertex_id> edges;
  for (const auto& e : r.edges()) edges.insert(e.edge);
  // Walk the Steiner tree from `entry` without crossing back over the edge we came in on; stop at
  // every edge that leads to another node and send one copy over it.
  std::unordered_set<vertex_id> region{entry};
  std::vector<vertex_id> stack{entry};
  if (from != no_vertex) region.insert(from);  // never walk back
  auto visit = [&](vertex_id v, vertex_id next) {
    if (region.count(next)) return;
    if (node_of[next] != self) {
      plan.hops.push_back({node_of[next], next, v});
      region.insert(next);
      return;
    }
    region.insert(next);
    stack.push_back(next);
  };
  std::set<vertex_id> local;
  while (!stack.empty()) {
    vertex_id v = stack.back();
    stack.pop_back();
    local.insert(v);
    if (v != 0 && edges.count(v)) visit(v, tree.parent(v));
    for (auto c : tree.children(v))
      if (edges.count(c)) visit(v, c);
  }
  for (std::uint32_t i = 0; i < targets.size(); ++i)
    if (local.count(targets[i].component)) plan.local_targets.push_back(i);
  return plan;
}

std::map<std::pair<node_id, node_id>, link_count> predict_crossings(const component_tree& tree,
                                                                    const std::vector<flow>& flows,
                                                                    const std::vector<node_id>& node_of,
                                                                    routing_mode mode) {
  std::map<std::pair<node_id, node_id>, link_count> out;
  auto add = [&](node_id a, node_id b, const flow& f) {
    auto& c = out[{a, b}];
    c.messages += f.messages;
    c.bytes += f.bytes;
  };
  for (const auto& f : flows) {
    node_id home = node_of[f.publisher];
    switch (mode) {
      case routing_mode::flat_p2p:
        for (auto t : f.targets)
          if (node_of[t] != home) add(home, node_of[t], f);
        break;
      case routing_mode::flat_node: {
        std::set<node_id> nodes;
        for (auto t : f.targets)
          if (node_of[t] != home) nodes.insert(node_of[t]);
        for (auto n : nodes) add(home, n, f);
        break;
      }
      case routing_mode::hier:
        for (auto e : tree.steiner_edges(f.publisher, f.targets)) {
          vertex_id p = tree.parent(e);
          if (node_of[e] == node_of[p]) continue;
          // The copy crosses from the side that holds the publisher.
          bool publisher_below = tree.contains(e, f.publisher);
          add(publisher_below ? node_of[e] : node_of[p], publisher_below ? node_of[p] : node_of[e], f);
        }
        break;
    }
  }
  return out;
}

}  // namespace banyan
