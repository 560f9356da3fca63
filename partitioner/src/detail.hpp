// Private helpers shared by the algorithms.
#pragma once

#include "banyan/partitioner/algorithm.hpp"
#include "banyan/partitioner/io.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace banyan::partitioner::detail {

// The same rule as `evaluate` (model.hpp), so a mapping an algorithm accepts is one evaluate accepts.
inline bool within(double load, double cap) { return within_capacity(load, cap); }

// Children of every vertex in compressed form: children of v are kids[first[v] .. first[v+1]).
struct children {
  std::vector<std::int64_t> first;
  std::vector<vertex_id> kids;
  explicit children(const tree& t);
  auto begin(vertex_id v) const { return kids.begin() + first[v]; }
  auto end(vertex_id v) const { return kids.begin() + first[v + 1]; }
  std::size_t count(vertex_id v) const { return static_cast<std::size_t>(first[v + 1] - first[v]); }
};

// Per-node remaining capacity in both dimensions.
struct room {
  std::vector<double> cpu, mem;  // mem empty when unconstrained
  explicit room(const problem& p) : cpu(p.cpu_capacity), mem(p.memory_capacity) {}
  bool fits(const problem& p, node_id a, double c, double m) const {
    return within(p.cpu_capacity[a] - cpu[a] + c, p.cpu_capacity[a]) &&
           (mem.empty() || !std::isfinite(p.memory_capacity[a]) ||
            within(p.memory_capacity[a] - mem[a] + m, p.memory_capacity[a]));
  }
  void take(node_id a, double c, double m) {
    cpu[a] -= c;
    if (!mem.empty()) mem[a] -= m;
  }
};

inline double mem_of(const tree& t, vertex_id v) { return t.has_memory() ? t.memory[v] : 0.0; }

// The whole file at `path` (text.cpp); errc::io naming the path when it cannot be read.
result<std::string> read_file(const std::string& path);
class padded_file;
// The profile reader (profile_read.cpp) over `text`, readable up to `capacity` bytes (simdjson's
// padding); `name` in messages. When `file` holds the text, its pages are released as they are read.
result<tree> read_profile(std::string_view text, std::size_t capacity, const std::string& name,
                          const profile_options& o, profile_measurements* m, padded_file* file);
// `x` with at most `digits` significant digits, as ostream writes it (text.cpp).
std::string format_number(double x, int digits);
// `a` and `b` as format_number writes them, with more digits where `digits` would print two
// different numbers alike (a load over its capacity by less than the last digit shown): up to 17,
// which tells any two doubles apart. For messages that compare the two.
std::pair<std::string, std::string> format_apart(double a, double b, int digits = 6);

class stopwatch {
 public:
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// Local refinement (refine.cpp): moves boundary subtrees and swaps them while the cost drops and
// capacities hold. `m` must be within capacity; it stays so. Returns the number of moves applied.
std::size_t refine(const problem& p, mapping& m, std::size_t max_passes = 8);

// A start from tree dynamic programming (peel.cpp): fills the nodes in `order`, each with the set of
// unplaced components that cuts the least traffic while it fits the node and the rest fits the
// later nodes (loads bucketed into `buckets` per node, exact loads kept), and, when `share` > 0,
// holds at least that fraction of its proportional part of what remains. The first node takes the
// `first_rank`-th cheapest valid set (0: the cheapest). False when it finds none.
bool peel_start(const problem& p, const children& ch, const std::vector<node_id>& order, std::size_t buckets,
                double share, std::size_t first_rank, mapping& m);

// Lagrangian relaxation of the capacities (lagrange.cpp): a proven lower bound and, when
// `want_starts`, up to 12 labellings repaired to fit, as starts. `upper` is the best known cost
// (infinity when none); O(iterations x n x k), x k again with unequal link costs.
struct lagrange_result {
  double bound = 0;
  std::vector<mapping> starts;
};
lagrange_result lagrangian(const problem& p, const children& ch, double upper, std::size_t iterations,
                           bool want_starts);

// A scale for "no change": 1e-12 of the largest possible cost (0 when no edge carries traffic), so
// that comparisons of costs are relative, whatever the unit of traffic.
inline double cost_epsilon(const problem& p) { return 1e-12 * max_possible_cost(p); }

std::unique_ptr<algorithm> make_bottom_up();
std::unique_ptr<algorithm> make_smt();
std::unique_ptr<algorithm> make_mip();
std::unique_ptr<algorithm> make_metis();
std::unique_ptr<algorithm> make_greedy();
std::unique_ptr<algorithm> make_round_robin();
std::unique_ptr<algorithm> make_round_robin_leaves();
std::unique_ptr<algorithm> make_hash();
std::unique_ptr<algorithm> make_random();

// splitmix64: a portable, seedable PRNG (same stream on every platform).
struct rng {
  std::uint64_t s;
  explicit rng(std::uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull) {}
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0,1)
  std::uint64_t below(std::uint64_t n) { return next() % n; }
  // A standard normal draw (Box-Muller), for log-normal loads.
  double normal() {
    const double u1 = std::max(uniform(), 1e-300), u2 = uniform();
    return std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
};

}  // namespace banyan::partitioner::detail
