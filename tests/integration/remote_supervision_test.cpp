// Supervision across nodes: supervise_app's group supervises `middle` and `last`
// on two other nodes (ipc:// endpoints in a fresh temporary folder), and must act exactly as it does
// in one process: the same restarts for each strategy, the same escalation, the user's failure
// reason. Each run is bounded by banyan launch's --run-for and a kill past a time limit.
#include "node_runs.hpp"

#include "banyan/base/process.hpp"
#include "banyan/store/store.hpp"

#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace banyan {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

using test::outcome;
using test::run_argv;
using test::scratch_dir;

// The supervisors on n0, middle on n1, last on n2: both supervised children are remote.
fs::path write_deployment(const fs::path& dir) {
  return test::write_deployment(dir, {{"/sv", "n0"}, {"/sv/group/middle", "n1"}, {"/sv/group/last", "n2"}});
}

std::size_t count(const std::string& text, const std::string& line) {
  std::size_t n = 0;
  for (auto at = text.find(line + "\n"); at != std::string::npos; at = text.find(line + "\n", at + 1)) ++n;
  return n;
}

struct starts {
  std::size_t first, middle, last;
  bool operator==(const starts&) const = default;
};
std::ostream& operator<<(std::ostream& o, const starts& s) {
  return o << "{first " << s.first << ", middle " << s.middle << ", last " << s.last << "}";
}
starts starts_in(const std::string& output) {
  return {count(output, "START /sv/group/first"), count(output, "START /sv/group/middle"),
          count(output, "START /sv/group/last")};
}

outcome single(const std::vector<std::string>& args) {
  std::vector<std::string> argv{SUPERVISE_APP, "--threads", "2"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_argv(argv, 60s);
}

outcome three_nodes(const std::vector<std::string>& args, const fs::path& profile = {}) {
  scratch_dir dir;
  auto d = write_deployment(dir.path);
  std::vector<std::string> argv{BANYAN_CLI, "launch", d.string(), "--run-for", "30s"};
  if (!profile.empty()) argv.insert(argv.end(), {"--profile", profile.string()});
  argv.insert(argv.end(), {"--", SUPERVISE_APP, "--threads", "2"});
  argv.insert(argv.end(), args.begin(), args.end());
  return run_argv(argv, 60s);
}

// Restarts per strategy when middle fails in a request handler: what one process does, and what
// the Erlang/OTP strategies prescribe.
void expect_like_one_process(const std::vector<std::string>& args, starts want) {
  auto one = single(args);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  EXPECT_EQ(starts_in(one.output), want) << one.output;
  auto multi = three_nodes(args);
  ASSERT_EQ(multi.exit_code, 0) << multi.output;
  EXPECT_EQ(starts_in(multi.output), want) << multi.output;
  // A request made while the cluster starts is held until it is ready, then answered (item 2).
  EXPECT_NE(one.output.find("PING pong from /sv/group/last\n"), std::string::npos) << one.output;
  EXPECT_NE(multi.output.find("PING pong from /sv/group/last\n"), std::string::npos) << multi.output;
  // The reason is the user's exception message, not CAF's formatting of it.
  EXPECT_NE(multi.output.find("FAILURE /sv/group/middle boom in a handler\n"), std::string::npos) << multi.output;
  EXPECT_EQ(multi.output.find("runtime_error"), std::string::npos) << multi.output;
}

TEST(RemoteSupervision, OneForOneRestartsOnlyTheRemoteChild) {
  expect_like_one_process({"--strategy", "one_for_one", "--failures", "1"}, {1, 2, 1});
}

TEST(RemoteSupervision, OneForAllRestartsLocalAndRemoteChildren) {
  expect_like_one_process({"--strategy", "one_for_all", "--failures", "1"}, {2, 2, 2});
}

TEST(RemoteSupervision, RestForOneRestartsTheRemoteChildAndLaterSiblings) {
  expect_like_one_process({"--strategy", "rest_for_one", "--failures", "2"}, {1, 3, 3});
}

// middle fails in on_start 4 times; group allows 3 restarts, so it gives up and fails; the root
// restarts group, whose new incarnation starts a fifth middle on n1, which succeeds.
// Restart backoff with the child remote: middle fails 3 times; its supervisor on
// n0 waits 40, 80 and 160 ms before the restarts it asks n1 for, so middle's 4th start comes at
// least 280 ms after its first, as in one process.
TEST(RemoteSupervision, BackoffDelaysTheRemoteChildsRestarts) {
  for (bool multi : {false, true}) {
    std::vector<std::string> args{"--failures", "3", "--max-restarts", "5", "--backoff-ms", "40"};
    auto r = multi ? three_nodes(args) : single(args);
    const std::string where = multi ? "three nodes: " : "one process: ";
    ASSERT_EQ(r.exit_code, 0) << where << r.output;
    std::vector<long> at;
    std::regex line(R"(MIDDLE-STARTED-AT-MS (\d+))");
    for (std::sregex_iterator it(r.output.begin(), r.output.end(), line), end; it != end; ++it)
      at.push_back(std::stol((*it)[1].str()));
    ASSERT_EQ(at.size(), 4u) << where << r.output;
    EXPECT_GE(at.back() - at.front(), 280) << where << r.output;
  }
}

// A monitor of a component whose node is lost (killed outright) fires once with the loss as its
// reason, as Erlang's `noconnection` (be told when any component dies).
TEST(RemoteMonitors, ALostNodeFiresTheMonitorsOfItsComponentsOnce) {
  auto r = three_nodes({"--scenario", "lost"});
  EXPECT_NE(r.output.find("DYING"), std::string::npos) << r.output;
  const std::string down = "DOWN /sv/group/middle node `n1` lost: ";
  const auto at = r.output.find(down);
  EXPECT_NE(at, std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(down, at + 1), std::string::npos) << "the monitor fired twice\n" << r.output;
}

// A launch of supervise_app (its root is /sv) whose nodes all say the cluster is ready.
struct watched_launch : test::watched_launch {
  using test::watched_launch::watched_launch;
  bool cluster_ready() { return test::watched_launch::cluster_ready("/sv"); }
};

// `banyan launch D --run-for 90s -- APP...`, or with `join` the launch of that one node joining the
// running deployment (`--join NODE`).
std::vector<std::string> launch_argv(const fs::path& d, const std::vector<std::string>& app,
                                     const std::string& join = {}) {
  std::vector<std::string> argv{BANYAN_CLI, "launch", d.string()};
  if (!join.empty()) argv.insert(argv.end(), {"--join", join});
  argv.insert(argv.end(), {"--run-for", "90s", "--"});
  argv.insert(argv.end(), app.begin(), app.end());
  return argv;
}

// The launch of node `node` joining the deployment that `d` started, its output captured.
std::optional<process> spawn_join(const fs::path& d, const std::string& node, const std::vector<std::string>& app) {
  auto p = process::spawn(launch_argv(d, app, node), {.out = output_mode::capture, .err = output_mode::merge});
  if (!p) return std::nullopt;
  return std::move(p).value();
}

// Failover: middle's node n1 is killed (kill -9) once middle has started (and, with --state-dir,
// once its state is durable). The run goes on: the root's node n0 places /sv/group/middle on a
// survivor (n0: its parent group runs there), group's supervisor restarts it there (permanent), a
// request reaches the new incarnation, and launch ends with exit 0. With --state-dir the new
// incarnation restores the state the lost one made durable; without, it starts fresh and says so.
outcome failover_run(bool durable) {
  scratch_dir dir;
  auto d = write_deployment(dir.path);
  const fs::path states = dir.path / "states";
  std::vector<std::string> argv{BANYAN_CLI,    "launch",    d.string(), "--run-for",  "60s",     "--",
                                SUPERVISE_APP, "--threads", "2",        "--scenario", "failover"};
  if (durable) argv.insert(argv.end(), {"--state-dir", states.string()});
  watched_launch l(argv);
  EXPECT_TRUE(l.until_line("[n1] INCARNATION /sv/group/middle 1")) << l.log;
  EXPECT_TRUE(l.cluster_ready()) << l.log;
  if (durable) {
    // Its checkpoint is durable once the store's folder for n1 holds it (the writer's fsync).
    EXPECT_TRUE(l.until(
        [&] {
          auto r = store::blob_reader::open((states / "n1").string());
          return r && !r->blobs().empty();
        },
        60s))
        << l.log;
  }
  EXPECT_TRUE(l.kill_node("n1")) << l.log;
  const int code = l.end(90s);
  return {code, l.log};
}

void expect_failed_over(const outcome& r) {
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("node n1 was lost"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("node `n1` lost: failing over `/sv/group/middle` to `n0`"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("FAILURE /sv/group/middle node `n1` lost"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[n0] START /sv/group/middle"), std::string::npos) << r.output;
  // The user hears of the loss once, whichever of the loss and the failover reaches group first.
  const std::string failure = "FAILURE /sv/group/middle ";
  const auto first = r.output.find(failure);
  EXPECT_EQ(r.output.find(failure, first + 1), std::string::npos) << r.output;
  EXPECT_EQ(count(r.output, "START /sv/group/middle"), 2u) << r.output;  // on n1, then on n0
}

TEST(Failover, ALostNodesSubtreeRestartsOnASurvivorFromItsDurableState) {
  const auto r = failover_run(true);
  expect_failed_over(r);
  EXPECT_NE(r.output.find("failover: `/sv/group/middle` restart from their last durable state in `"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("[n0] INCARNATION /sv/group/middle 2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("AFTER pong from /sv/group/middle incarnation 2\n"), std::string::npos) << r.output;
}

TEST(Failover, WithoutAStateFolderTheLostSubtreeRestartsFreshAndSaysSo) {
  const auto r = failover_run(false);
  expect_failed_over(r);
  EXPECT_NE(r.output.find("keep state but restart fresh here: the run has no --state-dir"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("AFTER pong from /sv/group/middle incarnation 1\n"), std::string::npos) << r.output;
}

// After a failover, launch follows where the root's node put the subtrees: a replacement node
// joins (`banyan launch --join n3`, a `join: later` node) and `banyan reconfigure` moves
// /sv/group/middle onto it live, from where the failover had placed it (n0), with its state.
TEST(Failover, AReplacementJoinsAndReconfigureMovesTheFailedOverSubtreeOntoIt) {
  scratch_dir dir;
  auto write = [&](const std::string& name, const std::string& middle_on) {
    const fs::path d = dir.path / name;
    std::ofstream out(d);
    out << "version: 1\nnodes:\n";
    for (int i = 0; i < 4; ++i)
      out << "  - {name: n" << i << ", endpoint: \"ipc://" << (dir.path / ("n" + std::to_string(i))).string()
          << "\", capacity: {cpu: 1}" << (i == 3 ? ", join: later" : "") << "}\n";
    out << "assignments:\n  /sv: n0\n  /sv/group/middle: " << middle_on << "\n  /sv/group/last: n2\n";
    return d;
  };
  const fs::path d = write("d.yaml", "n1"), d3 = write("d3.yaml", "n3");
  const std::vector<std::string> app{SUPERVISE_APP, "--threads", "2",           "--scenario",
                                     "failover",    "--stay",    "--state-dir", (dir.path / "states").string()};
  watched_launch l(launch_argv(d, app));
  ASSERT_TRUE(l.cluster_ready()) << l.log;
  ASSERT_TRUE(l.kill_node("n1")) << l.log;
  ASSERT_TRUE(l.until_line("AFTER pong from /sv/group/middle")) << l.log;

  auto joining = spawn_join(d, "n3", app);
  ASSERT_TRUE(joining.has_value());
  ASSERT_TRUE(l.until_line("node `n3` joined")) << l.log << joining->output();
  auto r = run_argv({BANYAN_CLI, "reconfigure", d3.string(), "--from", d.string(), "--json"}, 120s);
  EXPECT_EQ(r.exit_code, 0) << r.output << "\n" << l.log;
  EXPECT_NE(r.output.find("\"from\": \"n0\""), std::string::npos) << r.output;  // where the failover put it
  EXPECT_NE(r.output.find("\"to\": \"n3\""), std::string::npos) << r.output;
  EXPECT_TRUE(l.until_line("moved `/sv/group/middle` from `n0` to `n3`", 30s)) << l.log;
  l.p->signal(SIGTERM);
  joining->signal(SIGTERM);
  EXPECT_NE(l.end(60s), -1) << l.log;
  EXPECT_TRUE(joining->wait(60s).has_value()) << joining->output();
}

// Two nodes lost: n1 (middle) and n2 (last), one after the other (once middle answers from n0) or
// at once (the second loss comes during the first failover, which no longer waits for it, and is
// failed over next). Each loss is its own failover; both subtrees end up on n0, their parent's node.
void two_losses(bool at_once) {
  scratch_dir dir;
  auto d = write_deployment(dir.path);
  watched_launch l(launch_argv(d, {SUPERVISE_APP, "--threads", "2", "--scenario", "failover", "--stay"}));
  ASSERT_TRUE(l.cluster_ready()) << l.log;
  ASSERT_TRUE(l.kill_node("n1")) << l.log;
  if (!at_once) {
    ASSERT_TRUE(l.until_line("AFTER pong from /sv/group/middle")) << l.log;
  }
  ASSERT_TRUE(l.kill_node("n2")) << l.log;
  ASSERT_TRUE(l.until_line("node `n2` lost: failing over `/sv/group/last` to `n0`")) << l.log;
  ASSERT_TRUE(l.until_line("[n0] START /sv/group/last")) << l.log;
  ASSERT_TRUE(l.until_line("AFTER pong from /sv/group/middle")) << l.log;
  l.p->signal(SIGTERM);
  ASSERT_NE(l.end(60s), -1) << l.log;
  EXPECT_NE(l.log.find("node `n1` lost: failing over `/sv/group/middle` to `n0`"), std::string::npos) << l.log;
  EXPECT_EQ(l.log.find("still running after 3 s"), std::string::npos) << l.log;
}

// The failover scenario on a deployment with `loads:` (as banyan partition writes them) against
// the nodes' capacity of 1: the root's part on n0 takes 0.8, middle 0.5 on n1, last `last_load` on
// n2. n1 is killed once the cluster is ready.
outcome loaded_failover(double last_load) {
  scratch_dir dir;
  auto d = write_deployment(dir.path);
  std::ofstream(d, std::ios::app) << "loads:\n  /sv: 0.8\n  /sv/group/middle: 0.5\n  /sv/group/last: " << last_load
                                  << "\n";
  watched_launch l({BANYAN_CLI, "launch", d.string(), "--run-for", "60s", "--", SUPERVISE_APP, "--threads", "2",
                    "--scenario", "failover"});
  EXPECT_TRUE(l.cluster_ready()) << l.log;
  EXPECT_TRUE(l.kill_node("n1")) << l.log;
  const int code = l.end(90s);
  return {code, l.log};
}

// Capacity decides: middle's traffic would put it beside its parent on n0, but n0 has 0.2 left,
// so it fails over to n2 (0.8 left) and answers from there.
TEST(Failover, CapacityDecidesWhereALostSubtreeGoes) {
  const auto r = loaded_failover(0.2);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("node `n1` lost: failing over `/sv/group/middle` to `n2`"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[n2] START /sv/group/middle"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("AFTER pong from /sv/group/middle"), std::string::npos) << r.output;
}

// Middle (0.5) fits on no survivor (0.2 and 0.3 left): the root's node says which subtree and by
// how much; group restarts middle as for any failure, each start fails at once (its node is
// gone and its failover refused), and past group's intensity limit the failure escalates and the
// run ends with an error instead of waiting for a start that cannot come.
TEST(Failover, ALostSubtreeThatFitsNowhereIsRefusedAndItsSupervisorEscalates) {
  const auto r = loaded_failover(0.7);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.exit_code, -1) << r.output;  // it ended by itself, well before --run-for
  EXPECT_NE(r.output.find("node `n1` lost; no failover: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("`/sv/group/middle` (cpu load 0.5) fits on no surviving node"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("short by 0.2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("cannot start on node `n1`"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("giving up and escalating"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("AFTER pong from /sv/group/middle"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("malformed"), std::string::npos) << r.output;  // n2 took the refusal
}

// A subtree asleep on the node that is lost restarts on a survivor from the state it went to sleep
// with: the sleep made its kept state durable. middle counts its ticks in its state without a
// checkpoint (its last checkpoint, at its start, has none), so only the sleep's state has them.
TEST(Failover, ASubtreeLostWhileAsleepRestartsFromTheStateItSleptWith) {
  scratch_dir dir;
  auto d = write_deployment(dir.path);
  const std::vector<std::string> app{SUPERVISE_APP, "--threads", "2", "--scenario",  "failover",
                                     "--stay",      "--ticks",   "5", "--state-dir", (dir.path / "states").string()};
  watched_launch l(launch_argv(d, app));
  ASSERT_TRUE(l.cluster_ready()) << l.log;
  ASSERT_TRUE(l.until_line("TICKED 5")) << l.log;
  auto slept = run_argv({BANYAN_CLI, "sleep", "/sv/group/middle", "--from", d.string(), "--json"}, 60s);
  ASSERT_EQ(slept.exit_code, 0) << slept.output << "\n" << l.log;
  ASSERT_TRUE(l.kill_node("n1")) << l.log;
  ASSERT_TRUE(l.until_line("AFTER pong from /sv/group/middle")) << l.log;
  EXPECT_NE(l.log.find("AFTER pong from /sv/group/middle incarnation 2 ticks 5\n"), std::string::npos) << l.log;
  EXPECT_NE(l.log.find("restart from their last durable state"), std::string::npos) << l.log;
  l.p->signal(SIGTERM);
  EXPECT_NE(l.end(60s), -1) << l.log;
}

// A subtree that fails while it wakes: middle is put to sleep and woken; its woken incarnation (its
// second in n1's process) fails in on_start. Its supervisor restarts it as for any failure, and the
// restart ends the wake: the wake is answered, and what was held for middle meanwhile (group's
// pings after the failure) reaches the new incarnation.
TEST(Hibernate, ASubtreeThatFailsWhileItWakesIsRestartedAndGetsWhatWasHeld) {
  scratch_dir dir;
  auto d = write_deployment(dir.path);
  watched_launch l(launch_argv(d, {SUPERVISE_APP, "--threads", "2", "--scenario", "failover", "--stay", "--fail-in",
                                   "start", "--failures", "0", "--fail-at", "2"}));
  ASSERT_TRUE(l.cluster_ready()) << l.log;
  auto slept = run_argv({BANYAN_CLI, "sleep", "/sv/group/middle", "--from", d.string(), "--json"}, 60s);
  ASSERT_EQ(slept.exit_code, 0) << slept.output << "\n" << l.log;
  auto woke = run_argv({BANYAN_CLI, "wake", "/sv/group/middle", "--from", d.string(), "--json"}, 60s);
  EXPECT_EQ(woke.exit_code, 0) << woke.output << "\n" << l.log;
  EXPECT_TRUE(l.until_line("FAILURE /sv/group/middle boom in on_start")) << l.log;
  EXPECT_TRUE(l.until_line("AFTER pong from /sv/group/middle", 30s)) << l.log;
  l.p->signal(SIGTERM);
  EXPECT_NE(l.end(60s), -1) << l.log;
  EXPECT_EQ(count(l.log, "[n1] START /sv/group/middle"), 3u) << l.log;
}

// A lost node that comes back (restarted, a new incarnation) is taken back when nothing of it
// failed over: middle (0.5) fits on no survivor, so group restarts it on n1 as for any failure, each
// start failing at once, with a backoff that leaves time for n1 to be started again. The new n1
// starts middle afresh, which fails in on_start during the rejoin: group on n0 hears of that failure
// (as of any other) and restarts middle there, which then answers; group's monitor of middle, which
// fired with the loss, hears of the failure too.
TEST(Failover, AComponentThatFailsWhileItsNodeRejoinsIsReportedToItsSupervisor) {
  scratch_dir dir;
  auto d = write_deployment(dir.path);
  std::ofstream(d, std::ios::app) << "loads:\n  /sv: 0.8\n  /sv/group/middle: 0.5\n  /sv/group/last: 0.7\n";
  const std::vector<std::string> app{SUPERVISE_APP, "--threads",      "2", "--scenario", "failover", "--backoff-ms",
                                     "200",         "--max-restarts", "20"};
  watched_launch l(launch_argv(d, app));
  ASSERT_TRUE(l.cluster_ready()) << l.log;
  ASSERT_TRUE(l.kill_node("n1")) << l.log;
  ASSERT_TRUE(l.until_line("node `n1` lost; no failover: ")) << l.log;
  ASSERT_TRUE(l.until_line("cannot start on node `n1`")) << l.log;

  // n1 again, whose first middle fails in on_start.
  std::vector<std::string> failing = app;
  failing.insert(failing.end(), {"--fail-in", "start", "--failures", "1"});
  auto joining = spawn_join(d, "n1", failing);
  ASSERT_TRUE(joining.has_value());
  ASSERT_TRUE(l.until_line("node `n1` joined again")) << l.log << joining->output();
  EXPECT_TRUE(l.until_line("[n0] FAILURE /sv/group/middle boom in on_start", 30s)) << l.log << joining->output();
  // group's monitor of middle fired with the loss and went on: it hears of the failure too.
  EXPECT_TRUE(l.until_line("[n0] DOWN /sv/group/middle boom in on_start", 30s)) << l.log << joining->output();
  EXPECT_TRUE(l.until_line("AFTER pong from /sv/group/middle", 30s)) << l.log << joining->output();
  EXPECT_EQ(l.end(60s), 0) << l.log;
  const auto joined = joining->wait(60s);
  const std::string joined_log = joining->output();
  ASSERT_TRUE(joined.has_value()) << joined_log;
  EXPECT_EQ(joined->code, 0) << joined_log;
  // The group took the rejoined incarnation as its child's, then restarted it after its failure.
  EXPECT_NE(l.log.find("child `/sv/group/middle` runs again: its node came back and started it afresh"),
            std::string::npos)
      << l.log;
  EXPECT_EQ(count(joined_log, "[n1] START /sv/group/middle"), 2u) << joined_log;
  const auto lost = l.log.find("[n0] DOWN /sv/group/middle node `n1` lost: ");
  EXPECT_NE(lost, std::string::npos) << l.log;
  EXPECT_EQ(l.log.find("[n0] DOWN /sv/group/middle node `n1` lost: ", lost + 1), std::string::npos) << l.log;
  EXPECT_EQ(l.log.find("giving up and escalating"), std::string::npos) << l.log;
}

// The other side of a rejoin: the supervisor comes back. group runs on n1 and fits on no survivor;
// middle runs on n2 and was restarted once (its first start fails), so n2 hosts its incarnation 2.
// When n1 is back, its new group counts on middle's incarnation 1 as at the run's start: n2 stops the
// incarnation whose supervisor was lost and starts middle afresh under it, and top on n0 takes the
// rejoined group as its child.
TEST(Failover, ARootHostedUnderARejoinedSupervisorStartsAfreshUnderIt) {
  scratch_dir dir;
  auto d = test::write_deployment(dir.path, {{"/sv", "n0"}, {"/sv/group", "n1"}, {"/sv/group/middle", "n2"}});
  std::ofstream(d, std::ios::app) << "loads:\n  /sv: 0.8\n  /sv/group: 0.5\n  /sv/group/middle: 0.7\n";
  const std::vector<std::string> app{
      SUPERVISE_APP, "--threads",  "2", "--scenario",        "failover", "--stay",          "--fail-in",
      "start",       "--failures", "1", "--root-backoff-ms", "200",      "--root-restarts", "20"};
  watched_launch l(launch_argv(d, app));
  ASSERT_TRUE(l.cluster_ready()) << l.log;
  ASSERT_TRUE(l.until_line("AFTER pong from /sv/group/middle")) << l.log;  // middle's incarnation 2 answered
  ASSERT_TRUE(l.kill_node("n1")) << l.log;
  ASSERT_TRUE(l.until_line("node `n1` lost; no failover: ")) << l.log;
  ASSERT_TRUE(l.until_line("cannot start on node `n1`")) << l.log;

  auto joining = spawn_join(d, "n1", app);
  ASSERT_TRUE(joining.has_value());
  EXPECT_TRUE(l.until_line("[n2] [n2] `/sv/group/middle`'s parent runs on `n1`, which came back: started afresh"))
      << l.log << joining->output();
  EXPECT_TRUE(l.until_line("[/sv] child `/sv/group` runs again: its node came back and started it afresh"))
      << l.log << joining->output();
  EXPECT_TRUE(l.until([&] { return count(l.log, "[n2] START /sv/group/middle") == 3; }, 30s)) << l.log;
  l.p->signal(SIGTERM);
  joining->signal(SIGTERM);
  EXPECT_NE(l.end(60s), -1) << l.log;
  const auto joined = joining->wait(60s);
  EXPECT_TRUE(joined.has_value()) << joining->output();
  EXPECT_EQ(l.log.find("giving up and escalating"), std::string::npos) << l.log;
  EXPECT_EQ(l.log.find("dropped"), std::string::npos) << l.log;
}

TEST(Failover, TwoNodesLostOneAfterTheOtherFailOverInTurn) { two_losses(false); }
TEST(Failover, TwoNodesLostAtOnceFailOverInTurn) { two_losses(true); }

TEST(RemoteSupervision, TooManyRemoteRestartsEscalateToTheParent) {
  auto r = three_nodes({"--fail-in", "start", "--failures", "4", "--max-restarts", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count(r.output, "START /sv/group/middle"), 5u) << r.output;
  EXPECT_EQ(count(r.output, "START /sv/group"), 2u) << r.output;
  EXPECT_EQ(count(r.output, "FAILURE /sv/group/middle boom in on_start"), 4u) << r.output;
  EXPECT_NE(r.output.find("FAILURE /sv/group child `/sv/group/middle` failed 4 times within 30000 ms (limit 3)"),
            std::string::npos)
      << r.output;
}

// The root gives up too (no restarts allowed): every node ends, and the run fails.
TEST(RemoteSupervision, EscalationPastTheRootEndsEveryNodeWithFailure) {
  auto r = three_nodes({"--fail-in", "start", "--failures", "9", "--max-restarts", "1", "--root-restarts", "0"});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.exit_code, -1) << r.output;  // ended by itself, not killed
  EXPECT_EQ(count(r.output, "START /sv/group/middle"), 2u) << r.output;
  EXPECT_NE(r.output.find("giving up and escalating"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("FAILURE /sv/group child `/sv/group/middle` failed 2 times within 30000 ms (limit 1)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("child `/sv/group` failed 1 time within 30000 ms (limit 0)"), std::string::npos) << r.output;
  // banyan launch names the node where the failure began, not the first one it saw exit.
  EXPECT_NE(r.output.find("failed: n0 (which ended n1, n2)"), std::string::npos) << r.output;
}

// OTP parity across nodes: middle on n1 under group on n0, with each restart
// type. The same lines in one process and on three nodes: group's monitor of the remote middle
// hears each end with its reason, the cleanup hook runs on middle's node, a remote ctx.stop() is
// restarted only when permanent, and the restarted middle restores its state on its own node.
struct otp_case {
  std::string type;
  std::size_t starts;
  std::vector<std::string> lines;   // each present in both runs
  std::vector<std::string> absent;  // in neither
};

void expect_otp_like_one_process(const otp_case& c) {
  for (bool multi : {false, true}) {
    std::vector<std::string> args{"--scenario", "otp", "--middle-restart", c.type};
    auto r = multi ? three_nodes(args) : single(args);
    const std::string where = multi ? "three nodes: " : "one process: ";
    ASSERT_EQ(r.exit_code, 0) << where << r.output;
    EXPECT_EQ(count(r.output, "START /sv/group/middle"), c.starts) << where << r.output;
    EXPECT_EQ(count(r.output, "CLEANUP /sv/group/middle boom in a handler"), 1u) << where << r.output;
    EXPECT_EQ(count(r.output, "FAILURE /sv/group/middle boom in a handler"), 1u) << where << r.output;
    EXPECT_EQ(count(r.output, "DOWN /sv/group/middle boom in a handler"), 1u) << where << r.output;
    for (const auto& line : c.lines)
      EXPECT_NE(r.output.find(line + "\n"), std::string::npos) << where << line << "\n" << r.output;
    for (const auto& line : c.absent)
      EXPECT_EQ(r.output.find(line), std::string::npos) << where << line << "\n" << r.output;
  }
}

TEST(RemoteOtp, APermanentRemoteChildIsRestartedAfterItsFailureAndItsStopWithItsState) {
  expect_otp_like_one_process({"permanent",
                               3,
                               {"DOWN /sv/group/middle stopped", "INCARNATION /sv/group/middle 1",
                                "INCARNATION /sv/group/middle 2", "INCARNATION /sv/group/middle 3"},
                               {"AFTER", "MONITOR"}});
}

TEST(RemoteOtp, ATransientRemoteChildIsRestartedAfterItsFailureButNotAfterItsStop) {
  expect_otp_like_one_process({"transient",
                               2,
                               {"DOWN /sv/group/middle stopped", "INCARNATION /sv/group/middle 2"},
                               {"INCARNATION /sv/group/middle 3", "MONITOR"}});
}

TEST(RemoteOtp, ATemporaryRemoteChildStaysDownAfterItsFailure) {
  expect_otp_like_one_process(
      {"temporary", 1, {"INCARNATION /sv/group/middle 1"}, {"INCARNATION /sv/group/middle 2", "MONITOR"}});
}

// After its stop the child is not running (the request is answered with that error, not a pong).
TEST(RemoteOtp, AStoppedTransientChildIsNotRunning) {
  auto r = three_nodes({"--scenario", "otp", "--middle-restart", "transient"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(
      r.output.find("AFTER request failed: request `ping` to `/sv/group/middle`: `/sv/group/middle` is not running"),
      std::string::npos)
      << r.output;
}

// A dynamic child: last, on n2, is started and stopped by group on n0 at run
// time, as in one process.
void expect_dynamic_like_one_process(const std::string& scenario) {
  for (bool multi : {false, true}) {
    std::vector<std::string> args{"--scenario", scenario};
    auto r = multi ? three_nodes(args) : single(args);
    const std::string where = multi ? "three nodes: " : "one process: ";
    ASSERT_EQ(r.exit_code, 0) << where << r.output;
    EXPECT_EQ(count(r.output, "START /sv/group/last"), 1u) << where << r.output;
    for (const std::string line :
         {"DYN start ok", "DYN again invalid argument: start_child `last`: it is running already",
          "DYN first invalid argument: `first` is no dynamic child of `/sv/group`", "DYN ping pong from /sv/group/last",
          "DYN stop ok", "DOWN /sv/group/last stopped"})
      EXPECT_NE(r.output.find(line + "\n"), std::string::npos) << where << line << "\n" << r.output;
    EXPECT_NE(r.output.find("`/sv/group/last` is not running\n"), std::string::npos) << where << r.output;
    // Started only when asked (and once), and its remote sibling once.
    EXPECT_LT(r.output.find("DYN before"), r.output.find("START /sv/group/last")) << where << r.output;
    EXPECT_EQ(count(r.output, "START /sv/group/middle"), 1u) << where << r.output;
  }
}

TEST(RemoteDynamicChildren, ASupervisorStartsAndStopsARemoteDynamicChild) {
  expect_dynamic_like_one_process("dynamic");
}

// start_child from on_start: the child starts with its siblings once every node is ready.
TEST(RemoteDynamicChildren, AChildStartedFromOnStartStartsOnceWithItsSiblings) {
  expect_dynamic_like_one_process("dynamic-early");
}

// Request/reply traffic in the profile: group's `crash` request to middle (no
// reply: middle throws) and `ping` to last (with its reply) are on the edges of their paths, each
// counted once, in one process as in the profile `banyan launch` merges from three nodes.
std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> edges_in(const fs::path& profile) {
  std::ifstream in(profile);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> out;  // child path -> messages, bytes
  // Edges as the profile writes them (docs/formats.md's order): parent, child, messages, bytes.
  std::regex edge(R"re("child": "([^"]+)",\s*"messages": (\d+),\s*"bytes": (\d+))re");
  for (std::sregex_iterator it(text.begin(), text.end(), edge), end; it != end; ++it)
    out[(*it)[1]] = {std::stoull((*it)[2]), std::stoull((*it)[3])};
  return out;
}

TEST(RemoteRequestTraffic, RequestsAndRepliesAreCountedOnceOnTheirEdgesInTheMergedProfile) {
  scratch_dir dir;
  auto one = single({"--profile", (dir.path / "one.json").string()});
  ASSERT_EQ(one.exit_code, 0) << one.output;
  auto multi = three_nodes({}, dir.path / "three.json");
  ASSERT_EQ(multi.exit_code, 0) << multi.output;
  const auto want = edges_in(dir.path / "one.json");
  // ping (empty) and its reply `pong from /sv/group/last` (24 bytes); crash (empty, unanswered).
  ASSERT_EQ(want.count("/sv/group/last"), 1u);
  EXPECT_EQ(want.at("/sv/group/last"), std::make_pair(std::uint64_t{2}, std::uint64_t{24}));
  ASSERT_EQ(want.count("/sv/group/middle"), 1u);
  EXPECT_EQ(want.at("/sv/group/middle").first, 1u);
  EXPECT_EQ(edges_in(dir.path / "three.json"), want) << multi.output;
}

// A component that fails while the cluster is still starting (startfail_app): the readings its
// first incarnation published before it failed, held until every node was ready, are delivered
// ahead of its second incarnation's; its supervisor on another node restarts it; the sink's monitor
// on a third node hears of the failure. All as in one process.
TEST(RemoteSupervision, AComponentThatFailsWhileTheClusterStartsLosesNothingSilently) {
  const std::string want = "GOT 1:1\nGOT 1:2\nGOT 2:1\nGOT 2:2\nGOT 2:3\nGOT 2:4\nGOT 2:5\n";
  auto got_lines = [](const std::string& output) {
    std::string out;
    std::istringstream in(output);
    for (std::string line; std::getline(in, line);) {
      const auto at = line.find("GOT ");
      if (at != std::string::npos) out += line.substr(at) + "\n";
    }
    return out;
  };
  auto one = run_argv({STARTFAIL_APP, "--threads", "2"}, 60s);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  EXPECT_EQ(got_lines(one.output), want) << one.output;
  scratch_dir dir;
  auto d = test::write_deployment(dir.path, {{"/sf", "n0"}, {"/sf/sensor", "n1"}, {"/sf/sink", "n2"}});
  auto multi = run_argv({BANYAN_CLI, "launch", d.string(), "--run-for", "30s", "--", STARTFAIL_APP}, 60s);
  ASSERT_EQ(multi.exit_code, 0) << multi.output;
  EXPECT_EQ(got_lines(multi.output), want) << multi.output;
  for (const auto* line : {"[n2] DOWN reading 3 failed", "[n0] FAILURE /sf/sensor reading 3 failed",
                           "ended with 2 publish(es) held while the deployment started or paused"})
    EXPECT_NE(multi.output.find(line), std::string::npos) << line << "\n" << multi.output;
}

}  // namespace
}  // namespace banyan
