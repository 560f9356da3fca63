// One relative capacity rule everywhere, whatever the loads' magnitude; exact
// solvers never worse than their warm start; time limits bound the wall time.
#include "banyan/partitioner/algorithm.hpp"
#include "banyan/partitioner/generator.hpp"

#include "brute_force.hpp"
// White-box: the process sandbox that bounds the exact solvers' wall time is private to the library.
#include "../../partitioner/src/exact_common.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>

namespace banyan::partitioner {
namespace {

// `p` with every load and capacity multiplied by `scale`: the same problem in relative terms, so the
// same mappings fit and the optimum is the same.
problem scaled(const problem& p, double scale) {
  tree t = p.t;
  for (double& x : t.cpu) x *= scale;
  for (double& x : t.memory) x *= scale;
  cluster c = p.c;
  for (std::size_t j = 0; j < c.nodes.size(); ++j) {
    c.nodes[j].cpu = {p.cpu_capacity[j] * scale, false};
    if (c.nodes[j].memory) c.nodes[j].memory = capacity_spec{p.memory_capacity[j] * scale, false};
  }
  auto q = make_problem(std::move(t), std::move(c));
  EXPECT_TRUE(q) << q.error().message;
  return std::move(*q);
}

bool labelled_within(solve_status s) { return s == solve_status::optimal || s == solve_status::feasible; }

TEST(Capacity, RuleIsRelativeOnly) {
  EXPECT_TRUE(within_capacity(2e-12, 2e-12));
  EXPECT_TRUE(within_capacity(2e-12 * (1 + 0.5 * capacity_tolerance), 2e-12));
  EXPECT_FALSE(within_capacity(3e-12, 2e-12));  // an absolute 1e-12 slack would accept it
  EXPECT_FALSE(within_capacity(1e-300, 0));
  EXPECT_EQ(within_capacity(3, 2), within_capacity(3e-12, 2e-12));  // scale-free
}

// The case: two components of 1.5e-12 on two nodes of 2e-12. Only the mappings that put
// them apart fit, and they cost 100.
TEST(Capacity, TinyLoadsCannotShareANode) {
  tree t;
  t.parent = {no_vertex, 0};
  t.cpu = {1.5e-12, 1.5e-12};
  t.weight = {0, 100};
  t.path = {"/a", "/a/b"};
  cluster c;
  for (int j = 0; j < 2; ++j) {
    node_spec nd;
    nd.name = "n" + std::to_string(j);
    nd.endpoint = "tcp://127.0.0.1:" + std::to_string(7100 + j);
    nd.cpu = {2e-12, false};
    c.nodes.push_back(nd);
  }
  auto p = make_problem(t, c);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_FALSE(evaluate(*p, {0, 0}).feasible);
  EXPECT_TRUE(evaluate(*p, {0, 1}).feasible);
  for (const auto& name : algorithm_names()) {
    auto s = solve(name, *p, {.timeout_s = 10});
    ASSERT_TRUE(s);
    SCOPED_TRACE(name + ": " + to_string(s->status) + " " + s->message);
    if (labelled_within(s->status)) {
      EXPECT_NE(s->map[0], s->map[1]);
      EXPECT_EQ(s->cost, 100);
    }
    if (name == "smt" || name == "mip" || name == "bottom-up") {
      EXPECT_TRUE(labelled_within(s->status));
    }
    if (name == "smt" || name == "mip") {
      EXPECT_EQ(s->status, solve_status::optimal);
    }
  }
}

// Integer instances scaled to loads of ~1e-12, ~1e-6 and ~1e6: every label must be true by the
// unscaled instance (which brute force solves), and the exact solvers must still prove the optimum.
TEST(Capacity, LabelsAndOptimaDoNotDependOnTheLoadsMagnitude) {
  int checked = 0;
  for (std::uint64_t seed = 900; checked < 24; ++seed) {
    auto base = testing::tiny_problem(seed, {.max_vertices = 8, .max_nodes = 3, .slack_min = 1.0, .slack_max = 1.15});
    if (!base) continue;
    ++checked;
    const auto truth = testing::brute_force(*base);
    for (double scale : {1e-12, 1e-6, 1e6}) {
      SCOPED_TRACE("seed=" + std::to_string(seed) + " scale=" + std::to_string(scale));
      const problem p = scaled(*base, scale);
      for (const auto& name : algorithm_names()) {
        auto s = solve(name, p, {.timeout_s = 10, .seed = seed});
        ASSERT_TRUE(s);
        SCOPED_TRACE(name + ": " + to_string(s->status) + " " + s->message);
        if (labelled_within(s->status)) {
          ASSERT_TRUE(truth.feasible);
          EXPECT_TRUE(testing::naive_feasible(*base, s->map));
          EXPECT_GE(s->cost, truth.cost - 1e-9);
        }
        if (name == "smt" || name == "mip") {
          if (truth.feasible) {
            EXPECT_EQ(s->status, solve_status::optimal);
            EXPECT_NEAR(s->cost, truth.cost, 1e-6);
          } else {
            EXPECT_EQ(s->status, solve_status::infeasible);
          }
        }
      }
    }
  }
}

problem generated(std::size_t n, std::size_t k, std::uint64_t seed, double load_scale, std::size_t rack) {
  generator_options g{.components = n, .seed = seed, .nodes = k, .slack = 1.05, .rack_size = rack};
  tree t = generate_tree(g);
  for (double& x : t.cpu) x *= load_scale;
  cluster c = generate_cluster(t, g);
  auto p = make_problem(std::move(t), std::move(c));
  EXPECT_TRUE(p) << p.error().message;
  return std::move(*p);
}

// Warm-started exact solvers return the warm start or something cheaper, within capacity, also when
// the time limit leaves them no time at all and with loads of ~1e-6.
TEST(Capacity, WarmStartedExactSolversNeverReturnWorse) {
  for (std::uint64_t seed : {3u, 4u}) {
    for (double timeout : {0.01, 0.5}) {
      SCOPED_TRACE("seed=" + std::to_string(seed) + " timeout=" + std::to_string(timeout));
      const problem p = generated(60, 4, seed, 1e-6, 0);
      auto h = solve("bottom-up", p, {.seed = seed});
      ASSERT_TRUE(h);
      ASSERT_EQ(h->status, solve_status::feasible) << h->message;
      for (const char* name : {"smt", "mip"}) {
        auto s = solve(name, p, {.timeout_s = timeout, .seed = seed, .warm_start = &h->map});
        ASSERT_TRUE(s);
        SCOPED_TRACE(std::string(name) + ": " + to_string(s->status) + " " + s->message);
        ASSERT_TRUE(labelled_within(s->status));
        EXPECT_TRUE(evaluate(p, s->map).feasible);
        EXPECT_LE(s->cost, h->cost * (1 + 1e-12));
      }
    }
  }
}

// A model that neither solver proves in a second: the wall time stays near the limit.
TEST(Capacity, ExactSolversStopAtTheTimeLimit) {
  const problem p = generated(400, 8, 7, 1, 4);
  auto h = solve("bottom-up", p, {.seed = 7});
  ASSERT_TRUE(h);
  for (const char* name : {"smt", "mip"}) {
    for (const bool warm : {false, true}) {
      SCOPED_TRACE(std::string(name) + (warm ? " warm" : " cold"));
      const auto start = std::chrono::steady_clock::now();
      auto s = solve(name, p, {.timeout_s = 1, .warm_start = warm ? &h->map : nullptr});
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      ASSERT_TRUE(s);
      // 1 s budget, up to 1 s grace for CBC to report (mip) or Z3 to notice the interrupt, and
      // slack for a loaded 2-core CI machine.
      EXPECT_LT(wall, 3.0) << to_string(s->status) << " " << s->message;
      if (warm) {
        ASSERT_TRUE(labelled_within(s->status)) << s->message;
        EXPECT_LE(s->cost, h->cost * (1 + 1e-12));
      }
    }
  }
}

// The sandbox itself: a child that never finishes is killed at the deadline and its last interim
// answer comes back; a child that finishes returns its final answer.
TEST(Capacity, BoundedRunKillsAtTheDeadlineAndKeepsTheLastIncumbent) {
  const detail::stopwatch clock;
  bool overran = false;
  auto stuck = detail::run_bounded(
      [](const detail::emit_fn& emit) -> std::string {
        emit("first");
        emit("second");
        for (;;) ::pause();  // blocks until killed; no timing involved
      },
      0.3, clock, &overran);
  EXPECT_TRUE(overran);
  ASSERT_TRUE(stuck.has_value());
  EXPECT_EQ(*stuck, "second");
  EXPECT_LT(clock.seconds(), 2.0);
  auto done = detail::run_bounded(
      [](const detail::emit_fn& emit) {
        emit("interim");
        return std::string(100000, 'x');
      },
      clock.seconds() + 30, clock, &overran);
  EXPECT_FALSE(overran);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(*done, std::string(100000, 'x'));
}

}  // namespace
}  // namespace banyan::partitioner
