#include "banyan/partitioner/algorithm.hpp"
#include "banyan/partitioner/generator.hpp"

#include "brute_force.hpp"

#include <gtest/gtest.h>

namespace banyan::partitioner {
namespace {

// No algorithm ever labels an over-capacity mapping feasible or optimal; every labelled mapping
// has one valid node per vertex; the reported cost is evaluate's.
TEST(Algorithms, NeverLabelOverCapacityFeasible) {
  int checked = 0;
  for (std::uint64_t seed = 1; checked < 60; ++seed) {
    SCOPED_TRACE("seed=" + std::to_string(seed));
    auto p = testing::tiny_problem(seed, {.max_vertices = 12, .max_nodes = 4, .memory = seed % 2 == 0, .slack_min = 1.0, .slack_max = 1.15});
    if (!p) continue;
    ++checked;
    for (const auto& algo : algorithm_names()) {
      SCOPED_TRACE(algo);
      auto s = solve(algo, *p, {.timeout_s = 10, .seed = seed});
      ASSERT_TRUE(s) << s.error().message;
      if (s->status == solve_status::feasible || s->status == solve_status::optimal) {
        ASSERT_EQ(s->map.size(), p->t.size());
        EXPECT_TRUE(testing::naive_feasible(*p, s->map));
        EXPECT_DOUBLE_EQ(s->cost, testing::naive_cost(*p, s->map));
      }
    }
  }
}

TEST(Algorithms, SameSeedSameMapping) {
  generator_options g{.components = 300, .seed = 7, .nodes = 8};
  const tree t = generate_tree(g);
  auto p = make_problem(t, generate_cluster(t, g));
  ASSERT_TRUE(p) << p.error().message;
  for (const auto& algo : algorithm_names()) {
    if (algo == "smt" || algo == "mip") continue;  // solver timing may change which model is found
    SCOPED_TRACE(algo);
    auto a = solve(algo, *p, {.seed = 3});
    auto b = solve(algo, *p, {.seed = 3});
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->map, b->map);
  }
}

TEST(Algorithms, BottomUpIsFeasibleOnGeneratedTreesWithRacks) {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    SCOPED_TRACE("seed=" + std::to_string(seed));
    generator_options g{.components = 5000, .seed = seed, .memory = seed % 2 == 0, .nodes = 8, .slack = 1.15, .rack_size = 4};
    const tree t = generate_tree(g);
    auto p = make_problem(t, generate_cluster(t, g));
    ASSERT_TRUE(p) << p.error().message;
    auto s = solve("bottom-up", *p);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->status, solve_status::feasible) << s->message;
    auto greedy = solve("greedy", *p);
    ASSERT_TRUE(greedy);
    if (greedy->status == solve_status::feasible) {
      EXPECT_LE(s->cost, greedy->cost);
    }
  }
}

TEST(Algorithms, UnknownNameIsAnError) {
  auto a = make_algorithm("simulated-annealing");
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().code, errc::unknown_algorithm);
  EXPECT_NE(a.error().message.find("bottom-up"), std::string::npos);
}

TEST(Algorithms, ExactSolversOnTimeoutReturnBestFoundOrWarmStart) {
  generator_options g{.components = 200, .seed = 11, .nodes = 8, .slack = 1.1};
  const tree t = generate_tree(g);
  auto p = make_problem(t, generate_cluster(t, g));
  ASSERT_TRUE(p);
  auto h = solve("bottom-up", *p);
  ASSERT_TRUE(h);
  ASSERT_EQ(h->status, solve_status::feasible);
  for (const char* algo : {"smt", "mip"}) {
    auto s = solve(algo, *p, {.timeout_s = 0.5, .warm_start = &h->map});
    ASSERT_TRUE(s);
    EXPECT_NE(s->status, solve_status::unknown) << algo;
    EXPECT_NE(s->status, solve_status::infeasible) << algo;
    EXPECT_LE(s->cost, h->cost + 1e-9) << algo;
    EXPECT_LT(s->seconds, 20) << algo;
  }
}

}  // namespace
}  // namespace banyan::partitioner
