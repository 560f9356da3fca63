// `banyan status [--from DEPLOYMENT] [--wait-started DURATION] [--json]`: the state of the nodes of a
// `banyan launch` running on this machine: each one started (the cluster start is over: every node
// has been ready), still starting, or ended. With --wait-started it answers once every node has
// started, or when the wait is over (with --from, also for a launch that has not opened its control
// socket yet): exit 0 when every node has started, 1 when not, 2 when no launch runs or answers.
// Scripts and tests wait on this state instead of on a log line.
#include "banyan/base/duration.hpp"
#include "banyan/cli.hpp"
#include "banyan/commands.hpp"
#include "banyan/control.hpp"

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include <cstdio>

namespace banyan::cli {
namespace {

constexpr const char* tool = "banyan status";

struct options {
  std::string from;
  std::string wait = "0s";
  bool json = false;
};

int run(const options& o) {
  auto wait = parse_duration(o.wait);
  if (!wait) return fail(tool, "--wait-started: " + wait.error().message, exit_bad_arguments);
  // Waiting for a named deployment's launch, the launch may not have bound its socket yet: ZeroMQ
  // connects (and the request goes) once it has.
  auto socket =
      wait->count() > 0 && !o.from.empty() ? result<std::string>(control_socket_path(o.from)) : launch_socket(o.from);
  if (!socket) return fail(tool, socket.error().message, exit_bad_arguments);
  zmq::context_t ctx;
  zmq::socket_t req(ctx, zmq::socket_type::req);
  req.set(zmq::sockopt::linger, 0);
  // The launch answers within the wait; ten seconds more for its start and its loop.
  req.set(zmq::sockopt::rcvtimeo, static_cast<int>(wait->count() + 10000));
  req.connect("ipc://" + *socket);
  req.send(zmq::str_buffer("status"), zmq::send_flags::sndmore);
  req.send(zmq::buffer(std::to_string(wait->count())), zmq::send_flags::none);
  zmq::message_t m;
  if (!req.recv(m)) return fail(tool, "the launch did not answer (control socket " + *socket + ")", exit_bad_arguments);
  auto a = nlohmann::json::parse(m.to_string(), nullptr, false);
  if (!a.is_object() || !a.contains("nodes")) return fail(tool, "the launch sent a malformed answer");
  if (o.json) {
    std::printf("%s\n", a.dump(1).c_str());
  } else {
    for (const auto& n : a["nodes"])
      std::printf("%-12s %s\n", n.value("name", "").c_str(), n.value("state", "").c_str());
  }
  return a.value("started", false) ? 0 : 1;
}

}  // namespace

action setup_status(CLI::App& sub) {
  auto o = std::make_shared<options>();
  sub.add_option("--from", o->from,
                 "Deployment YAML the running `banyan launch` was started with (default: the only launch running here)")
      ->type_name("RUNNING");
  sub.add_option("--wait-started", o->wait,
                 "Wait up to this long for every node to have started (e.g. 60s); exit 1 if one has not")
      ->type_name("DURATION");
  sub.add_flag("--json", o->json, "Print the launch's answer as JSON");
  return [o] { return run(*o); };
}

}  // namespace banyan::cli
