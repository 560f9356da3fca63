#include "test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace banyan {
namespace {

using testing::recorder;
using testing::test_options;

// Records each start as "start <path>". Its first `failures` incarnations fail: by throwing from
// on_start, or, when `in_handler` is set, from the handler of the "crash" request.
class flaky : public leaf {
 public:
  flaky(std::shared_ptr<recorder> rec, int failures, bool in_handler)
      : rec_(std::move(rec)), failures_(failures), in_handler_(in_handler) {}
  void on_start(context& ctx) override {
    rec_->add("start " + ctx.path());
    int incarnation = rec_->bump(ctx.path());
    bool fail = incarnation <= failures_;
    if (fail && !in_handler_) throw std::runtime_error("boom in on_start");
    ctx.serve("crash", [fail](const payload&) -> result<payload> {
      if (fail) throw std::runtime_error("boom in a handler");
      return payload{};
    });
  }

 private:
  std::shared_ptr<recorder> rec_;
  int failures_;
  bool in_handler_;
};

class steady : public leaf {
 public:
  explicit steady(std::shared_ptr<recorder> rec) : rec_(std::move(rec)) {}
  void on_start(context& ctx) override { rec_->add("start " + ctx.path()); }

 private:
  std::shared_ptr<recorder> rec_;
};

// Ends the run once its children have all started and `path` has started `starts` times: supervision
// restarts are complete then, so the start counts are final. Until then it asks `path` to "crash".
class group : public composite {
 public:
  group(std::shared_ptr<recorder> rec, std::string path, int starts)
      : rec_(std::move(rec)), path_(std::move(path)), starts_(starts) {}
  void on_children_started(context& ctx) override {
    if (rec_->count("start " + path_) == static_cast<std::size_t>(starts_)) return ctx.quit(0);
    ctx.request(path_, "crash", payload{}, std::chrono::seconds(30), [](result<payload>) {});
  }

 private:
  std::shared_ptr<recorder> rec_;
  std::string path_;
  int starts_;
};

struct three_children {
  std::shared_ptr<recorder> rec = std::make_shared<recorder>();
  app a{"app"};
  three_children(restart_strategy strategy, int failures, bool in_handler) {
    auto& g = a.root().add_composite<group>("group", {strategy, 3, std::chrono::seconds(30)}, rec,
                                            std::string("/app/group/middle"), failures + 1);
    g.add_leaf<steady>("first", rec);
    g.add_leaf<flaky>("middle", rec, failures, in_handler);
    g.add_leaf<steady>("last", rec);
  }
};

TEST(Supervision, OneForOneRestartsOnlyTheFailedChild) {
  three_children t(restart_strategy::one_for_one, 1, true);
  auto r = run(t.a, test_options());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(t.rec->count("start /app/group/first"), 1u);
  EXPECT_EQ(t.rec->count("start /app/group/middle"), 2u);
  EXPECT_EQ(t.rec->count("start /app/group/last"), 1u);
}

TEST(Supervision, OneForAllRestartsEveryChild) {
  three_children t(restart_strategy::one_for_all, 1, true);
  auto r = run(t.a, test_options());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(t.rec->count("start /app/group/first"), 2u);
  EXPECT_EQ(t.rec->count("start /app/group/middle"), 2u);
  EXPECT_EQ(t.rec->count("start /app/group/last"), 2u);
}

TEST(Supervision, FailureDuringStartRestartsBeforeLaterSiblingsStart) {
  // Children start in order, so `last` is not started until `middle` has started successfully.
  three_children t(restart_strategy::one_for_all, 1, false);
  auto r = run(t.a, test_options());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(t.rec->count("start /app/group/first"), 2u);
  EXPECT_EQ(t.rec->count("start /app/group/middle"), 2u);
  EXPECT_EQ(t.rec->count("start /app/group/last"), 1u);
}

TEST(Supervision, RestForOneRestartsTheFailedChildAndLaterSiblings) {
  three_children t(restart_strategy::rest_for_one, 2, true);
  auto r = run(t.a, test_options());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(t.rec->count("start /app/group/first"), 1u);
  EXPECT_EQ(t.rec->count("start /app/group/middle"), 3u);
  EXPECT_EQ(t.rec->count("start /app/group/last"), 3u);
}

TEST(Supervision, TooManyRestartsEscalateToTheParent) {
  // group allows 3 restarts; middle fails 4 times, so group gives up once and fails itself. The root
  // (one_for_one, 3 restarts) restarts group, whose fresh middle then succeeds: 4 + 1 incarnations.
  // (In the first group, middle starts 4 times: never 5, so only the second group ends the run.)
  three_children t(restart_strategy::one_for_one, 4, false);
  auto r = run(t.a, test_options());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(t.rec->count("start /app/group/middle"), 5u);
  EXPECT_EQ(t.rec->count("start /app/group/first"), 2u);  // group restarted as a whole once
}

TEST(Supervision, EscalationPastTheRootEndsTheRunWithFailure) {
  auto rec = std::make_shared<recorder>();
  app a{"app", supervision{restart_strategy::one_for_one, 1, std::chrono::seconds(30)}};
  a.root().add_leaf<flaky>("always", rec, 1000, false);  // never survives: the run must end by failure
  auto r = run(a, test_options());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(rec->count("start /app/always"), 2u);  // the first run and one allowed restart
}

// A supervisor records every failure's reason and ends the run once its children have started
// again after one.
class watcher : public composite {
 public:
  explicit watcher(std::shared_ptr<recorder> rec) : rec_(std::move(rec)) {}
  void on_child_failure(context&, const std::string& child, const std::string& reason) override {
    rec_->add("failure " + child + ": " + reason);
    failed_ = true;
  }
  void on_children_started(context& ctx) override {
    if (failed_) ctx.quit(0);
  }

 private:
  std::shared_ptr<recorder> rec_;
  bool failed_ = false;
};

TEST(Supervision, TheFailureReasonIsTheUsersMessage) {
  auto rec = std::make_shared<recorder>();
  app a{"app", supervision{restart_strategy::one_for_one, 3, std::chrono::seconds(30)}, std::in_place_type<watcher>,
        rec};
  a.root().add_leaf<flaky>("once", rec, 1, false);
  a.root().add_leaf<steady>("done", rec);
  auto r = run(a, test_options());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(rec->count("failure /app/once: boom in on_start"), 1u) << ::testing::PrintToString(rec->events());
}

// State across restarts (component::snapshot/restore, spec::keep_state). `tally` counts `add`
// requests; with `checkpointing` it checkpoints after each. `crash` makes it fail.
class tally : public leaf {
 public:
  tally(std::shared_ptr<recorder> rec, bool checkpointing) : rec_(std::move(rec)), checkpointing_(checkpointing) {}
  void on_start(context& ctx) override {
    rec_->add("start " + ctx.path() + " at " + std::to_string(count_));
    ctx.serve("add", [this, &ctx](const payload&) -> result<payload> {
      ++count_;
      if (checkpointing_) ctx.checkpoint();
      return payload::copy_of(std::to_string(count_));
    });
    ctx.serve("crash", [](const payload&) -> result<payload> { throw std::runtime_error("crash asked for"); });
  }
  std::optional<payload> snapshot(context&) override { return payload::copy_of(std::to_string(count_)); }
  void restore(context&, const payload& state) override {
    count_ = std::stoi(std::string(reinterpret_cast<const char*>(state.bytes().data()), state.size()));
  }

 private:
  std::shared_ptr<recorder> rec_;
  bool checkpointing_;
  int count_ = 0;
};

// Adds 3 to /app/g/a and 2 to /app/g/b, then crashes `a`; once the restart is done, ends the run.
class tally_driver : public composite {
 public:
  explicit tally_driver(std::shared_ptr<recorder> rec) : rec_(std::move(rec)) {}
  void on_children_started(context& ctx) override {
    if (rec_->bump("group started") > 1) return ctx.quit(0);
    step(ctx, {"/app/g/a add", "/app/g/a add", "/app/g/b add", "/app/g/a add", "/app/g/b add", "/app/g/a crash"});
  }

 private:
  void step(context& ctx, std::vector<std::string> todo) {
    if (todo.empty()) return;
    auto space = todo.front().find(' ');
    std::string path = todo.front().substr(0, space), method = todo.front().substr(space + 1);
    todo.erase(todo.begin());
    ctx.request(path, method, payload{}, std::chrono::seconds(20),
                [this, &ctx, todo](result<payload>) { step(ctx, todo); });
  }
  std::shared_ptr<recorder> rec_;
};

struct tally_app {
  std::shared_ptr<recorder> rec = std::make_shared<recorder>();
  app a{"app"};
  tally_app(restart_strategy strategy, bool keep, bool checkpointing) {
    auto& g = a.root().add_composite<tally_driver>("g", {strategy, 3, std::chrono::seconds(30)}, rec);
    g.add_leaf<tally>("a", rec, checkpointing).keep_state(keep);
    g.add_leaf<tally>("b", rec, false).keep_state(keep);
  }
};

TEST(SupervisionState, AFailedComponentRestartsFromItsLastCheckpoint) {
  tally_app t(restart_strategy::one_for_one, true, true);
  auto r = run(t.a, test_options());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(t.rec->count("start /app/g/a at 0"), 1u);
  EXPECT_EQ(t.rec->count("start /app/g/a at 3"), 1u);  // restored before on_start
  EXPECT_EQ(t.rec->count("start /app/g/b at 0"), 1u);  // not restarted
}

TEST(SupervisionState, AHealthySiblingStoppedForARestartKeepsItsStateWithoutCheckpoints) {
  tally_app t(restart_strategy::one_for_all, true, false);
  auto r = run(t.a, test_options());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(t.rec->count("start /app/g/a at 0"), 2u);  // failed, never checkpointed: nothing to restore
  EXPECT_EQ(t.rec->count("start /app/g/b at 2"), 1u);  // snapshot taken when it was stopped
}

TEST(SupervisionState, WithoutKeepStateEveryIncarnationStartsAfresh) {
  tally_app t(restart_strategy::one_for_all, false, true);
  auto r = run(t.a, test_options());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(t.rec->count("start /app/g/a at 0"), 2u);
  EXPECT_EQ(t.rec->count("start /app/g/b at 0"), 2u);
}

// Restart types and backoff. `quitter` stops itself (ctx.stop) in its first
// incarnation, or fails when `fail` is set; `ender` ends the run once `path` started `starts` times
// and `expect_failures` failures were seen, or after its own children have started again.
class quitter : public leaf {
 public:
  quitter(std::shared_ptr<recorder> rec, bool fail) : rec_(std::move(rec)), fail_(fail) {}
  void on_start(context& ctx) override {
    rec_->add("start " + ctx.path());
    if (rec_->bump(ctx.path()) > 1) return;
    if (fail_) throw std::runtime_error("quitter failed");
    ctx.stop();
  }
  void on_stop(context& ctx) override { rec_->add("stop " + ctx.path()); }

 private:
  std::shared_ptr<recorder> rec_;
  bool fail_;
};

// Ends the run from a timer chain: each tick checks whether `done` holds (at most 200 ticks of 10 ms).
class ender : public composite {
 public:
  ender(std::shared_ptr<recorder> rec, std::function<bool(const recorder&)> done)
      : rec_(std::move(rec)), done_(std::move(done)) {}
  void on_children_started(context& ctx) override { tick(ctx, 0); }
  void on_child_failure(context&, const std::string& child, const std::string& reason) override {
    rec_->add("failure " + child + ": " + reason);
  }

 private:
  void tick(context& ctx, int n) {
    if (done_(*rec_) || n == 200) return ctx.quit(0);
    ctx.after(std::chrono::milliseconds(10), [this, &ctx, n] { tick(ctx, n + 1); });
  }
  std::shared_ptr<recorder> rec_;
  std::function<bool(const recorder&)> done_;
};

TEST(RestartTypes, PermanentIsRestartedAfterStopTransientAndTemporaryAreNot) {
  auto rec = std::make_shared<recorder>();
  app a{"app", {}, std::in_place_type<ender>, rec, std::function<bool(const recorder&)>([](const recorder& r) {
          return r.count("start /app/permanent") == 2 && r.count("stop /app/transient") == 1 &&
                 r.count("stop /app/temporary") == 1;
        })};
  a.root().add_leaf<quitter>("permanent", rec, false);
  a.root().add_leaf<quitter>("transient", rec, false).restart(restart_type::transient);
  a.root().add_leaf<quitter>("temporary", rec, false).restart(restart_type::temporary);
  auto r = run(a, test_options());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(rec->count("start /app/permanent"), 2u) << ::testing::PrintToString(rec->events());
  EXPECT_EQ(rec->count("start /app/transient"), 1u);
  EXPECT_EQ(rec->count("start /app/temporary"), 1u);
  EXPECT_EQ(rec->count("stop /app/transient"), 1u);  // an orderly end: on_stop ran
}

TEST(RestartTypes, AFailedTemporaryChildIsReportedAndNeitherItNorItsSiblingsRestart) {
  auto rec = std::make_shared<recorder>();
  app a{"app",
        {restart_strategy::one_for_all, 3, std::chrono::seconds(30)},
        std::in_place_type<ender>,
        rec,
        std::function<bool(const recorder&)>(
            [](const recorder& r) { return r.count("failure /app/temporary: quitter failed") == 1; })};
  a.root().add_leaf<steady>("first", rec);
  a.root().add_leaf<quitter>("temporary", rec, true).restart(restart_type::temporary);
  a.root().add_leaf<steady>("last", rec);
  auto r = run(a, test_options());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(rec->count("failure /app/temporary: quitter failed"), 1u);
  EXPECT_EQ(rec->count("start /app/temporary"), 1u);
  EXPECT_EQ(rec->count("start /app/first"), 1u);
  EXPECT_EQ(rec->count("start /app/last"), 1u);
}

TEST(RestartTypes, ATemporarySiblingIsNotRestartedWithAFailedOne) {
  auto rec = std::make_shared<recorder>();
  app a{"app",
        {restart_strategy::one_for_all, 3, std::chrono::seconds(30)},
        std::in_place_type<ender>,
        rec,
        std::function<bool(const recorder&)>([](const recorder& r) { return r.count("start /app/failing") == 2; })};
  a.root().add_leaf<steady>("temporary", rec).restart(restart_type::temporary);
  a.root().add_leaf<quitter>("failing", rec, true);
  auto r = run(a, test_options());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(rec->count("start /app/failing"), 2u);
  EXPECT_EQ(rec->count("start /app/temporary"), 1u);  // stopped with the restart, not started again
}

TEST(RestartBackoff, EachRestartWaitsTwiceAsLongAsTheOneBefore) {
  // middle fails in on_start 3 times: restarts after 40, 80 and 160 ms (with restarts 1, 2, 3 in
  // the window), so its 4 starts span at least 280 ms.
  auto rec = std::make_shared<recorder>();
  app a{"app"};
  supervision policy{restart_strategy::one_for_one, 5, std::chrono::seconds(30)};
  policy.backoff = std::chrono::milliseconds(40);
  auto& g = a.root().add_composite<group>("group", policy, rec, std::string("/app/group/middle"), 4);
  g.add_leaf<flaky>("middle", rec, 3, false);
  auto begin = std::chrono::steady_clock::now();
  auto r = run(a, test_options());
  auto took = std::chrono::steady_clock::now() - begin;
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(rec->count("start /app/group/middle"), 4u);
  EXPECT_GE(took, std::chrono::milliseconds(280));
}

// The cleanup hook runs in the failed incarnation, with the reason, before its supervisor hears.
class cleaner : public leaf {
 public:
  explicit cleaner(std::shared_ptr<recorder> rec) : rec_(std::move(rec)) {}
  void on_start(context& ctx) override {
    rec_->add("start " + ctx.path());
    if (rec_->bump(ctx.path()) == 1) throw std::runtime_error("dirty");
  }
  void on_failure(context& ctx, const std::string& reason) override {
    rec_->add("cleanup " + ctx.path() + ": " + reason);
  }

 private:
  std::shared_ptr<recorder> rec_;
};

TEST(CleanupHook, RunsInTheFailedIncarnationBeforeItsSupervisorActs) {
  auto rec = std::make_shared<recorder>();
  app a{"app", {}, std::in_place_type<watcher>, rec};
  a.root().add_leaf<cleaner>("c", rec);
  auto r = run(a, test_options());
  EXPECT_EQ(r.exit_code, 0);
  const std::vector<std::string> want{"start /app/c", "cleanup /app/c: dirty", "failure /app/c: dirty", "start /app/c"};
  EXPECT_EQ(rec->events(), want);
}

// Monitors: the watcher hears of every end of the watched component, with the reason; bad paths
// are errors naming the path.
class monitoring : public composite {
 public:
  explicit monitoring(std::shared_ptr<recorder> rec) : rec_(std::move(rec)) {}
  void on_start(context& ctx) override {
    auto bad = ctx.monitor("/app/ghost", [](const std::string&, const std::string&) {});
    rec_->add(bad ? "ghost ok" : "ghost: " + bad.error().what());
    (void)ctx.monitor("/app/c", [this, &ctx](const std::string& path, const std::string& reason) {
      rec_->add("down " + path + ": " + reason);
      if (rec_->count("down /app/c: dirty") == 1 && reason == "dirty") ctx.quit(0);
    });
  }

 private:
  std::shared_ptr<recorder> rec_;
};

TEST(Monitors, AWatcherHearsEachEndOfTheWatchedComponentWithItsReason) {
  auto rec = std::make_shared<recorder>();
  app a{"app", {}, std::in_place_type<monitoring>, rec};
  a.root().add_leaf<cleaner>("c", rec);
  auto r = run(a, test_options());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(rec->count("down /app/c: dirty"), 1u) << ::testing::PrintToString(rec->events());
  EXPECT_EQ(rec->count("ghost: no such component: path `/app/ghost` names no component"), 1u)
      << ::testing::PrintToString(rec->events());
}

// Dynamic children: declared with spec::dynamic(), started and stopped by the
// parent at run time, supervised while they run.
class dyn_parent : public composite {
 public:
  explicit dyn_parent(std::shared_ptr<recorder> rec) : rec_(std::move(rec)) {}
  void on_start(context& ctx) override {
    (void)ctx.monitor("/app/worker", [this, &ctx](const std::string& path, const std::string& reason) {
      rec_->add("down " + path + ": " + reason);
      if (reason == "stopped") ctx.quit(0);
    });
  }
  void on_children_started(context& ctx) override {
    if (rec_->bump("parent started children") == 1) {
      rec_->add("before start_child");
      auto bad = ctx.stop_child("worker");
      rec_->add(bad ? "stop ok" : bad.error().what());
      auto ok = ctx.start_child("worker");
      rec_->add(ok ? "start ok" : ok.error().what());
      auto nobody = ctx.start_child("fixed");
      rec_->add(nobody ? "fixed ok" : nobody.error().what());
      return;
    }
    // The worker has started (again, after its failure): remove it.
    auto ok = ctx.stop_child("worker");
    rec_->add(ok ? "stop ok" : ok.error().what());
  }
  void on_child_failure(context&, const std::string& child, const std::string& reason) override {
    rec_->add("failure " + child + ": " + reason);
  }

 private:
  std::shared_ptr<recorder> rec_;
};

TEST(DynamicChildren, AParentStartsASupervisedChildAtRunTimeAndRemovesIt) {
  auto rec = std::make_shared<recorder>();
  app a{"app", {}, std::in_place_type<dyn_parent>, rec};
  a.root().add_leaf<steady>("fixed", rec);
  a.root().add_leaf<cleaner>("worker", rec).dynamic();  // fails in its first incarnation
  auto r = run(a, test_options());
  EXPECT_EQ(r.exit_code, 0);
  const auto events = rec->events();
  auto at = [&](const std::string& e) { return std::find(events.begin(), events.end(), e) - events.begin(); };
  EXPECT_LT(at("before start_child"), at("start /app/worker")) << ::testing::PrintToString(events);
  EXPECT_EQ(rec->count("invalid argument: stop_child `worker`: it is not running"), 1u)
      << ::testing::PrintToString(events);
  EXPECT_EQ(rec->count("invalid argument: `fixed` is no dynamic child of `/app`"), 1u)
      << ::testing::PrintToString(events);
  EXPECT_EQ(rec->count("start /app/worker"), 2u) << ::testing::PrintToString(events);  // restarted after its failure
  EXPECT_EQ(rec->count("failure /app/worker: dirty"), 1u);
  EXPECT_EQ(rec->count("down /app/worker: dirty"), 1u);
  EXPECT_EQ(rec->count("stop ok"), 1u);
  EXPECT_EQ(rec->count("down /app/worker: stopped"), 1u) << ::testing::PrintToString(events);
}

}  // namespace
}  // namespace banyan
