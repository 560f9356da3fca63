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
    auto p = testing::tiny_problem(
        seed, {.max_vertices = 12, .max_nodes = 4, .memory = seed % 2 == 0, .slack_min = 1.0, .slack_max = 1.15});
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
    generator_options g{
        .components = 5000, .seed = seed, .memory = seed % 2 == 0, .nodes = 8, .slack = 1.15, .rack_size = 4};
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

// round-robin-leaves deals out whole subtrees: the leaves go to nodes 0, 1, 2, 0, ... in top-down
// order and each composite stays on its parent's node, so every leaf is a subtree alone on its node
// (what a live move moves). When the node in turn is full the leaf probes the next one.
TEST(Algorithms, RoundRobinLeavesDealsOutLeavesAndKeepsCompositesWithTheirParent) {
  // 0 root; 1, 2 composites under it; leaves 3, 4 under 1, 5, 6, 7 under 2, 8 under the root.
  tree t;
  t.parent = {no_vertex, 0, 0, 1, 1, 2, 2, 2, 0};
  t.cpu = {0, 0, 0, 1, 1, 1, 1, 1, 1};
  t.weight = {0, 5, 5, 3, 3, 3, 3, 3, 3};
  cluster c;
  for (const char* n : {"n0", "n1", "n2"}) c.nodes.push_back({.name = n, .cpu = {.amount = 2}});
  auto p = make_problem(t, c);
  ASSERT_TRUE(p) << p.error().message;
  auto s = solve("round-robin-leaves", *p);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->status, solve_status::feasible) << s->message;
  EXPECT_EQ(s->map, (mapping{0, 0, 0, 0, 1, 2, 0, 1, 2}));
  EXPECT_DOUBLE_EQ(s->cost, 4 * 3.0);  // leaves 4, 5, 7, 8 are cut from their composite

  // Node 0 full (capacity 1): its turns probe on to n1, then n2; composites still follow parents.
  c.nodes[0].cpu.amount = 1;
  c.nodes[1].cpu.amount = 3;
  c.nodes[2].cpu.amount = 3;
  auto q = make_problem(t, c);
  ASSERT_TRUE(q) << q.error().message;
  auto f = solve("round-robin-leaves", *q);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status, solve_status::feasible) << f->message;
  EXPECT_EQ(f->map, (mapping{0, 0, 0, 0, 1, 2, 1, 1, 2}));
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
