// The communication-tree model shared by the partitioner and the runtime: a tree of components with
// loads, tree edges with traffic, nodes with capacities and link costs, a mapping component -> node,
// and the one function (`evaluate`) that says what a mapping costs and whether it fits.
//
// Cost (DESIGN.md): sum over cut edges (v, parent(v)) of weight(v) * link_cost(node(parent), node(v)).
// Every algorithm, test and tool computes cost and feasibility through `evaluate`; nothing else does.
//
// Values only: all types here are copyable and hold no resources.
#pragma once

#include "banyan/partitioner/error.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace banyan::partitioner {

// The same names as the broker's (banyan::vertex_id, banyan::node_id): a component's index in the
// tree and a node's index in the cluster. Signed here so that the root's parent and "no node" are -1.
using vertex_id = std::int32_t;  // index into a tree; the root is 0
using node_id = std::int32_t;    // index into cluster::nodes
inline constexpr vertex_id no_vertex = -1;
inline constexpr node_id no_node = -1;

// Invariant (checked by `validate`): parent[0] == no_vertex and parent[v] < v for v > 0, so ascending index
// is a top-down order and descending index a bottom-up (post) order. Readers renumber to ensure it.
struct tree {
  std::vector<std::string> path;  // absolute component path; may be empty for generated trees
  std::vector<vertex_id> parent;  // no_vertex for the root
  std::vector<double> cpu;        // load, >= 0 (handler CPU seconds, or any unit shared with capacity)
  std::vector<double> memory;     // bytes, >= 0; empty when the profile has no memory figures
  std::vector<double> weight;     // traffic on the edge (v, parent[v]); weight[0] == 0

  std::size_t size() const { return parent.size(); }
  bool has_memory() const { return !memory.empty(); }
  // The path, or "#<v>" when the tree carries no paths.
  std::string name(vertex_id v) const;
};

// A capacity as written in a cluster file: an absolute amount, or a percentage of the tree's total.
struct capacity_spec {
  double amount = 0;
  bool percent = false;
};

struct node_spec {
  std::string name;
  std::string endpoint;  // may be empty in a cluster file; the runtime requires it
  std::string group;     // optional, for group link costs
  capacity_spec cpu;
  std::optional<capacity_spec> memory;
  int line = 0;  // 1-based YAML line of the node entry (0 when built in code), for later errors
};

struct cluster {
  std::vector<node_spec> nodes;
  // Row-major k x k, symmetric, zero diagonal, >= 0. Empty means 1 between any two different nodes.
  std::vector<double> link_cost;

  std::size_t size() const { return nodes.size(); }
  double cost(node_id a, node_id b) const {
    if (a == b) return 0;
    return link_cost.empty() ? 1.0 : link_cost[static_cast<std::size_t>(a) * nodes.size() + b];
  }
  bool uniform_cost() const;
  // Index of the node called `name`, or no_node.
  node_id find(const std::string& name) const;
};

// The one capacity rule, shared by `evaluate`, `make_problem`, every heuristic and both exact
// models: a load fits a capacity when load <= capacity x (1 + capacity_tolerance). The tolerance is
// purely relative (no absolute slack), so loads of 1e-12 on capacities of 1e-12 are judged exactly as
// loads of 1 on capacities of 1; it only absorbs rounding in sums of doubles. A capacity of 0 holds
// only zero load.
inline constexpr double capacity_tolerance = 1e-9;
inline bool within_capacity(double load, double capacity) { return load <= capacity * (1 + capacity_tolerance); }

// A tree and a cluster with capacities resolved to absolute numbers: what the algorithms solve.
struct problem {
  tree t;
  cluster c;
  std::vector<double> cpu_capacity;     // per node
  std::vector<double> memory_capacity;  // per node; empty when no dimension is constrained;
                                        // +inf for a node with no memory capacity

  std::size_t k() const { return c.size(); }
};

// Resolves percentages, then checks what no mapping can fix: total load above total capacity, or a
// component heavier than every node. Errors name the numbers and the component.
result<problem> make_problem(tree t, cluster c);

// Checks the tree invariant and values (non-negative, finite, sizes agree); names the vertex.
result<void> validate(const tree& t);
// Checks the link-cost matrix shape and values, unique node names; names the node.
result<void> validate(const cluster& c);

using mapping = std::vector<node_id>;  // node of each vertex

struct evaluation {
  double cost = 0;  // the cross-node cost
  std::size_t cut_edges = 0;
  std::vector<double> cpu_load;     // per node
  std::vector<double> memory_load;  // per node (empty when the tree has no memory)
  double max_utilisation = 0;       // max over nodes and dimensions of load / capacity
  bool feasible = false;            // every load within_capacity (relative tolerance only)
  std::string violation;            // first over-capacity node, when not feasible
};

// The single source of truth for cost and feasibility. `m` must have one valid node per vertex
// (asserted: a wrong-sized mapping is a bug, not an input error).
evaluation evaluate(const problem& p, const mapping& m);

// Sum of edge weights times the largest link cost: an upper bound on any mapping's cost.
double max_possible_cost(const problem& p);

}  // namespace banyan::partitioner
