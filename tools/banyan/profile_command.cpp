// `banyan profile --from DEPLOYMENT [--window DURATION] [-o FILE] [--totals FILE] [--timings FILE]
// [--json]`: asks the running `banyan launch` of DEPLOYMENT on this machine for its merged live
// profile (control.hpp) without stopping it. The window profile (the traffic since the previous
// request, or over --window) goes to -o, in the format `banyan partition` reads; the totals since the
// start to --totals; the measured start and reply times since the start to --timings, as the timings
// file `banyan plan` reads (docs/formats.md). `banyan profile --read PROFILE --timings FILE` converts
// a saved profile (`banyan launch --profile`) instead. Exit 2 when no launch of that deployment is
// running.
#include "banyan/cli.hpp"
#include "banyan/commands.hpp"
#include "banyan/control.hpp"

#include "banyan/base/duration.hpp"
#include "banyan/broker/profile.hpp"

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

namespace banyan::cli {
namespace {

constexpr const char* tool = "banyan profile";

struct options {
  std::string from, read, timings;
  std::chrono::milliseconds window{0};
  std::string out;
  std::string totals;
  bool json = false;
};

struct answer {
  nlohmann::json status;
  std::string total, window;  // profile JSON text
};

// One request to the launch's control socket. The launch answers within its nodes' 10 s; past 30 s
// it is taken for gone (a socket file left by a launch that was killed).
result<answer> ask(zmq::context_t& ctx, const std::string& deployment) {
  zmq::socket_t req(ctx, zmq::socket_type::req);
  req.set(zmq::sockopt::linger, 0);
  req.set(zmq::sockopt::rcvtimeo, 30000);
  req.connect(control_endpoint(deployment));
  req.send(zmq::str_buffer("profile"), zmq::send_flags::none);
  answer a;
  std::string* parts[] = {nullptr, &a.total, &a.window};
  for (int i = 0; i < 3; ++i) {
    zmq::message_t m;
    if (!req.recv(m))
      return error{broker::errc::io, "the launch of " + deployment + " did not answer within 30 s (control socket " +
                                         control_socket_path(deployment) + ")"};
    if (i == 0) a.status = nlohmann::json::parse(m.to_string(), nullptr, false);
    else *parts[i] = m.to_string();
    if (!m.more()) break;
  }
  if (!a.status.is_object()) return error{broker::errc::io, "the launch of " + deployment + " sent a malformed answer"};
  if (a.status.contains("error"))
    return error{broker::errc::io, "the launch of " + deployment + ": " + a.status["error"].get<std::string>()};
  return a;
}

// The profile's measured times as a timings file (docs/formats.md, "Workload"): per component with
// any, its subtree's start times as `wake` and the replies to requests to it as `response`.
result<std::size_t> write_timings(const profile& p, const std::string& path, const std::string& source) {
  std::ofstream out(path);
  if (!out) return error{broker::errc::io, "timings " + path + ": cannot write"};
  auto hist = [](const timing_histogram& h) {
    const auto [first, last] = h.used();
    std::string bounds, counts;
    char num[32];
    for (std::size_t i = first; i <= last; ++i) {
      std::snprintf(num, sizeof num, "%.9g", timing_histogram::bound(i));
      bounds += (i == first ? "" : ", ") + std::string(num);
      if (i < last) counts += (i == first ? "" : ", ") + std::to_string(h.counts[i]);
    }
    return "{bounds: [" + bounds + "], counts: [" + counts + "]}";
  };
  out << "# measured by banyan: " << source << "\nformat: banyan-timings\nversion: 1\nsubtrees:\n";
  std::size_t n = 0;
  for (vertex_id v = 0; v < p.tree->size() && v < p.loads.size(); ++v) {
    const auto& l = p.loads[v];
    if (l.start.empty() && l.reply.empty()) continue;
    out << "  - path: " << nlohmann::json(p.tree->path(v)).dump() << "\n";
    if (!l.start.empty()) out << "    wake: " << hist(l.start) << "\n";
    if (!l.reply.empty()) out << "    response: " << hist(l.reply) << "\n";
    ++n;
  }
  if (!out.flush()) return error{broker::errc::io, "timings " + path + ": write failed"};
  return n;
}

std::uint64_t edge_messages(const profile& p) {
  std::uint64_t n = 0;
  for (const auto& e : p.edges) n += e.messages;
  return n;
}

int run(const options& o) {
  if (!o.read.empty()) {
    if (o.timings.empty())
      return fail(tool, "--read needs --timings (what to write from the profile)", exit_bad_arguments);
    auto p = profile::load(o.read);
    if (!p) return fail(tool, p.error().what(), exit_bad_arguments);
    auto n = write_timings(*p, o.timings, o.read);
    if (!n) return fail(tool, n.error().what());
    if (o.json)
      std::printf("%s\n",
                  nlohmann::json{{"profile", o.read}, {"timings", o.timings}, {"components", *n}}.dump(1).c_str());
    else std::fprintf(stderr, "%s: %zu components with measured times -> %s\n", tool, *n, o.timings.c_str());
    return 0;
  }
  if (o.from.empty())
    return fail(tool, "give --from DEPLOYMENT (a running launch) or --read PROFILE", exit_bad_arguments);
  if (!std::filesystem::exists(o.from))
    return fail(tool, "deployment " + o.from + ": no such file", exit_bad_arguments);
  const std::string socket = control_socket_path(o.from);
  if (!std::filesystem::exists(socket))
    return fail(tool, "no launch of " + o.from + " is running (no control socket " + socket + ")", exit_bad_arguments);
  if (!control_socket_listens(socket))
    return fail(tool, "no launch of " + o.from + " is running (" + socket + " is left from one that was killed)",
                exit_bad_arguments);
  zmq::context_t ctx;
  auto a = ask(ctx, o.from);
  if (a && o.window.count() > 0) {
    // The first answer starts the window; the second's window is the one asked for.
    if (!o.json) std::fprintf(stderr, "%s: waiting %s for the window\n", tool, format_duration(o.window).c_str());
    std::this_thread::sleep_for(o.window);
    a = ask(ctx, o.from);
  }
  if (!a) return fail(tool, a.error().what(), exit_bad_arguments);
  auto total = profile::from_json_text(a->total, "live profile (totals)");
  auto window = profile::from_json_text(a->window, "live profile (window)");
  if (!total) return fail(tool, total.error().what());
  if (!window) return fail(tool, window.error().what());
  for (const auto& [path, p] : {std::pair{o.out, &*window}, std::pair{o.totals, &*total}}) {
    if (path.empty()) continue;
    if (auto w = p->write(path); !w) return fail(tool, w.error().what());
  }
  std::size_t timed = 0;
  if (!o.timings.empty()) {
    auto n = write_timings(*total, o.timings, "the live profile of " + o.from + " since its start");
    if (!n) return fail(tool, n.error().what());
    timed = *n;
  }
  if (o.json) {
    nlohmann::json summary = a->status;
    summary["deployment"] = o.from;
    summary["window_edge_messages"] = edge_messages(*window);
    summary["total_edge_messages"] = edge_messages(*total);
    if (!o.out.empty()) summary["profile"] = o.out;
    if (!o.totals.empty()) summary["totals"] = o.totals;
    if (!o.timings.empty()) summary["timings"] = o.timings, summary["timed_components"] = timed;
    std::printf("%s\n", summary.dump(1).c_str());
    return 0;
  }
  if (o.out.empty()) std::fputs(window->traffic_table().c_str(), stdout);
  std::fprintf(stderr, "%s: %zu nodes; window %.2f s: %llu edge messages; since the start %.2f s: %llu%s\n", tool,
               a->status["nodes"].size(), window->duration_s, static_cast<unsigned long long>(edge_messages(*window)),
               total->duration_s, static_cast<unsigned long long>(edge_messages(*total)),
               o.out.empty() ? "" : (" (profile: " + o.out + ")").c_str());
  return 0;
}

}  // namespace

action setup_profile(CLI::App& sub) {
  auto o = std::make_shared<options>();
  sub.add_option("--from", o->from, "Deployment YAML of a running `banyan launch` on this machine")
      ->type_name("DEPLOYMENT");
  sub.add_option("--read", o->read, "Instead of --from: a saved profile (banyan launch --profile), for --timings")
      ->type_name("PROFILE");
  add_duration_option(sub, "--window", o->window,
                      "Profile this long a window (asks twice, this far apart); 0: since the previous request "
                      "to that launch, or its start");
  sub.add_option("-o,--output", o->out,
                 "Write the window's profile (docs/formats.md) to this file; default: print its table")
      ->type_name("FILE");
  sub.add_option("--totals", o->totals, "Write the profile since the run started to this file")->type_name("FILE");
  sub.add_option("--timings", o->timings,
                 "Write the measured start (wake) and reply (response) times since the start as the timings "
                 "file banyan plan reads")
      ->type_name("FILE");
  sub.add_flag("--json", o->json, "Print a JSON summary on stdout");
  return [o] { return run(*o); };
}

}  // namespace banyan::cli
