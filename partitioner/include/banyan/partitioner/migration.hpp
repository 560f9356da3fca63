// Migration-aware re-partitioning: given the mapping a deployment runs now, propose a new one that
// trades cross-node traffic saved against the bytes of state that would have to move.
//
// Objective (what `plan_migration` minimises over mappings within capacity):
//   evaluate(p, m).cost + alpha x sum of state(v) over every v with m[v] != current[v]
// state(v) is the tree's `memory` figure (the profile's `load.memory`, which components set with
// `ctx.report_memory`): the bytes a snapshot of v would carry. A tree without memory figures has no
// state, so every move is free and alpha does nothing.
//
// Guarantees, checked by tests:
//  - the returned mapping is within capacity (evaluate's rule);
//  - its objective is no higher than that of the current mapping when that is within capacity, nor
//    (without root_stays) than that of any candidate within capacity (alpha = 0: no worse than the
//    partitioner that produced the candidate);
//  - same inputs, same plan (ties are broken by a seeded order, never by addresses or timing);
//  - with root_stays, the root's node is the current one.
//
// Cost: per start, one walk of every vertex's movable subtree (O(sum of their sizes x k)), then per
// accepted move O(n x k) to pick it plus re-walks of the subtrees it changed; the number of moves is
// capped at `max_moves`. 10^4 components on 8 nodes from a poor deployment: about 1,500 moves, 4 s
// with the candidate's bottom-up run (docs/partitioner.md).
//
// Values only; thread-compatible (no shared state).
#pragma once

#include "banyan/partitioner/model.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace banyan::partitioner {

struct migration_options {
  double alpha = 0;  // objective units (the traffic weight's unit x link cost) per byte of state moved; >= 0
  // Other mappings to start from, e.g. the partitioner's results for the same problem. Each one
  // within capacity is also tried with its nodes relabelled to overlap the current mapping most
  // (only among nodes of equal capacities, and only when every link costs the same), then improved
  // by the same local search; the lowest objective over all starts wins.
  std::vector<mapping> candidates;
  std::uint64_t seed = 1;     // tie-breaking order between moves of equal gain
  std::size_t max_moves = 0;  // accepted moves per start; 0: 4 x components + 100
  // The root keeps its current node: a live reconfiguration (banyan reconfigure) cannot move it.
  // Candidates are relabelled to put the root there where node classes allow; a start that still
  // moves it is not taken (so "no worse than the candidate" below may not hold).
  bool root_stays = false;
};

// A connected group of components that moves together: `root` and every descendant that moves
// with it between the same two nodes.
struct moved_subtree {
  vertex_id root = no_vertex;
  node_id from = no_node;
  node_id to = no_node;
  std::size_t components = 0;
  double state_bytes = 0;  // sum of state over the group
};

struct migration_plan {
  mapping map;                       // the proposed mapping, within capacity
  std::vector<moved_subtree> moves;  // top-down (by root index); empty when nothing moves
  double cost_before = 0;            // evaluate(p, current).cost (even when over capacity)
  double cost_after = 0;             // evaluate(p, map).cost
  double bytes_moved = 0;            // sum of state over components whose node changes
  double objective = 0;              // cost_after + alpha x bytes_moved
  double objective_current = 0;      // the current mapping's objective (= cost_before)
  bool current_feasible = true;
  std::string current_violation;  // evaluate's violation for the current mapping, when over capacity
  std::string start;              // which start won: "current", "current (repaired)", "candidate 0", ...
  int candidate = -1;             // index into migration_options::candidates of that start; -1: current
  bool relabelled = false;        // that candidate's nodes were renamed to overlap the current mapping
  std::size_t local_moves = 0;    // accepted subtree moves and swaps after that start
};

// Proposes the plan. `current` must hold one valid node per vertex (asserted: the CLI checks the
// deployment first). Errors: errc::invalid for a negative or non-finite alpha; errc::over_capacity
// when the current mapping is over capacity, no sequence of subtree moves repairs it and no
// candidate is within capacity (the message names the node and its load, as evaluate does).
result<migration_plan> plan_migration(const problem& p, const mapping& current, const migration_options& o);

// The state (bytes) `plan_migration` charges for moving v: the tree's memory figure, or 0.
double state_bytes(const tree& t, vertex_id v);

}  // namespace banyan::partitioner
