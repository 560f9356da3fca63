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

// Start and reply times: on one grid of buckets (four per decade from 1 us), written as the
// buckets from the first to the last used one, read back, summed by merge, subtracted by since.
TEST(Profile, TimingsAreCountedOnAFixedGridAndAddUp) {
  EXPECT_EQ(timing_histogram::bucket_of(0), 0u);
  EXPECT_EQ(timing_histogram::bucket_of(0.5e-6), 0u);
  EXPECT_EQ(timing_histogram::bucket_of(1e-6), 1u);
  EXPECT_EQ(timing_histogram::bucket_of(1e-3), 13u);  // 1 us * 10^(12/4)
  EXPECT_DOUBLE_EQ(timing_histogram::bound(13), 1e-3);
  EXPECT_EQ(timing_histogram::bucket_of(1e9), timing_histogram::buckets - 1);  // past the grid: the last
  for (std::size_t b = 1; b + 1 < timing_histogram::buckets; ++b) {
    EXPECT_EQ(timing_histogram::bucket_of(timing_histogram::bound(b)), b) << b;
    EXPECT_EQ(timing_histogram::bucket_of(timing_histogram::bound(b + 1) * 0.999), b) << b;
  }

  load_meter meter(3);
  meter.timed(1, timing_kind::start, 0.002);
  meter.timed(1, timing_kind::start, 0.002);
  meter.timed(1, timing_kind::start, 0.5);
  meter.timed(2, timing_kind::reply, 1e-4);
  auto p = sample_profile();
  const auto measured = meter.snapshot();
  for (std::size_t v = 0; v < 3; ++v) p.loads[v].start = measured[v].start, p.loads[v].reply = measured[v].reply;
  EXPECT_TRUE(p.loads[0].start.empty());
  EXPECT_EQ(p.loads[1].start.counts[timing_histogram::bucket_of(0.002)], 2u);
  EXPECT_EQ(p.loads[1].start.counts[timing_histogram::bucket_of(0.5)], 1u);

  const std::string text = p.to_json_text();
  EXPECT_NE(text.find("\"timings\""), std::string::npos) << text;
  auto q = profile::from_json_text(text, "p.json");
  ASSERT_TRUE(q.has_value()) << q.error().what();
  EXPECT_EQ(q->to_json_text(), text);
  EXPECT_EQ(q->loads[2].reply.counts, p.loads[2].reply.counts);

  auto twice = *q;
  ASSERT_TRUE(twice.merge(*q).has_value());
  EXPECT_EQ(twice.loads[1].start.counts[timing_histogram::bucket_of(0.002)], 4u);
  auto window = twice.since(*q);
  ASSERT_TRUE(window.has_value());
  EXPECT_EQ(window->loads[1].start.counts, q->loads[1].start.counts);

  // Bounds off the grid are refused, naming the place.
  std::string off = text;
  off.replace(off.find("0.001"), 5, "0.0011");
  auto bad = profile::from_json_text(off, "p.json");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().what().find("timings.start"), std::string::npos) << bad.error().what();
  EXPECT_NE(bad.error().what().find("not on the timing grid"), std::string::npos) << bad.error().what();
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
