// What the two exact models (smt.cpp, mip.cpp) share: integer scaling of loads and weights, and
// classes of interchangeable nodes for symmetry breaking.
#pragma once

#include "detail.hpp"

#include <cmath>
#include <vector>

namespace banyan::partitioner::detail {

// Loads and capacities as integers. When `exact`, scaling lost nothing; otherwise loads were
// rounded up and capacities down, so a mapping feasible for the integers is feasible for the reals
// (but the integer model may miss the true optimum: callers then never claim `optimal`).
struct integer_loads {
  std::vector<long long> cpu, mem, cpu_cap, mem_cap;  // mem* empty when unconstrained
  bool exact = true;
};
integer_loads scale_loads(const problem& p, long long max_value = 100000000);

// Edge weight x link cost as small integers: exact when all products are integral and their sum
// stays below `max_total`; otherwise rounded after scaling the total to `max_total`.
struct integer_weights {
  double scale = 1;   // integer = round(real * scale)
  bool exact = true;
  long long of(double real) const { return std::llround(real * scale); }
};
integer_weights scale_weights(const problem& p, double max_total = 1e6);

// Nodes with equal capacities and equal link costs to every other node are interchangeable.
// Returns the classes (each sorted, size >= 2) in ascending order of their first node.
std::vector<std::vector<node_id>> interchangeable_nodes(const problem& p);

// Checks an exact solver's answer by banyan's rule: an own mapping over capacity is discarded
// (`unknown`), whatever the solver called it. Then the solver never returns worse than its warm
// start: when the warm start is within capacity, `s` becomes the warm start (`feasible`) if its own
// mapping is empty, was discarded or is costlier.
void fall_back_to_warm_start(const problem& p, const solve_options& o, solution& s);

}  // namespace banyan::partitioner::detail
