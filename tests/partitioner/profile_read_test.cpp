// The profile reader (simdjson On-Demand): every family written by write_profile
// reads back as the same tree, in any component order; only valid JSON is accepted, even in the
// values it does not use; errors name file:line:col; the measurements come in the same pass.
#include "banyan/partitioner/families.hpp"
#include "banyan/partitioner/io.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

namespace banyan::partitioner {
namespace {

// Compares a tree with the one read back from its profile by path, whatever their numbering.
void expect_same_by_path(const tree& a, const tree& b) {
  ASSERT_EQ(a.size(), b.size());
  std::map<std::string, vertex_id> in_b;
  for (std::size_t v = 0; v < b.size(); ++v) in_b[b.path[v]] = static_cast<vertex_id>(v);
  for (std::size_t v = 0; v < a.size(); ++v) {
    auto it = in_b.find(a.path[v]);
    ASSERT_NE(it, in_b.end()) << a.path[v];
    const vertex_id w = it->second;
    // write_profile writes each double's shortest exact text: values read back unchanged.
    EXPECT_EQ(a.cpu[v], b.cpu[w]) << a.path[v];
    EXPECT_EQ(a.weight[v], b.weight[w]) << a.path[v];
    if (v == 0) {
      EXPECT_EQ(w, 0);
    } else {
      EXPECT_EQ(a.path[a.parent[v]], b.path[b.parent[w]]) << a.path[v];
      EXPECT_LT(b.parent[w], w) << "parent index below child index";
    }
  }
}

TEST(ProfileRead, EveryFamilyReadsBackAsTheSameTree) {
  for (std::uint64_t seed = 1; seed <= 7; ++seed) {
    const family_shape shape = all_family_shapes()[seed % all_family_shapes().size()];
    family_options f = random_family(seed, shape, 300);
    SCOPED_TRACE(describe(f) + " (seed " + std::to_string(seed) + ")");
    auto p = generate_family(f);
    ASSERT_TRUE(p);
    std::ostringstream out;
    write_profile(out, p->t);
    auto back = parse_profile(out.str(), "p.json");
    ASSERT_TRUE(back) << back.error().message;
    expect_same_by_path(p->t, *back);
  }
}

TEST(ProfileRead, ChildrenBeforeParentsEdgesFirstEscapesAndUnknownValues) {
  const std::string text = R"({"edges": [{"parent": "/r", "child": "/r/b", "messages": 3, "bytes": 70},
                                         {"parent": "/r", "child": "/r/a", "messages": 0.5}],
    "version": 1, "extra": {"a": [1, 2.5e-3, true, false, null, "x\u00e9"], "b\"q": {}},
    "components": [
      {"path": "/r\/b", "parent": "/r", "load": {"cpu": 2, "memory": 5, "other": -1}, "kind": "leaf"},
      {"path": "/r/\u00e9", "parent": "/r/b"},
      {"path": "/r", "parent": null, "load": {"cpu": 1e-12, "messages": 7}},
      {"path": "/r/a", "parent": "/r", "load": {"cpu": null}}
    ], "duration_s": 2.5
  })";
  profile_measurements m;
  auto t = parse_profile(text, "p.json", {}, &m);
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->size(), 4u);
  EXPECT_EQ(t->path[0], "/r");
  EXPECT_EQ(t->path[1], "/r/b");
  EXPECT_EQ(t->path[2], "/r/a");
  EXPECT_EQ(t->path[3], "/r/\xc3\xa9");
  EXPECT_EQ(t->parent[3], 1);
  EXPECT_EQ(t->cpu[0], 1e-12);
  EXPECT_EQ(t->weight[1], 3);
  EXPECT_EQ(t->weight[2], 0.5);
  ASSERT_TRUE(t->has_memory());
  EXPECT_EQ(t->memory[1], 5);
  EXPECT_EQ(m.duration_s, 2.5);
  EXPECT_TRUE(m.has_messages);
  EXPECT_EQ(m.messages, (std::vector<double>{7, 0, 0, 0}));
  auto bytes = parse_profile(text, "p.json", {.unit = traffic_unit::bytes});
  ASSERT_TRUE(bytes);
  EXPECT_EQ(bytes->weight[1], 70);
  EXPECT_EQ(bytes->weight[2], 0);
}

// Line and column (1-based) of the first `token` in `text`, counted here independently.
std::string place_of(const std::string& text, const std::string& token) {
  const auto at = text.find(token);
  EXPECT_NE(at, std::string::npos) << token;
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < at; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return std::to_string(line) + ":" + std::to_string(col);
}

TEST(ProfileRead, InvalidJsonAnywhereIsAnErrorWithLineAndColumn) {
  // Each: a profile that is not JSON, and the token where the error is.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"version\": 1, \"components\": [{\"path\": \"/r\", \"parent\": null,\n \"kind\": tru}]}", "tru"},
      {"{\"version\": 1, \"components\": [{\"path\": \"/r\", \"parent\": null,\n \"x\": [1, 01]}]}", "01"},
      {"{\"version\": 1, \"flows\": [nul],\n \"components\": [{\"path\": \"/r\", \"parent\": null}]}", "nul"},
      {"{\"version\": 1, \"components\": [{\"path\": \"/r\", \"parent\": null,\n \"kind\": \"a\\qb\"}]}", "\\q"},
      {"{\"version\": 1, \"components\": [{\"path\": \"/r\", \"parent\": null}]}\n x", "x"},
      {"{\"version\": 1, \"components\": [{\"path\": \"/r\", \"parent\": null}]}\n {}", "{}"},
      {"{\"version\": 1, \"components\": [{\"path\": \"/r\" \"parent\": null}]}", "\"parent\""},
  };
  for (const auto& [text, token] : cases) {
    SCOPED_TRACE(text);
    auto t = parse_profile(text, "p.json");
    ASSERT_FALSE(t);
    EXPECT_EQ(t.error().code, errc::parse);
    const std::string line = "p.json:" + place_of(text, token).substr(0, place_of(text, token).find(':')) + ":";
    EXPECT_EQ(t.error().message.rfind(line, 0), 0u) << t.error().message;
  }
}

TEST(ProfileRead, WrongValuesNameTheirPlaceAndComponent) {
  const std::string text =
      "{\"version\": 1, \"components\": [\n  {\"path\": \"/r\", \"parent\": null},\n"
      "  {\"path\": \"/r/a\", \"parent\": \"/r\", \"load\": {\"cpu\": \"x\"}}]}";
  auto t = parse_profile(text, "p.json");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("p.json:" + place_of(text, "\"x\"") +
                                   ": components[1] (/r/a).load.cpu: expected a number"),
            std::string::npos)
      << t.error().message;
  for (const std::string& bad : {
           std::string(R"({"version": 1.0, "components": [{"path": "/r", "parent": null}]})"),
           std::string(
               R"({"version": 1, "components": [{"path": "/r", "parent": null}, {"path": "/r", "parent": "/r"}]})"),
           std::string(R"({"version": 1, "components": [{"path": "/r", "parent": null, "path": "/s"}]})"),
           std::string(
               R"({"version": 1, "components": [{"path": "/r", "parent": null}, {"path": "/r/a", "parent": "/r/a"}]})"),
           std::string(R"({"version": 1, "components": []})"),
           std::string(R"({"version": 1, "components": [{"path": "r", "parent": null}]})"),
           std::string(R"([1])"),
       }) {
    SCOPED_TRACE(bad);
    auto u = parse_profile(bad, "p.json");
    ASSERT_FALSE(u);
    EXPECT_EQ(u.error().message.rfind("p.json:", 0), 0u) << u.error().message;
  }
}

TEST(ProfileRead, LoadProfileMapsAFileAndMatchesParse) {
  auto p = generate_family({.shape = family_shape::binary, .components = 20000, .seed = 3});
  ASSERT_TRUE(p);
  const std::string file = ::testing::TempDir() + "/banyan_profile_read_test.json";
  std::string text;
  {
    std::ostringstream out;
    write_profile(out, p->t);
    text = out.str();
    std::ofstream(file) << text;
  }
  auto mapped = load_profile(file);
  ASSERT_TRUE(mapped) << mapped.error().message;
  auto parsed = parse_profile(text, file);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(mapped->path, parsed->path);
  EXPECT_EQ(mapped->parent, parsed->parent);
  EXPECT_EQ(mapped->cpu, parsed->cpu);
  EXPECT_EQ(mapped->weight, parsed->weight);
  expect_same_by_path(p->t, *mapped);
  // The same file cut short: an error naming it, not a crash past the end.
  std::ofstream(file) << text.substr(0, text.size() / 2);
  auto cut = load_profile(file);
  ASSERT_FALSE(cut);
  EXPECT_EQ(cut.error().message.rfind(file + ":", 0), 0u) << cut.error().message;
  std::remove(file.c_str());
  auto missing = load_profile(file);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, errc::io);
}

}  // namespace
}  // namespace banyan::partitioner
