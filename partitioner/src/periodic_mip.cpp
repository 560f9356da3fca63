// The periodic planner's exact model on CBC (periodic_model.hpp gives the problem):
//   y[f][c] binary: workflow f uses pattern c;            sum_c y[f][c] = 1
//   h[s][n] binary: subtree s lives on node n;            sum_n h[s][n] = 1
//   x[s][n][t] in [0,1]: s awake on n in slot t;          x <= h, x <= u[n][t]
//   coverage per (f, s, t): sum_n x[s][n][t] >= sum of y[f][c] over patterns c that keep s awake at t
//   capacity per (n, t):   sum_s demand_s x[s][n][t] <= capacity_n
//   u[n][t] in [0,1] costs cost_n x slot; traffic as in mip.cpp (g[e] >= h[a][n] - h[b][n], or
//   z[e][a][b] >= h[s1][a] + h[s2][b] - 1 with unequal link costs)
// x and u need not be integer: with y and h integral the smallest feasible values are 0 or 1.
// Only slots some pattern can cover get x and u columns. CBC runs in a forked child (run_bounded)
// with the same time limit and kill grace as the partitioner's `mip`.
#include "periodic_model.hpp"

#include "cbc_model.hpp"
#include "exact_common.hpp"

#include <algorithm>
#include <limits>
#include <map>

namespace banyan::partitioner::periodic::detail {
namespace {

using partitioner::detail::lp_model;

struct built {
  lp_model lp;
  std::vector<std::vector<int>> y;  // per flow, per pattern
  std::vector<std::vector<int>> h;  // per subtree, per node (-1: does not fit)
};

// Per subtree and slot, for each flow using it, which patterns cover the slot.
built build(const model& m, const std::vector<int>& margins) {
  const workload& w = *m.w;
  const double inf = std::numeric_limits<double>::infinity();
  const std::size_t S = w.subtrees.size(), k = w.nodes.size(), T = m.T;
  built b;
  auto& lp = b.lp;
  b.y.resize(m.flows.size());
  for (std::size_t f = 0; f < m.flows.size(); ++f) {
    const int r = lp.row(1, 1, {});
    for (std::size_t c = 0; c < m.flows[f].patterns.size(); ++c) {
      b.y[f].push_back(lp.col(0, 1, 0, true));
      lp.entry(r, b.y[f].back(), 1);
    }
  }
  b.h.assign(S, std::vector<int>(k, -1));
  for (std::size_t s = 0; s < S; ++s) {
    const int r = lp.row(1, 1, {});
    for (std::size_t n = 0; n < k; ++n) {
      if (!within_capacity(w.subtrees[s].demand, w.nodes[n].capacity)) continue;
      b.h[s][n] = lp.col(0, 1, 0, true);
      lp.entry(r, b.h[s][n], 1);
    }
  }
  // Coverage: per (f, s, t) the patterns covering it.
  std::vector<std::map<std::size_t, std::vector<std::pair<std::size_t, std::size_t>>>> cover(S);  // s -> t -> (f, c)
  for (std::size_t f = 0; f < m.flows.size(); ++f) {
    const auto& fm = m.flows[f];
    for (std::size_t c = 0; c < fm.patterns.size(); ++c) {
      for (std::size_t j = 0; j < fm.subtrees.size(); ++j) {
        for_each_slot(m, f, fm.patterns[c], j, margins[f],
                      [&](std::size_t t) { cover[fm.subtrees[j]][t].emplace_back(f, c); });
      }
    }
  }
  std::vector<int> u(k * T, -1);
  std::vector<int> cap_row(k * T, -1);
  std::vector<double> cap_sum(k * T, 0);
  for (std::size_t s = 0; s < S; ++s) {
    for (const auto& [t, list] : cover[s]) {
      for (std::size_t n = 0; n < k; ++n) {
        if (b.h[s][n] >= 0) cap_sum[n * T + t] += w.subtrees[s].demand;
      }
    }
  }
  for (std::size_t s = 0; s < S; ++s) {
    for (const auto& [t, list] : cover[s]) {
      std::vector<int> xs;
      for (std::size_t n = 0; n < k; ++n) {
        if (b.h[s][n] < 0) continue;
        const std::size_t at = n * T + t;
        if (u[at] < 0) u[at] = lp.col(0, 1, w.nodes[n].cost_per_hour * m.slot_hours, false);
        const int x = lp.col(0, 1, 0, false);
        xs.push_back(x);
        lp.row(-inf, 0, {{x, 1}, {b.h[s][n], -1}});
        lp.row(-inf, 0, {{x, 1}, {u[at], -1}});
        if (!within_capacity(cap_sum[at], w.nodes[n].capacity)) {
          if (cap_row[at] < 0) cap_row[at] = lp.row(-inf, w.nodes[n].capacity * (1 + capacity_tolerance), {});
          lp.entry(cap_row[at], x, w.subtrees[s].demand);
        }
      }
      // One coverage row per flow using s at t.
      std::map<std::size_t, std::vector<std::size_t>> by_flow;
      for (const auto& [f, c] : list) by_flow[f].push_back(c);
      for (const auto& [f, cs] : by_flow) {
        const int r = lp.row(0, inf, {});
        for (int x : xs) lp.entry(r, x, 1);
        for (auto c : cs) lp.entry(r, b.y[f][c], -1);
      }
    }
  }
  // Cross-node traffic.
  if (w.message_cost > 0) {
    bool uniform = true;
    for (std::size_t a = 0; a < k; ++a) {
      for (std::size_t c = 0; c < k; ++c) {
        if (a != c && w.link(static_cast<node_id>(a), static_cast<node_id>(c)) != 1) uniform = false;
      }
    }
    for (const auto& e : m.talks) {
      const double weight = e.messages * w.message_cost;
      if (uniform) {
        const int g = lp.col(0, 1, weight, false);
        for (std::size_t n = 0; n < k; ++n) {
          if (b.h[e.a][n] < 0 && b.h[e.b][n] < 0) continue;
          const int r = lp.row(-inf, 0, {{g, -1}});
          if (b.h[e.a][n] >= 0) lp.entry(r, b.h[e.a][n], 1);
          if (b.h[e.b][n] >= 0) lp.entry(r, b.h[e.b][n], -1);
        }
      } else {
        for (std::size_t a = 0; a < k; ++a) {
          for (std::size_t c = 0; c < k; ++c) {
            const double link = w.link(static_cast<node_id>(a), static_cast<node_id>(c));
            if (a == c || link == 0 || b.h[e.a][a] < 0 || b.h[e.b][c] < 0) continue;
            const int z = lp.col(0, 1, weight * link, false);
            lp.row(-inf, 1, {{b.h[e.a][a], 1}, {b.h[e.b][c], 1}, {z, -1}});
          }
        }
      }
    }
  }
  return b;
}

choice read_choice(const built& b, const double* sol) {
  choice c;
  for (const auto& ys : b.y) {
    int best = 0;
    for (std::size_t i = 1; i < ys.size(); ++i) {
      if (sol[ys[i]] > sol[ys[best]] + 1e-9) best = static_cast<int>(i);
    }
    c.pattern.push_back(best);
  }
  for (const auto& hs : b.h) {
    node_id best = no_node;
    for (std::size_t n = 0; n < hs.size(); ++n) {
      if (hs[n] >= 0 && (best == no_node || sol[hs[n]] > sol[hs[static_cast<std::size_t>(best)]] + 1e-9))
        best = static_cast<node_id>(n);
    }
    c.node.push_back(best == no_node ? 0 : best);
  }
  return c;
}

}  // namespace

std::size_t mip_columns(const model& m, const std::vector<int>& margins) {
  // x per coverable (subtree, slot) and node, plus y and h: u and traffic columns are fewer.
  const workload& w = *m.w;
  std::size_t columns = 0;
  std::vector<std::uint8_t> seen(m.T);
  for (std::size_t s = 0; s < w.subtrees.size(); ++s) {
    std::fill(seen.begin(), seen.end(), 0);
    std::size_t slots = 0;
    for (auto f : m.flows_of[s]) {
      const auto& fm = m.flows[f];
      const auto j =
          static_cast<std::size_t>(std::find(fm.subtrees.begin(), fm.subtrees.end(), s) - fm.subtrees.begin());
      for (const auto& p : fm.patterns) {
        for_each_slot(m, f, p, j, margins[f], [&](std::size_t t) {
          if (!seen[t]) {
            seen[t] = 1;
            ++slots;
          }
        });
      }
    }
    columns += (slots + 1) * w.nodes.size();
  }
  for (const auto& fm : m.flows) columns += fm.patterns.size();
  return columns;
}

// The LP relaxation's fractional values of y and h, for the heuristic's rounding (periodic_heuristic.cpp).
bool solve_relaxation(const model& m, const std::vector<int>& margins, std::vector<std::vector<double>>& y,
                      std::vector<std::vector<double>>& h, double& bound) {
  built b = build(m, margins);
  Cbc_Model* cbc = b.lp.load(true);
  Cbc_solve(cbc);
  const double* sol = Cbc_getColSolution(cbc);
  const bool ok = sol && Cbc_isProvenOptimal(cbc);
  if (ok) {
    bound = Cbc_getObjValue(cbc);
    y.clear();
    h.clear();
    for (const auto& ys : b.y) {
      y.emplace_back();
      for (int c : ys) y.back().push_back(sol[c]);
    }
    for (const auto& hs : b.h) {
      h.emplace_back();
      for (int c : hs) h.back().push_back(c >= 0 ? sol[c] : -1);
    }
  }
  Cbc_deleteModel(cbc);
  return ok;
}

solved solve_mip(const model& m, const std::vector<int>& margins, double time_limit_s, const choice* warm,
                 const support* only) {
  const partitioner::detail::stopwatch clock;
  built b = build(m, margins);
  if (only) {
    for (std::size_t f = 0; f < b.y.size(); ++f) {
      for (std::size_t c = 0; c < b.y[f].size(); ++c) {
        if (!only->pattern[f][c]) b.lp.ub[static_cast<std::size_t>(b.y[f][c])] = 0;
      }
    }
    for (std::size_t s = 0; s < b.h.size(); ++s) {
      for (std::size_t n = 0; n < b.h[s].size(); ++n) {
        if (b.h[s][n] >= 0 && !only->node[s][n]) b.lp.ub[static_cast<std::size_t>(b.h[s][n])] = 0;
      }
    }
  }
  solved out;
  out.columns = static_cast<std::size_t>(b.lp.columns());
  Cbc_Model* cbc = b.lp.load();
  const double left = time_limit_s - clock.seconds();
  const double cbc_limit = std::max(0.01, 0.9 * left);
  Cbc_setMaximumSeconds(cbc, cbc_limit);
  Cbc_setParameter(cbc, "timeMode", "elapsed");
  Cbc_setParameter(cbc, "seconds", std::to_string(cbc_limit).c_str());
  Cbc_setAllowableGap(cbc, 1e-9);
  Cbc_setAllowableFractionGap(cbc, 0);
  Cbc_setAllowablePercentageGap(cbc, 0);
  if (warm) {
    std::vector<int> idx;
    std::vector<double> val;
    for (std::size_t f = 0; f < b.y.size(); ++f) {
      for (std::size_t c = 0; c < b.y[f].size(); ++c) {
        idx.push_back(b.y[f][c]);
        val.push_back(static_cast<int>(c) == warm->pattern[f] ? 1 : 0);
      }
    }
    for (std::size_t s = 0; s < b.h.size(); ++s) {
      for (std::size_t n = 0; n < b.h[s].size(); ++n) {
        if (b.h[s][n] < 0) continue;
        idx.push_back(b.h[s][n]);
        val.push_back(static_cast<node_id>(n) == warm->node[s] ? 1 : 0);
      }
    }
    Cbc_setMIPStartI(cbc, static_cast<int>(idx.size()), idx.data(), val.data());
  }
  bool overran = false;
  auto bytes = partitioner::detail::run_bounded(
      [&](const partitioner::detail::emit_fn&) {
        Cbc_solve(cbc);
        std::string r;
        const double* sol = Cbc_bestSolution(cbc);
        partitioner::detail::put(r, static_cast<std::int32_t>(sol ? 1 : 0));
        partitioner::detail::put(r, static_cast<std::int32_t>(Cbc_isProvenOptimal(cbc) ? 1 : 0));
        partitioner::detail::put(r, Cbc_getBestPossibleObjValue(cbc));
        if (sol) {
          const choice c = read_choice(b, sol);
          for (int p : c.pattern) partitioner::detail::put(r, static_cast<std::int32_t>(p));
          for (node_id n : c.node) partitioner::detail::put(r, static_cast<std::int32_t>(n));
        }
        return r;
      },
      std::max(0.0, left) + partitioner::detail::kill_grace(time_limit_s), clock, &overran);
  Cbc_deleteModel(cbc);
  std::int32_t has = 0, optimal = 0;
  double bound = 0;
  std::size_t at = 0;
  if (!overran && bytes && partitioner::detail::get(*bytes, at, has) && partitioner::detail::get(*bytes, at, optimal) &&
      partitioner::detail::get(*bytes, at, bound)) {
    if (has) {
      choice c;
      bool ok = true;
      for (std::size_t f = 0; f < m.flows.size() && ok; ++f) {
        std::int32_t p = 0;
        ok = partitioner::detail::get(*bytes, at, p);
        c.pattern.push_back(p);
      }
      for (std::size_t s = 0; s < m.w->subtrees.size() && ok; ++s) {
        std::int32_t n = 0;
        ok = partitioner::detail::get(*bytes, at, n);
        c.node.push_back(n);
      }
      const model_eval e = ok ? model_cost(m, c, margins) : model_eval{};
      if (ok && e.feasible) {
        out.found = true;
        out.c = std::move(c);
        out.cost = e.cost;
        out.optimal = optimal != 0;
      }
    }
    if (std::isfinite(bound) && bound > 0 && bound < 1e300) out.bound = bound;
    if (!out.found)
      out.message = optimal ? "no schedule fits the nodes (proven by CBC)" : "CBC found no schedule in time";
    else if (!out.optimal) out.message = "CBC time limit reached";
  } else {
    out.message = overran ? "CBC overran the time limit and was stopped" : "CBC failed in its child process";
  }
  if (out.optimal) out.bound = std::min(out.cost, std::max(out.bound, out.cost * (1 - 1e-7)));
  if (warm && (!out.found || out.cost > model_cost(m, *warm, margins).cost)) {
    const model_eval e = model_cost(m, *warm, margins);
    if (e.feasible) {
      out.found = true;
      out.c = *warm;
      out.cost = e.cost;
      out.optimal = false;
    }
  }
  return out;
}

}  // namespace banyan::partitioner::periodic::detail
