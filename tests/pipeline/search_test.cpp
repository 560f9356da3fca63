#include <banyan/pipeline/dsl.hpp>
#include <banyan/pipeline/greedy.hpp>
#include <banyan/pipeline/search.hpp>
#include <banyan/pipeline/validate.hpp>

#include <gtest/gtest.h>

#include <random>

namespace bp = banyan::pipeline;

namespace {

// Small deterministic budgets: the generation and step counts end the search, not the clock.
bp::search_options quick(int p, int m, double cap, std::uint64_t seed = 1) {
  bp::search_options o;
  o.p = p, o.m = m, o.mem_cap = cap, o.seed = seed;
  o.generations = 6, o.population = 12, o.local_steps = 1500, o.time_limit_s = 600;
  return o;
}

bp::costs lm_head(int p) {
  bp::costs c = bp::uniform_costs(p, 1, 1, 1);
  auto& last = c.units.back();
  last.t_f *= 1.6, last.t_b *= 1.6, last.t_i *= 1.6, last.t_w *= 1.6;
  return c;
}

void expect_consistent(const bp::search_result& r, const bp::search_options& o, const bp::costs& c) {
  EXPECT_FALSE(bp::validate(r.best.t)) << bp::validate(r.best.t)->message;
  if (o.mem_cap > 0) {
    EXPECT_LE(r.best.sim.max_peak_memory(), o.mem_cap + 1e-9);
  }
  // The DSL text compiles back to a table with the same simulated makespan.
  auto prog = bp::parse_program(r.dsl, "searched");
  ASSERT_TRUE(prog) << prog.error().message << "\n" << r.dsl;
  auto t = bp::compile(*prog, {o.p, o.m, r.best.v});
  ASSERT_TRUE(t) << t.error().message;
  auto stages = bp::stage_costs(c, t->stages);
  ASSERT_TRUE(stages);
  auto s = bp::simulate(*t, *stages, {c.latency, c.bandwidth});
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_DOUBLE_EQ(s->makespan, r.best.sim.makespan);
}

}  // namespace

TEST(Search, NeverWorseThanTheBestShippedProgramWithinTheCap) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> f(0.5, 2.0);
  for (int trial = 0; trial < 3; ++trial) {
    bp::costs c;
    for (int s = 0; s < 4; ++s) {
      const double ti = f(rng), tw = f(rng);
      c.units.push_back({f(rng), ti + tw, ti, tw, 1, 0, 0});
    }
    for (double cap : {4.0, 6.0, 0.0}) {
      SCOPED_TRACE("trial " + std::to_string(trial) + " cap " + std::to_string(cap));
      auto o = quick(4, 8, cap, seed);
      auto r = bp::search(c, o);
      ASSERT_TRUE(r) << r.error().message;
      ASSERT_TRUE(r->best_predefined);
      EXPECT_LE(r->best.sim.makespan, r->best_predefined->sim.makespan + 1e-9);
      expect_consistent(*r, o, c);
    }
  }
}

TEST(Search, BeatsShippedProgramsOnAHeavyLastStage) {
  auto c = lm_head(4);
  auto o = quick(4, 8, 6.0);
  auto r = bp::search(c, o);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(r->best_predefined);
  EXPECT_LT(r->best.sim.makespan, r->best_predefined->sim.makespan) << r->best.origin;
  expect_consistent(*r, o, c);
}

TEST(Search, SameSeedSameResult) {
  auto c = lm_head(4);
  auto a = bp::search(c, quick(4, 8, 4.0, 7));
  auto b = bp::search(c, quick(4, 8, 4.0, 7));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->best.t, b->best.t);
  EXPECT_EQ(a->dsl, b->dsl);
}

TEST(Search, CapBelowOneMicrobatchIsAnError) {
  auto r = bp::search(bp::uniform_costs(4, 1, 1, 1, 2.0), quick(4, 8, 1.0));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("cap"), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().code, bp::errc::infeasible);
}

TEST(Greedy, TablesAreValidAndWithinTheCap) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 20; ++trial) {
    const int p = std::uniform_int_distribution<int>(1, 6)(rng), m = std::uniform_int_distribution<int>(1, 12)(rng);
    const int v = std::uniform_int_distribution<int>(1, 2)(rng);
    bp::greedy_policy pol;
    pol.v = v;
    pol.place = v == 2 && trial % 2 ? bp::placement::vshape : bp::placement::loop;
    pol.split_backward = trial % 3 != 0;
    for (int r = 0; r < p; ++r) {
      pol.max_inflight.push_back(std::uniform_int_distribution<int>(0, 2 * p)(rng));
      pol.prefer_forward.push_back(std::uniform_int_distribution<int>(0, 1)(rng));
      pol.w_delay.push_back(std::uniform_int_distribution<int>(-1, 3)(rng));
    }
    const double cap = std::uniform_int_distribution<int>(1, 2 * p)(rng);
    SCOPED_TRACE("trial " + std::to_string(trial) + " p=" + std::to_string(p) + " m=" + std::to_string(m) +
                 " v=" + std::to_string(v) + " cap=" + std::to_string(cap));
    auto stages = bp::stage_costs(bp::uniform_costs(p, 1, 1, 1), p * v);
    auto t = bp::greedy_schedule(p, m, *stages, {}, cap, pol);
    if (!t) continue;  // a stall under a tight cap is an ordinary outcome
    auto viol = bp::validate(*t);
    ASSERT_FALSE(viol) << viol->message;
    auto s = bp::simulate(*t, *stages);
    ASSERT_TRUE(s);
    EXPECT_LE(s->max_peak_memory(), cap + 1e-9);
    EXPECT_TRUE(bp::explicit_program(*t, p, v, pol.place, "g"));
  }
}
