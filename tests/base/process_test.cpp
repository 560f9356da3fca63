#include "banyan/base/process.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

namespace {

using banyan::exit_status;
using banyan::output_mode;
using banyan::process;
using banyan::process_errc;
using namespace std::chrono_literals;

const banyan::spawn_options captured{.out = output_mode::capture, .err = output_mode::capture};

process spawn_sh(const std::string& script,
                 banyan::spawn_options o = {.out = output_mode::capture, .err = output_mode::capture}) {
  auto p = process::spawn({"sh", "-c", script}, o);
  EXPECT_TRUE(p.has_value()) << p.error().what();
  return std::move(p).value();
}

TEST(Process, ExitCodesAndSignalsComeBackAsTheyHappened) {
  auto ok = banyan::run_process({"sh", "-c", "exit 0"});
  ASSERT_TRUE(ok.has_value()) << ok.error().what();
  EXPECT_TRUE(ok->status.success());
  auto three = banyan::run_process({"sh", "-c", "exit 3"});
  ASSERT_TRUE(three.has_value());
  EXPECT_EQ(three->status, (exit_status{3, 0}));
  EXPECT_EQ(three->status.shell_code(), 3);
  auto killed = banyan::run_process({"sh", "-c", "kill -TERM $$"});
  ASSERT_TRUE(killed.has_value());
  EXPECT_EQ(killed->status, (exit_status{0, SIGTERM}));
  EXPECT_EQ(killed->status.shell_code(), 143);
}

TEST(Process, CapturesStdoutAndStderrApartOrMerged) {
  auto apart = banyan::run_process({"sh", "-c", "echo out; echo err >&2; printf tail"});
  ASSERT_TRUE(apart.has_value());
  EXPECT_EQ(apart->out, "out\ntail");
  EXPECT_EQ(apart->err, "err\n");
  auto merged = banyan::run_process({"sh", "-c", "echo one; echo two >&2"},
                                    {.out = output_mode::capture, .err = output_mode::merge});
  ASSERT_TRUE(merged.has_value());
  EXPECT_EQ(merged->out, "one\ntwo\n");
  EXPECT_EQ(merged->err, "");
  auto quiet = banyan::run_process({"sh", "-c", "echo gone; echo gone >&2"},
                                   {.out = output_mode::discard, .err = output_mode::discard});
  ASSERT_TRUE(quiet.has_value());
  EXPECT_EQ(quiet->out + quiet->err, "");
}

TEST(Process, MoreOutputThanAPipeHoldsIsReadWhileWaiting) {
  auto big = banyan::run_process({"sh", "-c", "head -c 1000000 /dev/zero"}, captured);
  ASSERT_TRUE(big.has_value());
  EXPECT_EQ(big->out.size(), 1000000u);
}

TEST(Process, EnvironmentAdditionsAndWorkingDirectoryReachTheChild) {
  const auto dir = std::filesystem::temp_directory_path();
  auto r = banyan::run_process({"sh", "-c", "echo \"$BANYAN_TEST_VALUE $PWD\""},
                               {.env = {{"BANYAN_TEST_VALUE", "forty two"}, {"HOME", "/nowhere"}},
                                .working_dir = dir.string(),
                                .out = output_mode::capture});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->out, "forty two " + std::filesystem::canonical(dir).string() + "\n");
  auto home =
      banyan::run_process({"sh", "-c", "echo $HOME"}, {.env = {{"HOME", "/nowhere"}}, .out = output_mode::capture});
  ASSERT_TRUE(home.has_value());
  EXPECT_EQ(home->out, "/nowhere\n");  // replaced, not added twice
}

TEST(Process, MissingProgramIsAnErrorNamingIt) {
  auto p = process::spawn({"banyan-no-such-program", "x"});
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.error().code, process_errc::not_found);
  EXPECT_NE(p.error().message.find("`banyan-no-such-program`"), std::string::npos) << p.error().message;
  auto path = process::spawn({"/nonexistent/tool"});
  ASSERT_FALSE(path.has_value());
  EXPECT_EQ(path.error().code, process_errc::not_found);
  auto dir = process::spawn({"true"}, {.working_dir = "/nonexistent/dir"});
  ASSERT_FALSE(dir.has_value());
  EXPECT_EQ(dir.error().code, process_errc::bad_working_dir);
  EXPECT_NE(dir.error().message.find("/nonexistent/dir"), std::string::npos) << dir.error().message;
  auto not_executable = process::spawn({"/etc/passwd"});
  ASSERT_FALSE(not_executable.has_value());
  EXPECT_EQ(not_executable.error().code, process_errc::cannot_execute);
}

TEST(Process, WaitPastItsLimitIsATimeoutAndKillEndsTheChild) {
  auto p = spawn_sh("echo started; exec sleep 30");
  auto st = p.wait(100ms);
  ASSERT_FALSE(st.has_value());
  EXPECT_EQ(st.error().code, process_errc::timeout);
  EXPECT_FALSE(p.status().has_value());  // still running
  EXPECT_EQ(p.output(), "started\n");    // what it printed meanwhile was read
  EXPECT_EQ(p.kill(), (exit_status{0, SIGKILL}));
  EXPECT_EQ(p.status(), (exit_status{0, SIGKILL}));
}

TEST(Process, RunProcessKillsAChildPastItsLimit) {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = banyan::run_process({"sleep", "30"}, captured, 200ms);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, process_errc::timeout);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
}

TEST(Process, OwnProcessGroupSignalsReachGrandchildren) {
  // The grandchild holds the pipe open: only killing the whole group closes it.
  auto p = spawn_sh("sleep 30 & echo ready; wait", {.out = output_mode::capture, .own_process_group = true});
  while (p.output().find("ready") == std::string::npos) ASSERT_TRUE(p.read(10s)) << "no output";
  p.signal(SIGTERM);
  auto st = p.wait(10s);
  ASSERT_TRUE(st.has_value()) << st.error().what();
  EXPECT_EQ(st->signal, SIGTERM);
  while (!p.closed()) ASSERT_TRUE(p.read(10s)) << "the grandchild still holds the pipe";
}

TEST(Process, LinesArriveAsTheyAreWrittenAcrossSeveralProcesses) {
  auto a = spawn_sh("echo a1; exec sleep 30");
  auto b = spawn_sh("echo b1; echo b2 >&2; exit 4");
  process* both[] = {&a, &b};
  std::vector<std::string> seen;
  while (!b.status() || !b.closed() || !b.closed(process::stream::err)) {
    ASSERT_TRUE(process::wait_any(both, 10s)) << "nothing happened";
    for (auto& l : a.take_lines()) seen.push_back("a:" + l);
    for (auto& l : b.take_lines()) seen.push_back("b:" + l);
    for (auto& l : b.take_lines(process::stream::err)) seen.push_back("b!" + l);
  }
  EXPECT_EQ(b.status(), (exit_status{4, 0}));
  EXPECT_NE(std::find(seen.begin(), seen.end(), "b:b1"), seen.end());
  EXPECT_NE(std::find(seen.begin(), seen.end(), "b!b2"), seen.end());
  a.kill();
}

TEST(Process, UnterminatedLastLineIsTakenOnceTheStreamCloses) {
  auto p = spawn_sh("printf 'one\\ntwo'");
  ASSERT_TRUE(p.wait(10s).has_value());
  while (!p.closed()) ASSERT_TRUE(p.read(10s));
  EXPECT_EQ(p.take_lines(), (std::vector<std::string>{"one", "two"}));
  EXPECT_TRUE(p.take_lines().empty());
}

TEST(Process, DestructorKillsAndReapsARunningChild) {
  int pid = -1;
  {
    auto p = spawn_sh("exec sleep 30");
    pid = p.pid();
    ASSERT_EQ(::kill(pid, 0), 0);
  }
  EXPECT_NE(::kill(pid, 0), 0);  // gone and reaped, not a zombie
}

TEST(Process, MovedFromProcessOwnsNothing) {
  auto p = spawn_sh("exit 5");
  process q = std::move(p);
  EXPECT_EQ(p.pid(), -1);
  auto st = q.wait(10s);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->code, 5);
}

TEST(Process, SpawnFunctionRunsABodyInAChild) {
  auto p = process::spawn_function(
      "adder",
      [] {
        std::printf("in the child\n");
        return 7;
      },
      captured);
  ASSERT_TRUE(p.has_value()) << p.error().what();
  auto st = p->wait(10s);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->code, 7);
  EXPECT_EQ(p->output(), "in the child\n");
}

}  // namespace
