// The transport's multi-node fault cases replayed with mesh_app (tests/integration/mesh_app.cpp) as
// node processes on loopback: large payloads across 3 nodes arrive exactly; a node SIGSTOPped past
// the heartbeat timeout loses nothing and the run completes with exact counts; 64 KiB payloads to
// slow subscribers keep the subscribers' node's memory bounded (the figure in docs/runtime.md).
#include "faults.hpp"

#include "../support/node_started.hpp"

#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

namespace banyan::runtime::test {
namespace {

namespace fs = std::filesystem;

// n nodes; `assignments` maps subtrees to nodes (the root is on n0).
fs::path write_deployment(const temp_dir& dir, int nodes, const std::string& assignments) {
  fs::path d = dir.path / "deployment.yaml";
  std::ofstream out(d);
  out << "version: 1\nnodes:\n";
  for (int i = 0; i < nodes; ++i)
    out << "  - {name: n" << i << ", endpoint: \"" << dir.ipc("n" + std::to_string(i)) << "\", capacity: {cpu: 1}}\n";
  out << "assignments:\n  /mesh: n0\n" << assignments;
  return d;
}

std::multiset<std::string> digests(const std::string& output) {
  std::multiset<std::string> out;
  std::regex line(R"(DIGEST (\S+) (\d+) ([0-9a-f]+))");
  for (std::sregex_iterator it(output.begin(), output.end(), line), end; it != end; ++it) out.insert((*it)[2].str());
  return out;
}

// mesh_app nodes started by the test (not by banyan launch), so that one can be signalled.
struct mesh_nodes {
  std::vector<node_process> nodes;
  mesh_nodes(const fs::path& deployment, int n, const std::vector<std::string>& args) {
    for (int i = 0; i < n; ++i) {
      std::vector<std::string> argv{MESH_APP};
      argv.insert(argv.end(), args.begin(), args.end());
      argv.insert(argv.end(), {"--deployment", deployment.string(), "--node", "n" + std::to_string(i)});
      const std::string name = "n" + std::to_string(i);
      controls.push_back(banyan::test::control_endpoint(deployment.parent_path().string(), name));
      auto p = process::spawn(
          argv, {.env = {{"BANYAN_CONTROL", controls.back()}}, .out = output_mode::capture, .err = output_mode::merge});
      if (!p) throw std::runtime_error(p.error().what());
      nodes.push_back({std::move(*p)});
    }
  }
  std::vector<std::string> controls;  // each node's control endpoint
  // Node i's cluster start is over: asked of the node, not read from its log.
  bool started(int i, std::chrono::milliseconds limit) { return banyan::test::node_started(controls[i], limit); }
  // Reads every node's output until node i's contains `text`.
  bool wait_for(int i, const std::string& text, std::chrono::milliseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    std::vector<process*> all;
    for (auto& n : nodes) all.push_back(&n.proc);
    while (nodes[i].output().find(text) == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      if (!process::wait_any(all, left) && nodes[i].proc.closed())
        return nodes[i].output().find(text) != std::string::npos;
    }
    return true;
  }
  std::string all_output() const {
    std::string s;
    for (std::size_t i = 0; i < nodes.size(); ++i) s += "--- n" + std::to_string(i) + "\n" + nodes[i].output();
    return s;
  }
};

// The probe that lost messages and hung: 250 messages of 400,000 bytes per publisher on 3 nodes.
TEST(MeshFaults, LargePayloadsAcrossThreeNodesArriveExactly) {
  temp_dir dir;
  auto d = write_deployment(dir, 3, "  /mesh/zone1: n1\n  /mesh/zone2: n2\n");
  constexpr std::uint64_t messages = 250;
  auto r = run_process({BANYAN_CLI, "launch", d.string(), "--run-for", "90s", "--", MESH_APP, "--messages",
                        std::to_string(messages), "--payload", "400000"},
                       {.out = output_mode::capture, .err = output_mode::merge}, 120s);
  ASSERT_TRUE(r.has_value()) << r.error().what();
  ASSERT_EQ(r->status.code, 0) << r->out.substr(r->out.size() > 6000 ? r->out.size() - 6000 : 0);
  const auto got = digests(r->out);
  ASSERT_EQ(got.size(), 6u) << r->out;
  EXPECT_EQ(got.count(std::to_string(3 * messages + messages / 10)), 6u) << r->out;
}

// Payloads larger than a frame (64 MiB) cross the nodes in chunks: every subscriber gets every
// message, whole (the digests agree with the publishers'), and no link stalls.
TEST(MeshFaults, PayloadsLargerThanAFrameArriveWhole) {
  temp_dir dir;
  auto d = write_deployment(dir, 3, "  /mesh/zone1: n1\n  /mesh/zone2: n2\n");
  constexpr std::uint64_t payload = 80 << 20;
  auto r = run_process({BANYAN_CLI, "launch", d.string(), "--run-for", "90s", "--", MESH_APP, "--messages", "1",
                        "--payload", std::to_string(payload), "--max-payload", std::to_string(payload + 1024)},
                       {.out = output_mode::capture, .err = output_mode::merge}, 120s);
  ASSERT_TRUE(r.has_value()) << r.error().what();
  ASSERT_EQ(r->status.code, 0) << r->out.substr(r->out.size() > 6000 ? r->out.size() - 6000 : 0);
  const auto got = digests(r->out);
  ASSERT_EQ(got.size(), 6u) << r->out;
  EXPECT_EQ(got.count("4"), 6u) << r->out;  // 3 publishers' messages and the zone's local one
  EXPECT_EQ(r->out.find("stalled"), std::string::npos) << r->out;
  EXPECT_EQ(r->out.find("UNDELIVERED"), std::string::npos) << r->out;
}

// n1 (zone1) is SIGSTOPped once the run is under way, until n0 has found it stalled and for another
// second besides; continued, every subscriber gets every message exactly once and all exit 0.
TEST(MeshFaults, ASigstoppedNodeLosesNothingAndTheRunCompletesWithExactCounts) {
  temp_dir dir;
  auto d = write_deployment(dir, 3, "  /mesh/zone1: n1\n  /mesh/zone2: n2\n");
  constexpr std::uint64_t messages = 30000;
  mesh_nodes m(d, 3, {"--messages", std::to_string(messages), "--heartbeat-timeout", "500ms", "--run-for", "100"});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(m.started(i, 60s)) << m.all_output();
  m.nodes[1].proc.signal(SIGSTOP);
  ASSERT_TRUE(m.wait_for(0, "peer `n1` stalled", 20s)) << m.all_output();
  // Stopped one more second (the probe stopped it for 3 s with a 1 s timeout).
  m.wait_for(0, "a line that never comes", 1000ms);
  m.nodes[1].proc.signal(SIGCONT);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(m.nodes[i].wait_exit(90s), 0) << m.all_output();
  std::string out;
  for (auto& n : m.nodes) out += n.output();
  const auto got = digests(out);
  ASSERT_EQ(got.size(), 6u) << m.all_output();
  EXPECT_EQ(got.count(std::to_string(3 * messages + messages / 10)), 6u) << m.all_output();
  EXPECT_EQ(out.find(" lost:"), std::string::npos) << "no node was given up";
  EXPECT_EQ(out.find("could not be sent"), std::string::npos);
}

// n1 is SIGSTOPped past the give-up time (--give-up-after 4s): n0 and n2 give it up, and what it ran is reported
// lost. Continued, n1 says that it did not run, hears from the root's node that it was given up,
// says so and ends (exit 2) instead of running on beside its replacements; the others go on.
TEST(MeshFaults, ANodeGivenUpWhileStoppedIsToldToEndWhenItResumes) {
  temp_dir dir;
  auto d = write_deployment(dir, 3, "  /mesh/zone1: n1\n  /mesh/zone2: n2\n");
  mesh_nodes m(d, 3,
               {"--messages", "1000000", "--pace-ms", "20", "--heartbeat-timeout", "500ms", "--give-up-after", "4s",
                "--run-for", "150"});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(m.started(i, 60s)) << m.all_output();
  m.nodes[1].proc.signal(SIGSTOP);
  ASSERT_TRUE(m.wait_for(0, "lost node `n1`", 60s)) << m.all_output();
  EXPECT_NE(m.nodes[0].output().find("(give_up_after 4000 ms)"), std::string::npos) << m.nodes[0].output();
  m.nodes[1].proc.signal(SIGCONT);
  EXPECT_EQ(m.nodes[1].wait_exit(30s), 2) << m.all_output();
  const std::string& n1 = m.nodes[1].output();
  EXPECT_NE(n1.find("this process did not run for"), std::string::npos) << n1;
  EXPECT_NE(n1.find("node `n0` told this node to end (exit code 2): node `n0` gave this node up"), std::string::npos)
      << n1;
  EXPECT_TRUE(m.wait_for(0, "node `n1` is heard again after it was given up", 10s)) << m.all_output();
  // The others still run: n0 ends the run when asked, and both end.
  EXPECT_FALSE(m.nodes[0].proc.closed());
  EXPECT_FALSE(m.nodes[2].proc.closed());
  m.nodes[0].proc.signal(SIGTERM);
  EXPECT_NE(m.nodes[0].wait_exit(30s), -1) << m.all_output();
  EXPECT_NE(m.nodes[2].wait_exit(30s), -1) << m.all_output();
}

// 64 KiB payloads from n0's publishers to slow subscribers on n1: n1 holds at most about a byte
// window per link, not the backlog, and nothing is lost.
TEST(MeshFaults, SixtyFourKiBPayloadsToSlowSubscribersKeepMemoryBounded) {
  temp_dir dir;
  auto d = write_deployment(dir, 2, "  /mesh/zone0/slow: n1\n  /mesh/zone1/slow: n1\n  /mesh/zone2/slow: n1\n");
  constexpr std::uint64_t messages = 1500, payload = 64 << 10;
  auto r = run_process({BANYAN_CLI, "launch", d.string(), "--run-for", "150s", "--", MESH_APP, "--messages",
                        std::to_string(messages), "--payload", std::to_string(payload), "--slow-us", "20"},
                       {.out = output_mode::capture, .err = output_mode::merge}, 180s);
  ASSERT_TRUE(r.has_value()) << r.error().what();
  ASSERT_EQ(r->status.code, 0) << r->out.substr(r->out.size() > 6000 ? r->out.size() - 6000 : 0);
  const auto got = digests(r->out);
  ASSERT_EQ(got.size(), 6u) << r->out;
  EXPECT_EQ(got.count(std::to_string(3 * messages + messages / 10)), 6u) << r->out;
  // The probe saw n0 take a live n1 for lost three times here (its I/O thread starved): never again.
  EXPECT_EQ(r->out.find(" lost:"), std::string::npos) << r->out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r->out, m,
      std::regex(
          R"(node n1: links: n0 \(sent \d+, received (\d+), max outstanding \d+ \(\d+ bytes\), max undelivered (\d+)\); publisher pauses \d+; peak RSS (\d+) MiB)")))
      << r->out;
  const std::uint64_t received = std::stoull(m[1]), rss = std::stoull(m[3]);
  const std::uint64_t backlog_mib = received * payload >> 20;
  std::printf("64 KiB payloads to slow subscribers: n1 received %llu envelopes (%llu MiB), peak RSS %llu MiB\n",
              static_cast<unsigned long long>(received), static_cast<unsigned long long>(backlog_mib),
              static_cast<unsigned long long>(rss));
#ifndef __SANITIZE_ADDRESS__
  EXPECT_LT(rss, 256u) << "a 16 MiB byte window per link, not the " << backlog_mib << " MiB backlog";
#endif
  // The publishers on n0 publish 1,000 messages per handler: what they keep outstanding for n1
  // stays within the link's byte window, not 8 windows.
  ASSERT_TRUE(std::regex_search(
      r->out, m, std::regex(R"(node n0: links: n1 \(sent \d+, received \d+, max outstanding \d+ \((\d+) bytes\))")))
      << r->out;
  const std::uint64_t outstanding = std::stoull(m[1]), window = 16 << 20;
  EXPECT_LE(outstanding, window);
  EXPECT_GT(outstanding, window / 2) << "the slow subscribers should have filled the window";
  std::printf("n0 kept at most %llu KiB outstanding for n1 (byte window %llu KiB)\n",
              static_cast<unsigned long long>(outstanding >> 10), static_cast<unsigned long long>(window >> 10));
}

// A peer that never comes up: the node names it every few seconds, then gives up after
// --start-timeout with an error naming it and its endpoint (exit 2), instead of waiting forever.
TEST(MeshFaults, APeerThatNeverComesUpEndsTheRunWithAClearError) {
  temp_dir dir;
  auto d = write_deployment(dir, 2, "  /mesh/zone1: n1\n");
  auto r = run_process({MESH_APP, "--deployment", d.string(), "--node", "n0", "--start-timeout", "4s"},
                       {.out = output_mode::capture, .err = output_mode::merge}, 60s);
  ASSERT_TRUE(r.has_value()) << r.error().what();
  EXPECT_EQ(r->status.code, 2) << r->out;
  EXPECT_NE(
      r->out.find("banyan: node `n0`: peers not up 4 s after start (--start-timeout): `n1` (" + dir.ipc("n1") + ")"),
      std::string::npos)
      << r->out;
  EXPECT_NE(r->out.find("still waiting for peer `n1` at " + dir.ipc("n1") + ": not connected"), std::string::npos)
      << r->out;
}

// Two nodes started from different deployments (the same nodes, another assignment) refuse each
// other at the handshake and both end with an error naming the digests.
TEST(MeshFaults, NodesOfDifferentDeploymentsRefuseEachOther) {
  temp_dir dir;
  auto a = write_deployment(dir, 2, "  /mesh/zone1: n1\n");
  const fs::path b = dir.path / "other.yaml";
  fs::copy_file(a, b);
  std::ofstream(b, std::ios::app) << "  /mesh/zone2: n1\n";
  mesh_nodes m(a, 1, {"--start-timeout", "30s"});
  auto n1 = process::spawn({MESH_APP, "--deployment", b.string(), "--node", "n1", "--start-timeout", "30s"},
                           {.out = output_mode::capture, .err = output_mode::merge});
  ASSERT_TRUE(n1.has_value());
  node_process other{std::move(*n1)};
  EXPECT_EQ(m.nodes[0].wait_exit(30s), 2) << m.all_output();
  EXPECT_EQ(other.wait_exit(30s), 2) << other.output();
  EXPECT_NE(m.nodes[0].output().find("banyan: peer `n1` runs another deployment (digest "), std::string::npos)
      << m.all_output();
  EXPECT_NE(other.output().find("banyan: peer `n0` runs another deployment (digest "), std::string::npos)
      << other.output();
}

// A payload above --max-payload is an error value at publish, in a multi-node run, never a silent
// drop; the publisher reports how many it had refused.
TEST(MeshFaults, APayloadAboveTheMaximumIsAnErrorAtPublish) {
  temp_dir dir;
  auto d = write_deployment(dir, 2, "  /mesh/zone1: n1\n");
  auto r = run_process({BANYAN_CLI, "launch", d.string(), "--run-for", "4s", "--", MESH_APP, "--messages", "20",
                        "--payload", "2000", "--max-payload", "1000"},
                       {.out = output_mode::capture, .err = output_mode::merge}, 60s);
  ASSERT_TRUE(r.has_value()) << r.error().what();
  EXPECT_NE(r->out.find("publish `data/z0`: a payload of 2000 bytes is larger than --max-payload (1000 bytes)"),
            std::string::npos)
      << r->out;
  EXPECT_NE(r->out.find("UNDELIVERED /mesh/zone0/pub refused 20 handed back 0"), std::string::npos) << r->out;
  EXPECT_EQ(digests(r->out).count("0"), 6u) << "no subscriber got any of them: " << r->out;
}

// kill -9 of a node that has messages pending for it: its peers report, and each publisher is told
// how many of its messages will not be delivered (or had publish() refuse them).
TEST(MeshFaults, KillNineReportsUndeliveredMessagesToTheirPublishers) {
  temp_dir dir;
  auto d = write_deployment(dir, 3, "  /mesh/zone1: n1\n  /mesh/zone2: n2\n");
  mesh_nodes m(d, 3, {"--messages", "20000", "--slow-us", "2000", "--run-for", "100"});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(m.started(i, 60s)) << m.all_output();
  m.nodes[2].proc.kill();
  ASSERT_TRUE(m.wait_for(0, "lost with ", 10s)) << m.all_output();
  ASSERT_TRUE(m.wait_for(0, "[/mesh/zone0/pub] told: ", 10s)) << m.all_output();
  m.nodes[0].proc.signal(SIGTERM);
  EXPECT_EQ(m.nodes[0].wait_exit(30s), 143) << m.all_output();
  EXPECT_EQ(m.nodes[1].wait_exit(30s), 143) << m.all_output();
  const std::string out = m.nodes[0].output();
  EXPECT_NE(out.find("UNDELIVERED /mesh/zone0/pub"), std::string::npos) << out;
  EXPECT_NE(out.find("messages undelivered (nodes lost)"), std::string::npos) << out;
}

// The same, with the lost copies on a node that was forwarding them: zone2 is on n1 and its `slow`
// subtree on n2, so zone0's messages reach n2 only through n1 (hier routing). When n2 dies, n1
// holds copies published on n0: their publisher is told (an `undelivered` envelope back to n0),
// as are later copies n1 can no longer forward.
std::uint64_t first_number(const std::string& text, const std::string& pattern) {
  std::smatch m;
  return std::regex_search(text, m, std::regex(pattern)) ? std::stoull(m[1].str()) : 0;
}

TEST(MeshFaults, CopiesLostOnAForwardingNodeAreReportedToTheirPublisher) {
  temp_dir dir;
  auto d = write_deployment(dir, 3, "  /mesh/zone1: n1\n  /mesh/zone2: n1\n  /mesh/zone2/slow: n2\n");
  constexpr std::uint64_t messages = 20000;
  mesh_nodes m(d, 3, {"--messages", std::to_string(messages), "--slow-us", "2000", "--run-for", "100"});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(m.started(i, 60s)) << m.all_output();
  m.nodes[2].proc.kill();
  ASSERT_TRUE(m.wait_for(1, "forwarded from other nodes", 10s)) << m.all_output();
  ASSERT_TRUE(m.wait_for(0, "[/mesh/zone0/pub] told: ", 10s)) << m.all_output();
  m.nodes[0].proc.signal(SIGTERM);
  EXPECT_EQ(m.nodes[0].wait_exit(30s), 143) << m.all_output();
  EXPECT_EQ(m.nodes[1].wait_exit(30s), 143) << m.all_output();
  // n1 forwarded only zone0's messages to n2 (n0 has no other publisher), so zone0's publisher was
  // told of at least the copies n1 held when n2 died, and of no more than it published.
  const std::uint64_t held = first_number(m.nodes[1].output(), R"(, (\d+) forwarded from other nodes)");
  const std::uint64_t told =
      first_number(m.nodes[0].output(), R"(UNDELIVERED /mesh/zone0/pub refused 0 handed back (\d+))");
  EXPECT_GT(held, 0u) << m.all_output();
  EXPECT_GE(told, held) << m.all_output();
  EXPECT_LE(told, messages) << m.all_output();
  EXPECT_NE(m.nodes[0].output().find("will not be delivered"), std::string::npos);
  std::printf("n1 held %llu copies from n0 when n2 died; zone0's publisher was told of %llu\n",
              static_cast<unsigned long long>(held), static_cast<unsigned long long>(told));
}

}  // namespace
}  // namespace banyan::runtime::test
