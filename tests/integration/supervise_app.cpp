// supervise_app: the app the cross-node supervision tests run, single-process or as several nodes.
//
// /sv (top) { group { first, middle, last } }
// `middle` fails in its first --failures incarnations: by throwing from on_start (--fail-in start)
// or from the handler of its `crash` request (--fail-in handler), which `group` sends once its
// children have started. `group` supervises with --strategy and --max-restarts (within 30 s); `top`
// with one_for_one and --root-restarts. Every component prints `START <path>` when it starts and
// every supervisor `FAILURE <child> <reason>` when a child fails; `group` ends the run (exit 0) once
// it has seen --failures failures and its children have all started again. The first group also
// asks `last` for `ping` as soon as its children have started, and prints `PING <reply or error>`. Counts of incarnations
// live in each process, which is enough: every incarnation of a component runs on its own node.
#include <banyan/sdk/sdk.hpp>

#include <cstdio>
#include <string>

namespace {

struct config {
  int failures = 1;
  std::string fail_in = "handler";
  std::string strategy = "one_for_one";
  int max_restarts = 3;
  int root_restarts = 3;
};

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
    const bool fail = ++middle_incarnations <= c_.failures;
    if (fail && c_.fail_in == "start") throw std::runtime_error("boom in on_start");
    ctx.serve("crash", [fail](const banyan::payload&) -> banyan::result<banyan::payload> {
      if (fail) throw std::runtime_error("boom in a handler");
      return banyan::payload{};
    });
  }

 private:
  config c_;
};

int group_failures_seen = 0;  // by every incarnation of /sv/group, in this process

bool pinged = false;  // the first group in this process asked last for `ping`

class group : public banyan::composite {
 public:
  explicit group(config c) : c_(c) {}
  void on_start(banyan::context& ctx) override { say("START " + ctx.path()); }
  void on_child_failure(banyan::context&, const std::string& child, const std::string& reason) override {
    ++group_failures_seen;
    say("FAILURE " + child + " " + reason);
  }
  void on_children_started(banyan::context& ctx) override {
    if (!pinged) {
      // Made while the cluster may still be starting (n2 not ready yet): held until it is.
      pinged = true;
      ctx.request("/sv/group/last", "ping", {}, std::chrono::seconds(20), [](banyan::result<banyan::payload> r) {
        say("PING " + (r ? std::string(reinterpret_cast<const char*>(r->bytes().data()), r->size()) : r.error().what()));
      });
    }
    if (group_failures_seen >= c_.failures) return ctx.quit(0);
    if (c_.fail_in == "handler")
      ctx.request("/sv/group/middle", "crash", {}, std::chrono::seconds(20), [](banyan::result<banyan::payload>) {});
  }

 private:
  config c_;
};

class top : public banyan::composite {
 public:
  void on_child_failure(banyan::context&, const std::string& child, const std::string& reason) override {
    say("FAILURE " + child + " " + reason);
  }
};

void add_options(banyan::options& o, config& c) {
  o.add("--failures", c.failures, "Incarnations of middle that fail");
  o.add("--fail-in", c.fail_in, "Where middle fails: start or handler");
  o.add("--strategy", c.strategy, "group's strategy: one_for_one, one_for_all or rest_for_one");
  o.add("--max-restarts", c.max_restarts, "group's restart limit (within 30 s)");
  o.add("--root-restarts", c.root_restarts, "the root's restart limit (within 30 s)");
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
  banyan::app app{"sv", {banyan::restart_strategy::one_for_one, c.root_restarts, 30s}, std::in_place_type<top>};
  config again = c;
  add_options(app.options(), again);
  auto& g = app.root().add_composite<group>("group", {strategy, c.max_restarts, 30s}, c);
  g.add_leaf<steady>("first");
  g.add_leaf<flaky>("middle", c);
  g.add_leaf<steady>("last");
  return banyan::run(app, argc, argv);
}
