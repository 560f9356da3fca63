// What the two exact models (smt.cpp, mip.cpp) share: integer scaling of loads and weights, and
// classes of interchangeable nodes for symmetry breaking.
#pragma once

#include "detail.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
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
  double scale = 1;  // integer = round(real * scale)
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

// Runs `work` in a forked child process and returns the bytes it produced. The parent waits until
// `deadline_s` (seconds on `clock`) at most, then kills the child: Z3 and CBC both have phases that
// ignore their own limits and interrupts (Z3's preprocessing of a large pseudo-Boolean bound, CBC's
// preprocessing and root node), and a separate process is the one thing that can always be
// stopped. `work` may pass interim answers (incumbents) to `emit`; when the child is killed
// (`*overran` set), the last complete one is returned, or nullopt when there was none or the child
// failed. Where fork or pipe fail, `work` runs in this process instead (`emit` then does nothing).
// `work` must not rely on other threads of this process.
using emit_fn = std::function<void(const std::string&)>;
std::optional<std::string> run_bounded(const std::function<std::string(const emit_fn&)>& work, double deadline_s,
                                       const stopwatch& clock, bool* overran);

// A grace period after the time limit for a solver to stop on its own and report its incumbent
// before run_bounded kills it: 5% of the limit, between 0.2 s and 1 s.
inline double kill_grace(double timeout_s) { return std::min(1.0, std::max(0.2, 0.05 * timeout_s)); }

// Appends / reads plain values and vectors for run_bounded's byte stream.
template <class T>
void put(std::string& out, const T& x) {
  out.append(reinterpret_cast<const char*>(&x), sizeof x);
}
template <class T>
bool get(const std::string& in, std::size_t& at, T& x) {
  if (in.size() - at < sizeof x) return false;
  std::memcpy(&x, in.data() + at, sizeof x);
  at += sizeof x;
  return true;
}
void put_solution(std::string& out, const solution& s);
bool get_solution(const std::string& in, solution& s);

}  // namespace banyan::partitioner::detail
