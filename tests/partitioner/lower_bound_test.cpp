// A proven lower bound next to every heuristic result.
#include "banyan/partitioner/algorithm.hpp"

#include "brute_force.hpp"

#include <gtest/gtest.h>

namespace banyan::partitioner {
namespace {

problem chain(std::size_t n, const std::vector<double>& caps) {
  const std::size_t k = caps.size();
  tree t;
  for (std::size_t v = 0; v < n; ++v) {
    t.parent.push_back(v == 0 ? no_vertex : static_cast<vertex_id>(v - 1));
    t.cpu.push_back(1);
    t.weight.push_back(static_cast<double>(v));  // edge v -> v-1 carries v
    t.path.push_back("/c" + std::to_string(v));
  }
  cluster c;
  for (std::size_t j = 0; j < k; ++j) {
    node_spec nd;
    nd.name = "n" + std::to_string(j);
    nd.endpoint = "tcp://127.0.0.1:" + std::to_string(7100 + j);
    nd.cpu = {caps[j], false};
    c.nodes.push_back(nd);
  }
  auto p = make_problem(std::move(t), std::move(c));
  EXPECT_TRUE(p) << p.error().message;
  return std::move(*p);
}

// 10 unit loads c0 - c1 - ... - c9 on nodes of 3, edge c(v) -> c(v-1) carrying v. Counting: the
// whole chain needs 4 nodes, so 3 edges are cut, at least 1 + 2 + 3 = 6; c3..c9 (7 units) need 3
// nodes, so 2 of the edges carrying 4..9 are cut, at least 4 + 5 = 9. Knapsack: runs of at most 3
// vertices; the cheapest cuts are 1, 4, 7 ([c0] [c1..c3] [c4..c6] [c7..c9]) = 12, which is also a
// mapping onto the 4 nodes, so 12 is the optimum.
TEST(LowerBound, ChainNeedsItsLightestEdgesCut) {
  const problem p = chain(10, {3, 3, 3, 3});
  EXPECT_DOUBLE_EQ(proven_lower_bound(p), 1 + 4 + 7);
  EXPECT_DOUBLE_EQ(testing::brute_force(p).cost, 1 + 4 + 7);
  // Everything fits one node: nothing is proven.
  EXPECT_EQ(proven_lower_bound(chain(10, {10, 10, 10, 10})), 0);
}

// 12 unit loads on nodes of 10, 1, 1, 1: by the largest capacity alone two nodes would do (one cut
// edge, the one carrying 1), but 10 + 1 < 12, so three nodes and two cut edges: at least 1 + 2.
TEST(LowerBound, UnequalCapacitiesCountNodesLargestFirst) {
  const problem p = chain(12, {1, 10, 1, 1});
  EXPECT_DOUBLE_EQ(proven_lower_bound(p), 1 + 2);
  EXPECT_LE(proven_lower_bound(p), testing::brute_force(p).cost);
}

TEST(LowerBound, NeverAboveTheOptimumAndOftenPositive) {
  int checked = 0, positive = 0, tight = 0;
  for (std::uint64_t seed = 1; checked < 240; ++seed) {
    const testing::tiny_options opts{
        .max_vertices = 10, .link_matrix = seed % 3 == 0, .memory = seed % 4 == 0, .slack_min = 1.0, .slack_max = 1.3};
    auto p = testing::tiny_problem(seed, opts);
    if (!p) continue;
    const auto truth = testing::brute_force(*p);
    if (!truth.feasible) continue;
    ++checked;
    SCOPED_TRACE("seed=" + std::to_string(seed));
    const double lb = proven_lower_bound(*p);
    EXPECT_LE(lb, truth.cost + 1e-9);
    EXPECT_GE(lb, 0);
    positive += lb > 0;
    tight += lb > 0 && lb >= truth.cost - 1e-9;
  }
  // Not a vacuous bound: on these tight instances it proves something on a good share.
  EXPECT_GE(positive, 40) << "tight=" << tight;
}

TEST(LowerBound, EveryAlgorithmReportsIt) {
  const problem p = chain(10, {3, 3, 3, 3});
  const double lb = proven_lower_bound(p);
  ASSERT_GT(lb, 0);
  for (const auto& name : algorithm_names()) {
    auto s = solve(name, p, {.timeout_s = 10});
    ASSERT_TRUE(s);
    SCOPED_TRACE(name + ": " + to_string(s->status));
    EXPECT_GE(s->lower_bound, lb);
    if (s->status == solve_status::optimal || s->status == solve_status::feasible) {
      EXPECT_GE(s->cost, s->lower_bound - 1e-9);
    }
  }
}

}  // namespace
}  // namespace banyan::partitioner
