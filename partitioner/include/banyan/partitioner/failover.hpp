// Where a lost node's subtrees go: the placement a failover starts them on (docs/runtime.md,
// "Failover").
//
// Every maximal subtree of the components a lost node hosted (its root's parent runs elsewhere, or
// it is the tree's root) moves whole to one surviving node, so a restarted supervisor finds its
// children where the deployment has always put them relative to it. Nothing else moves: what runs
// on the survivors stays (a failover must not start live moves). Subtrees are placed heaviest
// first, each on the surviving node where it adds the least cross-node cost given where its
// neighbours run (its parent's edge, and its children's on other nodes), among those whose capacity
// still holds it; ties go to the node with the most capacity left, then the lower index. A greedy
// choice, not an optimum: exact methods would move survivors' subtrees too.
//
// In banyan::partitioner_model (no solvers), so that nodes themselves can call it.
#pragma once

#include "banyan/partitioner/model.hpp"

#include <vector>

namespace banyan::partitioner {

struct failover_move {
  vertex_id root;  // the subtree's root
  node_id to;
  double cpu = 0;  // the load of the subtree's components that were on the lost node
};

struct failover_plan {
  mapping next;                      // the whole new mapping
  std::vector<failover_move> moves;  // in placement order (heaviest first)
};

// `p`: the problem (tree with loads and edge weights, cluster with resolved capacities); `current`:
// the mapping now; `lost`: the node that is gone; `alive`: per node, whether it can take subtrees
// (`lost` and other lost nodes false). Errors (over_capacity) name the subtree that fits nowhere and
// the shortfall: its load against the most any surviving node has left. `invalid` when no node is
// alive or the sizes disagree.
result<failover_plan> place_lost(const problem& p, const mapping& current, node_id lost,
                                 const std::vector<bool>& alive);

}  // namespace banyan::partitioner
