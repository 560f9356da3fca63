// The Monte Carlo against analytic cases: uniform and deterministic times, planned and on-demand
// wake-ups, and the cost of known schedules.
#include "banyan/partitioner/periodic_plan.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

namespace banyan::partitioner::periodic {
namespace {

std::uint64_t seed() {
  const char* s = std::getenv("BANYAN_TEST_SEED");
  return s ? std::strtoull(s, nullptr, 10) : 4242;
}

histogram uniform(double a, double b) { return {{a, b}, {1}}; }

// One node (capacity 10, 2 per hour), one workflow of period 1 h over a 1 h horizon, slot 60 s.
workload one(const std::vector<subtree_spec>& subs, const std::vector<request_spec>& requests, double deadline,
             double phase = 600) {
  workload w;
  w.slot = 60;
  w.horizon = 3600;
  w.nodes = {{"n0", 10, 2}};
  w.subtrees = subs;
  w.home.assign(subs.size(), no_node);
  workflow_spec f;
  f.name = "f";
  f.period = 3600;
  f.phase = phase;
  f.deadline = deadline;
  f.reliability = 0.5;
  f.requests = requests;
  w.workflows = {f};
  return w;
}

// p-hat lies within 4.5 standard errors of p (a false failure about once in 150,000 runs).
void expect_probability(const workflow_outcome& o, double p, std::uint64_t s) {
  const double se = std::sqrt(p * (1 - p) / static_cast<double>(o.samples));
  EXPECT_NEAR(o.fraction, p, 4.5 * se + 1e-12) << "seed " << s << " (BANYAN_TEST_SEED replays it)";
  EXPECT_LE(o.low, o.fraction);
  EXPECT_GE(o.high, o.fraction);
}

TEST(PeriodicWilson, KnownIntervals) {
  const auto [lo0, hi0] = wilson(0, 10);
  EXPECT_EQ(lo0, 0);
  EXPECT_NEAR(hi0, 0.27753, 1e-5);
  const auto [lo, hi] = wilson(50, 100);
  EXPECT_NEAR(lo, 0.40383, 1e-5);
  EXPECT_NEAR(hi, 0.59617, 1e-5);
}

TEST(PeriodicSimulate, AlwaysOnMatchesAUniformResponseTime) {
  const auto s = seed();
  const workload w = one({{"/a", 1, histogram::constant(5), uniform(0, 100), 1}}, {{"q", 0, false, {}, 1, 1}}, 70);
  const evaluation e = simulate(w, always_on(w, {0}), {100000, s});
  expect_probability(e.workflows[0], 0.7, s);
  EXPECT_EQ(e.seed, s);
  EXPECT_NEAR(e.cost, 2.0, 1e-12);  // one node, awake the whole hour
}

TEST(PeriodicSimulate, AChainAddsItsResponseTimes) {
  // Two uniform(0, 1) s in sequence: P(U1 + U2 <= 1.5) = 1 - 0.5^2 / 2 = 0.875. After a publish
  // the second waits for the first's delivery only, so the instance ends at max(U1, U2):
  // P(max <= 0.5) = 0.25.
  const auto s = seed();
  const std::vector<subtree_spec> subs{{"/a", 1, histogram::constant(0), uniform(0, 1), 1},
                                       {"/b", 1, histogram::constant(0), uniform(0, 1), 2}};
  const workload w = one(subs, {{"a", 0, false, {}, 1, 1}, {"b", 1, false, {0}, 1, 2}}, 1.5);
  expect_probability(simulate(w, always_on(w, {0, 0}), {100000, s}).workflows[0], 0.875, s);
  const workload p = one(subs, {{"a", 0, true, {}, 1, 1}, {"b", 1, false, {0}, 1, 2}}, 0.5);
  expect_probability(simulate(p, always_on(p, {0, 0}), {100000, s}).workflows[0], 0.25, s);  // max(U1, U2) <= 0.5
}

TEST(PeriodicSimulate, AnOnDemandWakeUpDelaysTheRequest) {
  // Asleep: the request waits for a 5 s wake-up, then takes uniform(0, 10): P(5 + R <= 10) = 0.5.
  const auto s = seed();
  const workload w = one({{"/a", 1, histogram::constant(5), uniform(0, 10), 1}}, {{"q", 0, false, {}, 1, 1}}, 10);
  const evaluation e = simulate(w, fixed_keep_alive(w, {0}, 60), {100000, s});
  expect_probability(e.workflows[0], 0.5, s);
  // Awake from the wake-up (at 600 s) to the end plus 60 s: 65-75 s, within slots 10 and 11.
  EXPECT_NEAR(e.cost, 2.0 * 2 / 60, 1e-12);
  EXPECT_EQ(e.planned_cost, 0);
}

TEST(PeriodicSimulate, APlannedWakeUpStartsAtItsSlot) {
  // Woken at the start of slot 10 (600 s, the release): ready after uniform(0, 60) s; the request
  // (no response time) meets a 30 s deadline with probability 0.5. Woken a slot earlier: always.
  const auto s = seed();
  const workload w = one({{"/a", 1, uniform(0, 60), histogram::constant(0), 1}}, {{"q", 0, false, {}, 1, 1}}, 30);
  schedule plan = fixed_keep_alive(w, {0}, 0);
  plan.awake[0][10] = plan.awake[0][11] = 1;
  const evaluation late = simulate(w, plan, {100000, s});
  expect_probability(late.workflows[0], 0.5, s);
  EXPECT_NEAR(late.cost, 2.0 * 2 / 60, 1e-12);
  plan.awake[0][9] = 1;
  const evaluation early = simulate(w, plan, {100000, s});
  EXPECT_EQ(early.workflows[0].met, early.workflows[0].samples);
  EXPECT_NEAR(early.planned_cost, 2.0 * 3 / 60, 1e-12);
}

TEST(PeriodicSimulate, ARunAcrossTheEndOfTheHorizonCountsAsOne) {
  // Released at 3590 s; the plan keeps slots 58, 59 (and so the run that began at 3480 s) awake:
  // a wake-up of up to 100 s is over by 3580 s.
  const auto s = seed();
  const workload w =
      one({{"/a", 1, uniform(0, 100), histogram::constant(20), 1}}, {{"q", 0, false, {}, 1, 1}}, 25, 3590);
  schedule plan = fixed_keep_alive(w, {0}, 0);
  plan.awake[0][58] = plan.awake[0][59] = plan.awake[0][0] = 1;
  const evaluation e = simulate(w, plan, {20000, s});
  EXPECT_EQ(e.workflows[0].met, e.workflows[0].samples);
}

TEST(PeriodicSimulate, SameSeedSameFigures) {
  const workload w = random_workload(seed(), {});
  std::vector<node_id> nodes(w.subtrees.size(), 0);
  const evaluation a = simulate(w, fixed_keep_alive(w, nodes, 60), {20000, 9});
  const evaluation b = simulate(w, fixed_keep_alive(w, nodes, 60), {20000, 9});
  ASSERT_EQ(a.workflows.size(), b.workflows.size());
  for (std::size_t f = 0; f < a.workflows.size(); ++f) EXPECT_EQ(a.workflows[f].met, b.workflows[f].met);
  EXPECT_EQ(a.cost, b.cost);
}

}  // namespace
}  // namespace banyan::partitioner::periodic
