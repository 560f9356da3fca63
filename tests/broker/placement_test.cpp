// Multi-node routing: following plan_region from node to node delivers every target exactly once,
// and the copies sent between nodes are exactly what predict_crossings computes from the flows.
#include "banyan/broker/placement.hpp"

#include <gtest/gtest.h>

#include <random>

namespace banyan {
namespace {

struct simulated {
  std::map<vertex_id, int> delivered;
  std::map<std::pair<node_id, node_id>, std::uint64_t> crossings;
};

simulated forward(const component_tree& tree, const route& r, const std::vector<node_id>& node_of, routing_mode mode) {
  simulated out;
  struct arrival {
    vertex_id entry, from;
  };
  std::vector<arrival> work{{r.publisher(), no_vertex}};
  while (!work.empty()) {
    auto [entry, from] = work.back();
    work.pop_back();
    auto plan = plan_region(tree, r, node_of, mode, entry, from);
    for (auto i : plan.local_targets) ++out.delivered[r.targets()[i].component];
    for (const auto& h : plan.hops) {
      ++out.crossings[{node_of[entry], h.node}];
      work.push_back({h.entry, h.from});
    }
  }
  return out;
}

void run_case(std::uint64_t seed, routing_mode mode) {
  SCOPED_TRACE("seed " + std::to_string(seed) + " mode " + to_string(mode));
  std::mt19937_64 rng(seed);
  std::size_t n = 2 + rng() % 300;
  auto tree = std::make_shared<component_tree>("r");
  for (std::size_t v = 1; v < n; ++v)
    ASSERT_TRUE(tree->add(static_cast<vertex_id>(rng() % v), "c" + std::to_string(v)).has_value());
  node_id nodes = static_cast<node_id>(1 + rng() % 4);
  // Subtree placement like a deployment: a vertex usually stays with its parent.
  std::vector<node_id> node_of(n, 0);
  for (std::size_t v = 1; v < n; ++v)
    node_of[v] =
        rng() % 5 == 0 ? static_cast<node_id>(rng() % nodes) : node_of[tree->parent(static_cast<vertex_id>(v))];
  routing_table table(tree, mode);
  for (std::size_t v = 0; v < n; ++v)
    if (rng() % 3 == 0) {
      ASSERT_TRUE(table.subscribe(static_cast<vertex_id>(v), rng() % 2 ? "t" : "#").has_value());
    }
  std::map<std::pair<node_id, node_id>, std::uint64_t> all_publishes;
  for (int p = 0; p < 40; ++p) {
    vertex_id pub = static_cast<vertex_id>(rng() % n);
    auto r = table.plan(pub, 0, *topic::parse("t"));
    r->record(10);
    auto sim = forward(*tree, *r, node_of, mode);
    for (const auto& t : r->targets()) ASSERT_EQ(sim.delivered[t.component], 1) << tree->path(t.component);
    ASSERT_EQ(sim.delivered.size(), r->targets().size());
    flow f{pub, {}, 1, 10};
    for (const auto& t : r->targets()) f.targets.push_back(t.component);
    auto predicted = predict_crossings(*tree, {f}, node_of, mode);
    std::map<std::pair<node_id, node_id>, std::uint64_t> want;
    for (const auto& [k, c] : predicted) want[k] = c.messages;
    ASSERT_EQ(sim.crossings, want) << "publisher " << tree->path(pub);
    for (const auto& [k, c] : want) all_publishes[k] += c;
  }
  // The table's accumulated flows predict the same crossings as the publishes one by one.
  std::map<std::pair<node_id, node_id>, std::uint64_t> from_flows;
  for (const auto& [k, c] : predict_crossings(*tree, table.flows(), node_of, mode)) from_flows[k] = c.messages;
  EXPECT_EQ(from_flows, all_publishes);
}

TEST(Placement, ForwardingMatchesPredictedCrossingsHier) {
  for (std::uint64_t seed = 1; seed <= 40; ++seed) run_case(seed, routing_mode::hier);
}
TEST(Placement, ForwardingMatchesPredictedCrossingsFlatP2P) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) run_case(seed, routing_mode::flat_p2p);
}
TEST(Placement, ForwardingMatchesPredictedCrossingsFlatNode) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) run_case(seed, routing_mode::flat_node);
}

TEST(Placement, HierCrossesEachCutSteinerEdgeOnce) {
  // /r { a { a1, a2 }, b { b1 } }, a on node 1, b on node 2, r on node 0. a1 publishes; a2 and b1
  // subscribe: the copy to b1 goes a→r (1→0) and r→b (0→2); a2 is local to node 1.
  auto tree = std::make_shared<component_tree>("r");
  vertex_id a = *tree->add(0, "a"), a1 = *tree->add(a, "a1"), a2 = *tree->add(a, "a2");
  vertex_id b = *tree->add(0, "b"), b1 = *tree->add(b, "b1");
  std::vector<node_id> node_of{0, 1, 1, 1, 2, 2};
  routing_table table(tree, routing_mode::hier);
  ASSERT_TRUE(table.subscribe(a2, "t").has_value());
  ASSERT_TRUE(table.subscribe(b1, "t").has_value());
  auto r = table.plan(a1, 0, *topic::parse("t"));
  auto sim = forward(*tree, *r, node_of, routing_mode::hier);
  EXPECT_EQ(sim.crossings, (std::map<std::pair<node_id, node_id>, std::uint64_t>{{{1, 0}, 1}, {{0, 2}, 1}}));
  auto direct = forward(*tree, *r, node_of, routing_mode::flat_node);
  EXPECT_EQ(direct.crossings, (std::map<std::pair<node_id, node_id>, std::uint64_t>{{{1, 2}, 1}}));
  EXPECT_EQ(node_of[b], 2);
}

TEST(Routing, ReplicatedSubscriptionsShareIdsAcrossTables) {
  auto tree = std::make_shared<component_tree>("r");
  vertex_id x = *tree->add(0, "x");
  routing_table home(tree, routing_mode::hier, 3), replica(tree, routing_mode::hier, 5);
  auto id = home.subscribe(x, "a/+");
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(*id >> 40, 3u);
  for (const auto& e : home.local_subscriptions())
    ASSERT_TRUE(replica.add_replica(e.id, e.subscriber, e.filter).has_value());
  EXPECT_TRUE(replica.local_subscriptions().empty());
  EXPECT_EQ(replica.plan(x, 0, *topic::parse("a/b"))->targets().size(), 1u);
  EXPECT_TRUE(replica.unsubscribe(*id));
  EXPECT_TRUE(replica.plan(x, 0, *topic::parse("a/b"))->targets().empty());
}

}  // namespace
}  // namespace banyan
