// Live moves (docs/runtime.md "Moving subtrees live"): move_app on 3
// loopback nodes under banyan launch, its subtrees moved back and forth by banyan reconfigure while
// every publisher publishes at full rate; what every subscriber got, and every request's answer,
// against the same app in one process without moves.
#include "node_runs.hpp"

#include "banyan/partitioner/io.hpp"
#include "banyan/partitioner/periodic.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <map>
#include <regex>

namespace banyan {
namespace {

using namespace std::chrono_literals;
using test::run_argv;
using test::running_launch;
using test::scratch_dir;
namespace fs = std::filesystem;

// A deployment of n0..n2 on ipc:// endpoints in `dir`, written to dir/name.
fs::path deployment(const fs::path& dir, const std::string& name,
                    const std::vector<std::pair<std::string, std::string>>& assignments) {
  fs::path d = dir / name;
  std::ofstream out(d);
  out << "version: 1\nnodes:\n";
  for (int i = 0; i < 3; ++i)
    out << "  - {name: n" << i << ", endpoint: \"ipc://" << (dir / ("n" + std::to_string(i))).string()
        << "\", capacity: {cpu: 1}}\n";
  out << "assignments:\n";
  for (const auto& [path, node] : assignments) out << "  " << path << ": " << node << "\n";
  return d;
}

// Two deployments with `common` and /mv/s on n1 (d1.yaml) or on n2 (d2.yaml).
std::pair<fs::path, fs::path> s_on_n1_then_n2(const fs::path& dir,
                                              std::vector<std::pair<std::string, std::string>> common) {
  auto with = [&](const char* node) {
    auto a = common;
    a.emplace_back("/mv/s", node);
    return a;
  };
  return {deployment(dir, "d1.yaml", with("n1")), deployment(dir, "d2.yaml", with("n2"))};
}

// `DIGEST <path> <count> <digest> <faults>` lines, by path (node prefixes stripped).
std::map<std::string, std::string> digests(const std::string& output) {
  std::map<std::string, std::string> out;
  static const std::regex line(R"(DIGEST (\S+) (.*))");
  std::istringstream in(output);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (std::regex_search(l, m, line)) out[m[1]] = m[2];
  }
  return out;
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

running_launch launch(const fs::path& d, std::uint64_t messages,
                      std::vector<std::pair<std::string, std::string>> env = {}, std::string heartbeat_timeout = "1s",
                      std::vector<std::string> app_args = {}, std::vector<std::string> launch_args = {}) {
  running_launch l;
  std::vector<std::string> argv{BANYAN_CLI, "launch", d.string(), "--run-for", "300s"};
  argv.insert(argv.end(), launch_args.begin(), launch_args.end());
  argv.insert(argv.end(),
              {"--", MOVE_APP, "--messages", std::to_string(messages), "--heartbeat-timeout", heartbeat_timeout});
  argv.insert(argv.end(), app_args.begin(), app_args.end());
  auto p = process::spawn(argv, [&] {
    spawn_options how{.out = output_mode::capture, .err = output_mode::merge, .own_process_group = true};
    how.env = std::move(env);
    return how;
  }());
  if (p) l.p.emplace(std::move(*p));
  return l;
}

// Every node of the launch of `d` has started (the cluster start is over): asked of the launch,
// `banyan status --wait-started`, rather than read from its log.
::testing::AssertionResult started(const fs::path& d, running_launch& l) {
  auto r = run_argv({BANYAN_CLI, "status", "--from", d.string(), "--wait-started", "120s", "--json"}, 150s);
  l.drain();
  if (r.exit_code != 0) return ::testing::AssertionFailure() << "banyan status: " << r.output << "\n" << l.log;
  auto answer = nlohmann::json::parse(r.output, nullptr, false);
  if (!answer.is_object() || !answer.value("started", false) || answer["nodes"].size() != 3)
    return ::testing::AssertionFailure() << "banyan status: " << r.output;
  return ::testing::AssertionSuccess();
}

// The run ends by itself, exit 0, and every subscriber got what it gets in one process (`alone`).
void ends_as_in_one_process(running_launch& l, const std::string& alone) {
  ASSERT_TRUE(l.read_until("[n0] [/mv] every subscriber got everything exactly once, in order", 240s)) << l.log;
  auto st = l.p->wait(60s);
  l.drain();
  ASSERT_TRUE(st) << l.log;
  EXPECT_EQ(st->code, 0) << l.log;
  EXPECT_EQ(digests(l.log), digests(alone)) << l.log;
}

TEST(LiveMove, TwentyMovesWhileThreeNodesPublishLoseNothing) {
  scratch_dir dir;
  // s {sub, pub, srv} between n1 and n2 (its supervisor, the root, on n0: a hosted root on each);
  // u {sub, pub} between n0 and n1 (from a local child of the root to a hosted root and back).
  const std::vector<std::pair<std::string, std::string>> common = {
      {"/mv", "n0"}, {"/mv/p1", "n1"}, {"/mv/p2", "n2"}, {"/mv/q", "n2"}};
  auto with = [&](std::string s, std::string u) {
    auto a = common;
    a.emplace_back("/mv/s", s);
    a.emplace_back("/mv/u", u);
    return a;
  };
  const fs::path d1 = deployment(dir.path, "d1.yaml", with("n1", "n0"));
  const fs::path d2 = deployment(dir.path, "d2.yaml", with("n2", "n1"));
  const std::uint64_t messages = 400000;

  auto alone = run_argv({MOVE_APP, "--messages", std::to_string(messages)}, 240s);
  ASSERT_EQ(alone.exit_code, 0) << alone.output;
  const auto expected = digests(alone.output);
  ASSERT_EQ(expected.size(), 3u) << alone.output;

  auto l = launch(d1, messages);
  ASSERT_TRUE(l.p);
  ASSERT_TRUE(started(d1, l));
  std::vector<double> pauses;
  int moves_while_publishing = 0;
  for (int i = 0; i < 20; ++i) {
    const fs::path& next = i % 2 == 0 ? d2 : d1;
    auto r = run_argv({BANYAN_CLI, "reconfigure", next.string(), "--from", d1.string(), "--json"}, 120s);
    l.drain();
    ASSERT_EQ(r.exit_code, 0) << "reconfigure " << i << ":\n" << r.output << "\n" << l.log;
    auto answer = nlohmann::json::parse(r.output, nullptr, false);
    ASSERT_TRUE(answer.is_object()) << r.output;
    ASSERT_EQ(answer["moves"].size(), 2u) << r.output;
    for (const auto& m : answer["moves"]) {
      EXPECT_FALSE(m.contains("error")) << m.dump();
      pauses.push_back(m.value("pause_ms", -1.0));
    }
    if (l.log.find("published all") == std::string::npos) ++moves_while_publishing;
  }
  // Most of the moves happened while every publisher was still publishing (else raise --messages).
  EXPECT_GE(moves_while_publishing, 15) << l.log;
  ASSERT_TRUE(l.read_until("[n0] [/mv] every subscriber got everything exactly once, in order", 240s)) << l.log;
  auto st = l.p->wait(60s);
  l.drain();
  ASSERT_TRUE(st) << l.log;
  EXPECT_EQ(st->code, 0) << l.log;
  // Every subscriber got every message exactly once, in per-publisher order, as in one process.
  EXPECT_EQ(digests(l.log), expected) << l.log;
  static const std::regex requests(R"(REQUESTS answered (\d+) failed (\d+) out-of-order (\d+))");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(l.log, m, requests)) << l.log;
  EXPECT_GT(std::stoull(m[1]), 0u);
  EXPECT_EQ(m[2], "0") << "a request to the moving server failed:\n" << l.log;
  EXPECT_EQ(m[3], "0") << "the server's count did not move with it:\n" << l.log;
  for (double p : pauses) EXPECT_GT(p, 0.0);
  std::sort(pauses.begin(), pauses.end());
  std::printf("40 moves: pause median %.1f ms, max %.1f ms\n", pauses[pauses.size() / 2], pauses.back());
}

TEST(LiveMove, ABadNewDeploymentIsRefusedAndTheRunGoesOn) {
  scratch_dir dir;
  const fs::path d1 = deployment(dir.path, "d1.yaml", {{"/mv", "n0"}, {"/mv/s", "n1"}, {"/mv/q", "n2"}});
  auto l = launch(d1, 400000);
  ASSERT_TRUE(l.p);
  ASSERT_TRUE(started(d1, l));
  // Other nodes than the running ones.
  const fs::path other = dir.path / "other.yaml";
  std::ofstream(other) << "version: 1\nnodes:\n  - {name: x0, endpoint: \"ipc:///tmp/x0\", capacity: {cpu: 1}}\n"
                          "assignments:\n  /mv: x0\n";
  auto r = run_argv({BANYAN_CLI, "reconfigure", other.string(), "--from", d1.string()}, 60s);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("other nodes than the running deployment"), std::string::npos) << r.output;
  // No launch of that deployment.
  auto none = run_argv({BANYAN_CLI, "reconfigure", d1.string(), "--from", other.string()}, 60s);
  EXPECT_EQ(none.exit_code, 2) << none.output;
  EXPECT_NE(none.output.find("no launch of"), std::string::npos) << none.output;
  // The whole plan is checked before the first move: a path the app does not have, listed after a
  // move that would go through, is refused with nothing moved, and no summary of moves is printed.
  const fs::path unknown =
      deployment(dir.path, "unknown.yaml", {{"/mv", "n0"}, {"/mv/s", "n2"}, {"/mv/q", "n2"}, {"/mv/nope", "n1"}});
  auto u = run_argv({BANYAN_CLI, "reconfigure", unknown.string(), "--from", d1.string()}, 60s);
  EXPECT_EQ(u.exit_code, 2) << u.output;
  EXPECT_NE(u.output.find("unknown.yaml:10: assignment `/mv/nope` names no component of this app"), std::string::npos)
      << u.output;
  EXPECT_EQ(u.output.find("move(s)"), std::string::npos) << u.output;
  // A target node without capacity.
  const fs::path full = deployment(dir.path, "full.yaml", {{"/mv", "n0"}, {"/mv/s", "n2"}, {"/mv/q", "n2"}});
  std::string text = read_text(full);
  text.replace(text.find("{cpu: 1}", text.find("name: n2")), 8, "{cpu: 0}");
  std::ofstream(full) << text;
  auto z = run_argv({BANYAN_CLI, "reconfigure", full.string(), "--from", d1.string()}, 60s);
  EXPECT_EQ(z.exit_code, 2) << z.output;
  EXPECT_NE(z.output.find(
                "full.yaml:5: node `n2` has capacity.cpu 0, so it can take no component (the move of `/mv/s` there)"),
            std::string::npos)
      << z.output;
  l.drain();
  EXPECT_EQ(l.log.find("moved `/mv/s`"), std::string::npos) << "a refused plan moved a subtree:\n" << l.log;
  ASSERT_TRUE(l.read_until("every subscriber got everything exactly once, in order", 240s)) << l.log;
  auto st = l.p->wait(60s);
  ASSERT_TRUE(st) << l.log;
  EXPECT_EQ(st->code, 0) << l.log;
}

// A node that hosts nothing at start (n1 and n2 here) runs, takes part in the cluster, and takes a
// subtree moved onto it. The move names the moved components that gave no state: the composite
// /mv/s has no snapshot(), its leaves have.
TEST(LiveMove, ANodeThatHostsNothingRunsAndTakesAMovedSubtree) {
  scratch_dir dir;
  const fs::path d1 = deployment(dir.path, "d1.yaml", {{"/mv", "n0"}});
  const fs::path d2 = deployment(dir.path, "d2.yaml", {{"/mv", "n0"}, {"/mv/s", "n2"}});
  const std::uint64_t messages = 200000;
  auto alone = run_argv({MOVE_APP, "--messages", std::to_string(messages)}, 240s);
  ASSERT_EQ(alone.exit_code, 0) << alone.output;
  auto l = launch(d1, messages);
  ASSERT_TRUE(l.p);
  ASSERT_TRUE(started(d1, l));
  auto r = run_argv({BANYAN_CLI, "reconfigure", d2.string(), "--from", d1.string()}, 120s);
  l.drain();
  ASSERT_EQ(r.exit_code, 0) << r.output << "\n" << l.log;
  EXPECT_NE(
      r.output.find("warning: 1 component(s) of /mv/s gave no state (snapshot() returned nothing) and started afresh "
                    "on n2: /mv/s\n"),
      std::string::npos)
      << r.output;
  ASSERT_NO_FATAL_FAILURE(ends_as_in_one_process(l, alone.output));
}

// A run that banyan launch ends at its --run-for limit is a success: every node stopped by that
// limit's SIGTERM, exit 0.
TEST(Launch, ARunEndedByItsRunForLimitSucceeds) {
  scratch_dir dir;
  const fs::path d = deployment(dir.path, "d.yaml", {{"/mv", "n0"}, {"/mv/s", "n1"}, {"/mv/u", "n2"}});
  auto r = run_argv(
      {BANYAN_CLI, "launch", d.string(), "--run-for", "10s", "--", MOVE_APP, "--messages", "1000000000000"}, 120s);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("--run-for 10s passed; stopping every node"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("banyan launch: every node succeeded"), std::string::npos) << r.output;
}

// A node lost in the middle of a move: the move ends as aborted, the subtree runs where it was, and
// every live node agrees (the coordinator's answer needs all of them to acknowledge the place).
// Aborted, not half done: the subtree's subscriber (whose publishers all live on n0 and n1) goes on
// from its moved-out state with every message exactly once, in order, including those held for it
// during the move, which had followed its state to the killed node.
TEST(LiveMove, TheNewNodeKilledMidMoveLeavesTheSubtreeWhereItWas) {
  scratch_dir dir;
  const auto [d1, d2] = s_on_n1_then_n2(dir.path, {{"/mv", "n0"}, {"/mv/p1", "n1"}, {"/mv/q", "n2"}});
  const fs::path stalled = dir.path / "stalled";
  // n2, the new node, starts the subtree and then stops short of announcing it (the test hook).
  // A loaded machine must not make a live node look lost (only the one killed is): 4 s heartbeats.
  auto l = launch(d1, 2000000, {{"BANYAN_TEST_STALL_MOVE", stalled.string()}}, "4s");
  ASSERT_TRUE(l.p);
  ASSERT_TRUE(started(d1, l));
  auto r = process::spawn({BANYAN_CLI, "reconfigure", d2.string(), "--from", d1.string(), "--json"},
                          {.out = output_mode::capture, .err = output_mode::merge});
  ASSERT_TRUE(r);
  std::vector<process*> both{&*l.p, &*r};
  const auto until = std::chrono::steady_clock::now() + 120s;
  while (!fs::exists(stalled) && std::chrono::steady_clock::now() < until && !r->status()) {
    process::wait_any(both, 50ms);
    l.drain();
  }
  ASSERT_TRUE(fs::exists(stalled)) << l.log << r->output();
  static const std::regex started(R"(node n2 started \(pid (\d+)\))");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(l.log, m, started)) << l.log;
  ASSERT_EQ(::kill(std::stoi(m[1]), SIGKILL), 0);
  // The launch's output is read meanwhile: a full pipe would stop it (and its answer) mid-line.
  const auto answer_until = std::chrono::steady_clock::now() + 120s;
  while (!r->status() && std::chrono::steady_clock::now() < answer_until) {
    process::wait_any(both, 50ms);
    l.drain();
  }
  auto st = r->wait(10s);  // its last output
  l.drain();
  ASSERT_TRUE(st) << r->output() << "\n" << l.log;
  EXPECT_EQ(st->code, 1) << r->output();
  const std::string out = r->output();
  auto answer = nlohmann::json::parse(out.substr(out.find('{'), out.rfind('}') + 1 - out.find('{')), nullptr, false);
  ASSERT_TRUE(answer.is_object()) << r->output();
  ASSERT_EQ(answer["moves"].size(), 1u) << r->output();
  const std::string error = answer["moves"][0].value("error", "");
  EXPECT_NE(error.find("node `n2` was lost during the move; `/mv/s` runs on `n1` again"), std::string::npos)
      << r->output();
  ASSERT_TRUE(l.read_until("starting `/mv/s` here again from the states it was handed", 60s)) << l.log;
  // n2 hosted /mv/q too: the run goes on, /mv/q failed over (to n0, its parent's node); s/sub (all
  // its publishers on n0 and n1) goes on from the state it moved out with, and must have received
  // more, with no fault, by the time the run is stopped.
  ASSERT_TRUE(l.read_until("node `n2` lost: failing over `/mv/q` to `n0`", 60s)) << l.log;
  ASSERT_TRUE(l.read_until("restarting `/mv/q`", 60s)) << l.log;
  l.p->signal(SIGTERM);
  auto end = l.p->wait(120s);
  for (auto& line : l.p->take_lines()) l.log += line + "\n";
  ASSERT_TRUE(end) << l.log;
  static const std::regex restored(R"(RESTORED /mv/s/sub (\d+))"), stopped(R"(STOPPED /mv/s/sub (\d+) (\d+))");
  ASSERT_TRUE(std::regex_search(l.log, m, restored)) << l.log;
  const auto at_revert = std::stoull(m[1]);
  ASSERT_TRUE(std::regex_search(l.log, m, stopped)) << l.log;
  EXPECT_GT(std::stoull(m[1]), at_revert) << "s/sub got nothing after the revert:\n" << l.log;
  EXPECT_EQ(std::stoull(m[2]), 0u) << "faults (lost, repeated or out of order):\n" << l.log;
  EXPECT_EQ(l.log.find("[/mv/s/sub] fault:"), std::string::npos) << l.log;
}

// A node whose actor is busy in a long handler cannot pause: past the pause limit the coordinator
// gives the move up, every node goes on, nothing moved, and a move asked again later succeeds.
TEST(LiveMove, AMoveThatCannotPauseInTimeIsGivenUpAndTheRunGoesOn) {
  scratch_dir dir;
  const auto [d1, d2] = s_on_n1_then_n2(dir.path, {{"/mv", "n0"}, {"/mv/p1", "n1"}, {"/mv/p2", "n2"}, {"/mv/q", "n2"}});
  // p0 (on n0) computes 8 s in its first handler; the pause limit is 1 s.
  auto l = launch(d1, 200000, {{"BANYAN_MOVE_PAUSE_LIMIT", "1s"}}, "4s", {"--busy-ms", "8000"});
  ASSERT_TRUE(l.p);
  ASSERT_TRUE(l.read_until("BUSY for 8000 ms", 120s)) << l.log;
  auto r = run_argv({BANYAN_CLI, "reconfigure", d2.string(), "--from", d1.string(), "--json"}, 120s);
  l.drain();
  EXPECT_EQ(r.exit_code, 1) << r.output << "\n" << l.log;
  const auto json_at = r.output.find('{');
  ASSERT_NE(json_at, std::string::npos) << r.output;
  auto answer = nlohmann::json::parse(r.output.substr(json_at, r.output.rfind('}') + 1 - json_at), nullptr, false);
  ASSERT_TRUE(answer.is_object()) << r.output;
  EXPECT_NE(answer.value("error", "").find("the deployment did not pause within 1s (not yet frozen: `n0`"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(l.log.find("busy done"), std::string::npos) << "the move was given up only after p0 finished:\n" << l.log;
  // Once p0 is done, the same move goes through, and the run ends with everything delivered once.
  ASSERT_TRUE(l.read_until("busy done", 60s)) << l.log;
  auto again = run_argv({BANYAN_CLI, "reconfigure", d2.string(), "--from", d1.string(), "--json"}, 120s);
  l.drain();
  EXPECT_EQ(again.exit_code, 0) << again.output << "\n" << l.log;
  ASSERT_TRUE(l.read_until("[n0] [/mv] every subscriber got everything exactly once, in order", 240s)) << l.log;
  auto st = l.p->wait(60s);
  ASSERT_TRUE(st) << l.log;
  EXPECT_EQ(st->code, 0) << l.log;
}

// Hibernate and wake (docs/runtime.md "Hibernate and wake"): /mv/s (a hosted root on n1, its
// supervisor on n0) and /mv/u (a local child of the root on n0) are put to sleep again and again
// while every publisher publishes to them at full rate and r requests s/srv one request after the
// other. What reaches a sleeping subtree is held and wakes it; a wake may also put it on another
// node. Every subscriber still gets every message exactly once and in order (the digests of one
// process), and every request is answered, by the server's count that slept with it.
TEST(Hibernate, SubtreesPutToSleepWhilePublishedToWakeOnDemandAndLoseNothing) {
  scratch_dir dir;
  const fs::path d = deployment(
      dir.path, "d.yaml",
      {{"/mv", "n0"}, {"/mv/p1", "n1"}, {"/mv/p2", "n2"}, {"/mv/q", "n2"}, {"/mv/s", "n1"}, {"/mv/u", "n0"}});
  const std::uint64_t messages = 400000;
  auto alone = run_argv({MOVE_APP, "--messages", std::to_string(messages)}, 240s);
  ASSERT_EQ(alone.exit_code, 0) << alone.output;
  auto l = launch(d, messages);
  ASSERT_TRUE(l.p);
  ASSERT_TRUE(started(d, l));
  int slept = 0, moved = 0;
  for (int i = 0; i < 12; ++i) {
    const std::string path = i % 3 == 2 ? "/mv/u" : "/mv/s";
    auto r = run_argv({BANYAN_CLI, "sleep", path, "--from", d.string(), "--json"}, 120s);
    l.drain();
    ASSERT_EQ(r.exit_code, 0) << "sleep " << i << ":\n" << r.output << "\n" << l.log;
    auto answer = nlohmann::json::parse(r.output, nullptr, false);
    ASSERT_TRUE(answer.is_object()) << r.output;
    EXPECT_TRUE(answer.value("slept", false)) << r.output;
    if (!answer.value("already", false)) ++slept;
    if (i % 4 == 3) {
      // Woken on the other node of the two, asleep or (woken on demand meanwhile) awake: a move then.
      auto w = run_argv({BANYAN_CLI, "wake", "/mv/s", "--on", i % 8 == 3 ? "n2" : "n1", "--from", d.string(), "--json"},
                        120s);
      l.drain();
      ASSERT_EQ(w.exit_code, 0) << "wake " << i << ":\n" << w.output << "\n" << l.log;
      ++moved;
    }
  }
  EXPECT_GE(slept, 8) << "most sleeps found the subtree awake (woken on demand) and put it to sleep";
  EXPECT_EQ(moved, 3);
  ASSERT_NO_FATAL_FAILURE(ends_as_in_one_process(l, alone.output));
  static const std::regex requests(R"(REQUESTS answered (\d+) failed (\d+) out-of-order (\d+))");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(l.log, m, requests)) << l.log;
  EXPECT_GT(std::stoull(m[1]), 0u);
  EXPECT_EQ(m[2], "0") << "a request to the sleeping server failed:\n" << l.log;
  EXPECT_EQ(m[3], "0") << "the server's count did not sleep with it:\n" << l.log;
  // Woken on demand: by held work, each piece measured.
  static const std::regex woke(
      R"(woke `/mv/[su]` on `n\d` in [0-9.]+ ms \(\d+ bytes of state; the deployment paused [0-9.]+ ms\); ([1-9]\d*) held)");
  const auto woken = std::distance(std::sregex_iterator(l.log.begin(), l.log.end(), woke), std::sregex_iterator());
  EXPECT_GE(woken, slept - 3) << l.log;
}

// What cannot sleep or wake is refused, naming why, and the run goes on.
TEST(Hibernate, WhatCannotSleepOrWakeIsRefusedNamingWhy) {
  scratch_dir dir;
  const fs::path d = deployment(dir.path, "d.yaml", {{"/mv", "n0"}, {"/mv/s", "n1"}, {"/mv/s/pub", "n2"}});
  auto l = launch(d, 20000000);
  ASSERT_TRUE(l.p);
  ASSERT_TRUE(started(d, l));
  auto expect_refused = [&](std::vector<std::string> argv, const std::string& why) {
    argv.insert(argv.begin(), BANYAN_CLI);
    argv.insert(argv.end(), {"--from", d.string()});
    auto r = run_argv(argv, 120s);
    l.drain();
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find(why), std::string::npos) << r.output;
  };
  expect_refused({"sleep", "/mv"}, "the tree's root does not sleep");
  expect_refused({"sleep", "/mv/nope"}, "/mv/nope");
  expect_refused({"sleep", "/mv/s"}, "`/mv/s` is not wholly on node `n1`: `/mv/s/pub` runs on `n2`");
  auto awake = run_argv({BANYAN_CLI, "wake", "/mv/u", "--from", d.string(), "--json"}, 120s);
  EXPECT_EQ(awake.exit_code, 0) << awake.output;
  EXPECT_NE(awake.output.find("\"already\": true"), std::string::npos) << awake.output;
  auto bad_keep = run_argv({BANYAN_CLI, "sleep", "/mv/u", "--keep-alive", "soon", "--from", d.string()}, 60s);
  EXPECT_EQ(bad_keep.exit_code, 2) << bad_keep.output;
  l.p->signal(SIGTERM);  // the launch stops every node
  auto st = l.p->wait(60s);
  ASSERT_TRUE(st) << l.log;
}

// `banyan launch --plan`: a periodic plan of 4 one-second slots, repeated while move_app runs. /mv/s
// is awake in slot 0 on n1 and asleep (keep-alive 200 ms) in the others; /mv/u is awake in slot 2 on
// n2 (it starts on n0: the first wake moves it). Every publisher keeps publishing to both, so they
// are also woken on demand between their runs. The launch asks every change the plan has, none
// fails, and the run's result is that of one process.
TEST(Hibernate, ALaunchFollowsAPeriodicPlanAndLosesNothing) {
  scratch_dir dir;
  const fs::path d = deployment(
      dir.path, "d.yaml",
      {{"/mv", "n0"}, {"/mv/p1", "n1"}, {"/mv/p2", "n2"}, {"/mv/q", "n2"}, {"/mv/s", "n1"}, {"/mv/u", "n0"}});
  auto running = partitioner::load_deployment(d.string());
  ASSERT_TRUE(running) << running.error().message;
  const fs::path plan = dir.path / "plan.yaml";
  std::ofstream(plan) << "format: banyan-periodic-plan\nversion: 1\n"
                      << "deployment: {file: \"d.yaml\", fingerprint: \""
                      << partitioner::periodic::fingerprint(*running) << "\"}\n"
                      << "policy: plan\nslot: 1\nhorizon: 4\nsubtrees:\n"
                      << "  - {path: /mv/s, node: n1, awake: [[0, 1]], keep_alive: 0.2}\n"
                      << "  - {path: /mv/u, node: n2, awake: [[2, 3]]}\n";
  const std::uint64_t messages = 400000;
  auto alone = run_argv({MOVE_APP, "--messages", std::to_string(messages)}, 240s);
  ASSERT_EQ(alone.exit_code, 0) << alone.output;
  auto l = launch(d, messages, {}, "1s", {}, {"--plan", plan.string()});
  ASSERT_TRUE(l.p);
  ASSERT_NO_FATAL_FAILURE(ends_as_in_one_process(l, alone.output));
  static const std::regex summary(R"(plan \S+: (\d+) wake\(s\) and (\d+) sleep\(s\) asked, (\d+) failed)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(l.log, m, summary)) << l.log;
  EXPECT_GE(std::stoi(m[1]), 2) << l.log;  // at least /mv/u's first run (a move to n2) and /mv/s's second
  EXPECT_GE(std::stoi(m[2]), 3) << l.log;
  EXPECT_EQ(m[3], "0") << l.log;
  EXPECT_NE(l.log.find("`/mv/s` is asleep: "), std::string::npos) << l.log;
}

}  // namespace
}  // namespace banyan
