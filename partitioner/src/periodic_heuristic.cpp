// The periodic planner's heuristic (RPMA-like: relaxation, then precise passes):
//   1. LP relaxation of the exact model (periodic_mip.cpp) on CLP through CBC, when it has at most
//      `lp_max_columns` columns; each workflow takes its pattern of largest y, each subtree its node
//      of largest h. Larger models skip the LP (decomposed: patterns per workflow by their own
//      awake subtree-slots, nodes by greedy placement, largest demand x awake time first, each to
//      the node where it adds least cost within capacity).
//   2. Capacity repair: a node over capacity in some slot sheds the subtree whose move to another
//      node costs least.
//   3. Local search with exact, incremental cost: every subtree to every other node, every workflow
//      to every other pattern, while the model cost drops; then pair swaps, a node emptied, two
//      nodes' subtrees exchanged, a workflow's pattern with its subtrees placed afresh.
//   4. On models small enough for the LP: every other pattern of every workflow with all subtrees
//      placed afresh around it, then 200 seeded kicks (iterated local search), each followed by the
//      local search; then the exact model restricted to neighbourhoods of the best schedule
//      (relaxation-induced, then all patterns, then all nodes), 1 s each.
// The Monte-Carlo repair (periodic_planner.cpp) comes after, for the heuristic and the MIP alike.
#include "periodic_model.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

namespace banyan::partitioner::periodic::detail {

bool solve_relaxation(const model& m, const std::vector<int>& margins, std::vector<std::vector<double>>& y,
                      std::vector<std::vector<double>>& h, double& bound);

namespace {

constexpr std::size_t lp_max_columns = 60000;
constexpr double precise_time_limit_s = 1;  // each of the three restricted MIPs
constexpr std::size_t max_replans = 1024;
constexpr std::size_t kicks = 200;  // iterated local search rounds (models small enough for the LP)

class state {
 public:
  state(const model& m, const std::vector<int>& margins) : refs_{&m, m.w}, T_(m.T) {
    const std::size_t S = refs_.w->subtrees.size(), k = refs_.w->nodes.size();
    slots_.resize(m.flows.size());
    for (std::size_t f = 0; f < m.flows.size(); ++f) {
      const auto& fm = m.flows[f];
      slots_[f].resize(fm.patterns.size());
      for (std::size_t c = 0; c < fm.patterns.size(); ++c) {
        slots_[f][c].resize(fm.subtrees.size());
        for (std::size_t j = 0; j < fm.subtrees.size(); ++j) {
          for_each_slot(m, f, fm.patterns[c], j, margins[f],
                        [&](std::size_t t) { slots_[f][c][j].push_back(static_cast<std::uint32_t>(t)); });
        }
      }
    }
    cov_.assign(S * T_, 0);
    cnt_.assign(k * T_, 0);
    used_.assign(k, 0);
    load_.assign(k * T_, 0);
    rate_.resize(k);
    for (std::size_t n = 0; n < k; ++n) rate_[n] = refs_.w->nodes[n].cost_per_hour * m.slot_hours;
    talks_of_.resize(S);
    for (std::size_t e = 0; e < m.talks.size(); ++e) {
      talks_of_[m.talks[e].a].push_back(e);
      talks_of_[m.talks[e].b].push_back(e);
    }
  }

  // Sets patterns with every subtree unplaced (the nodes empty: what an earlier schedule placed
  // leaves no load behind).
  void set_patterns(const std::vector<int>& patterns) {
    c_.pattern = patterns;
    c_.node.assign(refs_.w->subtrees.size(), no_node);
    std::fill(cov_.begin(), cov_.end(), 0);
    std::fill(cnt_.begin(), cnt_.end(), 0);
    std::fill(used_.begin(), used_.end(), 0);
    std::fill(load_.begin(), load_.end(), 0.0);
    for (std::size_t f = 0; f < patterns.size(); ++f) cover(f, static_cast<std::size_t>(patterns[f]), +1);
  }

  std::vector<std::uint32_t> awake(std::size_t s) const {
    std::vector<std::uint32_t> out;
    for (std::size_t t = 0; t < T_; ++t) {
      if (cov_[s * T_ + t]) out.push_back(static_cast<std::uint32_t>(t));
    }
    return out;
  }

  // Cost of putting s (awake at `slots`) on n, given where the others are; +inf when it does not fit.
  double place_cost(std::size_t s, node_id n, const std::vector<std::uint32_t>& slots, bool check = true) const {
    const auto nn = static_cast<std::size_t>(n);
    const double d = refs_.w->subtrees[s].demand, cap = refs_.w->nodes[nn].capacity;
    double cost = 0;
    for (auto t : slots) {
      const std::size_t at = nn * T_ + t;
      if (check && !within_capacity(load_[at] + d, cap)) return std::numeric_limits<double>::infinity();
      if (cnt_[at] == 0) cost += rate_[nn];
    }
    return cost + traffic_of(s, n);
  }
  // Cost removed by taking s off its node.
  double remove_gain(std::size_t s, const std::vector<std::uint32_t>& slots) const {
    const auto nn = static_cast<std::size_t>(c_.node[s]);
    double gain = 0;
    for (auto t : slots) {
      if (cnt_[nn * T_ + t] == 1) gain += rate_[nn];
    }
    return gain + traffic_of(s, c_.node[s]);
  }
  double traffic_of(std::size_t s, node_id n) const {
    if (refs_.w->message_cost == 0) return 0;
    double cost = 0;
    for (auto e : talks_of_[s]) {
      const auto& tk = m_ref().talks[e];
      const std::size_t other = tk.a == s ? tk.b : tk.a;
      if (c_.node[other] != no_node) cost += tk.messages * refs_.w->message_cost * refs_.w->link(n, c_.node[other]);
    }
    return cost;
  }
  void put(std::size_t s, node_id n, const std::vector<std::uint32_t>& slots) {
    c_.node[s] = n;
    if (n == no_node) return;
    const auto nn = static_cast<std::size_t>(n);
    for (auto t : slots) {
      if (cnt_[nn * T_ + t]++ == 0) ++used_[nn];
      load_[nn * T_ + t] += refs_.w->subtrees[s].demand;
    }
  }
  void take(std::size_t s, const std::vector<std::uint32_t>& slots) {
    const auto nn = static_cast<std::size_t>(c_.node[s]);
    for (auto t : slots) {
      if (--cnt_[nn * T_ + t] == 0) --used_[nn];
      load_[nn * T_ + t] -= refs_.w->subtrees[s].demand;
    }
    c_.node[s] = no_node;
  }

  // Greedy placement of every unplaced subtree; false when one fits nowhere.
  bool place_all(const std::vector<std::vector<double>>* h, node_id avoid = no_node) {
    std::vector<std::size_t> order;
    std::vector<std::vector<std::uint32_t>> slots(refs_.w->subtrees.size());
    for (std::size_t s = 0; s < refs_.w->subtrees.size(); ++s) {
      if (c_.node[s] != no_node) continue;
      slots[s] = awake(s);
      order.push_back(s);
    }
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return refs_.w->subtrees[a].demand * static_cast<double>(slots[a].size()) >
             refs_.w->subtrees[b].demand * static_cast<double>(slots[b].size());
    });
    for (auto s : order) {
      node_id best = no_node;
      double best_cost = std::numeric_limits<double>::infinity();
      // The LP's favourite node first, when it fits.
      if (h) {
        node_id fav = no_node;
        for (std::size_t n = 0; n < (*h)[s].size(); ++n) {
          if ((*h)[s][n] >= 0 && (fav == no_node || (*h)[s][n] > (*h)[s][static_cast<std::size_t>(fav)]))
            fav = static_cast<node_id>(n);
        }
        if (fav != no_node && std::isfinite(place_cost(s, fav, slots[s]))) best = fav;
      }
      for (int round = 0; round < 2 && best == no_node; ++round) {
        for (const node_id n : round == 0 ? candidates(s) : all_nodes()) {
          if (n == avoid) continue;
          const double c = place_cost(s, n, slots[s]);
          if (c < best_cost - 1e-12) {
            best_cost = c;
            best = n;
          }
        }
      }
      if (best == no_node) return false;
      put(s, best, slots[s]);
    }
    return true;
  }

  // The nodes a subtree is tried on: all of them up to `max_candidates`; beyond, the nodes of the
  // subtrees it talks to and `max_candidates` others from a window that moves on at every call, so
  // that a pass over 10^4 subtrees and 10^3 nodes stays linear in the subtrees.
  static constexpr std::size_t max_candidates = 64;
  std::vector<node_id> all_nodes() const {
    std::vector<node_id> out(refs_.w->nodes.size());
    for (std::size_t n = 0; n < out.size(); ++n) out[n] = static_cast<node_id>(n);
    return out;
  }
  std::vector<node_id> candidates(std::size_t s) {
    const std::size_t k = refs_.w->nodes.size();
    if (k <= max_candidates) return all_nodes();
    std::vector<node_id> out;
    for (auto e : talks_of_[s]) {
      const auto& tk = m_ref().talks[e];
      const node_id n = c_.node[tk.a == s ? tk.b : tk.a];
      if (n != no_node) out.push_back(n);
    }
    for (std::size_t i = 0; i < max_candidates; ++i) out.push_back(static_cast<node_id>((window_ + i) % k));
    window_ = (window_ + max_candidates / 2 + 1) % k;
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

  // One pass of node moves; true when one improved.
  bool move_pass() {
    bool improved = false;
    for (std::size_t s = 0; s < refs_.w->subtrees.size(); ++s) {
      const auto slots = awake(s);
      const double gain = remove_gain(s, slots);
      const node_id from = c_.node[s];
      take(s, slots);
      node_id best = from;
      double best_delta = -1e-9 * std::max(1.0, gain);
      for (const node_id n : candidates(s)) {
        if (n == from) continue;
        const double delta = place_cost(s, n, slots) - gain;
        if (delta < best_delta) {
          best_delta = delta;
          best = n;
        }
      }
      put(s, best, slots);
      improved |= best != from;
    }
    return improved;
  }

  // Switches flow f to pattern c; returns the cost change, +inf (and no change) when over capacity.
  double switch_pattern(std::size_t f, std::size_t c) {
    const auto old = static_cast<std::size_t>(c_.pattern[f]);
    const double before = node_cost();
    cover(f, old, -1);
    cover(f, c, +1);
    c_.pattern[f] = static_cast<int>(c);
    if (!fits(f)) {
      cover(f, c, -1);
      cover(f, old, +1);
      c_.pattern[f] = static_cast<int>(old);
      return std::numeric_limits<double>::infinity();
    }
    return node_cost() - before;
  }

  bool pattern_pass() {
    bool improved = false;
    for (std::size_t f = 0; f < m_ref().flows.size(); ++f) {
      for (std::size_t c = 0; c < m_ref().flows[f].patterns.size(); ++c) {
        const auto old = static_cast<std::size_t>(c_.pattern[f]);
        if (c == old) continue;
        const double delta = switch_pattern(f, c);
        if (delta < -1e-9) {
          improved = true;
        } else if (std::isfinite(delta)) {
          switch_pattern(f, old);
        }
      }
    }
    return improved;
  }

  // Moves subtrees off nodes over capacity; false when one cannot go anywhere.
  bool repair_capacity() {
    const std::size_t k = refs_.w->nodes.size();
    for (std::size_t n = 0; n < k; ++n) {
      for (std::size_t t = 0; t < T_; ++t) {
        while (!within_capacity(load_[n * T_ + t], refs_.w->nodes[n].capacity)) {
          std::size_t best_s = 0;
          node_id best_n = no_node;
          double best = std::numeric_limits<double>::infinity();
          for (std::size_t s = 0; s < refs_.w->subtrees.size(); ++s) {
            if (c_.node[s] != static_cast<node_id>(n) || !cov_[s * T_ + t]) continue;
            const auto slots = awake(s);
            const double gain = remove_gain(s, slots);
            for (std::size_t o = 0; o < k; ++o) {
              if (o == n) continue;
              const double c = place_cost(s, static_cast<node_id>(o), slots) - gain;
              if (c < best) {
                best = c;
                best_s = s;
                best_n = static_cast<node_id>(o);
              }
            }
          }
          if (best_n == no_node) return false;
          const auto slots = awake(best_s);
          take(best_s, slots);
          put(best_s, best_n, slots);
        }
      }
    }
    return true;
  }

  double total_cost() const { return node_cost() + traffic_cost(m_ref(), c_.node); }

  // Takes schedule `c` (patterns and nodes) as it is.
  void adopt(const choice& c) {
    set_patterns(c.pattern);
    for (std::size_t s = 0; s < c.node.size(); ++s) put(s, c.node[s], awake(s));
  }

  // Workflow f takes pattern c and every subtree is placed afresh (greedy); false when one fits
  // nowhere.
  bool replan_with(std::size_t f, std::size_t c) {
    for (std::size_t s = 0; s < refs_.w->subtrees.size(); ++s)
      if (c_.node[s] != no_node) take(s, awake(s));
    cover(f, static_cast<std::size_t>(c_.pattern[f]), -1);
    cover(f, c, +1);
    c_.pattern[f] = static_cast<int>(c);
    return place_all(nullptr) && repair_capacity();
  }

  // A kick out of a local minimum: one workflow takes another pattern, and the subtrees of a random
  // node (or, every other time, a random third of all subtrees) leave their nodes and are placed
  // again; false when they fit nowhere.
  bool perturb(rng& r, bool whole_node) {
    const std::size_t F = m_ref().flows.size(), S = refs_.w->subtrees.size(), k = refs_.w->nodes.size();
    std::vector<std::size_t> leaving;
    const auto emptied = static_cast<node_id>(r.next() % k);
    for (std::size_t s = 0; s < S; ++s) {
      if (whole_node ? c_.node[s] == emptied : r.next() % 3 == 0) leaving.push_back(s);
    }
    for (auto s : leaving) take(s, awake(s));
    if (F > 0) {
      const std::size_t f = r.next() % F, patterns = m_ref().flows[f].patterns.size();
      const auto old = static_cast<std::size_t>(c_.pattern[f]);
      if (patterns > 1) {
        // Its subtrees leave too: their awake slots change.
        for (auto sub : m_ref().flows[f].subtrees)
          if (c_.node[sub] != no_node) take(sub, awake(sub));
        cover(f, old, -1);
        const std::size_t c = (old + 1 + r.next() % (patterns - 1)) % patterns;
        cover(f, c, +1);
        c_.pattern[f] = static_cast<int>(c);
      }
    }
    return place_all(nullptr, whole_node ? emptied : no_node) && repair_capacity();
  }

  // The local search: node moves and pattern switches to a minimum, then the larger moves.
  void descend() {
    for (int pass = 0; pass < 20; ++pass) {
      bool improved = move_pass();
      improved |= pattern_pass();
      if (!improved) improved |= swap_pass();
      if (!improved) improved |= empty_pass();
      if (!improved) improved |= exchange_pass();
      if (!improved) improved |= flow_pass();
      if (!improved) break;
    }
  }

  // Empties each node in turn (its subtrees each to their cheapest other node), kept when cheaper.
  bool empty_pass() {
    bool improved = false;
    for (std::size_t n = 0; n < refs_.w->nodes.size(); ++n) {
      std::vector<std::size_t> on;
      for (std::size_t s = 0; s < refs_.w->subtrees.size(); ++s) {
        if (c_.node[s] == static_cast<node_id>(n)) on.push_back(s);
      }
      if (on.empty()) continue;
      const double cost = total_cost();
      std::vector<std::vector<std::uint32_t>> slots;
      for (auto s : on) {
        slots.push_back(awake(s));
        take(s, slots.back());
      }
      if (place_all(nullptr, static_cast<node_id>(n)) && total_cost() < cost - 1e-9 * std::max(1.0, cost)) {
        improved = true;
        continue;
      }
      for (std::size_t i = 0; i < on.size(); ++i) {
        if (c_.node[on[i]] != no_node) take(on[i], slots[i]);
        put(on[i], static_cast<node_id>(n), slots[i]);
      }
    }
    return improved;
  }

  // Exchanges the nodes of two subtrees, kept when cheaper (up to 300 subtrees: O(S^2) pairs).
  bool swap_pass() {
    const std::size_t S = refs_.w->subtrees.size();
    if (S > 300) return false;
    bool improved = false;
    for (std::size_t a = 0; a < S; ++a) {
      for (std::size_t b = a + 1; b < S; ++b) {
        const node_id na = c_.node[a], nb = c_.node[b];
        if (na == nb) continue;
        const auto sa = awake(a), sb = awake(b);
        const double cost = total_cost();
        take(a, sa);
        take(b, sb);
        bool ok = std::isfinite(place_cost(a, nb, sa));
        if (ok) put(a, nb, sa);
        ok = ok && std::isfinite(place_cost(b, na, sb));
        if (ok) put(b, na, sb);
        if (ok && total_cost() < cost - 1e-9 * std::max(1.0, cost)) {
          improved = true;
          continue;
        }
        if (c_.node[a] != no_node) take(a, sa);
        if (c_.node[b] != no_node) take(b, sb);
        put(a, na, sa);
        put(b, nb, sb);
      }
    }
    return improved;
  }

  // Exchanges everything two nodes run (nodes differ in cost and capacity), kept when cheaper (up to
  // 64 nodes: O(k^2) pairs).
  bool exchange_pass() {
    const std::size_t S = refs_.w->subtrees.size(), k = refs_.w->nodes.size();
    if (k > 64) return false;
    bool improved = false;
    std::vector<std::vector<std::uint32_t>> slots(S);
    for (std::size_t s = 0; s < S; ++s) slots[s] = awake(s);
    for (std::size_t a = 0; a < k; ++a) {
      for (std::size_t b = a + 1; b < k; ++b) {
        const auto na = static_cast<node_id>(a), nb = static_cast<node_id>(b);
        std::vector<std::size_t> moving;
        for (std::size_t s = 0; s < S; ++s)
          if (c_.node[s] == na || c_.node[s] == nb) moving.push_back(s);
        if (moving.empty()) continue;
        const double cost = total_cost();
        std::vector<node_id> was;
        for (auto s : moving) {
          was.push_back(c_.node[s]);
          take(s, slots[s]);
        }
        bool ok = true;
        for (std::size_t i = 0; i < moving.size() && ok; ++i) {
          const node_id to = was[i] == na ? nb : na;
          ok = std::isfinite(place_cost(moving[i], to, slots[moving[i]]));
          if (ok) put(moving[i], to, slots[moving[i]]);
        }
        if (ok && total_cost() < cost - 1e-9 * std::max(1.0, cost)) {
          improved = true;
          continue;
        }
        for (std::size_t i = 0; i < moving.size(); ++i) {
          if (c_.node[moving[i]] != no_node) take(moving[i], slots[moving[i]]);
          put(moving[i], was[i], slots[moving[i]]);
        }
      }
    }
    return improved;
  }

  // Switches a workflow's pattern and places its subtrees afresh, kept when cheaper.
  bool flow_pass() {
    bool improved = false;
    for (std::size_t f = 0; f < m_ref().flows.size(); ++f) {
      const auto& subs = m_ref().flows[f].subtrees;
      for (std::size_t c = 0; c < m_ref().flows[f].patterns.size(); ++c) {
        const auto old = static_cast<std::size_t>(c_.pattern[f]);
        if (c == old) continue;
        const double cost = total_cost();
        std::vector<node_id> was;
        for (auto s : subs) {
          was.push_back(c_.node[s]);
          take(s, awake(s));
        }
        cover(f, old, -1);
        cover(f, c, +1);
        c_.pattern[f] = static_cast<int>(c);
        if (place_all(nullptr) && total_cost() < cost - 1e-9 * std::max(1.0, cost)) {
          improved = true;
          continue;
        }
        for (auto s : subs) {
          if (c_.node[s] != no_node) take(s, awake(s));
        }
        cover(f, c, -1);
        cover(f, old, +1);
        c_.pattern[f] = static_cast<int>(old);
        for (std::size_t i = 0; i < subs.size(); ++i) {
          if (c_.node[subs[i]] == no_node) put(subs[i], was[i], awake(subs[i]));
        }
      }
    }
    return improved;
  }

  double node_cost() const {
    double cost = 0;
    for (std::size_t n = 0; n < refs_.w->nodes.size(); ++n) {
      cost += rate_[n] * static_cast<double>(used_[n]);
    }
    return cost;
  }
  const choice& current() const { return c_; }

 private:
  // Adds (+1) or removes (-1) flow f's pattern c coverage, keeping node counts and loads.
  void cover(std::size_t f, std::size_t c, int sign) {
    const auto& fm = m_ref().flows[f];
    for (std::size_t j = 0; j < fm.subtrees.size(); ++j) {
      const std::size_t s = fm.subtrees[j];
      const node_id n = c_.node.empty() ? no_node : c_.node[s];
      for (auto t : slots_[f][c][j]) {
        auto& v = cov_[s * T_ + t];
        const bool was = v > 0;
        v = static_cast<std::uint16_t>(v + sign);
        const bool is = v > 0;
        if (n != no_node && was != is) {
          const std::size_t at = static_cast<std::size_t>(n) * T_ + t;
          const auto nn = static_cast<std::size_t>(n);
          if (is && cnt_[at]++ == 0) ++used_[nn];
          if (!is && --cnt_[at] == 0) --used_[nn];
          load_[at] += (is ? 1 : -1) * refs_.w->subtrees[s].demand;
        }
      }
    }
  }
  bool fits(std::size_t f) const {
    const auto& fm = m_ref().flows[f];
    for (std::size_t j = 0; j < fm.subtrees.size(); ++j) {
      const node_id n = c_.node[fm.subtrees[j]];
      if (n == no_node) continue;
      const auto nn = static_cast<std::size_t>(n);
      for (auto t : slots_[f][static_cast<std::size_t>(c_.pattern[f])][j]) {
        if (!within_capacity(load_[nn * T_ + t], refs_.w->nodes[nn].capacity)) return false;
      }
    }
    return true;
  }

  // Restoring a trial copies the whole state (`*this = before`); the model is shared.
  struct refs {
    const model* m;
    const workload* w;
  };
  const model& m_ref() const { return *refs_.m; }
  refs refs_;
  std::size_t T_;
  std::size_t window_ = 0;  // candidates(): where the next window of nodes starts
  choice c_;
  std::vector<std::vector<std::vector<std::vector<std::uint32_t>>>> slots_;  // [f][c][j] -> slots
  std::vector<std::uint16_t> cov_;                                           // [s][t]: flows keeping s awake
  std::vector<int> cnt_;                                                     // [n][t]: awake subtrees on n
  std::vector<std::size_t> used_;                                            // per node: slots with cnt_ > 0
  std::vector<double> load_;                                                 // [n][t]
  std::vector<double> rate_;                                                 // per node: cost of one slot in use
  std::vector<std::vector<std::size_t>> talks_of_;
};

}  // namespace

solved solve_heuristic(const model& m, const std::vector<int>& margins) {
  solved out;
  std::vector<std::vector<double>> y, h;
  double bound = 0;
  const std::size_t columns = mip_columns(m, margins);
  const bool lp = columns <= lp_max_columns && solve_relaxation(m, margins, y, h, bound);
  // Patterns: the LP's largest y, and (the decomposed choice) the least demand-weighted awake time.
  std::vector<int> lp_patterns(m.flows.size(), 0), own(m.flows.size(), 0);
  for (std::size_t f = 0; f < m.flows.size(); ++f) {
    const auto& fm = m.flows[f];
    if (lp) lp_patterns[f] = static_cast<int>(std::max_element(y[f].begin(), y[f].end()) - y[f].begin());
    double best = std::numeric_limits<double>::infinity();
    for (std::size_t c = 0; c < fm.patterns.size(); ++c) {
      double awake = 0;
      for (std::size_t j = 0; j < fm.subtrees.size(); ++j) {
        const auto& win = fm.patterns[c].window[j];
        awake += (win.second - win.first + 1e-6) * (1 + m.w->subtrees[fm.subtrees[j]].demand);
      }
      if (awake < best - 1e-12) {
        best = awake;
        own[f] = static_cast<int>(c);
      }
    }
  }
  // Starts: LP rounding (patterns and nodes), LP patterns with greedy nodes, own patterns greedy.
  struct start {
    const std::vector<int>* patterns;
    const std::vector<std::vector<double>>* h;
  };
  std::vector<start> starts;
  if (lp) {
    starts.push_back({&lp_patterns, &h});
    starts.push_back({&lp_patterns, nullptr});
  }
  starts.push_back({&own, nullptr});
  double best = std::numeric_limits<double>::infinity();
  for (const auto& st0 : starts) {
    state st(m, margins);
    st.set_patterns(*st0.patterns);
    if (!st.place_all(st0.h) || !st.repair_capacity()) continue;
    st.descend();
    const model_eval e = model_cost(m, st.current(), margins);
    if (!e.feasible) {
      out.message = e.violation;
      continue;
    }
    if (e.cost < best) {
      best = e.cost;
      out.found = true;
      out.c = st.current();
      out.cost = e.cost;
    }
  }
  // Iterated local search on models small enough for the LP: kicks from the best schedule, each
  // followed by the local search, kept when cheaper (the same rounds, from the same seed, every run).
  if (lp && out.found) {
    rng r{0x5eed};
    state st(m, margins);
    auto keep_if_cheaper = [&] {
      st.descend();
      if (st.total_cost() >= out.cost - 1e-9 * std::max(1.0, out.cost)) return;
      const model_eval e = model_cost(m, st.current(), margins);
      if (e.feasible && e.cost < out.cost) {
        out.c = st.current();
        out.cost = e.cost;
      }
    };
    // Every other pattern of every workflow, with every subtree placed afresh around it (up to
    // `max_replans` patterns in all).
    std::size_t patterns = 0;
    for (const auto& fm : m.flows) patterns += fm.patterns.size();
    for (std::size_t f = 0; f < m.flows.size() && patterns <= max_replans; ++f) {
      for (std::size_t c = 0; c < m.flows[f].patterns.size(); ++c) {
        if (static_cast<int>(c) == out.c.pattern[f]) continue;
        st.adopt(out.c);
        if (st.replan_with(f, c)) keep_if_cheaper();
      }
    }
    for (std::size_t round = 0; round < kicks; ++round) {
      st.adopt(out.c);
      if (st.perturb(r, round % 2 == 0)) keep_if_cheaper();
    }
  }
  // Precision: the exact model restricted to a neighbourhood of the best schedule, warm-started from
  // it, for a short time each, three times: the patterns and nodes of the LP's support (and the
  // schedule's own); then every pattern with those nodes; then every node with those patterns (each
  // time with the schedule's own as the pass before left it).
  if (lp && out.found) {
    enum class open { none, patterns, nodes };
    for (const open opened : {open::none, open::patterns, open::nodes}) {
      support only;
      for (std::size_t f = 0; f < m.flows.size(); ++f) {
        only.pattern.emplace_back();
        for (std::size_t c = 0; c < y[f].size(); ++c)
          only.pattern.back().push_back(opened == open::patterns || y[f][c] > 1e-6 ||
                                        static_cast<int>(c) == out.c.pattern[f]);
      }
      for (std::size_t s = 0; s < h.size(); ++s) {
        only.node.emplace_back();
        for (std::size_t n = 0; n < h[s].size(); ++n)
          only.node.back().push_back(opened == open::nodes || h[s][n] > 1e-6 ||
                                     static_cast<node_id>(n) == out.c.node[s]);
      }
      const solved precise = solve_mip(m, margins, precise_time_limit_s, &out.c, &only);
      if (precise.found && precise.cost < out.cost) {
        out.c = precise.c;
        out.cost = precise.cost;
      }
    }
  }
  if (!out.found && out.message.empty()) out.message = "no placement within the nodes' capacities found";
  out.bound = lp ? bound : 0;
  out.columns = columns;
  return out;
}

}  // namespace banyan::partitioner::periodic::detail
