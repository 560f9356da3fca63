// `banyan sleep PATH [--keep-alive DURATION]` and `banyan wake PATH [--on NODE]` (both with
// [--from DEPLOYMENT] [--json]): put a subtree of a running `banyan launch` to sleep, or wake it
// (docs/runtime.md, "Hibernate and wake"). The launch asks the node that runs the subtree, and the
// answer comes once the change is done: the components, the state kept or restored, how long the
// deployment paused, and for a wake what it handed on of the work held for the subtree. Exit 2 when
// no launch runs, 1 when the change failed.
#include "banyan/cli.hpp"
#include "banyan/commands.hpp"
#include "banyan/control.hpp"

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include <cstdio>

namespace banyan::cli {
namespace {

struct options {
  std::string path;
  std::string from;
  std::chrono::milliseconds keep_alive{0};  // sleep
  std::string on;                           // wake
  bool json = false;
};

int run(const char* tool, const std::vector<std::string>& request, const options& o) {
  auto found = launch_socket(o.from);
  if (!found) return fail(tool, found.error().message, exit_bad_arguments);
  zmq::context_t ctx;
  zmq::socket_t req(ctx, zmq::socket_type::req);
  req.set(zmq::sockopt::linger, 0);
  req.set(zmq::sockopt::rcvtimeo, 120000);  // the launch gives the node 60 s
  req.connect("ipc://" + *found);
  for (std::size_t i = 0; i < request.size(); ++i)
    req.send(zmq::buffer(request[i]), i + 1 < request.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
  zmq::message_t m;
  if (!req.recv(m)) return fail(tool, "the launch did not answer (control socket " + *found + ")", exit_bad_arguments);
  auto a = nlohmann::json::parse(m.to_string(), nullptr, false);
  if (!a.is_object()) return fail(tool, "the launch sent a malformed answer");
  if (a.contains("error")) {
    if (o.json) std::printf("%s\n", a.dump(1).c_str());
    return fail(tool, a["error"].get<std::string>(), 1);
  }
  if (o.json) {
    std::printf("%s\n", a.dump(1).c_str());
  } else if (a.value("already", false)) {
    std::printf("%s was %s already\n", o.path.c_str(), request[0] == "sleep" ? "asleep" : "awake");
  } else if (request[0] == "sleep") {
    std::printf("%s asleep on %s: %zu component(s), %llu bytes of state kept, paused %.1f ms\n", o.path.c_str(),
                a.value("from", "").c_str(), a.value("components", std::size_t{0}), a.value("state_bytes", 0ULL),
                a.value("pause_ms", 0.0));
  } else {
    std::printf(
        "%s awake on %s: %llu bytes of state restored, %zu held message(s) and request(s) handed on, "
        "paused %.1f ms\n",
        o.path.c_str(), a.value("to", "").c_str(), a.value("state_bytes", 0ULL), a.value("held", std::size_t{0}),
        a.value("pause_ms", 0.0));
  }
  return 0;
}

void add_common(CLI::App& sub, options& o) {
  sub.add_option("path", o.path, "The subtree's root, e.g. /app/report")->required()->type_name("PATH");
  sub.add_option("--from", o.from,
                 "Deployment YAML the running `banyan launch` was started with (default: the only launch running here)")
      ->type_name("RUNNING");
  sub.add_flag("--json", o.json, "Print the node's answer as JSON");
}

}  // namespace

action setup_sleep(CLI::App& sub) {
  auto o = std::make_shared<options>();
  add_common(sub, *o);
  add_duration_option(sub, "--keep-alive", o->keep_alive,
                      "Once woken on demand, sleep again after this long without a message (0: stay awake)");
  return [o] {
    std::vector<std::string> request{"sleep", o->path};
    if (o->keep_alive.count() > 0) request.push_back(std::to_string(o->keep_alive.count()));
    return run("banyan sleep", request, *o);
  };
}

action setup_wake(CLI::App& sub) {
  auto o = std::make_shared<options>();
  add_common(sub, *o);
  sub.add_option("--on", o->on, "Wake it on this node (default: where it sleeps)")->type_name("NODE");
  return [o] {
    std::vector<std::string> request{"wake", o->path};
    if (!o->on.empty()) request.push_back(o->on);
    return run("banyan wake", request, *o);
  };
}

}  // namespace banyan::cli
