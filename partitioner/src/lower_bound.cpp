// A proven lower bound on the cost of every mapping within capacity, cheap enough to report next to
// every heuristic's result (issue #11 item 3).
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

double proven_lower_bound(const problem& p) {
  const auto& t = p.t;
  const std::size_t n = t.size(), k = p.k();
  if (n < 2 || k < 2) return 0;
  double min_link = std::numeric_limits<double>::infinity();
  for (std::size_t a = 0; a < k; ++a) {
    for (std::size_t b = 0; b < k; ++b) {
      if (a != b) min_link = std::min(min_link, p.c.cost(static_cast<node_id>(a), static_cast<node_id>(b)));
    }
  }
  if (!(min_link > 0)) return 0;
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
    if (h.size() < keep) { h.push_back(w); std::push_heap(h.begin(), h.end()); return; }
    if (w >= h.front()) return;
    std::pop_heap(h.begin(), h.end());
    h.back() = w;
    std::push_heap(h.begin(), h.end());
  };
  std::vector<double> sorted;
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
      add(theirs, t.weight[v]);  // the edge v -> parent lies inside S(parent)
      continue;
    }
    add(mine, t.weight[v]);
    if (mine.size() > theirs.size()) std::swap(mine, theirs);
    for (double w : mine) add(theirs, w);
    std::vector<double>().swap(mine);
  }
  return bound[0];
}

}  // namespace banyan::partitioner
