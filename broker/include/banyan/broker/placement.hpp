// Routing across nodes: which node hosts each component, how a route splits into per-node regions,
// and how many messages cross node links under each routing mode.
//
// The cost model of DESIGN.md says a hier message crosses each cut edge of its Steiner tree exactly
// once. plan_region() is what makes the runtime follow that model: a node delivers to the targets in
// the part of the Steiner tree it can reach without crossing a cut edge, and forwards one copy across
// each cut edge leaving that part; the receiving node continues from the entry vertex. predict()
// counts the same crossings from the profile's flows, so the two can be checked against each other.
#pragma once

#include "banyan/broker/routing.hpp"
#include "banyan/broker/tree.hpp"

#include <cstdint>
#include <map>
#include <vector>

namespace banyan {

// A node's index in the deployment (the order of its `nodes` list). The partitioner's
// partitioner::node_id names the same index (signed there, so that -1 can mean "none").
using node_id = std::uint16_t;

// One copy to send to another node: it enters that node at `entry`, arriving over the tree edge from
// `from` (no_vertex in the flat modes, which send straight from the publisher).
struct hop {
  node_id node;
  vertex_id entry;
  vertex_id from;
};

struct region_plan {
  std::vector<std::uint32_t> local_targets;  // indices into route::targets(), on this node
  std::vector<hop> hops;
};

// The part of `r` that the node hosting `entry` handles when the message arrives at `entry` from
// `from` (for the publishing node: entry = the publisher, from = no_vertex).
region_plan plan_region(const component_tree& tree, const route& r, const std::vector<node_id>& node_of,
                        routing_mode mode, vertex_id entry, vertex_id from);

// Messages that cross node links for `flows` on the placement `node_of`, per ordered node pair.
struct link_count {
  std::uint64_t messages = 0;
  std::uint64_t bytes = 0;
};
std::map<std::pair<node_id, node_id>, link_count> predict_crossings(const component_tree& tree,
                                                                    const std::vector<flow>& flows,
                                                                    const std::vector<node_id>& node_of,
                                                                    routing_mode mode);

}  // namespace banyan
