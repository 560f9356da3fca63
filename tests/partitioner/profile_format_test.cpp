// One profile format (docs/formats.md), two readers and two writers, tied to one reference:
// tests/support/golden_profile.json. Both readers accept it and read the same values; the broker's
// writer (every run's profile, the launch's merge, the live window) reproduces it byte for byte; the
// partitioner's writer (`banyan gen-tree`) reproduces the subset its tree holds,
// tests/support/golden_profile_tree.json. Seeded random run-like profiles written by either writer
// read back alike through both readers.
#include "banyan/broker/profile.hpp"
#include "banyan/partitioner/generator.hpp"
#include "banyan/partitioner/io.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <map>
#include <random>
#include <sstream>

namespace banyan {
namespace {

namespace bp = banyan::partitioner;

std::string support_file(const std::string& name) {
  const std::string path = std::string(BANYAN_SOURCE_DIR) + "/tests/support/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The values both readers hold, by path: what makes them agree or not.
struct component_values {
  std::string parent;  // "" for the root
  double cpu = 0;
  double messages = 0;
  double memory = 0;
  bool operator==(const component_values&) const = default;
};
struct edge_values {
  double messages = 0;
  double bytes = 0;
  bool operator==(const edge_values&) const = default;
};
struct profile_values {
  std::map<std::string, component_values> components;
  std::map<std::string, edge_values> edges;  // by child path; edges that carried nothing left out
  double duration_s = 0;
};

void print_to(std::ostream& os, const profile_values& v) {
  os << "duration_s " << v.duration_s << "\n";
  for (const auto& [path, c] : v.components)
    os << "  " << path << " <- " << c.parent << " cpu " << c.cpu << " messages " << c.messages << " memory " << c.memory
       << "\n";
  for (const auto& [child, e] : v.edges) os << "  edge to " << child << ": " << e.messages << " / " << e.bytes << "\n";
}

// Compares field by field, so a failure names the component and the field.
void expect_same(const profile_values& a, const profile_values& b) {
  EXPECT_EQ(a.duration_s, b.duration_s);
  ASSERT_EQ(a.components.size(), b.components.size());
  for (const auto& [path, x] : a.components) {
    auto it = b.components.find(path);
    ASSERT_NE(it, b.components.end()) << path;
    EXPECT_EQ(x.parent, it->second.parent) << path;
    EXPECT_EQ(x.cpu, it->second.cpu) << path;
    EXPECT_EQ(x.messages, it->second.messages) << path;
    EXPECT_EQ(x.memory, it->second.memory) << path;
  }
  ASSERT_EQ(a.edges.size(), b.edges.size());
  for (const auto& [child, x] : a.edges) {
    auto it = b.edges.find(child);
    ASSERT_NE(it, b.edges.end()) << child;
    EXPECT_EQ(x.messages, it->second.messages) << child;
    EXPECT_EQ(x.bytes, it->second.bytes) << child;
  }
}

profile_values values_of(const profile& p) {
  profile_values out;
  out.duration_s = p.duration_s;
  for (vertex_id v = 0; v < p.tree->size(); ++v) {
    const auto& l = p.loads[v];
    out.components[p.tree->path(v)] = {v == 0 ? "" : p.tree->path(p.tree->parent(v)), l.cpu_seconds,
                                       static_cast<double>(l.messages), static_cast<double>(l.memory)};
    if (v != 0 && (p.edges[v].messages || p.edges[v].bytes))
      out.edges[p.tree->path(v)] = {static_cast<double>(p.edges[v].messages), static_cast<double>(p.edges[v].bytes)};
  }
  return out;
}

// The partitioner reads one edge figure per pass (`--weight messages|bytes`): two passes.
profile_values values_of(const std::string& text, const std::string& name) {
  bp::profile_measurements m;
  auto by_messages = bp::parse_profile(text, name, {}, &m);
  auto by_bytes = bp::parse_profile(text, name, {.unit = bp::traffic_unit::bytes});
  EXPECT_TRUE(by_messages) << by_messages.error().message;
  EXPECT_TRUE(by_bytes) << by_bytes.error().message;
  profile_values out;
  if (!by_messages || !by_bytes) return out;
  const bp::tree& t = *by_messages;
  out.duration_s = m.duration_s;
  for (std::size_t v = 0; v < t.size(); ++v) {
    out.components[t.path[v]] = {v == 0 ? "" : t.path[t.parent[v]], t.cpu[v], m.messages[v],
                                 t.has_memory() ? t.memory[v] : 0.0};
    if (v != 0 && (t.weight[v] != 0 || by_bytes->weight[v] != 0))
      out.edges[t.path[v]] = {t.weight[v], by_bytes->weight[v]};
  }
  return out;
}

// The golden file's values, written out once more by hand: both readers must read exactly these.
profile_values golden_values() {
  const std::string uart = "/chip/io/uart \"0\" \xc3\xa9";
  profile_values v;
  v.duration_s = 1.5;
  v.components = {
      {"/chip", {"", 0.0021, 120, 0}},
      {"/chip/alu", {"/chip", 0.01, 800, 4096}},
      {"/chip/reg", {"/chip", 0.000125, 64, 1048576}},
      {"/chip/io", {"/chip", 2.5, 5, 0}},
      {"/chip/alu/add0", {"/chip/alu", 1e-6, 3, 0}},
      {"/chip/alu/mul", {"/chip/alu", 0.1 + 0.2, 9007199254740992.0, 0}},
      {uart, {"/chip/io", 0, 0, 0}},
  };
  v.edges = {{"/chip/alu", {800, 51200}},
             {"/chip/reg", {64, 4096}},
             {"/chip/io", {5, 60}},
             {"/chip/alu/add0", {3, 96}},
             {"/chip/alu/mul", {1234567, 79012288}},
             {uart, {2, 24}}};
  return v;
}

TEST(ProfileFormat, BrokerReadsTheGoldenFile) {
  auto p = profile::from_json_text(support_file("golden_profile.json"), "golden_profile.json");
  ASSERT_TRUE(p) << p.error().message;
  expect_same(values_of(*p), golden_values());
  // What only the broker reads.
  EXPECT_EQ(p->mode, routing_mode::flat_node);
  EXPECT_EQ(p->composite, (std::vector<bool>{true, true, false, true, false, false, false}));
  ASSERT_EQ(p->flows.size(), 2u);
  EXPECT_EQ(p->tree->path(p->flows[0].publisher), "/chip/alu/add0");
  EXPECT_EQ(p->flows[0].targets, (std::vector<vertex_id>{0, 1}));
  EXPECT_EQ(p->flows[1].messages, 2u);
  EXPECT_EQ(p->flows[1].bytes, 128u);
  ASSERT_EQ(p->links.size(), 2u);
  EXPECT_EQ(p->links[1].from, "n1");
  EXPECT_EQ(p->links[1].to, "n0");
  EXPECT_EQ(p->links[1].messages, 4u);
  EXPECT_EQ(p->links[1].bytes, 256u);
}

TEST(ProfileFormat, PartitionerReadsTheGoldenFileAlike) {
  const std::string text = support_file("golden_profile.json");
  expect_same(values_of(text, "golden_profile.json"), golden_values());
}

TEST(ProfileFormat, BrokerWriterReproducesTheGoldenFileByteForByte) {
  const std::string golden = support_file("golden_profile.json");
  auto p = profile::from_json_text(golden, "golden_profile.json");
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->to_json_text() + "\n", golden);  // profile::write ends the file with a newline
}

// gen-tree's writer holds the partitioner's tree only (io.hpp, write_profile): its reference is the
// golden file's tree subset, and what it writes reads back alike through both readers.
TEST(ProfileFormat, PartitionerWriterReproducesTheGoldenTreeByteForByte) {
  auto t = bp::parse_profile(support_file("golden_profile.json"), "golden_profile.json");
  ASSERT_TRUE(t) << t.error().message;
  std::ostringstream out;
  bp::write_profile(out, *t, "flat-node");
  const std::string subset = support_file("golden_profile_tree.json");
  EXPECT_EQ(out.str(), subset);

  profile_values expected = golden_values();  // the subset: no load.messages, bytes or duration
  expected.duration_s = 0;
  for (auto& [path, c] : expected.components) c.messages = 0;
  for (auto& [child, e] : expected.edges) e.bytes = 0;
  expect_same(values_of(subset, "golden_profile_tree.json"), expected);
  auto b = profile::from_json_text(subset, "golden_profile_tree.json");
  ASSERT_TRUE(b) << b.error().message;
  expect_same(values_of(*b), expected);
  EXPECT_EQ(b->mode, routing_mode::flat_node);
  EXPECT_EQ(b->composite, (std::vector<bool>{true, true, false, true, false, false, false}));
}

// Seeded randomness: BANYAN_TEST_SEED replays one failing run; every failure prints its seed.
std::uint64_t base_seed() {
  const char* s = std::getenv("BANYAN_TEST_SEED");
  return s ? std::strtoull(s, nullptr, 10) : 20240611;
}

// Names that exercise JSON escaping: quotes, backslashes, control characters and UTF-8.
std::string random_name(std::mt19937_64& rng, std::size_t index) {
  static const char* const pieces[] = {"a",        "alu",          "w", "\"q\"", "back\\slash", "tab\t", "\x01",
                                       "\xc3\xa9", "\xe2\x82\xac", " ", "9"};
  std::string name;
  const std::size_t n = 1 + rng() % 3;
  for (std::size_t i = 0; i < n; ++i) name += pieces[rng() % std::size(pieces)];
  return name + std::to_string(index);
}

// A double as a run writes one: zero, a whole number, or any value across many magnitudes.
double random_seconds(std::mt19937_64& rng) {
  switch (rng() % 4) {
    case 0: return 0;
    case 1: return static_cast<double>(rng() % 1000);
    default:
      return std::uniform_real_distribution<double>(0, 1)(rng) * std::pow(10.0, static_cast<int>(rng() % 16) - 10);
  }
}

// A count the partitioner holds exactly (it reads numbers as doubles: 2^53 and below).
std::uint64_t random_count(std::mt19937_64& rng) {
  switch (rng() % 4) {
    case 0: return 0;
    case 1: return rng() % 100;
    case 2: return rng() % (std::uint64_t{1} << 53);
    default: return std::uint64_t{1} << 53;
  }
}

// A run-like profile: a tree grown in random order (ids are top-down, as a spec builds them), loads
// and traffic of every kind, flows to ascending target sets, links.
profile random_profile(std::mt19937_64& rng) {
  auto tree = std::make_shared<component_tree>(random_name(rng, 0));
  const std::size_t n = 1 + rng() % 40;
  for (std::size_t i = 1; i < n; ++i) {
    auto v = tree->add(static_cast<vertex_id>(rng() % tree->size()), random_name(rng, i));
    EXPECT_TRUE(v) << v.error().message;
  }
  tree->freeze();
  profile p;
  p.tree = tree;
  p.mode = static_cast<routing_mode>(rng() % 3);
  p.duration_s = random_seconds(rng);
  p.composite.resize(n);
  p.loads.resize(n);
  p.edges.resize(n);
  for (vertex_id v = 0; v < n; ++v) {
    p.composite[v] = !tree->children(v).empty() || rng() % 5 == 0;
    p.loads[v] = {random_count(rng), random_seconds(rng), random_count(rng)};
    if (v != 0) p.edges[v] = {random_count(rng), random_count(rng)};
  }
  for (std::size_t f = rng() % 4; f > 0; --f) {
    flow fl{static_cast<vertex_id>(rng() % n), {}, random_count(rng), random_count(rng)};
    for (vertex_id v = 0; v < n; ++v)
      if (rng() % 3 == 0) fl.targets.push_back(v);
    p.flows.push_back(std::move(fl));
  }
  for (std::size_t l = rng() % 3; l > 0; --l)
    p.links.push_back({"n" + std::to_string(l), "n0", random_count(rng), random_count(rng)});
  return p;
}

// Every profile the broker writes (a run's, the launch's merge of two nodes', a live window) reads
// back with the same values in the partitioner and, byte for byte, in the broker.
TEST(ProfileFormat, BrokerWrittenRunProfilesReadAlikeInBothReaders) {
  const std::uint64_t seed = base_seed();
  for (std::uint64_t round = 0; round < 150; ++round) {
    std::mt19937_64 rng(seed + round);
    SCOPED_TRACE("seed " + std::to_string(seed + round) + " (replay: BANYAN_TEST_SEED=" + std::to_string(seed + round) +
                 ")");
    const profile p = random_profile(rng);
    profile merged = p;
    ASSERT_TRUE(merged.merge(p));  // a second node's profile of the same run
    auto window = merged.since(p);
    ASSERT_TRUE(window) << window.error().message;
    for (const profile* written : std::initializer_list<const profile*>{&p, &merged, &*window}) {
      const std::string text = written->to_json_text();
      auto back = profile::from_json_text(text, "run.json");
      ASSERT_TRUE(back) << back.error().message << "\n" << text;
      EXPECT_EQ(back->to_json_text(), text);
      const profile_values want = values_of(*written);
      const profile_values got = values_of(text, "run.json");
      expect_same(want, got);
      if (HasFailure()) {
        std::ostringstream a, b;
        print_to(a, want);
        print_to(b, got);
        FAIL() << "broker wrote:\n" << a.str() << "partitioner read:\n" << b.str();
      }
    }
  }
}

// What `banyan gen-tree` writes reads back exactly in the partitioner and alike in the broker.
TEST(ProfileFormat, GeneratedProfilesReadAlikeInBothReaders) {
  const std::uint64_t seed = base_seed();
  for (std::uint64_t round = 0; round < 20; ++round) {
    SCOPED_TRACE("seed " + std::to_string(seed + round));
    bp::generator_options g{.components = 1 + (seed + round) % 300, .seed = seed + round, .memory = round % 2 == 0};
    const bp::tree t = bp::generate_tree(g);
    std::ostringstream out;
    bp::write_profile(out, t);
    auto again = bp::parse_profile(out.str(), "gen.json");
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_EQ(again->path, t.path);
    EXPECT_EQ(again->parent, t.parent);
    EXPECT_EQ(again->cpu, t.cpu);
    EXPECT_EQ(again->memory, t.memory);
    EXPECT_EQ(again->weight, t.weight);
    auto b = profile::from_json_text(out.str(), "gen.json");
    ASSERT_TRUE(b) << b.error().message;
    expect_same(values_of(*b), values_of(out.str(), "gen.json"));
  }
}

// Both readers reject the same mistakes. (The partitioner alone takes a `parent` that is not the
// path's prefix, since its paths are labels; the broker names such a component: see below.)
TEST(ProfileFormat, BothReadersRejectTheSameMistakes) {
  const std::string ok_component = R"({"path": "/r", "parent": null})";
  const std::map<std::string, std::string> bad = {
      {"no version", R"({"components": [)" + ok_component + "]}"},
      {"version 2", R"({"version": 2, "components": [)" + ok_component + "]}"},
      {"another format", R"({"format": "x", "version": 1, "components": [)" + ok_component + "]}"},
      {"no components", R"({"version": 1})"},
      {"negative cpu", R"({"version": 1, "components": [{"path": "/r", "parent": null, "load": {"cpu": -1}}]})"},
      {"negative messages",
       R"({"version": 1, "components": [{"path": "/r", "parent": null, "load": {"messages": -1}}]})"},
      {"negative duration", R"({"version": 1, "duration_s": -1, "components": [)" + ok_component + "]}"},
      {"cpu a string", R"({"version": 1, "components": [{"path": "/r", "parent": null, "load": {"cpu": "1"}}]})"},
      {"no parent", R"({"version": 1, "components": [{"path": "/r"}]})"},
      {"unknown parent",
       R"({"version": 1, "components": [)" + ok_component + R"(, {"path": "/r/a/b", "parent": "/r/a"}]})"},
      {"two roots", R"({"version": 1, "components": [)" + ok_component + R"(, {"path": "/s", "parent": null}]})"},
      {"duplicate path", R"({"version": 1, "components": [)" + ok_component +
                             R"(, {"path": "/r/a", "parent": "/r"}, {"path": "/r/a", "parent": "/r"}]})"},
      {"not a tree edge", R"({"version": 1, "components": [)" + ok_component +
                              R"(, {"path": "/r/a", "parent": "/r"}, {"path": "/r/a/b", "parent": "/r/a"}],
                                "edges": [{"parent": "/r", "child": "/r/a/b", "messages": 1}]})"},
      {"edge to the root",
       R"({"version": 1, "components": [)" + ok_component + R"(], "edges": [{"parent": "/r", "child": "/r"}]})"},
      {"negative traffic",
       R"({"version": 1, "components": [)" + ok_component +
           R"(, {"path": "/r/a", "parent": "/r"}], "edges": [{"parent": "/r", "child": "/r/a", "messages": -3}]})"},
      {"not JSON", R"({"version": 1, "components": [)"},
  };
  for (const auto& [what, text] : bad) {
    EXPECT_FALSE(profile::from_json_text(text, "p.json")) << what;
    EXPECT_FALSE(bp::parse_profile(text, "p.json")) << what;
  }
  // Accepted alike: null loads are 0, whole numbers written as doubles are counts.
  const std::string lenient =
      R"({"version": 1, "components": [{"path": "/r", "parent": null, "load": {"cpu": null, "messages": 4.0}},
      {"path": "/r/a", "parent": "/r"}], "edges": [{"parent": "/r", "child": "/r/a", "messages": 8.0, "bytes": null}]})";
  auto b = profile::from_json_text(lenient, "p.json");
  ASSERT_TRUE(b) << b.error().message;
  expect_same(values_of(*b), values_of(lenient, "p.json"));
}

TEST(ProfileFormat, BrokerNamesAParentThatIsNotThePathsPrefix) {
  // The partitioner reads paths as labels (a family's `/app/c7` under `/app/c3`); the broker's
  // tree names each component below its parent, and says so rather than rebuild another tree.
  const std::string text = R"({"version": 1, "components": [{"path": "/app", "parent": null},
      {"path": "/app/c1", "parent": "/app"}, {"path": "/app/c2", "parent": "/app/c1"}]})";
  EXPECT_TRUE(bp::parse_profile(text, "p.json"));
  auto b = profile::from_json_text(text, "p.json");
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().code, broker::errc::invalid_profile);
  EXPECT_EQ(b.error().message, "p.json: components[2] (/app/c2): parent \"/app/c1\" is not the path's parent `/app`");
  // A fraction where the broker holds a count is named, not truncated.
  auto f = profile::from_json_text(
      R"({"version": 1, "components": [{"path": "/r", "parent": null, "load": {"messages": 0.5}}]})", "p.json");
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().message,
            "p.json: components[0] (/r).load.messages: must be a whole number of at most 2^64 - 1, got 0.5");
}

}  // namespace
}  // namespace banyan
