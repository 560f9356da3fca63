// Lagrangian relaxation of the capacity constraints: a proven lower bound, and starting mappings.
//
// With a price lambda_j per unit of load on node j (and mu_j per unit of memory), the capacities
// drop out and what is left is a labelling of a tree with edge costs w x link(a, b) and vertex
// costs lambda_j x load(v): an exact dynamic program, O(n k) for uniform link costs and O(n k^2)
// otherwise. For every lambda >= 0,
//     L(lambda) = min over labellings of [cost + sum_j lambda_j (load_j - C_j (1 + tol))] <= OPT,
// because every mapping within capacity makes the bracket at most its cost. The prices follow
// subgradient steps (Polyak's rule against the best known cost, so the units of traffic and load
// cancel); the best L seen is a proven lower bound. The labellings met on the way are repaired
// (vertices moved off overloaded nodes, cheapest cost increase first) and serve as starts.
#include "detail.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace banyan::partitioner::detail {
namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

class labeller {
 public:
  explicit labeller(const problem& p) : p_(p), t_(p.t), k_(p.k()), uniform_(p.c.uniform_cost()) {
    f_.resize(t_.size() * k_);
  }

  // Minimum of cost + sum lambda x load over all labellings, into m; returns that minimum.
  double solve(const std::vector<double>& lambda, const std::vector<double>& mu, mapping& m) {
    const std::size_t n = t_.size();
    const bool mem = !mu.empty();
    for (std::size_t i = n; i-- > 0;) {
      double* f = &f_[i * k_];
      for (std::size_t j = 0; j < k_; ++j) f[j] += lambda[j] * t_.cpu[i] + (mem ? mu[j] * t_.memory[i] : 0.0);
      if (i == 0) break;
      // Fold f into the parent: g[a] = min_b f[b] + w x link(a, b).
      double* g = &f_[static_cast<std::size_t>(t_.parent[i]) * k_];
      const double w = t_.weight[i];
      if (uniform_) {
        const double lo = *std::min_element(f, f + k_) + w;
        for (std::size_t a = 0; a < k_; ++a) g[a] += std::min(f[a], lo);
      } else {
        for (std::size_t a = 0; a < k_; ++a) {
          double best = inf;
          for (std::size_t b = 0; b < k_; ++b)
            best = std::min(best, f[b] + w * p_.c.cost(static_cast<node_id>(a), static_cast<node_id>(b)));
          g[a] += best;
        }
      }
    }
    // Top-down choice; f_ of each vertex still holds its subtree's values.
    m.assign(n, 0);
    const double* f0 = &f_[0];
    m[0] = static_cast<node_id>(std::min_element(f0, f0 + k_) - f0);
    const double value = f0[m[0]];
    for (std::size_t i = 1; i < n; ++i) {
      const double* f = &f_[i * k_];
      const node_id a = m[t_.parent[i]];
      const double w = t_.weight[i];
      node_id best = a;
      double best_value = f[a];
      for (std::size_t b = 0; b < k_; ++b) {
        const double x = f[b] + w * p_.c.cost(a, static_cast<node_id>(b));
        if (x < best_value) {
          best_value = x;
          best = static_cast<node_id>(b);
        }
      }
      m[i] = best;
    }
    std::fill(f_.begin(), f_.end(), 0.0);
    return value;
  }

 private:
  const problem& p_;
  const tree& t_;
  std::size_t k_;
  bool uniform_;
  std::vector<double> f_;
};

// Moves single vertices off overloaded nodes, the least cost increase per unit of excess first,
// until every node fits; false when stuck. O(moves x n x k).
bool repair(const problem& p, const children& ch, mapping& m) {
  const auto& t = p.t;
  const std::size_t n = t.size(), k = p.k();
  room free(p);
  for (std::size_t v = 0; v < n; ++v) free.take(m[v], t.cpu[v], mem_of(t, static_cast<vertex_id>(v)));
  auto over = [&](node_id a) {
    return !within(p.cpu_capacity[a] - free.cpu[a], p.cpu_capacity[a]) ||
           (!free.mem.empty() && std::isfinite(p.memory_capacity[a]) &&
            !within(p.memory_capacity[a] - free.mem[a], p.memory_capacity[a]));
  };
  for (std::size_t moves = 0; moves <= n; ++moves) {
    node_id a = no_node;
    for (std::size_t j = 0; j < k && a < 0; ++j) {
      if (over(static_cast<node_id>(j))) a = static_cast<node_id>(j);
    }
    if (a < 0) return true;
    double best = inf;
    vertex_id bv = no_vertex;
    node_id bj = no_node;
    for (std::size_t v = 0; v < n; ++v) {
      if (m[v] != a || t.cpu[v] <= 0) continue;
      const auto x = static_cast<vertex_id>(v);
      for (std::size_t jj = 0; jj < k; ++jj) {
        const auto j = static_cast<node_id>(jj);
        if (j == a || !free.fits(p, j, t.cpu[v], mem_of(t, x))) continue;
        double d = 0;
        if (v > 0) d += t.weight[v] * (p.c.cost(j, m[t.parent[v]]) - p.c.cost(a, m[t.parent[v]]));
        for (auto it = ch.begin(x); it != ch.end(x); ++it)
          d += t.weight[*it] * (p.c.cost(j, m[*it]) - p.c.cost(a, m[*it]));
        const double score = d / t.cpu[v];
        if (score < best) {
          best = score;
          bv = x;
          bj = j;
        }
      }
    }
    if (bv < 0) return false;
    free.take(a, -t.cpu[bv], -mem_of(t, bv));
    free.take(bj, t.cpu[bv], mem_of(t, bv));
    m[bv] = bj;
  }
  return false;
}

}  // namespace

lagrange_result lagrangian(const problem& p, const children& ch, double upper, std::size_t iterations,
                           bool want_starts) {
  lagrange_result r;
  const std::size_t k = p.k(), n = p.t.size();
  if (k < 2 || n < 2) return r;
  const bool mem = !p.memory_capacity.empty() && p.t.has_memory();
  std::vector<double> lambda(k, 0), mu(mem ? k : 0, 0), cap(k), mcap(mem ? k : 0);
  for (std::size_t j = 0; j < k; ++j) {
    cap[j] = p.cpu_capacity[j] * (1 + capacity_tolerance);
    if (mem) mcap[j] = p.memory_capacity[j] * (1 + capacity_tolerance);
  }
  if (!std::isfinite(upper)) upper = max_possible_cost(p);
  labeller lab(p);
  mapping m, last;
  double theta = 2, best = 0;
  std::size_t stale = 0, repaired = 0;
  std::vector<double> g(k), gm(mem ? k : 0);
  for (std::size_t it = 0; it < iterations; ++it) {
    double value = lab.solve(lambda, mu, m);
    std::fill(g.begin(), g.end(), 0.0);
    std::fill(gm.begin(), gm.end(), 0.0);
    for (std::size_t v = 0; v < n; ++v) {
      g[m[v]] += p.t.cpu[v];
      if (mem) gm[m[v]] += p.t.memory[v];
    }
    double norm = 0;
    for (std::size_t j = 0; j < k; ++j) {
      g[j] -= cap[j];
      value -= lambda[j] * cap[j];
      // A price at 0 with slack to spare has no useful direction.
      if (lambda[j] > 0 || g[j] > 0) norm += g[j] * g[j];
      if (mem && std::isfinite(mcap[j])) {
        gm[j] -= mcap[j];
        value -= mu[j] * mcap[j];
        if (mu[j] > 0 || gm[j] > 0) norm += gm[j] * gm[j];
      }
    }
    if (value > best * (1 + 1e-9)) {
      best = value;
      stale = 0;
    } else if (++stale >= 5) {
      theta /= 2;
      stale = 0;
    }
    if (want_starts && repaired < 12 && m != last) {
      last = m;
      mapping fixed = m;
      if (repair(p, ch, fixed)) {
        r.starts.push_back(std::move(fixed));
        ++repaired;
      }
    }
    if (norm == 0 || theta < 1e-4 || best >= upper * (1 - 1e-9)) break;
    const double step = theta * (upper - value) / norm;
    for (std::size_t j = 0; j < k; ++j) {
      lambda[j] = std::max(0.0, lambda[j] + step * g[j]);
      if (mem && std::isfinite(mcap[j])) mu[j] = std::max(0.0, mu[j] + step * gm[j]);
    }
  }
  // Rounding in sums of doubles: keep the bound strictly on the safe side.
  r.bound = std::max(0.0, best * (1 - 1e-9));
  return r;
}

}  // namespace banyan::partitioner::detail
