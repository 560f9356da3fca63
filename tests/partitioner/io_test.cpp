#include "banyan/partitioner/io.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <utility>
#include <vector>

namespace banyan::partitioner {
namespace {

const char* good_profile = R"({
  "format": "banyan-profile", "version": 1, "mode": "hier",
  "components": [
    {"path": "/chip/alu", "parent": "/chip", "kind": "leaf", "load": {"cpu": 0.01, "messages": 800, "memory": 4096}},
    {"path": "/chip", "parent": null, "kind": "composite", "load": {"cpu": 0.002, "messages": 120, "memory": 0}},
    {"path": "/chip/reg", "parent": "/chip", "kind": "leaf", "load": {"cpu": 0.003}}
  ],
  "edges": [
    {"parent": "/chip", "child": "/chip/alu", "messages": 800, "bytes": 51200},
    {"parent": "/chip", "child": "/chip/reg", "messages": 5, "bytes": 100}
  ]
})";

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST(Profile, ReadsAndRenumbersRootFirst) {
  auto t = parse_profile(good_profile, "p.json");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->size(), 3u);
  EXPECT_EQ(t->path[0], "/chip");
  EXPECT_EQ(t->parent[1], 0);
  EXPECT_EQ(t->path[1], "/chip/alu");
  EXPECT_EQ(t->weight[1], 800);
  EXPECT_EQ(t->weight[2], 5);
  EXPECT_EQ(t->memory[1], 4096);
  auto b = parse_profile(good_profile, "p.json", {.unit = traffic_unit::bytes});
  ASSERT_TRUE(b);
  EXPECT_EQ(b->weight[1], 51200);
}

TEST(Profile, MalformedJsonGivesLineAndColumn) {
  const std::string bad =
      replace(good_profile, "\"kind\": \"leaf\", \"load\": {\"cpu\": 0.003}", "\"kind\": \"leaf\" \"load\": 1");
  auto t = parse_profile(bad, "p.json");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().code, errc::parse);
  EXPECT_NE(t.error().message.find("p.json:6:"), std::string::npos) << t.error().message;
}

// Text that is not JSON at all, from its first byte or after blank lines, is placed like any other
// syntax error; JSON that is not an object is placed too.
TEST(Profile, GarbageGivesLineAndColumn) {
  for (const auto& [text, place] : std::vector<std::pair<std::string, std::string>>{
           {"hello world", "p.json:1:1: syntax error"},
           {"\n\n  garbage{", "p.json:3:3: syntax error"},
           {"\n [1, 2]", "p.json:2:2: top level: expected a JSON object"},
       }) {
    SCOPED_TRACE(text);
    auto t = parse_profile(text, "p.json");
    ASSERT_FALSE(t);
    EXPECT_EQ(t.error().message.rfind(place, 0), 0u) << t.error().message;
  }
}

// A folder given where a file belongs says so, for every reader (not "1:1: syntax error").
TEST(Files, AFolderIsNamedAsOne) {
  const std::string dir = ::testing::TempDir();
  auto t = load_profile(dir);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().code, errc::io);
  EXPECT_EQ(t.error().message, dir + ": is a directory");
  auto c = load_cluster(dir);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message, dir + ": is a directory");
  auto d = load_deployment(dir);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().message, dir + ": is a directory");
  auto missing = load_cluster(dir + "/banyan-no-such-file.yaml");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message,
            dir + "/banyan-no-such-file.yaml: cannot open for reading (No such file or directory)");
}

// An edge listed twice counts both listings (formats.md does not forbid it), and the reader names
// it once, with both ends and both places, for the caller to warn about.
TEST(Profile, RepeatedEdgeIsSummedAndNamedOnce) {
  const std::string text =
      replace(good_profile, "{\"parent\": \"/chip\", \"child\": \"/chip/reg\", \"messages\": 5, \"bytes\": 100}",
              "{\"parent\": \"/chip\", \"child\": \"/chip/reg\", \"messages\": 5},\n"
              "    {\"parent\": \"/chip\", \"child\": \"/chip/alu\", \"messages\": 7},\n"
              "    {\"parent\": \"/chip\", \"child\": \"/chip/alu\", \"messages\": 1}");
  profile_measurements m;
  auto t = parse_profile(text, "p.json", {}, &m);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->weight[1], 808);  // /chip/alu: 800 + 7 + 1
  EXPECT_EQ(t->weight[2], 5);
  ASSERT_EQ(m.repeated_edges.size(), 1u);
  EXPECT_EQ(m.repeated_edge_count, 1u);
  EXPECT_EQ(
      m.repeated_edges[0],
      "p.json:11:5: edges[2]: `/chip` -> `/chip/alu` is listed again (first as edges[0]); their traffic is summed");

  profile_measurements once;
  ASSERT_TRUE(parse_profile(good_profile, "p.json", {}, &once));
  EXPECT_TRUE(once.repeated_edges.empty());
  EXPECT_EQ(once.repeated_edge_count, 0u);
}

TEST(Profile, UnknownParentNamesTheVertex) {
  auto t = parse_profile(replace(good_profile, "\"parent\": \"/chip\", \"kind\": \"leaf\", \"load\": {\"cpu\": 0.003}",
                                 "\"parent\": \"/chop\", \"kind\": \"leaf\", \"load\": {\"cpu\": 0.003}"),
                         "p.json");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().code, errc::not_a_tree);
  EXPECT_NE(t.error().message.find("/chip/reg"), std::string::npos) << t.error().message;
  EXPECT_NE(t.error().message.find("/chop"), std::string::npos) << t.error().message;
}

TEST(Profile, TwoRootsNamesBoth) {
  auto t = parse_profile(replace(good_profile, "\"parent\": \"/chip\", \"kind\": \"leaf\", \"load\": {\"cpu\": 0.003}",
                                 "\"parent\": null, \"kind\": \"leaf\", \"load\": {\"cpu\": 0.003}"),
                         "p.json");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().code, errc::not_a_tree);
  EXPECT_NE(t.error().message.find("/chip/reg"), std::string::npos) << t.error().message;
  EXPECT_NE(t.error().message.find("second root"), std::string::npos) << t.error().message;
}

TEST(Profile, CycleNamesAVertexOnIt) {
  const char* cyc = R"({"format": "banyan-profile", "version": 1, "components": [
    {"path": "/r", "parent": null},
    {"path": "/r/a", "parent": "/r/b"},
    {"path": "/r/b", "parent": "/r/a"}]})";
  auto t = parse_profile(cyc, "c.json");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().code, errc::not_a_tree);
  EXPECT_NE(t.error().message.find("cycle through /r/"), std::string::npos) << t.error().message;
}

TEST(Profile, NegativeLoadNamesTheField) {
  auto t = parse_profile(replace(good_profile, "{\"cpu\": 0.003}", "{\"cpu\": -1}"), "p.json");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("components[2] (/chip/reg).load.cpu"), std::string::npos) << t.error().message;
}

// "line:col" (1-based) of the first occurrence of `token` in `text`, computed independently of the reader.
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

TEST(Profile, OverflowingNumbersAreErrorsWithFileAndPlace) {
  // nlohmann-json throws out_of_range (not parse_error) for these; they must not escape.
  for (const std::string big : {"1e999", "-1e999"}) {
    const std::string text = replace(good_profile, "{\"cpu\": 0.003}", "{\"cpu\": " + big + "}");
    auto t = parse_profile(text, "p.json");
    ASSERT_FALSE(t) << big;
    EXPECT_EQ(t.error().code, errc::parse);
    EXPECT_NE(t.error().message.find("p.json:" + place_of(text, big + "}") + ": number `" + big + "` is out of range"),
              std::string::npos)
        << t.error().message;
  }
  const std::string text = replace(good_profile, "\"messages\": 5,", "\"messages\": 1e999,");
  auto t = parse_profile(text, "p.json");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("p.json:" + place_of(text, "1e999") + ": number `1e999` is out of range"),
            std::string::npos)
      << t.error().message;
}

TEST(Profile, EdgeThatIsNotATreeEdgeIsRejected) {
  auto t = parse_profile(replace(good_profile, "{\"parent\": \"/chip\", \"child\": \"/chip/reg\"",
                                 "{\"parent\": \"/chip/alu\", \"child\": \"/chip/reg\""),
                         "p.json");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("edges[1]"), std::string::npos) << t.error().message;
}

const char* good_cluster = R"(version: 1
nodes:
  - name: n0
    endpoint: tcp://127.0.0.1:7100
    capacity: {cpu: 0.5, memory: 8e9}
    group: rack0
  - name: n1
    endpoint: ipc:///tmp/n1
    capacity: {cpu: "40%"}
    group: rack1
link_cost:
  groups: {same: 1, other: 4}
)";

TEST(Cluster, ReadsCapacitiesPercentAndGroups) {
  auto c = parse_cluster(good_cluster, "c.yaml");
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->size(), 2u);
  EXPECT_EQ(c->nodes[0].cpu.amount, 0.5);
  EXPECT_TRUE(c->nodes[1].cpu.percent);
  EXPECT_EQ(c->nodes[1].cpu.amount, 40);
  EXPECT_EQ(c->nodes[0].memory->amount, 8e9);
  EXPECT_EQ(c->cost(0, 1), 4);
  EXPECT_EQ(c->nodes[1].line, 7);
}

TEST(Cluster, MalformedYamlGivesLineAndColumn) {
  auto c = parse_cluster("version: 1\nnodes:\n  - name: n0\n    capacity: {cpu: 1\n", "c.yaml");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, errc::parse);
  EXPECT_NE(c.error().message.find("c.yaml:"), std::string::npos) << c.error().message;
}

TEST(Cluster, NotAMappingIsPlacedAndEmptyIsNamed) {
  auto scalar = parse_cluster("\n  hello world\n", "c.yaml");
  ASSERT_FALSE(scalar);
  EXPECT_EQ(scalar.error().message, "c.yaml:2:3: expected a mapping with `version` and `nodes`, got `hello world`");
  auto list = parse_deployment("- a\n- b\n", "d.yaml");
  ASSERT_FALSE(list);
  EXPECT_EQ(list.error().message, "d.yaml:1:1: expected a mapping with `version` and `nodes`, got a list");
  auto empty = parse_cluster("\n# nothing\n", "c.yaml");
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().message, "c.yaml: empty (expected a mapping with `version` and `nodes`)");
}

TEST(Cluster, BadCapacityNamesNodeAndLine) {
  auto c = parse_cluster(replace(good_cluster, "cpu: 0.5", "cpu: lots"), "c.yaml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("c.yaml:5:"), std::string::npos) << c.error().message;
  EXPECT_NE(c.error().message.find("n0"), std::string::npos) << c.error().message;
}

// A node name travels in frames and is printed in logs and terminals: a control byte (an ESC that
// would recolour a terminal), a space or a backtick is refused at its line, naming the byte.
TEST(Cluster, NodeNamesArePrintableWithoutSpaces) {
  for (const std::string& bad : {std::string("n\x1b[31m0"), std::string("n 0"), std::string("n`0"),
                                 std::string("n\xc3\xa9"
                                             "0")}) {
    auto c = parse_cluster(replace(good_cluster, "name: n0", "name: \"" + bad + "\""), "c.yaml");
    ASSERT_FALSE(c) << bad;
    EXPECT_NE(c.error().message.find("c.yaml:3:"), std::string::npos) << c.error().message;
    EXPECT_NE(c.error().message.find("node name has byte 0x"), std::string::npos) << c.error().message;
  }
  EXPECT_TRUE(parse_cluster(replace(good_cluster, "name: n0", "name: gpu-node_0.rack1"), "c.yaml"));
}

TEST(Cluster, MatrixMustBeSquareAndSymmetric) {
  std::string m = replace(good_cluster, "groups: {same: 1, other: 4}", "matrix: [[0, 1], [2, 0]]");
  auto c = parse_cluster(m, "c.yaml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("symmetric"), std::string::npos) << c.error().message;
  auto d = parse_cluster(replace(good_cluster, "groups: {same: 1, other: 4}", "matrix: [[0, 1]]"), "c.yaml");
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("one row per node"), std::string::npos) << d.error().message;
}

TEST(Cluster, MatrixErrorsNameFileLineAndColumn) {
  // Rows on separate lines so that line and column both matter.
  const std::string asym = replace(good_cluster, "groups: {same: 1, other: 4}", "matrix:\n    - [0, 1]\n    - [2, 0]");
  auto c = parse_cluster(asym, "c.yaml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("c.yaml:" + place_of(asym, "1]") + ": link_cost.matrix[0][1]"), std::string::npos)
      << c.error().message;
  EXPECT_NE(c.error().message.find("symmetric"), std::string::npos) << c.error().message;
  const std::string diag = replace(good_cluster, "groups: {same: 1, other: 4}", "matrix:\n    - [0, 3]\n    - [3, 7]");
  auto d = parse_cluster(diag, "c.yaml");
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("c.yaml:" + place_of(diag, "7]") + ": link_cost.matrix[1][1]"), std::string::npos)
      << d.error().message;
  EXPECT_NE(d.error().message.find("must be 0"), std::string::npos) << d.error().message;
}

TEST(Cluster, OverflowingCapacitySaysOutOfRange) {
  const std::string text = replace(good_cluster, "cpu: 0.5", "cpu: 1e999");
  auto c = parse_cluster(text, "c.yaml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("c.yaml:" + place_of(text, "1e999") +
                                   ": node `n0` capacity.cpu: number `1e999` is out of range"),
            std::string::npos)
      << c.error().message;
}

TEST(Deployment, UnknownNodeDuplicateAndMissingEndpointsHaveLines) {
  const std::string dep = std::string(good_cluster) + "assignments:\n  /chip: n0\n  /chip/alu: n7\n";
  auto d = parse_deployment(dep, "d.yaml");
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("d.yaml:15:"), std::string::npos) << d.error().message;
  EXPECT_NE(d.error().message.find("n7"), std::string::npos) << d.error().message;

  auto dup = parse_deployment(
      replace(std::string(good_cluster), "ipc:///tmp/n1", "tcp://127.0.0.1:7100") + "assignments:\n  /chip: n0\n",
      "d.yaml");
  ASSERT_FALSE(dup);
  EXPECT_NE(dup.error().message.find("d.yaml:8:"), std::string::npos) << dup.error().message;
  EXPECT_NE(dup.error().message.find("another node"), std::string::npos) << dup.error().message;

  auto missing = parse_deployment(
      replace(std::string(good_cluster), "    endpoint: ipc:///tmp/n1\n", "") + "assignments:\n  /chip: n0\n",
      "d.yaml");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("d.yaml:7:"), std::string::npos) << missing.error().message;
  EXPECT_NE(missing.error().message.find("no endpoint"), std::string::npos) << missing.error().message;
}

TEST(Deployment, JoinLaterIsReadAndCheckedWithItsLine) {
  const std::string later =
      replace(std::string(good_cluster), "    group: rack1\n", "    group: rack1\n    join: later\n") +
      "assignments:\n  /chip: n0\n";
  auto d = parse_deployment(later, "d.yaml");
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->joins_later, (std::vector<bool>{false, true}));

  auto bad = parse_deployment(replace(later, "join: later", "join: soon"), "d.yaml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("d.yaml:11:11: node `n1`: `join` must be `start` (the default) or `later`"),
            std::string::npos)
      << bad.error().message;

  auto none = parse_deployment(replace(later, "    group: rack0\n", "    group: rack0\n    join: later\n"), "d.yaml");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("at least one node must start the deployment"), std::string::npos)
      << none.error().message;
}

TEST(Deployment, WrittenDeploymentReadsBackToTheSameMapping) {
  auto t = parse_profile(good_profile, "p.json");
  auto c = parse_cluster(replace(good_cluster, "\"40%\"", "0.5"), "c.yaml");
  ASSERT_TRUE(t && c);
  auto p = make_problem(*t, *c);
  ASSERT_TRUE(p) << p.error().message;
  const mapping m{0, 1, 0};
  std::ostringstream out;
  write_deployment(out, *p, m, {"test"});
  auto d = parse_deployment(out.str(), "out.yaml");
  ASSERT_TRUE(d) << d.error().message << "\n" << out.str();
  EXPECT_EQ(d->assignments.size(), 2u);  // the root and /chip/alu; /chip/reg stays with its parent
  auto back = mapping_of(p->t, *d);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, m);
  EXPECT_EQ(d->c.cost(0, 1), 4);
  // Each assignment's load is that of the components it places: the root's with /chip/reg's.
  ASSERT_EQ(d->assignments.size(), 2u);
  const double alu = p->t.cpu[1], root_region = p->t.cpu[0] + p->t.cpu[2];
  EXPECT_DOUBLE_EQ(d->assignments[0].load, root_region) << out.str();
  EXPECT_DOUBLE_EQ(d->assignments[1].load, alu) << out.str();
}

TEST(Deployment, LoadsNameAssignedPathsAndAreNonNegativeNumbers) {
  const std::string dep = std::string(good_cluster) + "assignments:\n  /chip: n0\n  /chip/alu: n1\nloads:\n";
  auto d = parse_deployment(dep + "  /chip: 0.25\n  /chip/alu: 2\n", "d.yaml");
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_DOUBLE_EQ(d->assignments[0].load, 0.25);
  EXPECT_DOUBLE_EQ(d->assignments[1].load, 2);

  auto unknown = parse_deployment(dep + "  /chip/reg: 1\n", "d.yaml");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("d.yaml:17:3: loads: `/chip/reg` is not an assigned path"), std::string::npos)
      << unknown.error().message;
  auto negative = parse_deployment(dep + "  /chip: -1\n", "d.yaml");
  ASSERT_FALSE(negative);
  EXPECT_NE(negative.error().message.find("d.yaml:17:10: load of `/chip`: must be a non-negative number"),
            std::string::npos)
      << negative.error().message;
  auto list = parse_deployment(dep + "  - 1\n", "d.yaml");
  ASSERT_FALSE(list);
  EXPECT_NE(list.error().message.find("`loads` must be a mapping"), std::string::npos) << list.error().message;
}

TEST(Dot, ColoursEveryComponentAndMarksCutEdges) {
  auto t = parse_profile(good_profile, "p.json");
  auto c = parse_cluster(replace(good_cluster, "\"40%\"", "0.5"), "c.yaml");
  auto p = make_problem(*t, *c);
  ASSERT_TRUE(p);
  std::ostringstream out;
  write_dot(out, *p, {0, 1, 0});
  const std::string s = out.str();
  EXPECT_NE(s.find("v0 -> v1 [color=red"), std::string::npos) << s;
  EXPECT_NE(s.find("v0 -> v2;"), std::string::npos) << s;
}

// Labels break lines with DOT's `\n` (not a literal backslash), numbers are plain (20,000, not
// 2e+04) and carry their units, and a legend says what they are.
TEST(Dot, LabelsArePlainNumbersWithUnitsOnTwoLines) {
  auto t = parse_profile(
      replace(replace(good_profile, "\"messages\": 800, \"bytes\": 51200", "\"messages\": 20000, \"bytes\": 51200"),
              "\"load\": {\"cpu\": 0.003}", "\"load\": {\"cpu\": 1234567}"),
      "p.json");
  ASSERT_TRUE(t) << t.error().message;
  auto c = parse_cluster(replace(replace(good_cluster, "\"40%\"", "2000000"), "cpu: 0.5", "cpu: 3000000"), "c.yaml");
  ASSERT_TRUE(c) << c.error().message;
  auto p = make_problem(*t, *c);
  ASSERT_TRUE(p) << p.error().message;
  for (std::size_t max_vertices : {std::size_t{2000}, std::size_t{1}}) {  // drawn whole, and as fragments
    std::ostringstream out;
    write_dot(out, *p, {0, 1, 0}, max_vertices, {.traffic = "messages", .load = "cpu s"});
    const std::string s = out.str();
    SCOPED_TRACE(s);
    EXPECT_NE(s.find("label=\"20,000 messages\""), std::string::npos);
    EXPECT_EQ(s.find("e+"), std::string::npos);
    EXPECT_EQ(s.find("\\\\n"), std::string::npos) << "a literal backslash before n";
    EXPECT_NE(s.find("red edges: cut, traffic (messages)"), std::string::npos);
  }
  std::ostringstream whole;
  write_dot(whole, *p, {0, 1, 0}, 2000, {.traffic = "messages", .load = "cpu s"});
  EXPECT_NE(whole.str().find("label=\"alu\\n0.01 cpu s\""), std::string::npos) << whole.str();
  EXPECT_NE(whole.str().find("label=\"reg\\n1,234,567 cpu s\""), std::string::npos) << whole.str();
}

}  // namespace
}  // namespace banyan::partitioner
