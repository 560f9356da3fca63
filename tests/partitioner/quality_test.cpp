// Family-wise quality bounds of bottom-up against brute force, on small
// seeded instances of every family in banyan/partitioner/families.hpp: per shape the worst instance
// within 5% of the optimum, over all instances the median within 1%, and never above METIS or
// greedy where their mapping is within capacity. A failure prints the instance (with its seed) so
// that `partition_bench --families` or a debugger can reproduce it.
#include "banyan/partitioner/algorithm.hpp"
#include "banyan/partitioner/families.hpp"

#include "brute_force.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace banyan::partitioner {
namespace {

bool ok(const solution& s) { return s.status == solve_status::optimal || s.status == solve_status::feasible; }

TEST(Quality, BottomUpNearOptimalOnEveryFamily) {
  constexpr std::uint64_t seeds_per_shape = 8;
  std::vector<double> all;
  for (family_shape shape : all_family_shapes()) {
    double worst = 1;
    std::string worst_instance;
    for (std::uint64_t s = 1; s <= seeds_per_shape; ++s) {
      const std::uint64_t seed = 1000 * (static_cast<std::uint64_t>(shape) + 1) + s;
      // Brute force is k^n: 10 components on up to 4 nodes, 7 on 8.
      family_options f = random_family(seed, shape, 10, {2, 3, 4, 8});
      if (f.nodes == 8) f.components = 7;
      SCOPED_TRACE(describe(f));
      auto p = generate_family(f);
      ASSERT_TRUE(p) << p.error().message;
      const auto opt = testing::brute_force(*p);
      const solution bu = *solve("bottom-up", *p, {.seed = seed});
      if (!opt.feasible) {
        EXPECT_FALSE(ok(bu)) << "bottom-up claims a mapping where brute force finds none";
        continue;
      }
      ASSERT_TRUE(ok(bu)) << "bottom-up found no mapping; optimum " << opt.cost << ": " << bu.message;
      EXPECT_TRUE(testing::naive_feasible(*p, bu.map));
      EXPECT_GE(bu.cost, opt.cost * (1 - 1e-9));
      EXPECT_LE(bu.lower_bound, opt.cost * (1 + 1e-9)) << "the lower bound is not a bound";
      const double ratio = opt.cost > 0 ? bu.cost / opt.cost : (bu.cost > 0 ? INFINITY : 1.0);
      all.push_back(ratio);
      if (ratio > worst) {
        worst = ratio;
        worst_instance = describe(f);
      }
      for (const char* base : {"metis", "greedy"}) {
        const solution b = *solve(base, *p, {.seed = seed});
        if (ok(b)) {
          EXPECT_LE(bu.cost, b.cost * (1 + 1e-9)) << "above " << base;
        }
      }
    }
    EXPECT_LE(worst, 1.05) << to_string(shape) << ": worst instance " << worst_instance;
  }
  ASSERT_FALSE(all.empty());
  std::sort(all.begin(), all.end());
  EXPECT_LE(all[all.size() / 2], 1.01) << "median over " << all.size() << " instances";
}

// A two-node instance is solved exactly by the tree dynamic program (up to its load buckets, which
// hold every distinct load here): chains and binary trees of 12 with integer loads.
TEST(Quality, TwoNodesExactOnChainsAndBinaryTrees) {
  for (family_shape shape : {family_shape::chain, family_shape::binary, family_shape::caterpillar}) {
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
      family_options f{
          .shape = shape, .components = 12, .traffic = family_traffic::pareto, .slack = 1.02, .nodes = 2, .seed = seed};
      SCOPED_TRACE(describe(f));
      auto p = generate_family(f);
      ASSERT_TRUE(p) << p.error().message;
      const auto opt = testing::brute_force(*p);
      if (!opt.feasible) continue;
      const solution bu = *solve("bottom-up", *p, {.seed = seed});
      ASSERT_TRUE(ok(bu)) << bu.message;
      EXPECT_NEAR(bu.cost, opt.cost, 1e-9 * std::max(1.0, opt.cost));
    }
  }
}

// Traffic and loads of 1e-12 are judged like traffic and loads of 1: the same instance scaled
// gets the same mapping cost, scaled.
// At slack 1.02 almost no single move fits, so local search has to exchange and sometimes step
// back (the iterated local search in bottom_up.cpp). Integer loads on 4 equal nodes, 20 components
// (too many for brute force): checked against smt's mapping, an upper bound on the optimum. The
// median must be within 1%; each instance within 30%: binary seed 58 is still at 1.29 (16.3 vs
// 12.6: each node must hold exactly 29 units), and before the exchanges chain+branches seed 58 was
// at 1.66 (15.4 vs 9.3).
TEST(Quality, TightSlackNearSmt) {
  std::vector<double> ratios;
  for (family_shape shape : {family_shape::chain_branches, family_shape::binary, family_shape::caterpillar}) {
    for (std::uint64_t seed : {58, 59, 60}) {
      // The sweep's draw (component order, traffic stream) with the tight dimensions pinned.
      family_options f = random_family(seed, shape, 20);
      f.traffic = family_traffic::pareto;
      f.load_scale = 1;
      f.slack = 1.02;
      f.unequal = false;
      f.nodes = 4;
      f.links = family_links::uniform;
      SCOPED_TRACE(describe(f));
      auto p = generate_family(f);
      ASSERT_TRUE(p) << p.error().message;
      const solution bu = *solve("bottom-up", *p, {.seed = seed});
      const solution z = *solve("smt", *p, {.timeout_s = 2, .seed = seed});
      if (!ok(z) || z.cost <= 0) continue;  // integer loads at 2% slack may not pack at all
      ASSERT_TRUE(ok(bu)) << bu.message << "; smt found " << z.cost;
      EXPECT_LE(bu.cost, 1.3 * z.cost) << "bottom-up " << bu.cost << " vs smt " << z.cost;
      ratios.push_back(bu.cost / z.cost);
    }
  }
  ASSERT_GE(ratios.size(), 4u) << "too few instances packed to compare";
  std::sort(ratios.begin(), ratios.end());
  EXPECT_LE(ratios[ratios.size() / 2], 1.01);
}

TEST(Quality, ScaleFree) {
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    family_options f{.shape = family_shape::binary,
                     .components = 31,
                     .traffic = family_traffic::pareto,
                     .slack = 1.1,
                     .nodes = 4,
                     .seed = seed};
    SCOPED_TRACE(describe(f));
    auto big = generate_family(f);
    ASSERT_TRUE(big);
    problem tiny = *big;
    for (auto& w : tiny.t.weight) w *= 1e-12;
    for (auto& c : tiny.t.cpu) c *= 1e-12;
    for (auto& c : tiny.cpu_capacity) c *= 1e-12;
    const solution a = *solve("bottom-up", *big, {.seed = seed});
    const solution b = *solve("bottom-up", tiny, {.seed = seed});
    ASSERT_TRUE(ok(a) && ok(b));
    EXPECT_NEAR(b.cost * 1e12, a.cost, 1e-6 * std::max(1.0, a.cost));
  }
}

}  // namespace
}  // namespace banyan::partitioner
