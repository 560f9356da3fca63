// smt and mip against brute force on 200+ seeded random trees of <= 12 vertices each.
#include "banyan/partitioner/algorithm.hpp"

#include "brute_force.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace banyan::partitioner {
namespace {

void expect_matches_brute_force(const std::string& algo, const testing::tiny_options& opts, int count) {
  int checked = 0, infeasible = 0;
  for (std::uint64_t seed = 1; checked < count; ++seed) {
    SCOPED_TRACE(algo + " seed=" + std::to_string(seed));
    auto p = testing::tiny_problem(seed, opts);
    if (!p) continue;
    ++checked;
    const auto truth = testing::brute_force(*p);
    auto s = solve(algo, *p, {.timeout_s = 20, .seed = seed});
    ASSERT_TRUE(s) << s.error().message;
    if (!truth.feasible) {
      ++infeasible;
      EXPECT_EQ(s->status, solve_status::infeasible) << s->message;
      continue;
    }
    ASSERT_EQ(s->status, solve_status::optimal) << s->message;
    EXPECT_NEAR(s->cost, truth.cost, 1e-6);
    EXPECT_TRUE(testing::naive_feasible(*p, s->map));
  }
  ::testing::Test::RecordProperty("infeasible_instances", infeasible);
}

TEST(Exact, SmtReachesBruteForceOptimum) { expect_matches_brute_force("smt", {}, 200); }
TEST(Exact, MipReachesBruteForceOptimum) { expect_matches_brute_force("mip", {}, 200); }
TEST(Exact, SmtWithLinkCostMatrixAndMemory) {
  expect_matches_brute_force("smt", {.max_vertices = 9, .link_matrix = true, .memory = true}, 60);
}
TEST(Exact, MipWithLinkCostMatrixAndMemory) {
  expect_matches_brute_force("mip", {.max_vertices = 9, .link_matrix = true, .memory = true}, 60);
}

// The heuristic never beats a proven optimum, and stays feasible.
TEST(Exact, BottomUpIsNeverBelowTheOptimum) {
  int checked = 0;
  for (std::uint64_t seed = 1; checked < 200; ++seed) {
    SCOPED_TRACE("seed=" + std::to_string(seed));
    auto p = testing::tiny_problem(seed);
    if (!p) continue;
    ++checked;
    const auto truth = testing::brute_force(*p);
    auto s = solve("bottom-up", *p);
    ASSERT_TRUE(s);
    if (s->status == solve_status::feasible) {
      ASSERT_TRUE(truth.feasible);
      EXPECT_GE(s->cost, truth.cost - 1e-9);
    }
  }
}

TEST(Exact, WarmStartKeepsOptimality) {
  int checked = 0;
  for (std::uint64_t seed = 500; checked < 30; ++seed) {
    SCOPED_TRACE("seed=" + std::to_string(seed));
    auto p = testing::tiny_problem(seed);
    if (!p) continue;
    const auto truth = testing::brute_force(*p);
    if (!truth.feasible) continue;
    ++checked;
    auto h = solve("bottom-up", *p);
    ASSERT_TRUE(h);
    if (h->status != solve_status::feasible) continue;
    for (const char* algo : {"smt", "mip"}) {
      auto s = solve(algo, *p, {.timeout_s = 20, .warm_start = &h->map});
      ASSERT_TRUE(s);
      EXPECT_EQ(s->status, solve_status::optimal) << algo << ": " << s->message;
      EXPECT_NEAR(s->cost, truth.cost, 1e-6) << algo;
    }
  }
}

}  // namespace
}  // namespace banyan::partitioner
