#include "banyan/broker/profile.hpp"

#include <gtest/gtest.h>

namespace banyan {
namespace {

profile sample_profile() {
  auto tree = std::make_shared<component_tree>("chip");
  vertex_id alu = *tree->add(0, "alu");
  vertex_id add0 = *tree->add(alu, "add0");
  tree->freeze();
  profile p;
  p.tree = tree;
  p.composite = {true, true, false};
  p.mode = routing_mode::flat_node;
  p.duration_s = 1.5;
  p.loads = {{1, 0.5, 0}, {2, 0.25, 0}, {3, 0.125, 4096}};
  p.edges = {{}, {10, 100}, {20, 200}};
  p.flows = {{add0, {0, alu}, 7, 70}};
  p.links = {{"n0", "n1", 5, 50}};
  return p;
}

TEST(Profile, JsonRoundTrip) {
  auto p = sample_profile();
  auto q = profile::from_json_text(p.to_json_text(), "p.json");
  ASSERT_TRUE(q.has_value()) << q.error().what();
  EXPECT_EQ(q->to_json_text(), p.to_json_text());
}

TEST(Profile, MergeSumsEverything) {
  auto p = sample_profile();
  ASSERT_TRUE(p.merge(sample_profile()).has_value());
  EXPECT_EQ(p.edges[2].messages, 40u);
  EXPECT_EQ(p.loads[2].memory, 8192u);
  ASSERT_EQ(p.flows.size(), 1u);
  EXPECT_EQ(p.flows[0].messages, 14u);
  ASSERT_EQ(p.links.size(), 1u);
  EXPECT_EQ(p.links[0].bytes, 100u);
}

// A live profile's window: the difference of two totals of the same run.
TEST(Profile, SinceIsTheDifferenceOfTwoTotals) {
  auto earlier = sample_profile();
  auto later = sample_profile();
  ASSERT_TRUE(later.merge(sample_profile()).has_value());  // every count doubled
  later.duration_s = 4;
  later.loads[2].memory = 1024;
  later.flows.push_back({2, {1}, 3, 30});  // a flow that started after `earlier`
  auto w = later.since(earlier);
  ASSERT_TRUE(w.has_value()) << w.error().what();
  EXPECT_DOUBLE_EQ(w->duration_s, 2.5);
  EXPECT_EQ(w->edges[2].messages, 20u);
  EXPECT_EQ(w->edges[1].bytes, 100u);
  EXPECT_EQ(w->loads[0].messages, 1u);
  EXPECT_DOUBLE_EQ(w->loads[1].cpu_seconds, 0.25);
  EXPECT_EQ(w->loads[2].memory, 1024u);  // a level, not a count: the latest
  ASSERT_EQ(w->flows.size(), 2u);
  EXPECT_EQ(w->flows[0].messages, 7u);
  EXPECT_EQ(w->flows[1].messages, 3u);
  ASSERT_EQ(w->links.size(), 1u);
  EXPECT_EQ(w->links[0].messages, 5u);
  // A window reads back as an ordinary profile.
  EXPECT_TRUE(profile::from_json_text(w->to_json_text(), "w.json").has_value());
  profile other;
  other.tree = std::make_shared<component_tree>("chip");
  EXPECT_FALSE(later.since(other).has_value());
}

TEST(Profile, BadInputNamesTheFileAndPlace) {
  auto r = profile::from_json_text(R"({"version": 1, "components": [{"path": "/a/b", "parent": "/a"}]})", "bad.json");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, broker::errc::invalid_profile);
  EXPECT_NE(r.error().message.find("bad.json"), std::string::npos);
  auto s = profile::from_json_text(
      R"({"version": 1, "components": [{"path": "/a", "parent": null}, {"path": "/a/x/y", "parent": "/a/x"}]})",
      "p.json");
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message.find("/a/x/y"), std::string::npos) << s.error().message;
}

TEST(Profile, MalformedJsonNamesTheFile) {
  auto r = profile::from_json_text(R"({"components": [)", "cut.json");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, broker::errc::invalid_profile);
  EXPECT_NE(r.error().message.find("cut.json"), std::string::npos) << r.error().message;
}

TEST(Profile, ProfilesOfDifferentTreesDoNotMerge) {
  auto p = sample_profile();
  profile other;
  other.tree = std::make_shared<component_tree>("chip");
  auto r = p.merge(other);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, broker::errc::invalid_profile);
}

}  // namespace
}  // namespace banyan
