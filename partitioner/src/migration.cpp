// Migration-aware re-partitioning (migration.hpp). From each start (the current mapping, repaired
// first when over capacity; each candidate as given and relabelled), a best-gain local search over
// two kinds of move, both evaluated exactly with the migration term:
//  - subtree move: S(u) = u and the descendants reachable from u without leaving u's node (what a
//    deployment's assignment of u carries, since unassigned children stay with their parent) moves
//    to another node;
//  - swap: a subtree move blocked by capacity alone, paired with a subtree of the target node
//    moving back to the source, accepted when the pair gains and both nodes fit.
// Every step takes the single best move (ties: the seeded vertex order, then the lower node), so
// the search is deterministic; it stops when no move gains more than a relative epsilon. Each
// vertex's move gains are cached and, after a move, recomputed only where the move changed them.
#include "banyan/partitioner/migration.hpp"

#include "detail.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>
#include <tuple>

namespace banyan::partitioner {
namespace {

using detail::within;

class searcher {
 public:
  searcher(const problem& p, const detail::children& ch, const mapping& current, double alpha, bool root_stays,
           const std::vector<vertex_id>& order, mapping start)
      : p_(p),
        t_(p.t),
        ch_(ch),
        cur_(current),
        alpha_(alpha),
        root_stays_(root_stays),
        order_(order),
        m_(std::move(start)) {
    const std::size_t k = p.k();
    cpu_.assign(k, 0);
    mem_.assign(k, 0);
    boundary_.assign(k, 0);
    state_on_.assign(k, 0);
    double total_state = 0;
    for (std::size_t i = 0; i < t_.size(); ++i) {
      const auto v = static_cast<vertex_id>(i);
      cpu_[m_[v]] += t_.cpu[v];
      mem_[m_[v]] += detail::mem_of(t_, v);
      total_state += state_bytes(t_, v);
    }
    // Relative, like cost_epsilon: a gain of 1e-12 of everything at stake is no gain.
    eps_ = 1e-12 * (max_possible_cost(p) + alpha * total_state);
  }

  const mapping& map() const { return m_; }

  // Moves subtrees off over-capacity nodes, each time the one with the least objective increase per
  // unit of relieved load (a fraction of the source's capacity) that fits its target. False when
  // some node is still over capacity and no move fits.
  bool repair(std::size_t max_moves) {
    for (std::size_t step = 0; step < max_moves; ++step) {
      if (!any_over()) return true;
      vertex_id best_v = no_vertex;
      node_id best_to = no_node;
      double best_score = 0;
      for (vertex_id v : order_) {
        const node_id b = m_[v];
        if (!over(b) || (v == 0 && root_stays_)) continue;
        const walk w = collect(v);
        const double relief =
            share(w.cpu, p_.cpu_capacity[b]) + (has_mem_cap(b) ? share(w.mem, p_.memory_capacity[b]) : 0.0);
        if (relief <= 0) continue;
        for (std::size_t j = 0; j < p_.k(); ++j) {
          const auto to = static_cast<node_id>(j);
          if (to == b || !fits(to, cpu_[to] + w.cpu, mem_[to] + w.mem)) continue;
          const double score = delta(w, b, to) / relief;
          if (best_v == no_vertex || score < best_score)
            std::tie(best_v, best_to, best_score) = std::tuple(v, to, score);
        }
      }
      if (best_v == no_vertex) return false;
      apply(best_v, best_to);
    }
    return !any_over();
  }

  // Best-gain moves, then swaps, until neither gains or `max_moves`. The mapping must fit.
  std::size_t improve(std::size_t max_moves) {
    const std::size_t n = t_.size(), k = p_.k();
    s_cpu_.assign(n, 0);
    s_mem_.assign(n, 0);
    s_delta_.assign(n * k, 0);
    for (std::size_t v = 0; v < n; ++v) refresh(static_cast<vertex_id>(v));
    std::size_t moves = 0;
    while (moves < max_moves) {
      blocked_.clear();
      const move best = best_move();
      if (best.v != no_vertex) {
        apply_and_refresh(best.v, best.to);
      } else if (best_swap()) {
        for (std::size_t v = 0; v < n; ++v) refresh(static_cast<vertex_id>(v));
      } else {
        break;
      }
      ++moves;
    }
    return moves;
  }

 private:
  struct walk {
    double cpu = 0, mem = 0, state = 0, displaced = 0;
  };
  struct move {
    vertex_id v = no_vertex;
    node_id to = no_node;
    double delta = 0;
  };

  double c(node_id a, node_id b) const { return p_.c.cost(a, b); }
  static double share(double load, double cap) { return cap > 0 ? load / cap : (load > 0 ? 1.0 : 0.0); }
  bool has_mem_cap(node_id a) const { return !p_.memory_capacity.empty() && std::isfinite(p_.memory_capacity[a]); }
  bool fits(node_id a, double cpu, double mem) const {
    return within(cpu, p_.cpu_capacity[a]) && (!has_mem_cap(a) || within(mem, p_.memory_capacity[a]));
  }
  bool over(node_id a) const { return !fits(a, cpu_[a], mem_[a]); }
  bool any_over() const {
    for (std::size_t a = 0; a < p_.k(); ++a) {
      if (over(static_cast<node_id>(a))) return true;
    }
    return false;
  }

  // S(u) under the current mapping into members_, with its loads, its state (all, and the part
  // already away from its current node), traffic on the edges leaving it summed per node at the
  // far end (boundary_), and its state summed per current node (state_on_).
  walk collect(vertex_id u) {
    for (node_id q : touched_) boundary_[q] = 0;
    for (node_id q : touched_state_) state_on_[q] = 0;
    touched_.clear();
    touched_state_.clear();
    walk w;
    const node_id b = m_[u];
    members_.assign(1, u);
    if (u > 0) add(boundary_, touched_, m_[t_.parent[u]], t_.weight[u]);
    for (std::size_t i = 0; i < members_.size(); ++i) {
      const vertex_id x = members_[i];
      const double s = state_bytes(t_, x);
      w.cpu += t_.cpu[x];
      w.mem += detail::mem_of(t_, x);
      w.state += s;
      if (cur_[x] != b) w.displaced += s;
      add(state_on_, touched_state_, cur_[x], s);
      for (auto it = ch_.begin(x); it != ch_.end(x); ++it) {
        if (m_[*it] == b) members_.push_back(*it);
        else add(boundary_, touched_, m_[*it], t_.weight[*it]);
      }
    }
    return w;
  }
  static void add(std::vector<double>& per_node, std::vector<node_id>& touched, node_id q, double x) {
    if (std::find(touched.begin(), touched.end(), q) == touched.end()) touched.push_back(q);
    per_node[q] += x;
  }

  // Objective change of moving the collected S(u) from b to `to`.
  double delta(const walk& w, node_id b, node_id to) const {
    double d = 0;
    for (node_id q : touched_) d += boundary_[q] * (c(to, q) - c(b, q));
    // After the move, the members not currently placed on `to` are displaced.
    return d + alpha_ * ((w.state - state_on_[to]) - w.displaced);
  }

  void apply(vertex_id u, node_id to) {
    const walk w = collect(u);
    const node_id b = m_[u];
    for (vertex_id x : members_) m_[x] = to;
    cpu_[b] -= w.cpu;
    mem_[b] -= w.mem;
    cpu_[to] += w.cpu;
    mem_[to] += w.mem;
  }

  // Caches S(v)'s loads and the objective change of moving it to each node.
  void refresh(vertex_id v) {
    const walk w = collect(v);
    const std::size_t k = p_.k();
    s_cpu_[v] = w.cpu;
    s_mem_[v] = w.mem;
    for (std::size_t j = 0; j < k; ++j) {
      const auto to = static_cast<node_id>(j);
      s_delta_[static_cast<std::size_t>(v) * k + j] = to == m_[v] ? 0.0 : delta(w, m_[v], to);
    }
  }

  // Moving S(u) changes the cached figures only of: its members; u's ancestors joined to u's
  // parent's node (their subtrees held, now hold, or border S(u)); and the children of members on
  // other nodes (their edge to the parent changes ends). Everything else is untouched, so
  // refreshing these keeps every cache equal to a fresh walk.
  void apply_and_refresh(vertex_id u, node_id to) {
    collect(u);
    const node_id b = m_[u];
    dirty_ = members_;
    if (u > 0) {
      const node_id pa = m_[t_.parent[u]];
      for (vertex_id a = t_.parent[u]; a != no_vertex && m_[a] == pa; a = t_.parent[a]) dirty_.push_back(a);
    }
    for (vertex_id x : members_) {
      for (auto it = ch_.begin(x); it != ch_.end(x); ++it) {
        if (m_[*it] != b) dirty_.push_back(*it);
      }
    }
    apply(u, to);
    for (vertex_id v : dirty_) refresh(v);
  }

  // The best gaining move that fits, from the caches; gaining moves blocked by capacity go to
  // blocked_.
  move best_move() {
    move best;
    const std::size_t k = p_.k();
    for (vertex_id v : order_) {
      if (v == 0 && root_stays_) continue;
      const node_id b = m_[v];
      for (std::size_t j = 0; j < k; ++j) {
        const auto to = static_cast<node_id>(j);
        if (to == b) continue;
        const double d = s_delta_[static_cast<std::size_t>(v) * k + j];
        if (!(d < -eps_)) continue;
        if (!fits(to, cpu_[to] + s_cpu_[v], mem_[to] + s_mem_[v])) blocked_.push_back({v, to, d});
        else if (best.v == no_vertex || d < best.delta) best = {v, to, d};
      }
    }
    return best;
  }

  // Tries the most gaining blocked moves (at most 16, so a pass stays bounded) each with every
  // subtree of the target moving back to the source; applies the best pair that gains and fits.
  bool best_swap() {
    std::stable_sort(blocked_.begin(), blocked_.end(), [](const move& a, const move& b) { return a.delta < b.delta; });
    if (blocked_.size() > 16) blocked_.resize(16);
    move first, second;
    double best = -eps_;
    for (const move& mv : blocked_) {
      const node_id b = m_[mv.v], j = mv.to;
      const mapping saved = m_;
      const auto saved_cpu = cpu_;
      const auto saved_mem = mem_;
      apply(mv.v, j);
      for (vertex_id v : order_) {
        if (m_[v] != j || (v == 0 && root_stays_)) continue;
        const walk w = collect(v);
        if (!fits(b, cpu_[b] + w.cpu, mem_[b] + w.mem) || !fits(j, cpu_[j] - w.cpu, mem_[j] - w.mem)) continue;
        const double d = mv.delta + delta(w, j, b);
        if (d < best) {
          best = d;
          first = mv;
          second = {v, b, d};
        }
      }
      m_ = saved;
      cpu_ = saved_cpu;
      mem_ = saved_mem;
    }
    if (first.v == no_vertex) return false;
    apply(first.v, first.to);
    apply(second.v, second.to);
    return true;
  }

  const problem& p_;
  const tree& t_;
  const detail::children& ch_;
  const mapping& cur_;
  const double alpha_;
  const bool root_stays_;  // no move of vertex 0 (S(u) of any other u never holds it)
  const std::vector<vertex_id>& order_;
  mapping m_;
  std::vector<double> cpu_, mem_;            // load per node under m_
  std::vector<double> boundary_, state_on_;  // per node, for the last collect
  std::vector<node_id> touched_, touched_state_;
  std::vector<vertex_id> members_;
  std::vector<move> blocked_;
  std::vector<vertex_id> dirty_;
  std::vector<double> s_cpu_, s_mem_, s_delta_;  // per vertex (x k for s_delta_), see refresh
  double eps_ = 0;
};

double displaced_state(const tree& t, const mapping& current, const mapping& m) {
  double bytes = 0;
  for (std::size_t v = 0; v < t.size(); ++v) {
    if (m[v] != current[v]) bytes += state_bytes(t, static_cast<vertex_id>(v));
  }
  return bytes;
}

// `cand` with its nodes renamed so that it keeps as much state as possible where it is now (with
// `root_first`, the root's node before anything else). Only nodes of equal capacities are
// exchanged, and only when all links cost the same, so cost and feasibility are those of `cand`.
mapping relabelled(const problem& p, const mapping& current, const mapping& cand, bool root_first) {
  const std::size_t k = p.k();
  if (!p.c.uniform_cost()) return cand;
  auto same_class = [&](std::size_t a, std::size_t b) {
    return p.cpu_capacity[a] == p.cpu_capacity[b] &&
           (p.memory_capacity.empty() || p.memory_capacity[a] == p.memory_capacity[b]);
  };
  // Overlap: state (then components) on node a in `cand` and node b now.
  std::vector<double> state(k * k, 0), count(k * k, 0);
  for (std::size_t v = 0; v < cand.size(); ++v) {
    state[cand[v] * k + current[v]] += state_bytes(p.t, static_cast<vertex_id>(v));
    count[cand[v] * k + current[v]] += 1;
  }
  std::vector<std::size_t> pairs(k * k);
  std::iota(pairs.begin(), pairs.end(), 0);
  std::stable_sort(pairs.begin(), pairs.end(), [&](std::size_t x, std::size_t y) {
    return state[x] > state[y] || (state[x] == state[y] && count[x] > count[y]);
  });
  std::vector<node_id> to(k, no_node);
  std::vector<bool> used(k, false);
  if (root_first && !cand.empty() && same_class(cand[0], current[0])) {
    to[cand[0]] = current[0];
    used[current[0]] = true;
  }
  for (std::size_t pr : pairs) {
    const std::size_t a = pr / k, b = pr % k;
    if (count[pr] == 0) break;
    if (to[a] == no_node && !used[b] && same_class(a, b)) {
      to[a] = static_cast<node_id>(b);
      used[b] = true;
    }
  }
  for (std::size_t a = 0; a < k; ++a) {
    for (std::size_t b = 0; b < k && to[a] == no_node; ++b) {
      if (!used[b] && same_class(a, b)) {
        to[a] = static_cast<node_id>(b);
        used[b] = true;
      }
    }
  }
  mapping out(cand.size());
  for (std::size_t v = 0; v < cand.size(); ++v) out[v] = to[cand[v]];
  return out;
}

}  // namespace

double state_bytes(const tree& t, vertex_id v) { return t.has_memory() ? t.memory[v] : 0.0; }

result<migration_plan> plan_migration(const problem& p, const mapping& current, const migration_options& o) {
  const tree& t = p.t;
  const std::size_t n = t.size();
  if (!std::isfinite(o.alpha) || o.alpha < 0) {
    return error{errc::invalid,
                 "migration cost " + detail::format_number(o.alpha, 6) + " per byte must be a non-negative number"};
  }
  assert(current.size() == n);
  for (std::size_t i = 0; i < o.candidates.size(); ++i) {
    const auto out_of_range = [&](node_id a) { return a < 0 || static_cast<std::size_t>(a) >= p.k(); };
    if (o.candidates[i].size() != n || std::any_of(o.candidates[i].begin(), o.candidates[i].end(), out_of_range)) {
      return error{errc::invalid, "candidate mapping " + std::to_string(i) + " has " +
                                      std::to_string(o.candidates[i].size()) + " entries for " + std::to_string(n) +
                                      " components, or a node outside 0.." + std::to_string(p.k() - 1)};
    }
  }
  const detail::children ch(t);
  std::vector<vertex_id> order(n);
  std::iota(order.begin(), order.end(), 0);
  detail::rng r(o.seed);
  for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[r.below(i)]);
  const std::size_t max_moves = o.max_moves ? o.max_moves : 4 * n + 100;

  migration_plan plan;
  const evaluation now = evaluate(p, current);
  plan.cost_before = now.cost;
  plan.objective_current = now.cost;
  plan.current_feasible = now.feasible;
  plan.current_violation = now.violation;

  double total_state = 0;
  for (std::size_t v = 0; v < n; ++v) total_state += state_bytes(t, static_cast<vertex_id>(v));
  const double eps = 1e-12 * (max_possible_cost(p) + o.alpha * total_state);
  bool found = false;
  double best_bytes = 0;
  // Keeps the lowest objective; between equal ones, fewer bytes moved, then the earlier start.
  auto consider = [&](const mapping& m, const std::string& start, int candidate, bool renamed, std::size_t moves) {
    if (o.root_stays && m[0] != current[0]) return;
    const evaluation e = evaluate(p, m);
    if (!e.feasible) return;
    const double bytes = displaced_state(t, current, m);
    const double obj = e.cost + o.alpha * bytes;
    if (found && !(obj < plan.objective - eps || (obj <= plan.objective + eps && bytes < best_bytes))) return;
    found = true;
    best_bytes = bytes;
    plan.map = m;
    plan.cost_after = e.cost;
    plan.objective = obj;
    plan.start = start;
    plan.candidate = candidate;
    plan.relabelled = renamed;
    plan.local_moves = moves;
  };

  {
    searcher s(p, ch, current, o.alpha, o.root_stays, order, current);
    const bool fits = now.feasible || s.repair(max_moves);
    if (fits) {
      const std::size_t moves = s.improve(max_moves);
      consider(s.map(), now.feasible ? "current" : "current (repaired)", -1, false, moves);
    }
  }
  for (std::size_t i = 0; i < o.candidates.size(); ++i) {
    const mapping& cand = o.candidates[i];
    if (!evaluate(p, cand).feasible) continue;
    const mapping renamed = relabelled(p, current, cand, o.root_stays);
    for (const mapping* start : {&cand, &renamed}) {
      if (start == &renamed && renamed == cand) continue;
      searcher s(p, ch, current, o.alpha, o.root_stays, order, *start);
      const std::size_t moves = s.improve(max_moves);
      consider(s.map(), "candidate " + std::to_string(i) + (start == &renamed ? " (relabelled)" : ""),
               static_cast<int>(i), start == &renamed, moves);
    }
  }
  if (!found) {
    return error{errc::over_capacity, "the current mapping is over capacity (" + now.violation +
                                          "), no sequence of subtree moves repairs it" +
                                          (o.candidates.empty() ? std::string() : ", and no candidate mapping fits")};
  }

  // Group moved components: a moved vertex joins its parent's group when both go between the
  // same two nodes, so each group is one subtree an operator moves as a unit.
  plan.bytes_moved = best_bytes;
  std::vector<std::int64_t> group(n, -1);
  for (std::size_t i = 0; i < n; ++i) {
    const auto v = static_cast<vertex_id>(i);
    if (plan.map[v] == current[v]) continue;
    const vertex_id pa = t.parent[v];
    if (v > 0 && group[pa] >= 0 && current[pa] == current[v] && plan.map[pa] == plan.map[v]) {
      group[v] = group[pa];
    } else {
      group[v] = static_cast<std::int64_t>(plan.moves.size());
      plan.moves.push_back({v, current[v], plan.map[v], 0, 0});
    }
    auto& g = plan.moves[static_cast<std::size_t>(group[v])];
    ++g.components;
    g.state_bytes += state_bytes(t, v);
  }
  return plan;
}

}  // namespace banyan::partitioner
