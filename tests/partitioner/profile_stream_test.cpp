// The streaming profile reader (issue #11 item 5) against the full reader: the same tree for every
// valid profile it takes, and "not mine" for what it leaves to the full reader (whose messages
// the Profile tests check), so both paths accept the same files.
#include "banyan/partitioner/families.hpp"
#include "banyan/partitioner/io.hpp"

#include "../../partitioner/src/detail.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace banyan::partitioner {
namespace {

void expect_same(const tree& a, const tree& b) {
  EXPECT_EQ(a.path, b.path);
  EXPECT_EQ(a.parent, b.parent);
  EXPECT_EQ(a.cpu, b.cpu);
  EXPECT_EQ(a.memory, b.memory);
  EXPECT_EQ(a.weight, b.weight);
}

TEST(ProfileStream, SameTreeAsTheFullReaderOnGeneratedProfiles) {
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    family_options f = random_family(seed, all_family_shapes()[seed % all_family_shapes().size()], 300);
    SCOPED_TRACE(describe(f));
    auto p = generate_family(f);
    ASSERT_TRUE(p);
    std::ostringstream out;
    write_profile(out, p->t);
    const std::string text = out.str();
    auto fast = detail::parse_profile_stream(text, {});
    ASSERT_TRUE(fast.has_value()) << "the streaming reader declined a profile banyan wrote";
    auto full = detail::parse_profile_full(text, "p.json", {});
    ASSERT_TRUE(full) << full.error().message;
    expect_same(*fast, *full);
    for (auto unit : {traffic_unit::messages, traffic_unit::bytes}) {
      auto a = detail::parse_profile_stream(text, {.unit = unit});
      auto b = detail::parse_profile_full(text, "p.json", {.unit = unit});
      ASSERT_TRUE(a && b);
      expect_same(*a, *b);
    }
  }
}

TEST(ProfileStream, ChildrenBeforeParentsEscapesUnknownKeysAndMemory) {
  const std::string text = R"({"version": 1, "extra": {"a": [1, 2.5e-3, true, null, "x"]},
    "components": [
      {"path": "/r\/b", "parent": "/r", "load": {"cpu": 2, "memory": 5, "other": -1}, "kind": "leaf"},
      {"path": "/r", "parent": null, "load": {"cpu": 1e-12}},
      {"path": "/r/a", "parent": "/r", "load": {"cpu": null}}
    ],
    "edges": [{"parent": "/r", "child": "/r/b", "messages": 3, "bytes": 70}, {"parent": "/r", "child": "/r/a", "messages": 0.5}]
  })";
  auto fast = detail::parse_profile_stream(text, {});
  ASSERT_TRUE(fast.has_value());
  auto full = detail::parse_profile_full(text, "p.json", {});
  ASSERT_TRUE(full) << full.error().message;
  expect_same(*fast, *full);
  EXPECT_EQ(fast->path[0], "/r");
  EXPECT_EQ(fast->path[1], "/r/b");
}

TEST(ProfileStream, LeavesEverythingElseToTheFullReader) {
  const std::string good = R"({"version": 1, "components": [{"path": "/r", "parent": null}, {"path": "/r/a", "parent": "/r"}]})";
  ASSERT_TRUE(detail::parse_profile_stream(good, {}).has_value());
  // Valid files it does not take: the full reader still reads them.
  for (const std::string& text : {
           std::string(R"({"version": 1, "components": [{"path": "/r", "parent": null}, {"path": "/r/\u00e9", "parent": "/r"}]})"),
           std::string(R"({"edges": [], "version": 1, "components": [{"path": "/r", "parent": null}]})"),
       }) {
    SCOPED_TRACE(text);
    EXPECT_FALSE(detail::parse_profile_stream(text, {}).has_value());
    EXPECT_TRUE(parse_profile(text, "p.json"));
  }
  // Bad files: declined, and parse_profile gives the full reader's message.
  for (const std::string& text : {
           std::string(R"({"version": 1, "components": [{"path": "/r", "parent": null, "kind": tru}]})"),
           std::string(R"({"version": 1, "components": [{"path": "/r", "parent": null, "load": {"cpu": 1e999}}]})"),
           std::string(R"({"version": 1, "components": [{"path": "/r", "parent": null, "load": {"cpu": -1}}]})"),
           std::string(R"({"version": 1, "components": [{"path": "/r", "parent": null}, {"path": "/r/a", "parent": "/x"}]})"),
           std::string(R"({"version": 1, "components": [{"path": "/r", "parent": null}, {"path": "/r", "parent": "/r"}]})"),
           std::string(R"({"version": 1, "components": [{"path": "/r", "parent": null}]} x)"),
           std::string(R"({"version": 1, "components": [{"path": "/r", "parent": null, "load": {"cpu": 01}}]})"),
           std::string(R"({"version": 1.0, "components": [{"path": "/r", "parent": null}]})"),
       }) {
    SCOPED_TRACE(text);
    EXPECT_FALSE(detail::parse_profile_stream(text, {}).has_value());
    auto t = parse_profile(text, "p.json");
    ASSERT_FALSE(t);
    EXPECT_NE(t.error().message.find("p.json"), std::string::npos) << t.error().message;
  }
}

TEST(ProfileStream, LoadProfileStreamsAFile) {
  auto p = generate_family({.shape = family_shape::binary, .components = 5000, .seed = 3});
  ASSERT_TRUE(p);
  const std::string file = ::testing::TempDir() + "/banyan_profile_stream_test.json";
  {
    std::ofstream out(file);
    write_profile(out, p->t);
  }
  auto fast = detail::read_profile_stream(file, {});
  ASSERT_TRUE(fast.has_value());
  auto viaload = load_profile(file);
  ASSERT_TRUE(viaload);
  expect_same(*fast, *viaload);
  EXPECT_EQ(fast->size(), 5000u);
  std::remove(file.c_str());
}

}  // namespace
}  // namespace banyan::partitioner
