// The SMT model (seed paper) on Z3's Optimize, as weighted MaxSAT over Booleans:
//   x[v][j]  vertex v on node j; exactly one per vertex (hard);
//   capacity: pseudo-Boolean sum of integer loads per node <= integer capacity (hard);
//   uniform link costs: s[e] "both ends of e on one node", s[e] & x[p][j] -> x[v][j] (hard),
//     soft s[e] with weight traffic(e);
//   otherwise: soft !(x[p][a] & x[v][b]) with weight traffic(e) * cost(a, b), for each a != b;
//   symmetry: among interchangeable nodes j1 < j2 < ..., node j(t+1) is used by a vertex only if
//     j(t) is used by an earlier vertex (value precedence in top-down order);
//   warm start: the heuristic's cost as a hard upper bound on the soft penalty, and its mapping
//     returned when Z3 finds nothing better within the timeout.
// Traffic and loads are scaled to small integers (DESIGN.md: Z3 slows past 2^32 coefficient sums);
// when scaling is inexact the result is never labelled optimal.
#include "exact_common.hpp"

#include <z3++.h>

#include <chrono>

#include <condition_variable>
#include <limits>
#include <mutex>
#include <string>
#include <thread>

namespace banyan::partitioner::detail {
namespace {

class smt_algorithm : public algorithm {
 public:
  std::string name() const override { return "smt"; }

  // Z3 runs in a forked child (run_bounded): its own timeout and the watchdog's interrupt are not
  // honoured in every phase (preprocessing a warm-start bound over tens of thousands of soft
  // constraints took 25 s past a 5 s limit), so the parent kills it at the deadline plus a grace.
  solution solve(const problem& p, const solve_options& o) override {
    const stopwatch clock;
    bool overran = false;
    auto bytes = run_bounded(
        [&](const emit_fn& emit) {
          std::string b;
          put_solution(b, guarded_run(p, o, emit));
          return b;
        },
        o.timeout_s + kill_grace(o.timeout_s), clock, &overran);
    solution s;
    if (!bytes || !get_solution(*bytes, s)) {
      s = solution{};
      s.status = solve_status::unknown;
      s.message = overran ? "Z3 overran the time limit and was stopped" : "Z3 failed in its child process";
    } else if (overran) {
      s.status = solve_status::feasible;  // an incumbent; evaluate has the last word below
      s.message = "Z3 overran the time limit and was stopped; its last model is returned";
    }
    fall_back_to_warm_start(p, o, s);
    return s;
  }

 private:
  solution guarded_run(const problem& p, const solve_options& o, const emit_fn& emit) {
    try {
      return run(p, o, emit);
    } catch (const z3::exception& e) {
      solution s;
      s.status = solve_status::unknown;
      s.message = std::string("z3: ") + e.msg();
      if (o.warm_start) s.map = *o.warm_start;
      return s;
    }
  }

  solution run(const problem& p, const solve_options& o, const emit_fn& emit) {
    start_ = std::chrono::steady_clock::now();
    const auto& t = p.t;
    const std::size_t n = t.size(), k = p.k();
    const integer_loads L = scale_loads(p);
    const integer_weights W = scale_weights(p);
    z3::context ctx;
    z3::optimize opt(ctx);
    z3::params ps(ctx);
    ps.set("timeout", static_cast<unsigned>(std::max(1.0, o.timeout_s * 1000)));
    // Z3's timeout counts from check(); model building below is part of our budget too, so the
    // watchdog uses the deadline from the start of solve().
    opt.set(ps);

    std::vector<z3::expr> x;
    x.reserve(n * k);
    for (std::size_t v = 0; v < n; ++v) {
      for (std::size_t j = 0; j < k; ++j) {
        x.push_back(ctx.bool_const(("x_" + std::to_string(v) + "_" + std::to_string(j)).c_str()));
      }
    }
    auto X = [&](std::size_t v, std::size_t j) -> const z3::expr& { return x[v * k + j]; };
    for (std::size_t v = 0; v < n; ++v) {
      z3::expr_vector row(ctx);
      for (std::size_t j = 0; j < k; ++j) {
        row.push_back(X(v, j));
        // A component that cannot fit a node alone is never placed there.
        if (L.cpu[v] > L.cpu_cap[j] || (!L.mem.empty() && L.mem_cap[j] >= 0 && L.mem[v] > L.mem_cap[j])) {
          opt.add(!X(v, j));
        }
      }
      opt.add(z3::mk_or(row));
      opt.add(z3::atmost(row, 1));
    }
    auto capacity = [&](const std::vector<long long>& load, const std::vector<long long>& cap) {
      for (std::size_t j = 0; j < k; ++j) {
        if (cap[j] < 0) continue;
        z3::expr_vector es(ctx);
        std::vector<int> cs;
        long long total = 0;
        for (std::size_t v = 0; v < n; ++v) {
          if (load[v] == 0) continue;
          es.push_back(X(v, j));
          cs.push_back(static_cast<int>(load[v]));
          total += load[v];
        }
        if (total > cap[j]) opt.add(z3::pble(es, cs.data(), static_cast<int>(cap[j])));
      }
    };
    capacity(L.cpu, L.cpu_cap);
    if (!L.mem.empty()) capacity(L.mem, L.mem_cap);

    // Symmetry breaking by value precedence over interchangeable nodes.
    for (const auto& cls : interchangeable_nodes(p)) {
      for (std::size_t c = 0; c + 1 < cls.size(); ++c) {
        const node_id a = cls[c], b = cls[c + 1];
        opt.add(!X(0, b));
        z3::expr used = X(0, a);  // some vertex <= v is on a
        for (std::size_t v = 1; v < n; ++v) {
          z3::expr u = ctx.bool_const(("u_" + std::to_string(v) + "_" + std::to_string(a)).c_str());
          opt.add(z3::implies(X(v, b), used));
          opt.add(u == (used || X(v, a)));
          used = u;
        }
      }
    }

    // Soft constraints: the penalty of every violated one is that edge's cost.
    z3::expr_vector penalties(ctx);
    std::vector<int> penalty_w;
    bool any_soft = false;
    unsigned handle_id = 0;
    auto soft = [&](const z3::expr& e, long long w) {
      if (w <= 0) return;
      auto h = opt.add_soft(e, static_cast<unsigned>(w));
      handle_id = h.h();
      any_soft = true;
      penalties.push_back(!e);
      penalty_w.push_back(static_cast<int>(w));
    };
    const bool uniform = p.c.uniform_cost();
    for (std::size_t v = 1; v < n; ++v) {
      const std::size_t par = static_cast<std::size_t>(t.parent[v]);
      if (uniform) {
        const long long w = W.of(t.weight[v]);
        if (w <= 0) continue;
        z3::expr same = ctx.bool_const(("s_" + std::to_string(v)).c_str());
        for (std::size_t j = 0; j < k; ++j) opt.add(z3::implies(same && X(par, j), X(v, j)));
        soft(same, w);
      } else {
        for (std::size_t a = 0; a < k; ++a) {
          for (std::size_t b = 0; b < k; ++b) {
            if (a == b) continue;
            soft(!(X(par, a) && X(v, b)),
                 W.of(t.weight[v] * p.c.cost(static_cast<node_id>(a), static_cast<node_id>(b))));
          }
        }
      }
    }

    double warm_cost = std::numeric_limits<double>::infinity();
    if (o.warm_start) {
      const evaluation e = evaluate(p, *o.warm_start);
      if (e.feasible) {
        warm_cost = e.cost;
        // Prune: only mappings at most as costly as the warm start (integer upper bound).
        if (W.exact && any_soft && warm_cost < 2e9) {
          opt.add(z3::pble(penalties, penalty_w.data(), static_cast<int>(std::llround(warm_cost))));
        }
      }
    }

    solution s;
    // Z3 checks its `timeout` only at some points (not during every preprocessing step), so a
    // watchdog interrupts the context as well; both end in an ordinary `unknown`.
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    const auto deadline = start_ + std::chrono::duration<double>(o.timeout_s);
    std::thread watchdog([&] {
      std::unique_lock lock(mu);
      if (!cv.wait_until(lock, deadline, [&] { return done; })) ctx.interrupt();
    });
    // Each improved model Z3 finds goes to the parent as an incumbent, which it keeps if it has to
    // kill this process at the deadline.
    struct incumbent_sink {
      z3::model model;
      const emit_fn* emit;
      std::function<void(const z3::model&)> send;
    } sink{z3::model(ctx), &emit, {}};
    sink.send = [&](const z3::model& mdl) {
      solution inc;
      inc.status = solve_status::feasible;
      inc.map.assign(n, 0);
      for (std::size_t v = 0; v < n; ++v) {
        for (std::size_t j = 0; j < k; ++j) {
          if (mdl.eval(X(v, j), true).is_true()) {
            inc.map[v] = static_cast<node_id>(j);
            break;
          }
        }
      }
      std::string b;
      put_solution(b, inc);
      emit(b);
    };
    Z3_optimize_register_model_eh(ctx, opt, sink.model, &sink, [](void* user) {
      auto* self = static_cast<incumbent_sink*>(user);
      self->send(self->model);
    });
    z3::check_result r = z3::unknown;
    try {
      // Building a large model can use up the budget before Z3 starts; then do not start it.
      if (std::chrono::steady_clock::now() < deadline) r = opt.check();
    } catch (...) {
      {
        std::lock_guard lock(mu);
        done = true;
      }
      cv.notify_all();
      watchdog.join();
      throw;
    }
    {
      std::lock_guard lock(mu);
      done = true;
    }
    cv.notify_all();
    watchdog.join();
    auto read_model = [&](const z3::model& mdl) {
      s.map.assign(n, 0);
      for (std::size_t v = 0; v < n; ++v) {
        for (std::size_t j = 0; j < k; ++j) {
          if (mdl.eval(X(v, j), true).is_true()) {
            s.map[v] = static_cast<node_id>(j);
            break;
          }
        }
      }
    };
    const bool exact = L.exact && W.exact;
    if (r == z3::sat) {
      read_model(opt.get_model());
      s.status = exact ? solve_status::optimal : solve_status::feasible;
      if (!exact) s.message = "optimal for loads/traffic scaled to integers, not proven for the real values";
    } else if (r == z3::unsat) {
      if (o.warm_start && std::isfinite(warm_cost)) {
        // Only the warm-start bound cut everything: the warm start is optimal.
        s.map = *o.warm_start;
        s.status = exact ? solve_status::optimal : solve_status::feasible;
      } else if (L.exact) {
        s.status = solve_status::infeasible;
        s.message = "no mapping satisfies the capacities (proven by Z3)";
      } else {
        s.status = solve_status::unknown;
        s.message = "no mapping fits the capacities after rounding loads to integers";
      }
    } else {
      s.status = solve_status::unknown;
      s.message = std::string("z3: ") + Z3_optimize_get_reason_unknown(ctx, opt);
      try {
        read_model(opt.get_model());
        s.status = solve_status::feasible;
      } catch (const z3::exception&) {
        s.map.clear();
      }
      if (any_soft && W.exact) {
        try {
          z3::expr lo = opt.lower(z3::optimize::handle(handle_id));
          if (lo.is_numeral()) s.lower_bound = std::stod(lo.get_decimal_string(6));
        } catch (const z3::exception&) {
        }
      }
    }
    fall_back_to_warm_start(p, o, s);
    if (!any_soft && s.status == solve_status::feasible && exact) s.status = solve_status::optimal;
    return s;
  }
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

std::unique_ptr<algorithm> make_smt() { return std::make_unique<smt_algorithm>(); }

}  // namespace banyan::partitioner::detail
