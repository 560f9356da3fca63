// Local refinement: hill climbing over two kinds of move, both exact and capacity-checked.
//  - subtree move: S(v) = v and the descendants reachable from v without leaving v's node (the
//    part of v's fragment below v) moves to the parent's node or to a node S(v) already talks to;
//  - vertex move: v alone moves to a neighbour's node.
// One pass computes every candidate's gain bottom-up in O(n + boundary x depth), then applies the
// best ones in order of gain, re-evaluating each exactly against the current mapping first (earlier
// moves may have changed it). Then, when no single move helps, swaps: a blocked subtree move v -> j
// is paired with moving some subtree of j to v's node, accepted only if the pair lowers the cost.
// Passes repeat until nothing improves or `max_passes`.
#include "detail.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace banyan::partitioner::detail {
namespace {

struct candidate {
  double delta;
  vertex_id v;
  node_id to;
  bool single;  // vertex move rather than subtree move
};

class refiner {
 public:
  refiner(const problem& p, mapping& m) : p_(p), t_(p.t), m_(m), ch_(p.t), free_(p) {
    for (std::size_t v = 0; v < t_.size(); ++v) free_.take(m_[v], t_.cpu[v], mem_of(t_, static_cast<vertex_id>(v)));
    uniform_ = p.c.uniform_cost();
    adjacent_.assign(p.k(), 0);
    per_node_.assign(p.k(), 0.0);
    eps_ = cost_epsilon(p);  // relative: traffic of 1e-12 is as real as traffic of 1e12
  }

  std::size_t run(std::size_t max_passes) {
    std::size_t total = 0;
    for (std::size_t pass = 0; pass < max_passes; ++pass) {
      collect();
      std::size_t moved = apply();
      if (moved == 0) moved = swaps();
      total += moved;
      if (moved == 0) break;
    }
    return total;
  }

 private:
  double c(node_id a, node_id b) const { return p_.c.cost(a, b); }

  // Members of S(u) under the current mapping, into members_; returns (cpu, mem, delta to `to`).
  struct subtree_eval {
    double cpu = 0, mem = 0, delta = 0;
  };
  // With `max_members`, stops early and returns delta = +inf when S(u) is larger (swaps use it to
  // keep a pass linear: a swap partner the size of a whole fragment is not worth a walk per try).
  subtree_eval eval_subtree(vertex_id u, node_id to, std::size_t max_members = static_cast<std::size_t>(-1)) {
    subtree_eval e;
    const node_id b = m_[u];
    members_.clear();
    members_.push_back(u);
    if (u > 0) {
      const node_id pa = m_[t_.parent[u]];
      e.delta += t_.weight[u] * (c(to, pa) - c(b, pa));
    }
    for (std::size_t i = 0; i < members_.size(); ++i) {
      const vertex_id x = members_[i];
      e.cpu += t_.cpu[x];
      e.mem += mem_of(t_, x);
      if (ch_.count(x) + members_.size() > max_members) {  // before the walk: a star's root has n children
        e.delta = std::numeric_limits<double>::infinity();
        return e;
      }
      for (auto it = ch_.begin(x); it != ch_.end(x); ++it) {
        if (m_[*it] == b) members_.push_back(*it);
        else e.delta += t_.weight[*it] * (c(to, m_[*it]) - c(b, m_[*it]));
      }
    }
    return e;
  }

  double eval_single(vertex_id v, node_id to) const {
    const node_id b = m_[v];
    double d = 0;
    if (v > 0) d += t_.weight[v] * (c(to, m_[t_.parent[v]]) - c(b, m_[t_.parent[v]]));
    for (auto it = ch_.begin(v); it != ch_.end(v); ++it) d += t_.weight[*it] * (c(to, m_[*it]) - c(b, m_[*it]));
    return d;
  }

  void move_members(node_id from, node_id to, double cpu, double mem) {
    for (vertex_id x : members_) m_[x] = to;
    free_.take(from, -cpu, -mem);
    free_.take(to, cpu, mem);
  }

  // Bottom-up sweep computing the best feasible (cands_) and best blocked (blocked_) move per vertex.
  void collect() {
    const std::size_t n = t_.size();
    cands_.clear();
    blocked_.clear();
    sc_.assign(t_.cpu.begin(), t_.cpu.end());
    if (t_.has_memory()) sm_.assign(t_.memory.begin(), t_.memory.end());
    else sm_.assign(n, 0.0);
    below_.resize(n);
    for (std::size_t i = n; i-- > 0;) {
      const auto v = static_cast<vertex_id>(i);
      const node_id b = m_[v];
      auto& L = below_[v];
      const node_id pa = v > 0 ? m_[t_.parent[v]] : no_node;
      auto subtree_delta = [&](node_id j) {
        double d = v > 0 ? t_.weight[v] * (c(j, pa) - c(b, pa)) : 0.0;
        for (const auto& [g, w] : L) d += w * (c(j, g) - c(b, g));
        return d;
      };
      auto consider = [&](node_id j, double d, double cpu, double mem, bool single) {
        if (j == b || !(d < -eps_)) return;
        if (free_.fits(p_, j, cpu, mem)) cands_.push_back({d, v, j, single});
        else if (!single) blocked_.push_back({d, v, j, false});
      };
      if (v > 0) consider(pa, subtree_delta(pa), sc_[v], sm_[v], false);
      for (const auto& [g, w] : L) {
        if (g != pa) consider(g, subtree_delta(g), sc_[v], sm_[v], false);
      }
      // With unequal link costs a fragment's top may gain by moving to a node it does not talk to
      // yet (a cheaper link to its parent's node): try every node there.
      if (!uniform_ && v > 0 && pa != b) {
        for (std::size_t j = 0; j < p_.k(); ++j) {
          const auto g = static_cast<node_id>(j);
          if (g == pa || std::any_of(L.begin(), L.end(), [&](const auto& e) { return e.first == g; })) continue;
          consider(g, subtree_delta(g), sc_[v], sm_[v], false);
        }
      }
      // Vertex moves to a neighbour's node (the parent's one, or a child's on another node). One
      // pass over the children sums their traffic per node, so a vertex with many children (a
      // star's root) costs O(children + k^2), not O(children x k).
      touched_.clear();
      for (auto it = ch_.begin(v); it != ch_.end(v); ++it) {
        const node_id h = m_[*it];
        if (!adjacent_[h]) {
          adjacent_[h] = 1;
          touched_.push_back(h);
        }
        per_node_[h] += t_.weight[*it];
      }
      auto single_delta = [&](node_id j) {
        double d = v > 0 ? t_.weight[v] * (c(j, pa) - c(b, pa)) : 0.0;
        for (node_id h : touched_) d += per_node_[h] * (c(j, h) - c(b, h));
        return d;
      };
      if (v > 0 && pa != b) consider(pa, single_delta(pa), t_.cpu[v], mem_of(t_, v), true);
      for (const auto& [g, w] : L) {
        if (g != pa && adjacent_[g]) consider(g, single_delta(g), t_.cpu[v], mem_of(t_, v), true);
      }
      for (node_id h : touched_) {
        adjacent_[h] = 0;
        per_node_[h] = 0;
      }
      // Hand S(v)'s figures to the parent.
      if (v > 0) {
        const vertex_id par = t_.parent[v];
        if (pa == b) {
          sc_[par] += sc_[v];
          sm_[par] += sm_[v];
          merge(below_[par], L);
        } else {
          add(below_[par], b, t_.weight[v]);
        }
      }
      L.clear();
      L.shrink_to_fit();
    }
  }

  static void add(std::vector<std::pair<node_id, double>>& L, node_id g, double w) {
    if (w == 0) return;
    for (auto& [h, x] : L) {
      if (h == g) {
        x += w;
        return;
      }
    }
    L.emplace_back(g, w);
  }
  static void merge(std::vector<std::pair<node_id, double>>& into, std::vector<std::pair<node_id, double>>& from) {
    if (into.empty()) {
      into.swap(from);
      return;
    }
    for (const auto& [g, w] : from) add(into, g, w);
  }

  std::size_t apply() {
    std::sort(cands_.begin(), cands_.end(), [](const candidate& a, const candidate& b) {
      return a.delta < b.delta || (a.delta == b.delta && a.v < b.v);
    });
    std::size_t moved = 0;
    for (const auto& cd : cands_) {
      const node_id b = m_[cd.v];
      if (b == cd.to) continue;
      if (cd.single) {
        const double d = eval_single(cd.v, cd.to);
        if (d < -eps_ && free_.fits(p_, cd.to, t_.cpu[cd.v], mem_of(t_, cd.v))) {
          members_.assign(1, cd.v);
          move_members(b, cd.to, t_.cpu[cd.v], mem_of(t_, cd.v));
          ++moved;
        }
        continue;
      }
      const auto e = eval_subtree(cd.v, cd.to);
      if (e.delta < -eps_ && free_.fits(p_, cd.to, e.cpu, e.mem)) {
        move_members(b, cd.to, e.cpu, e.mem);
        ++moved;
      }
    }
    return moved;
  }

  // For each blocked subtree move v -> j (best gains first, bounded), look for a subtree on j whose
  // move to v's node frees enough room and keeps the pair's total gain negative.
  std::size_t swaps() {
    if (blocked_.empty()) return 0;
    // Only the 64 best are tried: select them in O(n) before sorting (a star has ~n blocked moves).
    const auto better = [](const candidate& a, const candidate& b) {
      return a.delta < b.delta || (a.delta == b.delta && a.v < b.v);
    };
    if (blocked_.size() > 64) {
      std::nth_element(blocked_.begin(), blocked_.begin() + 64, blocked_.end(), better);
      blocked_.resize(64);
    }
    std::sort(blocked_.begin(), blocked_.end(), better);
    // Fragment tops per node: the roots of maximal same-node connected pieces, and their children
    // inside the piece (branches); these are the subtrees worth sending back.
    std::vector<std::vector<vertex_id>> pool(p_.k());
    for (std::size_t v = 0; v < t_.size(); ++v) {
      const auto x = static_cast<vertex_id>(v);
      const bool top = x == 0 || m_[t_.parent[x]] != m_[x];
      const bool branch = !top && (t_.parent[x] == 0 || m_[t_.parent[t_.parent[x]]] != m_[x]);
      if (top || branch) pool[m_[x]].push_back(x);
    }
    std::size_t moved = 0;
    std::vector<vertex_id> saved;
    constexpr std::size_t swap_limit = 256;
    for (const auto& cd : blocked_) {
      const node_id a = m_[cd.v], j = cd.to;
      if (a == j) continue;
      const auto ev = eval_subtree(cd.v, j, swap_limit);
      if (!(ev.delta < -eps_)) continue;
      const double need_cpu = ev.cpu - free_.cpu[j];
      saved = members_;
      // Tentatively apply v -> j (capacity overshoot allowed for the moment), then find the best u.
      for (vertex_id x : saved) m_[x] = j;
      double best = 0;
      vertex_id best_u = no_vertex;
      std::size_t scanned = 0;
      for (vertex_id u : pool[j]) {
        if (scanned > 256) break;
        if (m_[u] != j) continue;
        ++scanned;
        if (std::find(saved.begin(), saved.end(), u) != saved.end()) continue;
        const auto eu = eval_subtree(u, a, swap_limit);
        if (!std::isfinite(eu.delta)) continue;
        if (eu.cpu < need_cpu - p_.cpu_capacity[j] * capacity_tolerance) continue;
        const bool ok_j = within(p_.cpu_capacity[j] - free_.cpu[j] + ev.cpu - eu.cpu, p_.cpu_capacity[j]) &&
                          (free_.mem.empty() ||
                           within(p_.memory_capacity[j] - free_.mem[j] + ev.mem - eu.mem, p_.memory_capacity[j]));
        const bool ok_a = within(p_.cpu_capacity[a] - free_.cpu[a] - ev.cpu + eu.cpu, p_.cpu_capacity[a]) &&
                          (free_.mem.empty() ||
                           within(p_.memory_capacity[a] - free_.mem[a] - ev.mem + eu.mem, p_.memory_capacity[a]));
        if (!ok_j || !ok_a) continue;
        if (ev.delta + eu.delta < best - eps_) {
          best = ev.delta + eu.delta;
          best_u = u;
        }
      }
      if (best_u < 0) {
        for (vertex_id x : saved) m_[x] = a;  // undo
        continue;
      }
      free_.take(a, -ev.cpu, -ev.mem);
      free_.take(j, ev.cpu, ev.mem);
      const auto eu = eval_subtree(best_u, a);
      move_members(j, a, eu.cpu, eu.mem);
      ++moved;
    }
    return moved;
  }

  const problem& p_;
  const tree& t_;
  mapping& m_;
  children ch_;
  room free_;
  double eps_;
  bool uniform_ = true;
  std::vector<char> adjacent_;    // per node: some child of the current vertex is there
  std::vector<double> per_node_;  // per node: traffic from the current vertex's children there
  std::vector<node_id> touched_;
  std::vector<double> sc_, sm_;
  std::vector<std::vector<std::pair<node_id, double>>> below_;
  std::vector<candidate> cands_, blocked_;
  std::vector<vertex_id> members_;
};

// Relabels whole nodes: the contents of nodes a and b trade places when both fit and the cost
// drops (only the k x k traffic between nodes matters, so each trial is O(k^2)). Exhaustive over
// all permutations for k <= 5, pairwise hill climbing above. Matters only with unequal link costs.
std::size_t relabel(const problem& p, mapping& m) {
  const std::size_t k = p.k();
  if (k < 2 || p.c.uniform_cost()) return 0;
  const auto& t = p.t;
  std::vector<double> traffic(k * k, 0), cpu(k, 0), mem(k, 0);
  for (std::size_t v = 0; v < t.size(); ++v) {
    cpu[m[v]] += t.cpu[v];
    mem[m[v]] += mem_of(t, static_cast<vertex_id>(v));
    if (v > 0 && m[v] != m[t.parent[v]]) traffic[m[v] * k + m[t.parent[v]]] += t.weight[v];
  }
  auto fits = [&](std::size_t content, std::size_t at) {
    return within(cpu[content], p.cpu_capacity[at]) &&
           (p.memory_capacity.empty() || !std::isfinite(p.memory_capacity[at]) ||
            within(mem[content], p.memory_capacity[at]));
  };
  // perm[a]: the node that gets what is on a now.
  auto cost_of = [&](const std::vector<node_id>& perm) {
    double c = 0;
    for (std::size_t a = 0; a < k; ++a) {
      for (std::size_t b = 0; b < k; ++b) {
        if (traffic[a * k + b] != 0) c += traffic[a * k + b] * p.c.cost(perm[a], perm[b]);
      }
    }
    return c;
  };
  std::vector<node_id> perm(k), best(k);
  for (std::size_t a = 0; a < k; ++a) perm[a] = best[a] = static_cast<node_id>(a);
  const double eps = cost_epsilon(p);
  double best_cost = cost_of(perm);
  const double start = best_cost;
  if (k <= 5) {
    while (std::next_permutation(perm.begin(), perm.end())) {
      bool ok = true;
      for (std::size_t a = 0; a < k && ok; ++a) ok = fits(a, static_cast<std::size_t>(perm[a]));
      if (!ok) continue;
      const double c = cost_of(perm);
      if (c < best_cost - eps) {
        best_cost = c;
        best = perm;
      }
    }
  } else {
    for (bool improved = true; improved;) {
      improved = false;
      for (std::size_t a = 0; a < k; ++a) {
        for (std::size_t b = a + 1; b < k; ++b) {
          std::swap(best[a], best[b]);
          const bool ok = fits(a, static_cast<std::size_t>(best[a])) && fits(b, static_cast<std::size_t>(best[b]));
          const double c = ok ? cost_of(best) : INFINITY;
          if (c < best_cost - eps) {
            best_cost = c;
            improved = true;
          } else {
            std::swap(best[a], best[b]);
          }
        }
      }
    }
  }
  if (!(best_cost < start - eps)) return 0;
  for (auto& x : m) x = best[x];
  return 1;
}

}  // namespace

std::size_t refine(const problem& p, mapping& m, std::size_t max_passes) {
  std::size_t moved = relabel(p, m);
  refiner r(p, m);
  moved += r.run(max_passes);
  return moved + relabel(p, m);
}

}  // namespace banyan::partitioner::detail
