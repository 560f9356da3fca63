// place_lost: each maximal lost subtree goes whole to one survivor, where it adds the least cost
// within capacity; survivors' components stay; a subtree that fits nowhere is an error naming it and
// the shortfall. The random check compares each choice with every alternative (seeded).
#include "banyan/partitioner/failover.hpp"

#include <gtest/gtest.h>

#include <random>

namespace banyan::partitioner {
namespace {

// root 0 (n0) -- a 1 (n1) -- b 2 (n1) -- c 3 (n2)
//             \- d 4 (n2)
problem four_nodes(std::vector<double> cpu_capacity) {
  tree t;
  t.path = {"/r", "/r/a", "/r/a/b", "/r/a/b/c", "/r/d"};
  t.parent = {no_vertex, 0, 1, 2, 0};
  t.cpu = {1, 2, 1, 1, 1};
  t.weight = {0, 10, 5, 3, 4};
  cluster c;
  for (std::size_t i = 0; i < cpu_capacity.size(); ++i)
    c.nodes.push_back({"n" + std::to_string(i), "", "", {cpu_capacity[i], false}, std::nullopt, 0});
  auto p = make_problem(std::move(t), std::move(c));
  EXPECT_TRUE(p) << p.error().message;
  return std::move(*p);
}

TEST(Failover, TheLostSubtreeGoesWholeToItsCheapestSurvivor) {
  const problem p = four_nodes({10, 10, 10});
  const mapping current{0, 1, 1, 2, 2};
  auto plan = place_lost(p, current, 1, {true, false, true});
  ASSERT_TRUE(plan) << plan.error().message;
  // a and b move together; n0 keeps the edge to the root (10) local, n2 the edge to c (3).
  EXPECT_EQ(plan->next, (mapping{0, 0, 0, 2, 2}));
  ASSERT_EQ(plan->moves.size(), 1u);
  EXPECT_EQ(plan->moves[0].root, 1);
  EXPECT_EQ(plan->moves[0].to, 0);
  EXPECT_DOUBLE_EQ(plan->moves[0].cpu, 3);
}

TEST(Failover, CapacityIsRespectedAndSurvivorsStay) {
  const problem p = four_nodes({2, 10, 5});
  const mapping current{0, 1, 1, 2, 2};
  auto plan = place_lost(p, current, 1, {true, false, true});
  ASSERT_TRUE(plan) << plan.error().message;
  // n0 has 1 left, the subtree needs 3: n2 (2 used of 5) takes it although its cut costs more.
  EXPECT_EQ(plan->next, (mapping{0, 2, 2, 2, 2}));
}

TEST(Failover, ASubtreeThatFitsNowhereIsAnErrorNamingItAndTheShortfall) {
  const problem p = four_nodes({2, 10, 3});
  auto plan = place_lost(p, {0, 1, 1, 2, 2}, 1, {true, false, true});
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().code, errc::over_capacity);
  EXPECT_EQ(plan.error().message,
            "failover: `/r/a` (cpu load 3) fits on no surviving node: the most capacity left is 1, short by 2");
}

TEST(Failover, SeveralLostSubtreesAndNoSurvivor) {
  const problem p = four_nodes({10, 10, 10});
  // n2 hosts c (under b on n1) and d (under the root): two subtrees, each placed by its neighbours.
  auto plan = place_lost(p, {0, 1, 1, 2, 2}, 2, {true, true, false});
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->next, (mapping{0, 1, 1, 1, 0}));
  EXPECT_EQ(plan->moves.size(), 2u);
  auto none = place_lost(p, {0, 1, 1, 2, 2}, 2, {false, false, false});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, errc::invalid);
}

// Random trees on 4 nodes, one lost: every subtree lands on a feasible survivor, survivors' vertices
// keep their node, and no single subtree could have gone to another feasible node for less added
// cost (given the earlier choices, as the greedy makes them).
TEST(Failover, RandomTreesGetTheCheapestFeasibleChoiceForEachSubtree) {
  const std::uint64_t seed = 20261203;
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 200; ++trial) {
    tree t;
    const int n = 5 + static_cast<int>(rng() % 30);
    for (int v = 0; v < n; ++v) {
      t.parent.push_back(v == 0 ? no_vertex : static_cast<vertex_id>(rng() % static_cast<std::uint64_t>(v)));
      t.cpu.push_back(static_cast<double>(rng() % 5));
      t.weight.push_back(v == 0 ? 0 : static_cast<double>(rng() % 20));
    }
    cluster c;
    for (int i = 0; i < 4; ++i) c.nodes.push_back({"n" + std::to_string(i), "", "", {1000, false}, std::nullopt, 0});
    auto made = make_problem(t, c);
    ASSERT_TRUE(made) << made.error().message;
    mapping current;
    for (int v = 0; v < n; ++v) current.push_back(static_cast<node_id>(rng() % 4));
    const node_id lost = static_cast<node_id>(rng() % 4);
    std::vector<bool> alive{true, true, true, true};
    alive[static_cast<std::size_t>(lost)] = false;
    auto plan = place_lost(*made, current, lost, alive);
    ASSERT_TRUE(plan) << "seed " << seed << " trial " << trial << ": " << plan.error().message;
    for (int v = 0; v < n; ++v) {
      const auto i = static_cast<std::size_t>(v);
      ASSERT_NE(plan->next[i], lost) << "seed " << seed << " trial " << trial;
      if (current[i] != lost) {
        ASSERT_EQ(plan->next[i], current[i]) << "seed " << seed << " trial " << trial;
      }
      // A lost vertex goes with its parent when that was lost too: subtrees move whole.
      if (v > 0 && current[i] == lost && current[static_cast<std::size_t>(t.parent[i])] == lost) {
        ASSERT_EQ(plan->next[i], plan->next[static_cast<std::size_t>(t.parent[i])]) << "seed " << seed;
      }
    }
    // With ample capacity, the final cost is no more than putting every lost subtree on any single
    // survivor (each such mapping is a choice the greedy compared against).
    const double chosen = evaluate(*made, plan->next).cost;
    for (node_id q = 0; q < 4; ++q) {
      if (q == lost) continue;
      mapping all = current;
      for (auto& x : all)
        if (x == lost) x = q;
      EXPECT_LE(chosen, evaluate(*made, all).cost + 1e-9) << "seed " << seed << " trial " << trial << " node " << q;
    }
  }
}

}  // namespace
}  // namespace banyan::partitioner
