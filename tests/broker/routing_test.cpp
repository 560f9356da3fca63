#include "banyan/broker/routing.hpp"

#include <gtest/gtest.h>

#include <set>

namespace banyan {
namespace {

// /chip
//   /alu   /alu/add0  /alu/add1
//   /mem   /mem/bank0
struct fixture {
  std::shared_ptr<component_tree> tree = std::make_shared<component_tree>("chip");
  vertex_id alu = *tree->add(0, "alu");
  vertex_id add0 = *tree->add(alu, "add0");
  vertex_id add1 = *tree->add(alu, "add1");
  vertex_id mem = *tree->add(0, "mem");
  vertex_id bank0 = *tree->add(mem, "bank0");
};

std::set<vertex_id> targets_of(const route& r) {
  std::set<vertex_id> out;
  for (const auto& t : r.targets()) out.insert(t.component);
  return out;
}

std::set<vertex_id> edges_of(const route& r) {
  std::set<vertex_id> out;
  for (const auto& e : r.edges()) out.insert(e.edge);
  return out;
}

TEST(Routing, HierUsesOnlySteinerTreeEdges) {
  fixture f;
  routing_table table(f.tree, routing_mode::hier);
  ASSERT_TRUE(table.subscribe(f.add1, "net/+").has_value());
  ASSERT_TRUE(table.subscribe(f.bank0, "net/#").has_value());
  auto r = table.plan(f.add0, 0, *topic::parse("net/carry"));
  EXPECT_EQ(targets_of(*r), (std::set<vertex_id>{f.add1, f.bank0}));
  // add0 -> alu -> chip -> mem -> bank0, and alu -> add1; edge mem (mem—chip) once.
  EXPECT_EQ(edges_of(*r), (std::set<vertex_id>{f.add0, f.add1, f.alu, f.mem, f.bank0}));
  for (const auto& e : r->edges()) EXPECT_EQ(e.copies, 1u);
}

TEST(Routing, ScopeExcludesSubscribersOutsideIt) {
  fixture f;
  routing_table table(f.tree, routing_mode::hier);
  ASSERT_TRUE(table.subscribe(f.add1, "net/carry").has_value());
  ASSERT_TRUE(table.subscribe(f.bank0, "net/carry").has_value());
  auto r = table.plan(f.add0, f.alu, *topic::parse("net/carry"));
  EXPECT_EQ(targets_of(*r), (std::set<vertex_id>{f.add1}));
  EXPECT_EQ(edges_of(*r), (std::set<vertex_id>{f.add0, f.add1}));
}

TEST(Routing, NoSubscriberMeansNoEdge) {
  fixture f;
  routing_table table(f.tree, routing_mode::hier);
  ASSERT_TRUE(table.subscribe(f.add1, "net/other").has_value());
  auto r = table.plan(f.add0, 0, *topic::parse("net/carry"));
  EXPECT_TRUE(r->targets().empty());
  EXPECT_TRUE(r->edges().empty());
}

TEST(Routing, FlatP2PCountsOneCopyPerSubscriberPerEdge) {
  fixture f;
  routing_table table(f.tree, routing_mode::flat_p2p);
  ASSERT_TRUE(table.subscribe(f.add1, "x").has_value());
  ASSERT_TRUE(table.subscribe(f.bank0, "x").has_value());
  auto r = table.plan(f.add0, 0, *topic::parse("x"));
  r->record(10);
  auto traffic = table.traffic();
  EXPECT_EQ(traffic[f.add0].messages, 2u);  // both copies leave add0
  EXPECT_EQ(traffic[f.add0].bytes, 20u);
  EXPECT_EQ(traffic[f.alu].messages, 1u);
  EXPECT_EQ(traffic[f.add1].messages, 1u);
  EXPECT_EQ(traffic[f.bank0].messages, 1u);
}

TEST(Routing, SubscribeAndUnsubscribeBumpTheVersion) {
  fixture f;
  routing_table table(f.tree, routing_mode::hier);
  auto v0 = table.version();
  auto id = table.subscribe(f.add1, "a/b");
  ASSERT_TRUE(id.has_value());
  auto v1 = table.version();
  EXPECT_GT(v1, v0);
  EXPECT_EQ(table.plan(f.add0, 0, *topic::parse("a/b"))->targets().size(), 1u);
  EXPECT_TRUE(table.unsubscribe(*id));
  EXPECT_GT(table.version(), v1);
  EXPECT_FALSE(table.unsubscribe(*id));
  EXPECT_TRUE(table.plan(f.add0, 0, *topic::parse("a/b"))->targets().empty());
}

TEST(Routing, UnsubscribeAllRemovesOnlyThatComponent) {
  fixture f;
  routing_table table(f.tree, routing_mode::hier);
  ASSERT_TRUE(table.subscribe(f.add1, "a").has_value());
  ASSERT_TRUE(table.subscribe(f.add1, "#").has_value());
  ASSERT_TRUE(table.subscribe(f.bank0, "a").has_value());
  table.unsubscribe_all(f.add1);
  EXPECT_EQ(table.subscription_count(), 1u);
  EXPECT_EQ(targets_of(*table.plan(f.add0, 0, *topic::parse("a"))), (std::set<vertex_id>{f.bank0}));
}

TEST(Routing, TrafficSurvivesRouteDestruction) {
  fixture f;
  routing_table table(f.tree, routing_mode::hier);
  ASSERT_TRUE(table.subscribe(f.add1, "a").has_value());
  {
    auto r = table.plan(f.add0, 0, *topic::parse("a"));
    r->record(5);
    r->record(7);
  }
  auto traffic = table.traffic();
  EXPECT_EQ(traffic[f.add0].messages, 2u);
  EXPECT_EQ(traffic[f.add1].bytes, 12u);
  EXPECT_EQ(traffic[f.alu].messages, 0u);
}

TEST(Routing, BadFilterIsAnError) {
  fixture f;
  routing_table table(f.tree, routing_mode::hier);
  auto r = table.subscribe(f.add1, "a/#/b");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, broker::errc::invalid_topic);
}

}  // namespace
}  // namespace banyan
