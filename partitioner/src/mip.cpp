// Exact reference on CBC: the same model as smt.cpp as a mixed-integer program.
//   x[v][j] binary, sum_j x[v][j] = 1, sum_v (load(v) / cap(j)) x[v][j] <= 1 + capacity_tolerance
//     (rows normalised by capacity, so CBC's absolute tolerances are relative ones whatever the
//     loads' magnitude; its primal and integer tolerances are tightened well below ours, and its
//     answer is checked by `evaluate` anyway);
//   uniform link costs: y[e] in [0,1] with y[e] >= x[p][j] - x[v][j] for every j; cost w(e) y[e];
//   otherwise z[e][a][b] >= x[p][a] + x[v][b] - 1 for a != b; cost w(e) cost(a,b) z[e][a][b];
//   symmetry: value precedence among interchangeable nodes via cumulative bounds
//     used[v][a] <= used[v-1][a] + x[v][a],  x[v][b] <= used[v-1][a]  (a before b in a class);
//   warm start as a MIP start; the time limit returns the incumbent and CBC's best bound.
// Time: CBC runs in a forked child (run_bounded) with an elapsed-time limit a little inside the
// budget; CBC checks its limit only between nodes and not in preprocessing or while completing a
// MIP start, so the parent kills the child at the deadline (plus a small grace) and keeps the warm
// start. The total wall time of solve() is thereby bounded whatever CBC does.
#include "cbc_model.hpp"
#include "exact_common.hpp"

#include <limits>

namespace banyan::partitioner::detail {
namespace {

// What came back from CBC: the x columns rounded to a mapping (empty when CBC had none).
struct cbc_outcome {
  enum kind_t : std::int32_t { optimal, infeasible, stopped } kind = stopped;
  mapping map;
  double bound = 0;
  std::string message;
};

cbc_outcome read_cbc(Cbc_Model* model, std::size_t n, std::size_t k) {
  cbc_outcome r;
  const double* sol = Cbc_bestSolution(model);
  if (sol) {
    r.map.assign(n, 0);
    for (std::size_t v = 0; v < n; ++v) {
      double best = -1;
      for (std::size_t j = 0; j < k; ++j) {
        if (sol[v * k + j] > best) {
          best = sol[v * k + j];
          r.map[v] = static_cast<node_id>(j);
        }
      }
    }
  }
  if (Cbc_isProvenOptimal(model) && sol) {
    r.kind = cbc_outcome::optimal;
  } else if (Cbc_isProvenInfeasible(model)) {
    r.kind = cbc_outcome::infeasible;
  } else {
    r.message = Cbc_isSecondsLimitReached(model) ? "CBC time limit reached" : "CBC stopped early";
    r.bound = Cbc_getBestPossibleObjValue(model);
  }
  return r;
}

class mip_algorithm : public algorithm {
 public:
  std::string name() const override { return "mip"; }

  solution solve(const problem& p, const solve_options& o) override {
    const stopwatch clock;
    const auto& t = p.t;
    const std::size_t n = t.size(), k = p.k();
    const double inf = std::numeric_limits<double>::infinity();
    lp_model m;
    auto X = [&](std::size_t v, std::size_t j) { return static_cast<int>(v * k + j); };
    for (std::size_t v = 0; v < n; ++v) {
      for (std::size_t j = 0; j < k; ++j) {
        const bool fits = within(t.cpu[v], p.cpu_capacity[j]) &&
                          (p.memory_capacity.empty() || within(t.memory[v], p.memory_capacity[j]));
        m.col(0, fits ? 1 : 0, 0, true);
      }
    }
    for (std::size_t v = 0; v < n; ++v) {
      const int r = m.row(1, 1, {});
      for (std::size_t j = 0; j < k; ++j) m.entry(r, X(v, j), 1);
    }
    auto capacity = [&](const std::vector<double>& load, const std::vector<double>& cap) {
      for (std::size_t j = 0; j < k; ++j) {
        // cap 0: every x[v][j] with load > 0 already has upper bound 0 (it does not fit alone).
        if (!std::isfinite(cap[j]) || cap[j] <= 0) continue;
        const int r = m.row(-inf, 1 + capacity_tolerance, {});
        for (std::size_t v = 0; v < n; ++v) {
          if (load[v] != 0) m.entry(r, X(v, j), load[v] / cap[j]);
        }
      }
    };
    capacity(t.cpu, p.cpu_capacity);
    if (!p.memory_capacity.empty()) capacity(t.memory, p.memory_capacity);
    const bool uniform = p.c.uniform_cost();
    for (std::size_t v = 1; v < n; ++v) {
      const auto par = static_cast<std::size_t>(t.parent[v]);
      if (t.weight[v] == 0) continue;
      if (uniform) {
        const int y = m.col(0, 1, t.weight[v], false);
        for (std::size_t j = 0; j < k; ++j) m.row(-inf, 0, {{X(par, j), 1}, {X(v, j), -1}, {y, -1}});
      } else {
        for (std::size_t a = 0; a < k; ++a) {
          for (std::size_t b = 0; b < k; ++b) {
            const double c = p.c.cost(static_cast<node_id>(a), static_cast<node_id>(b));
            if (a == b || c == 0) continue;
            const int z = m.col(0, 1, t.weight[v] * c, false);
            m.row(-inf, 1, {{X(par, a), 1}, {X(v, b), 1}, {z, -1}});
          }
        }
      }
    }
    for (const auto& cls : interchangeable_nodes(p)) {
      for (std::size_t c = 0; c + 1 < cls.size(); ++c) {
        const auto a = static_cast<std::size_t>(cls[c]), b = static_cast<std::size_t>(cls[c + 1]);
        m.ub[X(0, b)] = 0;
        int prev = -1;  // used[v-1][a]; used[0][a] = x[0][a]
        for (std::size_t v = 0; v < n; ++v) {
          if (v > 0) m.row(-inf, 0, {{X(v, b), 1}, {prev, -1}});
          const int u = m.col(0, 1, 0, false);
          if (v == 0) m.row(-inf, 0, {{u, 1}, {X(0, a), -1}});
          else m.row(-inf, 0, {{u, 1}, {prev, -1}, {X(v, a), -1}});
          prev = u;
        }
      }
    }

    Cbc_Model* model = m.load();
    const double left = o.timeout_s - clock.seconds();
    const double cbc_limit = std::max(0.01, 0.9 * left);
    Cbc_setMaximumSeconds(model, cbc_limit);
    Cbc_setParameter(model, "timeMode",
                     "elapsed");  // CBC's default is CPU time, which lags wall time on a loaded machine
    Cbc_setParameter(model, "seconds", std::to_string(cbc_limit).c_str());
    Cbc_setParameter(model, "primalTolerance", "1e-10");
    Cbc_setParameter(model, "integerTolerance", "1e-10");
    Cbc_setAllowableGap(model, 1e-7);
    Cbc_setAllowableFractionGap(model, 0);
    Cbc_setAllowablePercentageGap(model, 0);
    if (o.warm_start && evaluate(p, *o.warm_start).feasible) {
      // CBC completes the continuous columns of a MIP start itself.
      std::vector<int> idx;
      std::vector<double> val;
      for (std::size_t v = 0; v < n; ++v) {
        for (std::size_t j = 0; j < k; ++j) {
          idx.push_back(X(v, j));
          val.push_back((*o.warm_start)[v] == static_cast<node_id>(j) ? 1.0 : 0.0);
        }
      }
      Cbc_setMIPStartI(model, static_cast<int>(idx.size()), idx.data(), val.data());
    }
    solution s;
    cbc_outcome r;
    if (left <= 0) {
      r.message = "time limit reached while building the model";
    } else {
      // Grace past the deadline for CBC to stop on its own and report its incumbent.
      bool overran = false;
      auto bytes = run_bounded(
          [&](const emit_fn&) {
            Cbc_solve(model);
            const cbc_outcome c = read_cbc(model, n, k);
            solution out;  // carries the outcome: status = kind, lower_bound = CBC's bound
            out.status = static_cast<solve_status>(c.kind);
            out.lower_bound = c.bound;
            out.message = c.message;
            out.map = c.map;
            std::string b;
            put_solution(b, out);
            return b;
          },
          o.timeout_s + kill_grace(o.timeout_s), clock, &overran);
      solution got;
      if (!overran && bytes && get_solution(*bytes, got)) {
        r.kind = static_cast<cbc_outcome::kind_t>(got.status);
        r.bound = got.lower_bound;
        r.message = got.message;
        r.map = std::move(got.map);
      } else {
        r.message = overran ? "CBC overran the time limit and was stopped" : "CBC failed in its child process";
      }
    }
    Cbc_deleteModel(model);
    s.map = std::move(r.map);
    switch (r.kind) {
      case cbc_outcome::optimal: s.status = solve_status::optimal; break;
      case cbc_outcome::infeasible:
        s.status = solve_status::infeasible;
        s.message = "no mapping satisfies the capacities (proven by CBC)";
        s.map.clear();
        break;
      case cbc_outcome::stopped:
        s.status = s.map.empty() ? solve_status::unknown : solve_status::feasible;
        s.message = r.message;
        if (std::isfinite(r.bound) && r.bound > 0 && r.bound < 1e300) s.lower_bound = r.bound;
        break;
    }
    fall_back_to_warm_start(p, o, s);
    return s;
  }
};

}  // namespace

std::unique_ptr<algorithm> make_mip() { return std::make_unique<mip_algorithm>(); }

}  // namespace banyan::partitioner::detail
