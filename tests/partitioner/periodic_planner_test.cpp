// The periodic planner: the MIP against brute force, the heuristic's gap to the MIP, plans that meet
// their targets, unreachable targets, baselines and the plan file.
#include "periodic_model.hpp"

#include "banyan/partitioner/periodic_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace banyan::partitioner::periodic {
namespace {

std::uint64_t base_seed() {
  const char* s = std::getenv("BANYAN_TEST_SEED");
  return s ? std::strtoull(s, nullptr, 10) : 20260101;
}

// Every pattern of every workflow and every node of every subtree: the cheapest within capacity.
double brute_force(const detail::model& m) {
  const std::vector<int> margins(m.flows.size(), 0);
  detail::choice c;
  c.pattern.assign(m.flows.size(), 0);
  c.node.assign(m.w->subtrees.size(), 0);
  double best = std::numeric_limits<double>::infinity();
  const auto k = static_cast<node_id>(m.w->nodes.size());
  for (;;) {
    const detail::model_eval e = detail::model_cost(m, c, margins);
    if (e.feasible) best = std::min(best, e.cost);
    // Next combination: nodes first, then patterns (odometer).
    std::size_t i = 0;
    for (; i < c.node.size(); ++i) {
      if (++c.node[i] < k) break;
      c.node[i] = 0;
    }
    if (i < c.node.size()) continue;
    std::size_t f = 0;
    for (; f < c.pattern.size(); ++f) {
      if (++c.pattern[f] < static_cast<int>(m.flows[f].patterns.size())) break;
      c.pattern[f] = 0;
    }
    if (f == c.pattern.size()) break;
  }
  return best;
}

workload_shape tiny() {
  workload_shape s;
  s.subtrees = 4;
  s.nodes = 2;
  s.slot = 600;
  s.horizon = 7200;
  s.slack = 0.8;
  return s;
}

TEST(PeriodicMip, ReachesTheBruteForceOptimumOnTinyInstances) {
  const std::uint64_t seed0 = base_seed();
  for (std::uint64_t i = 0; i < 25; ++i) {
    const std::uint64_t seed = seed0 + i;
    SCOPED_TRACE("seed " + std::to_string(seed) + " (BANYAN_TEST_SEED=" + std::to_string(seed0) + ")");
    const workload w = random_workload(seed, tiny());
    const detail::model m = detail::build_model(w);
    const std::vector<int> margins(m.flows.size(), 0);
    const double best = brute_force(m);
    const detail::solved s = detail::solve_mip(m, margins, 20, nullptr);
    if (!std::isfinite(best)) {
      EXPECT_FALSE(s.found) << "brute force finds no schedule within capacity";
      continue;
    }
    ASSERT_TRUE(s.found) << s.message;
    EXPECT_TRUE(s.optimal) << s.message;
    EXPECT_NEAR(s.cost, best, 1e-6 * std::max(1.0, best));
    EXPECT_LE(s.bound, best * (1 + 1e-6) + 1e-9);
  }
}

TEST(PeriodicHeuristic, StaysWithinThreePercentOfTheMipOnRandomSmallInstances) {
  const std::uint64_t seed0 = base_seed();
  std::vector<double> gaps;
  workload_shape shape;
  shape.subtrees = 8;
  shape.nodes = 3;
  // 14 seeded workloads, and three of periodic_bench's (seeds 27, 40, 56) whose optimum switches
  // patterns and moves most subtrees at once: the ones a heuristic that re-plans from a stale state
  // missed by up to 6.5%.
  std::vector<std::uint64_t> seeds{27, 40, 56};
  for (std::uint64_t i = 0; i < 14; ++i) seeds.push_back(seed0 + 100 + i);
  for (const std::uint64_t seed : seeds) {
    SCOPED_TRACE("seed " + std::to_string(seed) + " (BANYAN_TEST_SEED=" + std::to_string(seed0) + ")");
    const workload w = random_workload(seed, shape);
    const detail::model m = detail::build_model(w);
    const std::vector<int> margins(m.flows.size(), 0);
    const detail::solved exact = detail::solve_mip(m, margins, 30, nullptr);
    const detail::solved h = detail::solve_heuristic(m, margins);
    if (!exact.found || !exact.optimal) continue;
    ASSERT_TRUE(h.found) << h.message;
    EXPECT_GE(h.cost, exact.cost * (1 - 1e-6));
    gaps.push_back(exact.cost > 0 ? h.cost / exact.cost - 1 : 0);
  }
  ASSERT_GE(gaps.size(), 14U);
  std::sort(gaps.begin(), gaps.end());
  EXPECT_LE(gaps[gaps.size() / 2], 0.03) << "median gap";
  EXPECT_LE(gaps.back(), 0.03) << "worst gap";
}

TEST(PeriodicPlan, EveryWorkflowMeetsItsTargetAndTheSeedIsKept) {
  const std::uint64_t seed = base_seed() + 7;
  SCOPED_TRACE("seed " + std::to_string(seed));
  workload_shape shape;
  shape.subtrees = 8;
  shape.nodes = 3;
  const workload w = random_workload(seed, shape);
  plan_options o;
  o.simulation.samples = 20000;
  o.simulation.seed = seed;
  for (auto algo : {plan_algorithm::heuristic, plan_algorithm::mip}) {
    o.algorithm = algo;
    auto p = make_plan(w, o);
    ASSERT_TRUE(p) << p.error().what();
    EXPECT_EQ(p->e.seed, seed);
    for (const auto& f : p->e.workflows) EXPECT_GE(f.fraction, f.target) << f.name;
    // Never dearer than keeping everything awake on the same nodes.
    EXPECT_LE(p->e.planned_cost, planned_cost(w, always_on(w, p->s.node)) + 1e-9);
  }
}

TEST(PeriodicPlan, RepairWidensWindowsUntilAShortWorkflowMeetsItsTarget) {
  // One request whose wake-up (0-600 s) often exceeds the lead planned at the median (300 s): the
  // first plan meets 0.5 but misses 0.99, and the repair adds slots before the instance until it
  // meets it.
  workload w;
  w.slot = 60;
  w.horizon = 3600;
  w.nodes = {{"n0", 1, 1}};
  w.subtrees = {{"/a", 1, {{0, 600}, {1}}, histogram::constant(10), 1}};
  w.home = {no_node};
  workflow_spec f;
  f.name = "f";
  f.period = 3600;
  f.phase = 1800;
  f.deadline = 60;
  f.reliability = 0.5;
  f.requests = {{"q", 0, false, {}, 1, 1}};
  w.workflows = {f};
  plan_options o;
  o.simulation.samples = 20000;
  o.planning_quantile = 0.5;
  auto p = make_plan(w, o);
  ASSERT_TRUE(p) << p.error().what();
  EXPECT_GE(p->e.workflows[0].fraction, 0.5);
  EXPECT_EQ(p->repairs, 0U);
  w.workflows[0].reliability = 0.99;
  auto q = make_plan(w, o);
  ASSERT_TRUE(q) << q.error().what();
  EXPECT_GE(q->e.workflows[0].fraction, 0.99);
  EXPECT_GT(q->repairs, 0U);
  EXPECT_GT(q->margins[0], 0);
  EXPECT_GT(q->e.planned_cost, p->e.planned_cost);
}

TEST(PeriodicPlan, AnUnreachableTargetNamesTheWorkflowAndTheBestProbability) {
  workload w;
  w.slot = 60;
  w.horizon = 3600;
  w.nodes = {{"n0", 1, 1}};
  w.subtrees = {{"/a", 1, histogram::constant(1), {{0, 100}, {1}}, 1}};  // response uniform 0-100 s
  w.home = {no_node};
  workflow_spec f;
  f.name = "nightly";
  f.period = 3600;
  f.deadline = 50;  // met with probability 0.5 at best
  f.reliability = 0.9;
  f.requests = {{"q", 0, false, {}, 1, 1}};
  w.workflows = {f};
  plan_options o;
  o.simulation.samples = 20000;
  auto p = make_plan(w, o);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("workflow `nightly`"), std::string::npos) << p.error().message;
  const auto at = p.error().message.find("cannot be met: at best ");
  ASSERT_NE(at, std::string::npos) << p.error().message;
  EXPECT_NEAR(std::strtod(p.error().message.c_str() + at + 23, nullptr), 0.5, 0.02) << p.error().message;
}

TEST(PeriodicBaselines, AlwaysOnIsDearestAndAllMeetTheirDeadlinesWhenWakeUpsFit) {
  workload_shape shape;
  shape.subtrees = 10;
  shape.nodes = 3;
  shape.slot = 60;
  shape.horizon = 86400;
  SCOPED_TRACE("seed " + std::to_string(base_seed() + 3));
  const workload w = random_workload(base_seed() + 3, shape);
  std::vector<node_id> placement(w.subtrees.size());
  for (std::size_t s = 0; s < placement.size(); ++s) placement[s] = static_cast<node_id>(s % w.nodes.size());
  simulate_options o;
  o.samples = 5000;
  const evaluation on = simulate(w, always_on(w, placement), o);
  const evaluation ka = simulate(w, fixed_keep_alive(w, placement, 60), o);
  const evaluation hy = simulate(w, hybrid_histogram(w, placement), o);
  EXPECT_NEAR(on.met_fraction, 1.0, 1e-12);
  EXPECT_LT(ka.cost, on.cost);
  EXPECT_LT(hy.cost, on.cost);
  EXPECT_GT(ka.cost, 0);
}

TEST(PeriodicPlanFile, RoundTripsAndRefusesAnotherDeployment) {
  SCOPED_TRACE("seed " + std::to_string(base_seed() + 5));
  const workload w0 = random_workload(base_seed() + 5, tiny());
  workload w = w0;
  w.deployment_fingerprint = "fnv1a64:0000000000000001";
  plan_file p;
  p.s = fixed_keep_alive(w, std::vector<node_id>(w.subtrees.size(), 1), 30);
  p.s.awake[0][3] = p.s.awake[0][4] = p.s.awake[1][0] = p.s.awake[1][11] = 1;
  p.deployment = "d.yaml";
  p.deployment_fingerprint = w.deployment_fingerprint;
  p.reliability = {{"w0", 0.99, 0.995, 0.99, 0.997}};
  std::ostringstream out;
  write_plan(out, w, p);
  auto back = parse_plan(out.str(), "plan.yaml", w);
  ASSERT_TRUE(back) << back.error().what() << "\n" << out.str();
  EXPECT_EQ(back->s.awake, p.s.awake);
  EXPECT_EQ(back->s.node, p.s.node);
  EXPECT_EQ(back->s.keep_alive, p.s.keep_alive);
  ASSERT_EQ(back->reliability.size(), 1U);
  EXPECT_EQ(back->reliability[0].predicted, 0.995);
  workload other = w0;
  other.deployment_fingerprint = "fnv1a64:0000000000000002";
  auto refused = parse_plan(out.str(), "plan.yaml", other);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("plan.yaml:4: this plan is for another deployment"), std::string::npos)
      << refused.error().message;
}

}  // namespace
}  // namespace banyan::partitioner::periodic
