// Test-only exact references: brute force over every mapping (with exact pruning), and a small
// random problem maker. Written independently of the library's cost code on purpose.
#pragma once

#include "banyan/partitioner/model.hpp"

#include <cstdint>
#include <limits>
#include <optional>

namespace banyan::partitioner::testing {

struct brute_result {
  bool feasible = false;
  double cost = std::numeric_limits<double>::infinity();
  mapping best;
};

// Minimum cost over all k^n mappings within capacity. Prunes only on capacity overflow and on
// partial cost >= best (costs are non-negative), both exact. Intended for n <= 12.
brute_result brute_force(const problem& p);

// Cost and feasibility recomputed from scratch with plain loops over vertex pairs.
double naive_cost(const problem& p, const mapping& m);
bool naive_feasible(const problem& p, const mapping& m);

struct tiny_options {
  std::size_t max_vertices = 12;
  std::size_t max_nodes = 4;
  bool link_matrix = false;  // random symmetric integer link costs
  bool memory = false;
  double slack_min = 1.0, slack_max = 1.6;
};
// A random problem with integer loads, capacities and traffic; nullopt when the draw has no
// feasible instance by construction (make_problem rejected it).
std::optional<problem> tiny_problem(std::uint64_t seed, const tiny_options& o = {});

}  // namespace banyan::partitioner::testing
