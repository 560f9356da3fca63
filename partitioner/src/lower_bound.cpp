// A proven lower bound on the cost of every mapping within capacity, cheap enough to report next to
// every heuristic's result.
//
// Argument. A subtree S(v) of load L(v) cannot lie on fewer than need(v) nodes, the fewest whose
// capacities (largest first, with the tolerance; per dimension) add up to L(v); cutting e
// of the edges inside S(v) leaves e + 1 fragments, each on one node, so at least need(v) - 1 edges
// inside S(v) are cut: their traffic is at least the sum of the need(v) - 1 lightest edges inside
// S(v). Each cut edge also costs at least the cheapest link between two different nodes. Subtrees
// of different children of v share no edge, so the children's bounds add up; the bound of v is the
// larger of that sum and its own term. Only vertices with need(v) >= 2 have an own term, and only
// the M = need(root) - 1 lightest edges of each subtree are ever needed, so each vertex keeps at
// most M weights (merged small into large): O(n log M) time.
#include "detail.hpp"

#include <algorithm>
#include <functional>
#include <limits>

namespace banyan::partitioner {
namespace {

// The counting bound described above.
double counting_bound(const problem& p, double min_link) {
  const auto& t = p.t;
  const std::size_t n = t.size();
  const bool mem = !p.memory_capacity.empty();
  // Fewest nodes whose capacities (largest first, with the tolerance) add up to a load: the
  // fragments of a subtree lie on at least that many distinct nodes. prefix[m] = sum of the m
  // largest capacities; +inf once an unconstrained node is reached. The (1 - 1e-12) keeps an
  // exact fit (load 2C on two nodes of C) from needing one node more through rounding.
  auto prefix_of = [&](const std::vector<double>& caps) {
    std::vector<double> sorted(caps);
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    std::vector<double> prefix(sorted.size() + 1, 0);
    for (std::size_t i = 0; i < sorted.size(); ++i) prefix[i + 1] = prefix[i] + sorted[i] * (1 + capacity_tolerance);
    return prefix;
  };
  const std::vector<double> cpu_prefix = prefix_of(p.cpu_capacity);
  const std::vector<double> mem_prefix = mem ? prefix_of(p.memory_capacity) : std::vector<double>{};
  auto nodes_for = [](double load, const std::vector<double>& prefix) -> double {
    if (load <= 0) return 1;
    const double need = load * (1 - 1e-12);
    const auto it = std::lower_bound(prefix.begin() + 1, prefix.end(), need);
    if (it == prefix.end()) return std::numeric_limits<double>::infinity();  // fits nowhere: no mapping
    return static_cast<double>(it - prefix.begin());
  };
  std::vector<double> cpu(t.cpu), memory(mem ? t.memory : std::vector<double>{});
  for (std::size_t v = n; v-- > 1;) {
    cpu[t.parent[v]] += cpu[v];
    if (mem) memory[t.parent[v]] += memory[v];
  }
  auto need = [&](std::size_t v) {
    return std::max(nodes_for(cpu[v], cpu_prefix), mem ? nodes_for(memory[v], mem_prefix) : 1.0);
  };
  const double root_need = need(0);
  if (!(root_need >= 2) || !std::isfinite(root_need)) return 0;  // one node suffices, or nothing fits
  const std::size_t keep = static_cast<std::size_t>(std::min(root_need - 1, static_cast<double>(n - 1)));

  // lightest[v]: max-heap of the `keep` lightest edge weights inside S(v) (edges to v's parent excluded).
  std::vector<std::vector<double>> lightest(n);
  std::vector<double> bound(n, 0), children_sum(n, 0);
  auto add = [&](std::vector<double>& h, double w) {
    if (h.size() < keep) {
      h.push_back(w);
      std::push_heap(h.begin(), h.end());
      return;
    }
    if (w >= h.front()) return;
    std::pop_heap(h.begin(), h.end());
    h.back() = w;
    std::push_heap(h.begin(), h.end());
  };
  std::vector<double> sorted;
  // Heaps freed by merged children, reused: at 10^6 vertices allocating one per internal vertex
  // was most of this bound's time.
  std::vector<std::vector<double>> spare;
  auto ensure = [&](std::vector<double>& h) {
    if (h.capacity() == 0 && !spare.empty()) {
      h.swap(spare.back());
      spare.pop_back();
    }
  };
  for (std::size_t v = n; v-- > 0;) {
    // Children have already been folded into lightest[v] and children_sum[v].
    bound[v] = children_sum[v];
    const double nv = need(v);
    if (nv >= 2) {
      sorted.assign(lightest[v].begin(), lightest[v].end());
      std::sort(sorted.begin(), sorted.end());
      const std::size_t m = static_cast<std::size_t>(std::min(nv - 1, static_cast<double>(sorted.size())));
      double own = 0;
      for (std::size_t i = 0; i < m; ++i) own += sorted[i];
      bound[v] = std::max(bound[v], own * min_link);
    }
    if (v == 0) break;
    const auto par = static_cast<std::size_t>(t.parent[v]);
    children_sum[par] += bound[v];
    auto& mine = lightest[v];
    auto& theirs = lightest[par];
    if (mine.empty()) {  // a leaf (most vertices): no heap of its own to allocate
      ensure(theirs);
      add(theirs, t.weight[v]);  // the edge v -> parent lies inside S(parent)
      continue;
    }
    add(mine, t.weight[v]);
    if (mine.size() > theirs.size()) std::swap(mine, theirs);
    for (double w : mine) add(theirs, w);
    mine.clear();
    if (mine.capacity() > 0) spare.push_back(std::move(mine));
    mine = std::vector<double>();
  }
  return bound[0];
}

// A second argument, for trees up to 2 x 10^5 vertices: every fragment of a mapping within
// capacity weighs at most the largest capacity C, so the cheapest set of edges whose removal leaves
// only fragments of at most C is a lower bound (bin packing of the fragments onto nodes is
// relaxed away). It is a knapsack over the tree; loads are rounded DOWN to units of C / 64, which
// only relaxes it further, so the dynamic program's optimum stays a valid bound: f_v[l] = least
// traffic cut inside S(v) with v's fragment at l units, children merged one by one (cut the edge:
// + its traffic + the child's best; or join: loads add up to at most 64). O(n x 64) amortised.
double knapsack_bound(const problem& p, double min_link) {
  constexpr std::size_t units = 64;
  const auto& t = p.t;
  const std::size_t n = t.size();
  if (n > 200000) return 0;
  const double cap = *std::max_element(p.cpu_capacity.begin(), p.cpu_capacity.end()) * (1 + capacity_tolerance);
  if (!(cap > 0)) return 0;
  const double unit = cap / static_cast<double>(units);
  const double inf = std::numeric_limits<double>::infinity();
  auto own = [&](std::size_t v) {
    const double l = std::floor(t.cpu[v] / unit * (1 - 1e-12));
    std::vector<double> f(static_cast<std::size_t>(std::min(l, static_cast<double>(units))) + 1, inf);
    f.back() = 0;
    return f;
  };
  std::vector<std::vector<double>> f(n);
  std::vector<double> merged;
  for (std::size_t v = n; v-- > 0;) {
    if (f[v].empty()) f[v] = own(v);  // a leaf
    if (v == 0) break;
    const auto par = static_cast<std::size_t>(t.parent[v]);
    if (f[par].empty()) f[par] = own(par);
    const auto& fc = f[v];
    const auto& fp = f[par];
    const double best_c = *std::min_element(fc.begin(), fc.end());
    const double cut = t.weight[v] * min_link + best_c;
    merged.assign(std::min(units, (fp.size() - 1) + (fc.size() - 1)) + 1, inf);
    for (std::size_t a = 0; a < fp.size(); ++a) {
      if (fp[a] == inf) continue;
      merged[a] = std::min(merged[a], fp[a] + cut);
      for (std::size_t b = 0; b < fc.size() && a + b <= units; ++b) {
        if (fc[b] != inf) merged[a + b] = std::min(merged[a + b], fp[a] + fc[b]);
      }
    }
    f[par].swap(merged);
    std::vector<double>().swap(f[v]);
  }
  const double best = *std::min_element(f[0].begin(), f[0].end());
  return std::isfinite(best) ? best : 0;
}

}  // namespace

double proven_lower_bound(const problem& p) {
  const std::size_t n = p.t.size(), k = p.k();
  if (n < 2 || k < 2) return 0;
  double min_link = std::numeric_limits<double>::infinity();
  for (std::size_t a = 0; a < k; ++a) {
    for (std::size_t b = 0; b < k; ++b) {
      if (a != b) min_link = std::min(min_link, p.c.cost(static_cast<node_id>(a), static_cast<node_id>(b)));
    }
  }
  if (!(min_link > 0)) return 0;
  return std::max(counting_bound(p, min_link), knapsack_bound(p, min_link));
}

}  // namespace banyan::partitioner
