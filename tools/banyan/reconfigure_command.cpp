// `banyan reconfigure NEW.yaml [--from RUNNING.yaml] [--json]`: moves the subtrees whose node differs
// between the deployment a `banyan launch` on this machine runs and NEW.yaml, live: the launch asks
// each subtree's node to move it (docs/runtime.md, "Moving subtrees live"), one move after the
// other, while the application keeps running. Prints each move (components, state bytes, how long
// the deployment paused) and a summary. Exit 2 when no launch runs, 1 when a move failed.
#include "banyan/cli.hpp"
#include "banyan/commands.hpp"
#include "banyan/control.hpp"

#include "banyan/partitioner/io.hpp"

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include <cstdio>
#include <filesystem>

namespace banyan::cli {
namespace {

constexpr const char* tool = "banyan reconfigure";

struct options {
  std::string next;
  std::string from;
  bool json = false;
};

int run(const options& o) {
  auto next = partitioner::load_deployment(o.next);
  if (!next) return fail(tool, next.error().message, exit_bad_arguments);
  auto found = launch_socket(o.from);
  if (!found) return fail(tool, found.error().message, exit_bad_arguments);
  const std::string& socket = *found;
  zmq::context_t ctx;
  zmq::socket_t req(ctx, zmq::socket_type::req);
  req.set(zmq::sockopt::linger, 0);
  req.set(zmq::sockopt::rcvtimeo, 600000);  // every move has its own 30 s limit in the launch
  req.connect("ipc://" + socket);
  const std::string path = std::filesystem::absolute(o.next).string();
  req.send(zmq::str_buffer("reconfigure"), zmq::send_flags::sndmore);
  req.send(zmq::buffer(path), zmq::send_flags::none);
  zmq::message_t m;
  if (!req.recv(m)) return fail(tool, "the launch did not answer (control socket " + socket + ")", exit_bad_arguments);
  auto a = nlohmann::json::parse(m.to_string(), nullptr, false);
  if (!a.is_object()) return fail(tool, "the launch sent a malformed answer");
  const bool refused = a.value("refused", false);  // nothing was moved: no summary of moves
  if (o.json) {
    std::printf("%s\n", a.dump(1).c_str());
  } else if (!refused) {
    double longest = 0, total = 0;
    std::size_t n = 0;
    for (const auto& mv : a.value("moves", nlohmann::json::array())) {
      if (mv.contains("error")) continue;
      const double pause = mv.value("pause_ms", 0.0);
      const std::string gathers = mv.value("gathers_for", "");
      std::printf("moved %s: %s -> %s, %zu component(s), %llu bytes of state, paused %.1f ms%s\n",
                  mv.value("path", "").c_str(), mv.value("from", "").c_str(), mv.value("to", "").c_str(),
                  mv.value("components", std::size_t{0}), mv.value("state_bytes", 0ULL), pause,
                  gathers.empty() ? "" : (" (gathered for the move of " + gathers + ")").c_str());
      if (const auto fresh = mv.value("without_state", nlohmann::json::array()); !fresh.empty()) {
        std::string list;
        for (const auto& f : fresh) list += (list.empty() ? "" : ", ") + f.get<std::string>();
        std::fprintf(stderr,
                     "%s: warning: %zu component(s) of %s gave no state (snapshot() returned nothing) and "
                     "started afresh on %s: %s\n",
                     tool, fresh.size(), mv.value("path", "").c_str(), mv.value("to", "").c_str(), list.c_str());
      }
      longest = std::max(longest, pause);
      total += pause;
      ++n;
    }
    std::fprintf(stderr, "%s: %zu move(s)%s", tool, n, n ? "" : " (nothing to move)");
    if (n) std::fprintf(stderr, "; pause longest %.1f ms, mean %.1f ms", longest, total / n);
    std::fprintf(stderr, "%s\n", a.contains("error") ? "" : "; the launch runs the new deployment now");
  }
  if (a.contains("error")) return fail(tool, a["error"].get<std::string>(), refused ? exit_bad_arguments : 1);
  return 0;
}

}  // namespace

action setup_reconfigure(CLI::App& sub) {
  auto o = std::make_shared<options>();
  sub.add_option("deployment", o->next, "The new deployment YAML (same nodes; e.g. from banyan partition --current)")
      ->required()
      ->type_name("NEW");
  sub.add_option("--from", o->from,
                 "Deployment YAML the running `banyan launch` was started with (default: the only launch running here)")
      ->type_name("RUNNING");
  sub.add_flag("--json", o->json, "Print the launch's answer (every move's figures) as JSON");
  return [o] { return run(*o); };
}

}  // namespace banyan::cli
