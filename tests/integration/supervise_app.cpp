// supervise_app: the app the cross-node supervision tests run, single-process or as several nodes.
//
// /sv (top) { group { first, middle, last } }
// `middle` fails in its first --failures incarnations: by throwing from on_start (--fail-in start)
// or from the handler of its `crash` request (--fail-in handler), which `group` sends once its
// children have started. `group` supervises with --strategy and --max-restarts (within 30 s); `top`
// with one_for_one and --root-restarts. Every component prints `START <path>` when it starts and
// every supervisor `FAILURE <child> <reason>` when a child fails; `group` ends the run (exit 0) once
// it has seen --failures failures and its children have all started again. The first group also
// asks `last` for `ping` as soon as its children have started, and prints `PING <reply or error>`. Counts of
// incarnations live in each process, which is enough: every incarnation of a component runs on its own node.
//
// --scenario otp (OTP parity across nodes): middle has restart type
// --middle-restart and keeps its state (an incarnation count, checkpointed in on_start and printed
// as `INCARNATION <path> <n>`); group monitors it and prints `DOWN <path> <reason>`; middle prints
// `CLEANUP <path> <reason>` from its cleanup hook. group asks middle to `crash` once its children
// have started, then (restarted) to `stop` (ctx.stop()), then ends the run when middle has started a
// third time; when middle stays down (transient after its stop, temporary after its failure), group
// asks it for `ping` once more, prints `AFTER <error>` and ends the run.
// --scenario failover: middle keeps its incarnation count as its state (printed as `INCARNATION
// <path> <n>`, checkpointed in on_start); group monitors it (`DOWN <path> <reason>`); when its node
// is lost (killed by the test), group asks middle for `ping` until its new incarnation answers from
// a survivor, prints `AFTER <reply>` and ends the run. With --ticks N, group first asks middle to
// `tick` N times (`TICKED <n>`): ticks are kept by snapshot, not by checkpoint, and pings say them.
// --scenario dynamic: last is a dynamic child; group starts it, pings it, stops
// it and pings it again, printing `DYN ...` lines; --scenario dynamic-early starts it from group's
// on_start (so it starts with its siblings, after them in declaration order).
#include <banyan/sdk/sdk.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

namespace {

struct config {
  int failures = 1;
  std::string fail_in = "handler";
  std::string strategy = "one_for_one";
  int max_restarts = 3;
  int root_restarts = 3;
  int root_backoff_ms = 0;  // the root's restart backoff
  std::string scenario = "classic";
  std::string middle_restart = "permanent";
  int backoff_ms = 0;           // group's restart backoff
  std::size_t state_bytes = 0;  // middle's state padded to this size (failover figures)
  bool stay = false;            // failover: the run goes on after middle answered (until stopped)
  int ticks = 0;                // failover: group asks middle to `tick` this many times once it has started
  int fail_at = 0;              // the incarnation of middle (in this process) that fails, besides --failures
};

std::string text_of(const banyan::result<banyan::payload>& r) {
  return r ? std::string(reinterpret_cast<const char*>(r->bytes().data()), r->size()) : r.error().what();
}

void say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

class steady : public banyan::leaf {
 public:
  void on_start(banyan::context& ctx) override {
    say("START " + ctx.path());
    ctx.serve("ping", [&ctx](const banyan::payload&) -> banyan::result<banyan::payload> {
      return banyan::payload::copy_of("pong from " + ctx.path());
    });
  }
};

int middle_incarnations = 0;  // of /sv/group/middle, in this process

class flaky : public banyan::leaf {
 public:
  explicit flaky(config c) : c_(c) {}
  void on_start(banyan::context& ctx) override {
    say("START " + ctx.path());
    // When each incarnation starts, counted from the first (on the node that runs middle).
    static const auto first_start = std::chrono::steady_clock::now();
    say("MIDDLE-STARTED-AT-MS " + std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                     std::chrono::steady_clock::now() - first_start)
                                                     .count()));
    ++middle_incarnations;
    const bool fail = middle_incarnations <= c_.failures || middle_incarnations == c_.fail_at;
    if (c_.scenario == "otp") {
      say("INCARNATION " + ctx.path() + " " + std::to_string(++incarnation_));
      ctx.checkpoint();
      ctx.serve("stop", [&ctx](const banyan::payload&) -> banyan::result<banyan::payload> {
        ctx.stop();
        return banyan::payload{};
      });
    }
    if (fail && c_.fail_in == "start") throw std::runtime_error("boom in on_start");
    if (c_.scenario == "failover") {
      // Its incarnation count is its state: restored from the last durable one after a failover
      // (with --state-dir), else counted afresh.
      say("INCARNATION " + ctx.path() + " " + std::to_string(++incarnation_));
      ctx.checkpoint();
      ctx.serve("ping", [this, &ctx](const banyan::payload&) -> banyan::result<banyan::payload> {
        std::string pong = "pong from " + ctx.path() + " incarnation " + std::to_string(incarnation_);
        if (c_.ticks > 0) pong += " ticks " + std::to_string(ticks_);
        return banyan::payload::copy_of(pong);
      });
      // Ticks count in its state too, but no checkpoint follows them: only a snapshot (a sleep, a
      // move) keeps them.
      ctx.serve("tick", [this](const banyan::payload&) -> banyan::result<banyan::payload> {
        return banyan::payload::copy_of(std::to_string(++ticks_));
      });
    }
    if (c_.scenario == "lost") {
      // Its whole node dies at once, as a machine would (no orderly end, no goodbye to the peers).
      ctx.serve("die", [](const banyan::payload&) -> banyan::result<banyan::payload> {
        say("DYING");
        std::raise(SIGKILL);
        return banyan::payload{};
      });
    }
    ctx.serve("crash", [fail](const banyan::payload&) -> banyan::result<banyan::payload> {
      if (fail) throw std::runtime_error("boom in a handler");
      return banyan::payload{};
    });
  }
  void on_failure(banyan::context& ctx, const std::string& reason) override {
    say("CLEANUP " + ctx.path() + " " + reason);
  }
  std::optional<banyan::payload> snapshot(banyan::context&) override {
    std::string state = std::to_string(incarnation_) + " " + std::to_string(ticks_) + " ";
    if (state.size() < c_.state_bytes) state.resize(c_.state_bytes, 'x');  // restore reads the numbers
    return banyan::payload::copy_of(state);
  }
  void restore(banyan::context&, const banyan::payload& state) override {
    const std::string text(reinterpret_cast<const char*>(state.bytes().data()), state.size());
    if (std::sscanf(text.c_str(), "%d %d", &incarnation_, &ticks_) < 1) incarnation_ = 0;
  }

 private:
  config c_;
  int incarnation_ = 0;
  int ticks_ = 0;
};

int group_failures_seen = 0;  // by every incarnation of /sv/group, in this process

bool pinged = false;                           // the first group in this process asked last for `ping`
bool ping_answered = false, quit_due = false;  // the run ends only once that ping is answered

class group : public banyan::composite {
 public:
  explicit group(config c) : c_(c) {}
  void on_start(banyan::context& ctx) override {
    say("START " + ctx.path());
    if (c_.scenario == "classic") return;
    if (c_.scenario == "failover") {
      // Each end of middle, its node's loss and what its next incarnation's node reports.
      auto m = ctx.monitor("/sv/group/middle", [](const std::string& path, const std::string& reason) {
        say("DOWN " + path + " " + reason);
      });
      if (!m) say("MONITOR " + m.error().what());
      return;
    }
    if (c_.scenario == "dynamic-early") start_last(ctx);  // from on_start: starts with the others
    const std::string watched = c_.scenario == "otp" || c_.scenario == "lost" ? "/sv/group/middle" : "/sv/group/last";
    auto m = ctx.monitor(watched, [this, &ctx](const std::string& path, const std::string& reason) {
      say("DOWN " + path + " " + reason);
      if (c_.scenario == "lost") return ctx.quit(0);
      if (c_.scenario == "otp" &&
          !(c_.middle_restart == "temporary" || (c_.middle_restart == "transient" && reason == "stopped")))
        return;
      if (c_.scenario != "otp" && reason != "stopped") return;
      ctx.request(path, "ping", {}, std::chrono::seconds(20), [this, &ctx](banyan::result<banyan::payload> r) {
        say("AFTER " + text_of(r));
        after_ = true;
        quit_when_told_everything(ctx);
      });
    });
    if (!m) say("MONITOR " + m.error().what());
  }
  void on_child_failure(banyan::context& ctx, const std::string& child, const std::string& reason) override {
    ++group_failures_seen;
    say("FAILURE " + child + " " + reason);
    if (after_) quit_when_told_everything(ctx);
    if (c_.scenario == "failover" && !std::exchange(pinging_, true)) ping_until_up(ctx, 0);
  }
  void on_children_started(banyan::context& ctx) override {
    if (c_.scenario == "failover") {  // the test kills middle's node from outside
      if (c_.ticks > 0 && !std::exchange(ticking_, true)) tick(ctx, 1);
      return;
    }
    if (c_.scenario == "lost") {
      if (++phase_ > 1) return;  // a restarted middle (failed over) is not asked again
      ctx.request("/sv/group/middle", "die", {}, std::chrono::seconds(20),
                  [](banyan::result<banyan::payload> r) { say("DIE " + text_of(r)); });
      return;
    }
    if (c_.scenario == "otp") {
      // 1: crash middle; 2 (restarted): stop it; 3 (permanent: restarted after its stop): done.
      switch (++phase_) {
        case 1:
          return ctx.request("/sv/group/middle", "crash", {}, std::chrono::seconds(20),
                             [](banyan::result<banyan::payload>) {});
        case 2:
          return ctx.request("/sv/group/middle", "stop", {}, std::chrono::seconds(20),
                             [](banyan::result<banyan::payload>) {});
        default: return ctx.quit(0);
      }
    }
    if (c_.scenario == "dynamic" || c_.scenario == "dynamic-early") {
      if (++phase_ == 1 && c_.scenario == "dynamic") return start_last(ctx);
      // last has started: ask it, then remove it (group's monitor asks once more when it is gone).
      // (dynamic-early, on several nodes: the first start of the run does not wait for a remote
      // child, so the first answer may be that it is not running yet; the next start is awaited.)
      if (asked_) return;
      return ctx.request("/sv/group/last", "ping", {}, std::chrono::seconds(20),
                         [this, &ctx](banyan::result<banyan::payload> r) {
                           if (!r && c_.scenario == "dynamic-early" && !asked_) return;
                           if (std::exchange(asked_, true)) return;
                           say("DYN ping " + text_of(r));
                           auto stopped = ctx.stop_child("last");
                           say("DYN stop " + (stopped ? std::string("ok") : stopped.error().what()));
                         });
    }
    if (!pinged) {
      // Made while the cluster may still be starting (n2 not ready yet): held until it is.
      pinged = true;
      ctx.request("/sv/group/last", "ping", {}, std::chrono::seconds(20), [&ctx](banyan::result<banyan::payload> r) {
        say("PING " +
            (r ? std::string(reinterpret_cast<const char*>(r->bytes().data()), r->size()) : r.error().what()));
        ping_answered = true;
        if (quit_due) ctx.quit(0);
      });
    }
    // Not before the ping is answered: on several nodes it is held until the cluster is ready, and
    // a restart may be over by then.
    if (group_failures_seen >= c_.failures) {
      if (ping_answered) return ctx.quit(0);
      quit_due = true;
      return;
    }
    if (c_.fail_in == "handler")
      ctx.request("/sv/group/middle", "crash", {}, std::chrono::seconds(20), [](banyan::result<banyan::payload>) {});
  }

 private:
  // A temporary middle's failure notice and its monitor's DOWN come from two threads of its node
  // (the supervisor's report, the monitor's), so across nodes either may come first: the run ends
  // once the ping after the DOWN is answered and the failure has been heard too.
  void quit_when_told_everything(banyan::context& ctx) {
    const bool failure_due = c_.scenario == "otp" && c_.middle_restart == "temporary";
    if (!failure_due || group_failures_seen >= c_.failures) ctx.quit(0);
  }
  // failover: ask middle to `tick`, one after the other, up to --ticks (then `TICKED <n>`).
  void tick(banyan::context& ctx, int n) {
    ctx.request("/sv/group/middle", "tick", {}, std::chrono::seconds(20),
                [this, &ctx, n](banyan::result<banyan::payload> r) {
                  if (!r) return say("TICK " + text_of(r));
                  if (n < c_.ticks) return tick(ctx, n + 1);
                  say("TICKED " + text_of(r));
                });
  }
  // failover: middle's node is gone; ask it until its new incarnation on a survivor answers.
  void ping_until_up(banyan::context& ctx, int tries) {
    ctx.request("/sv/group/middle", "ping", {}, std::chrono::seconds(2),
                [this, &ctx, tries](banyan::result<banyan::payload> r) {
                  if (r) {
                    say("AFTER " + text_of(r));
                    if (!c_.stay) ctx.quit(0);
                    return;
                  }
                  if (tries >= 1200) {  // about a minute
                    say("NEVER UP " + text_of(r));
                    return ctx.quit(3);
                  }
                  ctx.after(std::chrono::milliseconds(50), [this, &ctx, tries] { ping_until_up(ctx, tries + 1); });
                });
  }
  void start_last(banyan::context& ctx) {
    say("DYN before");
    auto started = ctx.start_child("last");
    say("DYN start " + (started ? std::string("ok") : started.error().what()));
    auto again = ctx.start_child("last");
    say("DYN again " + (again ? std::string("ok") : again.error().what()));
    auto nobody = ctx.start_child("first");
    say("DYN first " + (nobody ? std::string("ok") : nobody.error().what()));
  }
  config c_;
  int phase_ = 0;
  bool asked_ = false;    // dynamic: last answered its ping
  bool after_ = false;    // the ping after middle's DOWN was answered
  bool pinging_ = false;  // failover: asking middle until it is up again
  bool ticking_ = false;  // failover: the ticks were asked for
};

class top : public banyan::composite {
 public:
  void on_child_failure(banyan::context&, const std::string& child, const std::string& reason) override {
    say("FAILURE " + child + " " + reason);
  }
};

void add_options(banyan::options& o, config& c) {
  o.add("--failures", c.failures, "Incarnations of middle that fail");
  o.add("--state-bytes", c.state_bytes, "middle's state padded to this many bytes (failover scenario)");
  o.add("--stay", c.stay, "failover scenario: go on after middle answered from a survivor (until stopped)");
  o.add("--ticks", c.ticks, "failover scenario: group asks middle to tick this many times once it has started");
  o.add("--fail-at", c.fail_at,
        "The incarnation of middle (counted in its process) that fails too, where --fail-in says");
  o.add("--fail-in", c.fail_in, "Where middle fails: start or handler");
  o.add("--strategy", c.strategy, "group's strategy: one_for_one, one_for_all or rest_for_one");
  o.add("--max-restarts", c.max_restarts, "group's restart limit (within 30 s)");
  o.add("--root-restarts", c.root_restarts, "the root's restart limit (within 30 s)");
  o.add("--root-backoff-ms", c.root_backoff_ms, "the root's restart backoff in ms (doubling per restart)");
  o.add(
      "--scenario", c.scenario,
      "classic, otp (restart types, monitor, cleanup, state), dynamic (a dynamic child), lost (middle's node dies) or "
      "failover (middle's node dies; group asks middle until it answers from a survivor)");
  o.add("--backoff-ms", c.backoff_ms, "group's restart backoff in ms (doubling per restart)");
  o.add("--middle-restart", c.middle_restart,
        "middle's restart type in the otp scenario: permanent, transient or temporary");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  // The root's policy comes from an option, so the options are read before the app is made (with a
  // first app whose only use is that); run() parses the same argv again, to the same values.
  config c;
  {
    banyan::app probe{"sv"};
    add_options(probe.options(), c);
    if (auto exit_code = probe.options().parse(argc, argv)) return *exit_code;
  }
  if (c.fail_in != "start" && c.fail_in != "handler") {
    std::fprintf(stderr, "--fail-in `%s`: must be start or handler\n", c.fail_in.c_str());
    return 2;
  }
  banyan::restart_strategy strategy;
  if (c.strategy == "one_for_one") strategy = banyan::restart_strategy::one_for_one;
  else if (c.strategy == "one_for_all") strategy = banyan::restart_strategy::one_for_all;
  else if (c.strategy == "rest_for_one") strategy = banyan::restart_strategy::rest_for_one;
  else {
    std::fprintf(stderr, "--strategy `%s`: must be one_for_one, one_for_all or rest_for_one\n", c.strategy.c_str());
    return 2;
  }
  banyan::supervision root_policy{banyan::restart_strategy::one_for_one, c.root_restarts, 30s};
  root_policy.backoff = std::chrono::milliseconds(c.root_backoff_ms);
  banyan::app app{"sv", root_policy, std::in_place_type<top>};
  config again = c;
  add_options(app.options(), again);
  banyan::supervision group_policy{strategy, c.max_restarts, 30s};
  group_policy.backoff = std::chrono::milliseconds(c.backoff_ms);
  auto& g = app.root().add_composite<group>("group", group_policy, c);
  g.add_leaf<steady>("first");
  auto& middle = g.add_leaf<flaky>("middle", c);
  auto& last = g.add_leaf<steady>("last");
  if (c.scenario == "otp") {
    middle.keep_state();
    if (c.middle_restart == "transient") middle.restart(banyan::restart_type::transient);
    else if (c.middle_restart == "temporary") middle.restart(banyan::restart_type::temporary);
    else if (c.middle_restart != "permanent") {
      std::fprintf(stderr, "--middle-restart `%s`: must be permanent, transient or temporary\n",
                   c.middle_restart.c_str());
      return 2;
    }
  } else if (c.scenario == "failover") {
    middle.keep_state();  // group asks it until it answers from a survivor
  } else if (c.scenario == "lost") {
    // middle's node kills itself; group (on n0) monitors middle.
  } else if (c.scenario == "dynamic" || c.scenario == "dynamic-early") {
    last.dynamic();
  } else if (c.scenario != "classic") {
    std::fprintf(stderr, "--scenario `%s`: must be classic, otp, dynamic, lost or failover\n", c.scenario.c_str());
    return 2;
  }
  return banyan::run(app, argc, argv);
}
