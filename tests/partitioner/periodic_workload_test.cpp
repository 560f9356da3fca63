// The workload file: a full example read back, and every bad input named by file:line.
#include "banyan/partitioner/periodic.hpp"

#include <gtest/gtest.h>

#include <string>

namespace banyan::partitioner::periodic {
namespace {

const char* const deployment_text = R"(version: 1
nodes:
  - {name: n0, endpoint: "tcp://127.0.0.1:7100", capacity: {cpu: 8}}
  - {name: n1, endpoint: "tcp://127.0.0.1:7101", capacity: {cpu: 4}}
assignments:
  /app: n0
  /app/sim: n1
  /app/eval: n0
)";

// Line numbers matter: the error tests below name them.
const char* const workload_text = R"(version: 1
slot: 1m
horizon: 1d
message_cost: 0.001
nodes:
  - {name: n0, cost_per_hour: 0.5}
  - {name: n1, cost_per_hour: 0.25, capacity: 6}
subtrees:
  - path: /app/sim
    demand: 2
    wake: {bounds: [5, 10, 20], counts: [30, 5]}
    response: {bounds: [60, 120, 300], counts: [8, 2]}
  - path: /app/eval
    demand: 1
    wake: 15s
    response: {bounds: [10, 20], counts: [1]}
workflows:
  - name: nightly
    period: 1d
    phase: 2h
    jitter: 30s
    deadline: 20m
    reliability: 0.999
    requests:
      - {id: eval, subtree: /app/eval, after: sim, kind: publish, traffic: 10}
      - {id: sim, subtree: /app/sim}
)";

deployment the_deployment() {
  auto d = parse_deployment(deployment_text, "d.yaml");
  EXPECT_TRUE(d) << d.error().what();
  return *d;
}

// The workload with line `line` (1-based) replaced by `text`.
std::string with_line(int line, const std::string& text) {
  std::string s = workload_text;
  std::size_t at = 0;
  for (int i = 1; i < line; ++i) at = s.find('\n', at) + 1;
  const std::size_t end = s.find('\n', at);
  return s.substr(0, at) + text + s.substr(end);
}

// Read against the_deployment() unless `alone`.
std::string error_of(const std::string& text, bool alone = false) {
  const deployment d = the_deployment();
  auto w = parse_workload(text, "w.yaml", alone ? workload_context{} : workload_context{&d, nullptr});
  return w ? std::string("(no error)") : w.error().message;
}

TEST(PeriodicWorkload, ReadsEveryField) {
  const deployment d = the_deployment();
  auto w = parse_workload(workload_text, "w.yaml", {&d, nullptr});
  ASSERT_TRUE(w) << w.error().what();
  EXPECT_EQ(w->slot, 60);
  EXPECT_EQ(w->horizon, 86400);
  EXPECT_EQ(w->slots(), 1440U);
  ASSERT_EQ(w->nodes.size(), 2U);
  EXPECT_EQ(w->nodes[0].capacity, 8);  // from the deployment
  EXPECT_EQ(w->nodes[1].capacity, 6);  // overridden
  EXPECT_EQ(w->nodes[1].cost_per_hour, 0.25);
  ASSERT_EQ(w->subtrees.size(), 2U);
  EXPECT_EQ(w->home, (std::vector<node_id>{1, 0}));
  EXPECT_EQ(w->subtrees[1].wake.min(), 15);
  EXPECT_EQ(w->subtrees[1].wake.max(), 15);
  EXPECT_NEAR(w->subtrees[0].wake.quantile(0.5), 5 + 5 * (17.5 / 30), 1e-9);
  const auto& f = w->workflows.at(0);
  EXPECT_EQ(f.period, 86400);
  EXPECT_EQ(f.phase, 7200);
  EXPECT_EQ(f.jitter, 30);
  EXPECT_EQ(f.deadline, 1200);
  EXPECT_EQ(f.reliability, 0.999);
  // Sorted topologically: sim before eval.
  ASSERT_EQ(f.requests.size(), 2U);
  EXPECT_EQ(f.requests[0].id, "sim");
  EXPECT_EQ(f.requests[1].after, (std::vector<std::size_t>{0}));
  EXPECT_TRUE(f.requests[1].publish);
  EXPECT_EQ(f.requests[1].traffic, 10);
  EXPECT_EQ(w->deployment_fingerprint, fingerprint(d));
}

TEST(PeriodicWorkload, DurationsTakeUnits) {
  EXPECT_EQ(parse_duration("90"), 90);
  EXPECT_EQ(parse_duration("250ms"), 0.25);
  EXPECT_EQ(parse_duration("1.5m"), 90);
  EXPECT_EQ(parse_duration("2h"), 7200);
  EXPECT_EQ(parse_duration("1d"), 86400);
  EXPECT_FALSE(parse_duration("1 week"));
  EXPECT_FALSE(parse_duration("-1s"));
}

TEST(PeriodicWorkload, AnUnknownSubtreeIsNamedWithItsLine) {
  EXPECT_EQ(
      error_of(with_line(9, "  - path: /app/simx")),
      "w.yaml:9: unknown subtree `/app/simx`: d.yaml assigns no such subtree (a periodic subtree is placed as a unit)");
  EXPECT_EQ(error_of(with_line(26, "      - {id: sim, subtree: /app/nope}")),
            "w.yaml:26: workflow `nightly`: unknown subtree `/app/nope` (not in `subtrees`)");
}

TEST(PeriodicWorkload, ACycleIsNamedWithItsLine) {
  EXPECT_EQ(error_of(with_line(26, "      - {id: sim, subtree: /app/sim, after: eval}")),
            "w.yaml:25: workflow `nightly`: request `eval` is on a cycle of `after`");
}

TEST(PeriodicWorkload, ADeadlineBelowTheCriticalPathIsNamed) {
  // sim (60 s at least) then eval (10 s at least), eval waits for sim's reply only as a publish's
  // successor would not: here eval follows sim, so the path is 70 s.
  EXPECT_EQ(error_of(with_line(22, "    deadline: 65s")),
            "w.yaml:22: workflow `nightly`: deadline 65 s is shorter than the critical path at the minimum response "
            "times (70 s)");
  EXPECT_EQ(error_of(with_line(22, "    deadline: 70s")), "(no error)");
}

TEST(PeriodicWorkload, APeriodOfZeroOrOneNotDividingTheHorizonIsNamed) {
  EXPECT_EQ(error_of(with_line(19, "    period: 0")), "w.yaml:19: workflow `nightly`: period must be positive, got 0");
  EXPECT_EQ(error_of(with_line(19, "    period: 7h")),
            "w.yaml:19: workflow `nightly`: period must divide the horizon (86400 s)");
}

TEST(PeriodicWorkload, AWorkloadForAnotherDeploymentIsRefused) {
  const deployment d = the_deployment();
  const std::string text = with_line(4, "deployment: {fingerprint: \"fnv1a64:0123456789abcdef\"}");
  EXPECT_EQ(error_of(text),
            "w.yaml:4: this workload is for another deployment (fingerprint fnv1a64:0123456789abcdef; d.yaml has " +
                fingerprint(d) + ")");
  EXPECT_EQ(error_of(with_line(4, "deployment: {fingerprint: \"" + fingerprint(d) + "\"}")), "(no error)");
}

TEST(PeriodicWorkload, MalformedHistogramsAndNodesAreNamed) {
  EXPECT_EQ(error_of(with_line(11, "    wake: {bounds: [5, 10, 20], counts: [30]}")),
            "w.yaml:11: subtree `/app/sim`: wake: 3 bounds need 2 counts, got 1");
  EXPECT_EQ(error_of(with_line(11, "    wake: {bounds: [5, 1], counts: [3]}")),
            "w.yaml:11: subtree `/app/sim`: wake.bounds must not decrease");
  EXPECT_EQ(error_of(with_line(11, "    wake: {bounds: [5, 10], counts: [0]}")),
            "w.yaml:11: subtree `/app/sim`: wake: the counts add up to 0 (no observation)");
  EXPECT_EQ(error_of(with_line(6, "  - {name: n9, cost_per_hour: 0.5}")),
            "w.yaml:6: node `n9` is not a node of d.yaml");
  EXPECT_EQ(error_of(with_line(6, "  - {name: n0, cost_per_hour: 0.5}"), true),
            "w.yaml:6: node `n0` has no absolute capacity (give `capacity` in `nodes`)");
}

TEST(PeriodicWorkload, AProfileChecksPathsBelowAssignments) {
  tree t;
  t.path = {"/app", "/app/sim", "/app/eval"};
  t.parent = {no_vertex, 0, 0};
  t.cpu = {0, 0, 0};
  t.weight = {0, 0, 0};
  deployment d = the_deployment();
  d.assignments.pop_back();  // /app/eval is no longer assigned, but the profile knows it
  auto w = parse_workload(workload_text, "w.yaml", {&d, &t});
  ASSERT_TRUE(w) << w.error().what();
  EXPECT_EQ(w->home[1], 0);  // under /app
  t.path[2] = "/app/other";
  auto bad = parse_workload(workload_text, "w.yaml", {&d, &t});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "w.yaml:13: unknown subtree `/app/eval`: no component of the profile has this path");
}

}  // namespace
}  // namespace banyan::partitioner::periodic
