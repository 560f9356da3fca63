#include "banyan/partitioner/migration.hpp"
#include "banyan/partitioner/algorithm.hpp"
#include "banyan/partitioner/generator.hpp"

#include "brute_force.hpp"

#include <gtest/gtest.h>

namespace banyan::partitioner {
namespace {

// /r -> /r/a -> /r/a/x and /r -> /r/b -> /r/b/y, one cpu each, two nodes of 3. Currently /r/a/x sits
// on n1 away from its parent /r/a (traffic 50); bringing it home (40 bytes) leaves only /r/b's edge
// (1) cut, and nothing else fits: moving x is the one move worth making when alpha < 50 / 40.
problem hand_made(std::vector<double> cpu = {1, 1, 1, 1, 1}) {
  tree t;
  t.path = {"/r", "/r/a", "/r/a/x", "/r/b", "/r/b/y"};
  t.parent = {no_vertex, 0, 1, 0, 3};
  t.cpu = std::move(cpu);
  t.memory = {10, 100, 40, 1000, 5};
  t.weight = {0, 1, 50, 1, 2};
  cluster c;
  c.nodes = {{.name = "n0", .cpu = {3, false}}, {.name = "n1", .cpu = {3, false}}};
  auto p = make_problem(std::move(t), std::move(c));
  EXPECT_TRUE(p) << p.error().message;
  return *p;
}
const mapping hand_made_current = {0, 0, 1, 1, 1};

TEST(Migration, MovesExactlyTheSubtreeThatPaysForItself) {
  const problem p = hand_made();
  auto plan = plan_migration(p, hand_made_current, {.alpha = 1});
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->moves.size(), 1u);
  const moved_subtree& m = plan->moves[0];
  EXPECT_EQ(p.t.name(m.root), "/r/a/x");
  EXPECT_EQ(m.from, 1);
  EXPECT_EQ(m.to, 0);
  EXPECT_EQ(m.components, 1u);
  EXPECT_EQ(m.state_bytes, 40);
  EXPECT_EQ(plan->bytes_moved, 40);
  EXPECT_EQ(plan->cost_before, testing::naive_cost(p, hand_made_current));
  EXPECT_EQ(plan->cost_before, 51);
  EXPECT_EQ(plan->cost_after, testing::naive_cost(p, plan->map));
  EXPECT_EQ(plan->cost_after, 1);
  EXPECT_EQ(plan->objective, 1 + 40);
  EXPECT_EQ(plan->map, (mapping{0, 0, 0, 1, 1}));
  EXPECT_TRUE(testing::naive_feasible(p, plan->map));
}

TEST(Migration, MovesNothingWhenStateCostsMoreThanTrafficSaves) {
  const problem p = hand_made();
  for (double alpha : {2.0, 1e12}) {
    SCOPED_TRACE("alpha=" + std::to_string(alpha));
    auto plan = plan_migration(p, hand_made_current, {.alpha = alpha});
    ASSERT_TRUE(plan) << plan.error().message;
    EXPECT_TRUE(plan->moves.empty());
    EXPECT_EQ(plan->map, hand_made_current);
    EXPECT_EQ(plan->bytes_moved, 0);
    EXPECT_EQ(plan->objective, plan->cost_before);
  }
}

// /r with leaves a (traffic 1), b (10), c (1); one cpu each on two nodes of 2. b sits on n1 away from
// /r; no single move fits (each node is full), but swapping a and b cuts 11 to 2 for 2 bytes.
TEST(Migration, SwapsWhenNoSingleMoveFits) {
  tree t;
  t.path = {"/r", "/r/a", "/r/b", "/r/c"};
  t.parent = {no_vertex, 0, 0, 0};
  t.cpu = {1, 1, 1, 1};
  t.memory = {1, 1, 1, 1};
  t.weight = {0, 1, 10, 1};
  cluster c;
  c.nodes = {{.name = "n0", .cpu = {2, false}}, {.name = "n1", .cpu = {2, false}}};
  auto p = make_problem(std::move(t), std::move(c));
  ASSERT_TRUE(p) << p.error().message;
  auto plan = plan_migration(*p, {0, 0, 1, 1}, {.alpha = 1});
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->map, (mapping{0, 1, 0, 1}));
  ASSERT_EQ(plan->moves.size(), 2u);
  EXPECT_EQ(p->t.name(plan->moves[0].root), "/r/a");
  EXPECT_EQ(plan->moves[0].to, 1);
  EXPECT_EQ(p->t.name(plan->moves[1].root), "/r/b");
  EXPECT_EQ(plan->moves[1].to, 0);
  EXPECT_EQ(plan->cost_before, 11);
  EXPECT_EQ(plan->cost_after, 2);
  EXPECT_EQ(plan->objective, 4);
}

TEST(Migration, NegativeAlphaIsAnError) {
  auto plan = plan_migration(hand_made(), hand_made_current, {.alpha = -1});
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().code, errc::invalid);
  EXPECT_NE(plan.error().message.find("non-negative"), std::string::npos) << plan.error().message;
}

TEST(Migration, RepairsAnOverCapacityCurrentMapping) {
  const problem p = hand_made();
  const mapping all_on_n0(5, 0);  // load 5 on a node of 3
  auto plan = plan_migration(p, all_on_n0, {.alpha = 1e-3});
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_FALSE(plan->current_feasible);
  EXPECT_NE(plan->current_violation.find("node `n0`"), std::string::npos) << plan->current_violation;
  EXPECT_EQ(plan->start, "current (repaired)");
  EXPECT_TRUE(testing::naive_feasible(p, plan->map));
  EXPECT_FALSE(plan->moves.empty());
  EXPECT_EQ(plan->cost_after, 1);  // the cheapest split, found from the repaired start
}

TEST(Migration, UnrepairableCurrentMappingNamesTheNode) {
  // Three components of 2 on two nodes of 3: make_problem accepts it (total 6, each fits), no
  // mapping fits, so nothing repairs the current one.
  tree t;
  t.path = {"/r", "/r/a", "/r/b"};
  t.parent = {no_vertex, 0, 0};
  t.cpu = {2, 2, 2};
  t.weight = {0, 1, 1};
  cluster c;
  c.nodes = {{.name = "n0", .cpu = {3, false}}, {.name = "n1", .cpu = {3, false}}};
  auto p = make_problem(std::move(t), std::move(c));
  ASSERT_TRUE(p) << p.error().message;
  auto plan = plan_migration(*p, {0, 0, 0}, {.alpha = 1});
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().code, errc::over_capacity);
  EXPECT_NE(plan.error().message.find("node `n0`"), std::string::npos) << plan.error().message;
}

problem generated(std::uint64_t seed) {
  generator_options g{.components = 300, .seed = seed, .memory = true, .nodes = 8, .rack_size = seed % 2 ? 4u : 0u};
  const tree t = generate_tree(g);
  auto p = make_problem(t, generate_cluster(t, g));
  EXPECT_TRUE(p) << p.error().message;
  return *p;
}

// With alpha = 0 the plan is the partitioner's mapping or better, whatever the current mapping.
TEST(Migration, FreeMigrationIsNoWorseThanThePartitioner) {
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE("seed=" + std::to_string(seed));
    const problem p = generated(seed);
    auto best = solve("bottom-up", p, {.seed = seed});
    auto start = solve("round-robin", p);  // a poor current mapping, maybe over capacity
    ASSERT_TRUE(best && start);
    ASSERT_EQ(best->status, solve_status::feasible);
    auto plan = plan_migration(p, start->map, {.alpha = 0, .candidates = {best->map}, .seed = seed});
    ASSERT_TRUE(plan) << plan.error().message;
    EXPECT_TRUE(testing::naive_feasible(p, plan->map));
    EXPECT_LE(plan->cost_after, best->cost + 1e-9 * best->cost);
    EXPECT_DOUBLE_EQ(plan->cost_after, testing::naive_cost(p, plan->map));
    EXPECT_DOUBLE_EQ(plan->cost_before, testing::naive_cost(p, start->map));
  }
}

// From a feasible current mapping: never a higher objective than staying, than the candidate,
// and a huge alpha moves nothing. The bytes and groups add up to what changed.
TEST(Migration, ObjectiveNeverAboveStayingOrTheCandidate) {
  int checked = 0;
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE("seed=" + std::to_string(seed));
    const problem p = generated(seed);
    auto current = solve("greedy", p);
    auto best = solve("bottom-up", p, {.seed = seed});
    ASSERT_TRUE(current && best);
    if (current->status != solve_status::feasible) continue;
    ++checked;
    for (double alpha : {1e-7, 1e-5, 1e-3, 1e12}) {
      SCOPED_TRACE("alpha=" + std::to_string(alpha));
      auto plan = plan_migration(p, current->map, {.alpha = alpha, .candidates = {best->map}, .seed = seed});
      ASSERT_TRUE(plan) << plan.error().message;
      const double tol = 1e-9 * (plan->objective_current + 1);
      EXPECT_LE(plan->objective, plan->objective_current + tol);
      double cand_bytes = 0, bytes = 0;
      std::size_t changed = 0, grouped = 0;
      for (std::size_t v = 0; v < p.t.size(); ++v) {
        if (best->map[v] != current->map[v]) cand_bytes += p.t.memory[v];
        if (plan->map[v] != current->map[v]) bytes += p.t.memory[v], ++changed;
      }
      EXPECT_LE(plan->objective, best->cost + alpha * cand_bytes + tol);
      EXPECT_DOUBLE_EQ(plan->bytes_moved, bytes);
      for (const auto& m : plan->moves) grouped += m.components;
      EXPECT_EQ(grouped, changed);
      if (alpha == 1e12) {
        EXPECT_TRUE(plan->moves.empty());
        EXPECT_EQ(plan->map, current->map);
      }
    }
  }
  EXPECT_GE(checked, 2);
}

// The plan is a local optimum of the objective, recomputed from scratch: no subtree move that fits
// gains (this also checks that the search's cached gains never went stale).
TEST(Migration, NoSubtreeMoveGainsAfterThePlan) {
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    SCOPED_TRACE("seed=" + std::to_string(seed));
    const problem p = generated(seed);
    auto current = solve("round-robin", p);
    ASSERT_TRUE(current);
    for (double alpha : {0.0, 1e-5, 1e-3}) {
      SCOPED_TRACE("alpha=" + std::to_string(alpha));
      auto plan = plan_migration(p, current->map, {.alpha = alpha, .seed = seed});
      ASSERT_TRUE(plan) << plan.error().message;
      auto objective = [&](const mapping& m) {
        double bytes = 0;
        for (std::size_t v = 0; v < m.size(); ++v) bytes += m[v] != current->map[v] ? p.t.memory[v] : 0.0;
        return testing::naive_cost(p, m) + alpha * bytes;
      };
      const double base = objective(plan->map);
      EXPECT_NEAR(base, plan->objective, 1e-9 * (base + 1));
      for (std::size_t u = 0; u < p.t.size(); ++u) {
        // S(u): u and the descendants reached without leaving its node (parents precede children).
        std::vector<bool> in(p.t.size(), false);
        in[u] = true;
        for (std::size_t x = u + 1; x < p.t.size(); ++x) {
          in[x] = in[p.t.parent[x]] && plan->map[x] == plan->map[u];
        }
        for (node_id j = 0; j < static_cast<node_id>(p.k()); ++j) {
          if (j == plan->map[u]) continue;
          mapping m = plan->map;
          for (std::size_t x = u; x < p.t.size(); ++x)
            if (in[x]) m[x] = j;
          if (!testing::naive_feasible(p, m)) continue;
          EXPECT_GE(objective(m), base - 1e-9 * (base + 1))
              << "moving " << p.t.name(static_cast<vertex_id>(u)) << " to " << j;
        }
      }
    }
  }
}

// For a live reconfiguration (banyan reconfigure cannot move the root): the root stays where it
// runs, even when the candidate puts it elsewhere, and the plan is still no worse than staying.
TEST(Migration, RootStaysWhereItRunsWhenAsked) {
  int relabelled_or_searched = 0;
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE("seed=" + std::to_string(seed));
    const problem p = generated(seed);
    auto best = solve("bottom-up", p, {.seed = seed});
    auto current = solve("greedy", p, {.seed = seed});
    ASSERT_TRUE(best && current);
    ASSERT_EQ(current->status, solve_status::feasible);
    mapping start = current->map;
    start[0] = best->map[0] == 0 ? 1 : 0;  // the root runs elsewhere than the candidate puts it
    if (!testing::naive_feasible(p, start)) continue;
    auto plan = plan_migration(p, start, {.alpha = 0, .candidates = {best->map}, .seed = seed, .root_stays = true});
    ASSERT_TRUE(plan) << plan.error().message;
    EXPECT_EQ(plan->map[0], start[0]);
    EXPECT_TRUE(testing::naive_feasible(p, plan->map));
    EXPECT_LE(plan->cost_after, testing::naive_cost(p, start) + 1e-9);
    relabelled_or_searched += plan->cost_after < testing::naive_cost(p, start);
    auto free = plan_migration(p, start, {.alpha = 0, .candidates = {best->map}, .seed = seed});
    ASSERT_TRUE(free);
    EXPECT_LE(free->cost_after, plan->cost_after + 1e-9);  // the constraint costs, never gains
  }
  EXPECT_GT(relabelled_or_searched, 0);
}

TEST(Migration, SameSeedSamePlan) {
  const problem p = generated(3);
  auto start = solve("round-robin", p);
  auto best = solve("bottom-up", p);
  ASSERT_TRUE(start && best);
  auto a = plan_migration(p, start->map, {.alpha = 1e-6, .candidates = {best->map}, .seed = 9});
  auto b = plan_migration(p, start->map, {.alpha = 1e-6, .candidates = {best->map}, .seed = 9});
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->map, b->map);
  EXPECT_EQ(a->start, b->start);
}

}  // namespace
}  // namespace banyan::partitioner
