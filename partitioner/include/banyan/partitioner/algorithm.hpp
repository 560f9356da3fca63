// One interface for every mapping algorithm: given a problem, return a mapping, its cost (always
// computed by `evaluate`), a status and, where the algorithm proves one, a lower bound.
//
// Contract, checked by tests for every algorithm: a solution labelled `optimal` or `feasible` is
// within capacity; `optimal` means no mapping of this problem costs less. A solver that runs out of
// time returns the best mapping it found (`feasible`) or none (`unknown`); neither is an error.
#pragma once

#include "banyan/partitioner/model.hpp"

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace banyan::partitioner {

enum class solve_status {
  optimal,     // proven minimal
  feasible,    // within capacity, not proven minimal
  unknown,     // nothing within capacity found (time out, heuristic failed to pack); mapping empty
  infeasible,  // proven that no mapping fits, or a baseline's mapping is over capacity (see message)
};
const char* to_string(solve_status s);

struct solve_options {
  double timeout_s = 10;   // wall-clock limit for exact solvers; heuristics ignore it
  std::uint64_t seed = 1;  // for randomised algorithms; same seed, same mapping
  // Upper bound from a known mapping (e.g. the heuristic's), used by exact solvers to prune, and
  // returned when they find nothing better in time.
  const mapping* warm_start = nullptr;
  // A proven lower bound the caller already knows (`solve` passes proven_lower_bound): a heuristic
  // stops trying further starts once a mapping reaches it, since none can cost less.
  double known_lower_bound = 0;
  // Called from the solving thread now and then with the best cost so far and the best bound;
  // NaN when not known yet. Must be cheap.
  std::function<void(double best_cost, double bound)> on_progress;
};

struct solution {
  std::string algorithm;
  solve_status status = solve_status::unknown;
  mapping map;             // empty when status is unknown
  double cost = 0;         // evaluate(p, map).cost, or NaN when map is empty
  double lower_bound = 0;  // proven lower bound on the optimum (0 when the algorithm proves none)
  double seconds = 0;      // wall time of solve()
  std::string message;     // why, when not optimal/feasible (or notes such as scaled weights)
};

class algorithm {
 public:
  virtual ~algorithm() = default;
  virtual std::string name() const = 0;
  // Thread-compatible: one solve at a time per object.
  virtual solution solve(const problem& p, const solve_options& o) = 0;
};

// "bottom-up", "smt", "mip", "metis", "greedy", "round-robin", "round-robin-leaves", "hash", "random".
std::vector<std::string> algorithm_names();
result<std::unique_ptr<algorithm>> make_algorithm(std::string_view name);

// Convenience: make_algorithm(name)->solve(p, o) with timing and the final evaluate; errors only
// for an unknown name.
result<solution> solve(std::string_view name, const problem& p, const solve_options& o = {});

// A proven lower bound on the cost of every mapping of `p` within capacity (0 when none is
// proven): the larger of a counting argument (a subtree too heavy for m - 1 nodes has m - 1 cut
// edges, at least its lightest) and, up to 2 x 10^5 vertices, a knapsack over the tree (the cheapest
// cuts leaving fragments no heavier than the largest node); see lower_bound.cpp. O(n log k + 64 n). `solve` reports it
// as the lower_bound of every algorithm that proves none better, so each heuristic's result comes with its gap.
double proven_lower_bound(const problem& p);

// Fills status/cost of `s` from `evaluate(p, s.map)`: over capacity becomes `infeasible` with the
// violation as message. Used by every algorithm so that labels cannot lie.
void finalize(const problem& p, solution& s);

}  // namespace banyan::partitioner
