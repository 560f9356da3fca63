#include "banyan/partitioner/model.hpp"

#include "brute_force.hpp"

#include <gtest/gtest.h>

namespace banyan::partitioner {
namespace {

// /r with children /r/a and /r/b; /r/a has child /r/a/x.
tree small_tree() {
  tree t;
  t.path = {"/r", "/r/a", "/r/b", "/r/a/x"};
  t.parent = {-1, 0, 0, 1};
  t.cpu = {1, 2, 3, 4};
  t.weight = {0, 10, 20, 30};
  return t;
}

cluster two_nodes(double cap) {
  cluster c;
  c.nodes.push_back({"n0", "tcp://h:1", "", {cap, false}, std::nullopt, 0});
  c.nodes.push_back({"n1", "tcp://h:2", "", {cap, false}, std::nullopt, 0});
  return c;
}

TEST(Model, CostIsCutTrafficTimesLinkCost) {
  auto p = make_problem(small_tree(), two_nodes(10));
  ASSERT_TRUE(p) << p.error().message;
  const evaluation e = evaluate(*p, {0, 0, 1, 1});
  EXPECT_EQ(e.cost, 20 + 30);
  EXPECT_EQ(e.cut_edges, 2u);
  EXPECT_EQ(e.cpu_load[0], 3);
  EXPECT_EQ(e.cpu_load[1], 7);
  EXPECT_TRUE(e.feasible);
  EXPECT_DOUBLE_EQ(e.max_utilisation, 0.7);

  p->c.link_cost = {0, 4, 4, 0};
  EXPECT_EQ(evaluate(*p, {0, 0, 1, 1}).cost, 4 * 50);
}

TEST(Model, OverCapacityIsNotFeasibleAndNamesTheNode) {
  auto p = make_problem(small_tree(), two_nodes(6));
  ASSERT_TRUE(p);
  const evaluation e = evaluate(*p, {0, 1, 1, 1});
  EXPECT_FALSE(e.feasible);
  EXPECT_NE(e.violation.find("n1"), std::string::npos) << e.violation;
  EXPECT_NE(e.violation.find('9'), std::string::npos) << e.violation;
}

TEST(Model, TotalLoadAboveCapacityIsAnErrorWithTheNumbers) {
  auto p = make_problem(small_tree(), two_nodes(4.5));
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code, errc::over_capacity);
  EXPECT_NE(p.error().message.find("10"), std::string::npos) << p.error().message;
  EXPECT_NE(p.error().message.find('9'), std::string::npos) << p.error().message;
}

TEST(Model, ComponentHeavierThanEveryNodeIsNamed) {
  tree t = small_tree();
  t.cpu = {0.5, 0.5, 0.5, 7};
  auto p = make_problem(t, two_nodes(6));
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code, errc::over_capacity);
  EXPECT_NE(p.error().message.find("/r/a/x"), std::string::npos) << p.error().message;
  EXPECT_NE(p.error().message.find('7'), std::string::npos) << p.error().message;
}

// A violation smaller than the sixth digit still prints two different numbers: the load and the
// capacity it exceeds are written with as many digits as it takes to tell them apart.
TEST(Model, OverCapacityMessagesPrintNumbersThatDiffer) {
  tree t = small_tree();
  t.cpu = {0.5, 0.5, 0.5, 0.5 + 1e-7};  // 2.0000001 in all
  auto total = make_problem(t, two_nodes(1));
  ASSERT_FALSE(total);
  EXPECT_NE(total.error().message.find("total cpu load 2.0000001 exceeds total cpu capacity 2 "), std::string::npos)
      << total.error().message;

  t.cpu = {0.25, 0.25, 0.25, 1.0 + 1e-7};
  auto heavy = make_problem(t, two_nodes(1));
  ASSERT_FALSE(heavy);
  EXPECT_NE(heavy.error().message.find("(cpu 1.0000001) is heavier than every node (largest cpu capacity 1)"),
            std::string::npos)
      << heavy.error().message;

  t.cpu = {0.25, 0.25, 0.25, 0.25 + 3e-7};
  auto p = make_problem(t, two_nodes(0.5 + 2e-7));
  ASSERT_TRUE(p) << p.error().message;
  const evaluation e = evaluate(*p, {0, 0, 1, 1});
  EXPECT_FALSE(e.feasible);
  EXPECT_EQ(e.violation, "node `n1` cpu load 0.5000003 exceeds capacity 0.5000002");
}

TEST(Model, PercentCapacityIsShareOfTotalLoad) {
  cluster c = two_nodes(0);
  c.nodes[0].cpu = {60, true};
  c.nodes[1].cpu = {50, true};
  auto p = make_problem(small_tree(), c);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_DOUBLE_EQ(p->cpu_capacity[0], 6);
  EXPECT_DOUBLE_EQ(p->cpu_capacity[1], 5);
}

TEST(Model, AsymmetricLinkCostIsRejected) {
  cluster c = two_nodes(10);
  c.link_cost = {0, 1, 2, 0};
  auto p = make_problem(small_tree(), c);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("symmetric"), std::string::npos) << p.error().message;
}

TEST(Model, ParentAfterChildIsNotATree) {
  tree t = small_tree();
  t.parent = {-1, 3, 0, 0};
  auto r = validate(t);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, errc::not_a_tree);
  EXPECT_NE(r.error().message.find("/r/a"), std::string::npos);
}

// The cost function against a from-scratch recomputation, over every mapping of small trees.
TEST(Model, EvaluateAgreesWithNaiveRecomputationOnEveryMapping) {
  int checked = 0;
  for (std::uint64_t seed = 1; checked < 40; ++seed) {
    SCOPED_TRACE("seed=" + std::to_string(seed));
    auto p = testing::tiny_problem(
        seed, {.max_vertices = 7, .max_nodes = 3, .link_matrix = seed % 2 == 0, .memory = seed % 3 == 0});
    if (!p) continue;
    ++checked;
    const std::size_t n = p->t.size(), k = p->k();
    mapping m(n, 0);
    for (;;) {
      const evaluation e = evaluate(*p, m);
      ASSERT_DOUBLE_EQ(e.cost, testing::naive_cost(*p, m));
      ASSERT_EQ(e.feasible, testing::naive_feasible(*p, m));
      std::size_t i = 0;
      while (i < n && ++m[i] == static_cast<node_id>(k)) m[i++] = 0;
      if (i == n) break;
    }
  }
}

}  // namespace
}  // namespace banyan::partitioner
