// `banyan launch DEPLOYMENT [--profile FILE] [--join NODE] -- APP ARGS...`: starts one process per
// node of the deployment on this machine (nodes with `join: later` excepted; --join NODE starts just
// that node, which joins the running deployment) (`APP ARGS --deployment DEPLOYMENT --node NAME`), prefixes and merges
// their output, forwards SIGINT/SIGTERM, and exits non-zero if any node fails. With --profile it merges the nodes'
// profiles into one (per-edge traffic, loads, flows and per-link cross-node totals). While it runs it serves the merged
// live profile on a control socket (control.hpp; `banyan profile --from`), and with --dashboard ADDR:PORT a live web
// page of the run (dashboard.hpp).
// `--via mpirun|srun` hands the start to that launcher instead: it prints and runs
// `mpirun -np K ... APP ARGS --deployment DEPLOYMENT` (or `srun --ntasks K ...`), and each process
// takes its node from its rank (docs/runtime.md, "Launchers").
#include "banyan/cli.hpp"
#include "banyan/commands.hpp"
#include "banyan/control.hpp"
#include "banyan/hibernate.hpp"
#include "banyan/reconfigure.hpp"
#ifdef BANYAN_LAUNCH_DASHBOARD
#include "banyan/dashboard.hpp"
#endif

#include "banyan/base/duration.hpp"
#include "banyan/base/log.hpp"
#include "banyan/base/process.hpp"
#include "banyan/broker/profile.hpp"
#include "banyan/partitioner/io.hpp"

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <unistd.h>

namespace banyan::cli {
namespace {

constexpr const char* tool = "banyan launch";

struct options {
  std::string deployment;
  std::string profile;
  std::chrono::milliseconds run_for{0};
  bool json = false;
  std::string via;                // empty: our own processes; mpirun or srun
  std::string hosts;              // the launcher's host list (Open MPI's --host syntax), also BANYAN_HOSTS for `{host}`
  std::vector<std::string> join;  // start only these nodes, into a running deployment
  std::string dashboard;          // ADDR:PORT to serve the dashboard on (dashboard.hpp); empty: none
  std::string plan;               // a periodic plan to follow (hibernate.hpp); empty: none
  bool dashboard_remote = false;  // allow a non-loopback --dashboard address
  std::vector<std::string> command;
};

struct child {
  std::string node;
  banyan::process p;
  int status = -1;  // exit code, or 128+signal
  bool done = false;
  // The node said another node ended the run (the SDK's `node `X` ended the run with exit code N`
  // line): its own non-zero exit follows from that node's, it is not where the failure began.
  bool ended_by_peer = false;
  bool signalled = false;  // launch stopped it (a signal, --run-for, or the others' grace ran out)
  // It ended while the run went on: it did not host the root, so the root's node failed its
  // subtrees over to the survivors (docs/runtime.md "Failover"). Readings leave it out.
  bool lost = false;
};

volatile std::sig_atomic_t pending_signal = 0;
void on_signal(int sig) { pending_signal = sig; }

// Writes the node's complete lines (all of them once its streams closed), each prefixed `[node] `.
void forward_lines(child& c) {
  for (auto [s, to] :
       {std::pair{banyan::process::stream::out, stdout}, std::pair{banyan::process::stream::err, stderr}}) {
    for (const auto& line : c.p.take_lines(s)) {
      if (line.find("` ended the run with exit code ") != std::string::npos) c.ended_by_peer = true;
      std::fprintf(to, "[%s] %s\n", c.node.c_str(), line.c_str());
    }
    std::fflush(to);
  }
}

std::string shell_quoted(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    if (!a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=/.,:@%") ==
                          std::string::npos) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

// Merges the nodes' profiles (scratch/<node>.json) into o.profile, adds the links to `summary` and
// prints them (unless --json); removes `scratch`. False when a node wrote none or the merge failed.
bool merge_profiles(const options& o, const std::filesystem::path& scratch, const std::vector<std::string>& nodes,
                    nlohmann::json& summary) {
  bool ok = true;
  std::optional<profile> merged;
  for (const auto& node : nodes) {
    auto p = profile::load((scratch / (node + ".json")).string());
    if (!p) {
      banyan::log::error(tool, "node " + node + " wrote no profile: " + p.error().what());
      ok = false;
      continue;
    }
    if (!merged) merged = std::move(*p);
    else if (auto r = merged->merge(*p); !r) banyan::log::error(tool, r.error().what());
  }
  if (merged) {
    auto w = merged->write(o.profile);
    if (!w) {
      banyan::log::error(tool, w.error().what());
      ok = false;
    }
    std::uint64_t total = 0;
    for (const auto& l : merged->links) {
      summary["links"].push_back({{"from", l.from}, {"to", l.to}, {"messages", l.messages}, {"bytes", l.bytes}});
      total += l.messages;
      if (!o.json)
        std::printf("link %s -> %s: %llu messages, %llu bytes\n", l.from.c_str(), l.to.c_str(),
                    static_cast<unsigned long long>(l.messages), static_cast<unsigned long long>(l.bytes));
    }
    summary["cross_node_messages"] = total;
    summary["profile"] = o.profile;
    if (!o.json)
      std::printf("cross-node messages: %llu (profile: %s)\n", static_cast<unsigned long long>(total),
                  o.profile.c_str());
  }
  std::filesystem::remove_all(scratch);
  return ok;
}

// One merged reading of every node (the live profile): asks each for its profile so far and its link
// health over its control channel (the SDK's control_channel.hpp) and merges them. Keeps forwarding
// the nodes' output while it waits, so a chatty node cannot block on a full pipe.
struct live_reading {
  std::optional<profile> total;  // empty when `error` says why
  std::string error;
  std::vector<std::string> health;  // the link health's JSON text, per node of several
};

live_reading take_reading(std::vector<child>& children, node_controls& controls) {
  live_reading out;
  std::string ended;
  std::vector<child*> live;  // a node lost and failed over is not asked: its components run elsewhere
  for (auto& c : children) {
    if (c.lost) continue;
    live.push_back(&c);
    if (c.done || c.p.status()) ended += (ended.empty() ? "" : ", ") + c.node;
  }
  if (!ended.empty()) {
    out.error = "node " + ended + " has ended; the live profile needs every node";
    return out;
  }
  std::map<std::string, std::uint64_t> asked;
  std::map<std::string, std::vector<std::string>> replies;
  for (auto* c : live) asked[c->node] = controls.ask(c->node, {"profile"});
  // A node may still be starting, or busy; a loaded machine makes it slower.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::vector<banyan::process*> all;
  for (auto& c : children) all.push_back(&c.p);
  while (replies.size() < live.size() && std::chrono::steady_clock::now() < until) {
    for (auto* c : live)
      if (!replies.count(c->node))
        if (auto r = controls.reply(c->node, asked[c->node])) replies[c->node] = std::move(*r);
    if (replies.size() == live.size()) break;
    banyan::process::wait_any(all, std::chrono::milliseconds(5));
    for (auto& c : children) forward_lines(c);
  }
  std::string late;
  for (const auto* c : live)
    if (!replies.count(c->node)) late += (late.empty() ? "" : ", ") + c->node;
  if (!late.empty()) {
    out.error = "node " + late + " did not answer within 10 s";
    return out;
  }
  for (const auto* cp : live) {
    const child& c = *cp;
    const auto& r = replies[c.node];
    if (r.size() != 2) {
      out.error = "node " + c.node + " answered the live profile request with " + std::to_string(r.size()) +
                  " frame(s): " + (r.empty() ? std::string() : banyan::log::escape(r.front(), 200));
      out.total.reset();
      return out;
    }
    auto p = profile::from_json_text(r[0], "node " + c.node + "'s live profile");
    if (!p) {
      out.error = p.error().what();
      out.total.reset();
      return out;
    }
    if (!out.total) out.total = std::move(*p);
    else if (auto m = out.total->merge(*p); !m) {
      out.error = m.error().what();
      out.total.reset();
      return out;
    }
    if (r[1] != "{}") out.health.push_back(r[1]);
  }
  return out;
}

// Answers one `profile` request on the control socket (control.hpp) with a reading: the totals and
// the window since `previous`.
void answer_profile(zmq::socket_t& control, std::vector<child>& children, node_controls& controls,
                    std::optional<profile>& previous, bool quiet) {
  auto reply = [&](const nlohmann::json& status, const std::string& total, const std::string& window) {
    control.send(zmq::buffer(status.dump()), zmq::send_flags::sndmore);
    control.send(zmq::buffer(total), zmq::send_flags::sndmore);
    control.send(zmq::buffer(window), zmq::send_flags::none);
  };
  auto refuse = [&](const std::string& why) {
    if (!quiet) banyan::log::warning(tool, "live profile: " + why);
    reply({{"error", why}}, "", "");
  };
  auto reading = take_reading(children, controls);
  if (!reading.total) return refuse(reading.error);
  auto& total = reading.total;
  auto window = previous ? total->since(*previous) : result<profile>(*total);
  if (!window) return refuse(window.error().what());
  nlohmann::json status = {
      {"nodes", nlohmann::json::array()}, {"total_s", total->duration_s}, {"window_s", window->duration_s}};
  for (const auto& c : children) status["nodes"].push_back(c.node);
  reply(status, total->to_json_text(), window->to_json_text());
  if (!quiet) {
    char line[128];
    std::snprintf(line, sizeof line, "live profile served (window %.2f s of %.2f s)", window->duration_s,
                  total->duration_s);
    banyan::log::info(tool, line);
  }
  previous = std::move(total);
}

// The node that runs the tree's root: the shallowest assignment's. Losing it ends the run; losing
// another is a failover, which it decides.
std::string root_node_of(const partitioner::deployment& d) {
  std::string node;
  std::size_t depth = ~std::size_t{0};
  for (const auto& as : d.assignments) {
    const auto n = static_cast<std::size_t>(std::count(as.path.begin(), as.path.end(), '/'));
    if (n < depth) {
      depth = n;
      node = d.c.nodes[static_cast<std::size_t>(as.node)].name;
    }
  }
  return node;
}

// After a failover the launch's record of where each subtree runs is old: the root's node, which
// decided the failover, tells where everything runs now (its control channel's `where`), and that
// becomes the running deployment's assignment. Errors say why.
std::string follow_failover(std::vector<child>& children, node_controls& controls, partitioner::deployment& running) {
  const std::string root = root_node_of(running);
  const auto id = controls.ask(root, {"where"});
  std::vector<banyan::process*> all;
  for (auto& c : children) all.push_back(&c.p);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::optional<std::vector<std::string>> r;
  while (!(r = controls.reply(root, id)) && std::chrono::steady_clock::now() < until) {
    banyan::process::wait_any(all, std::chrono::milliseconds(5));
    for (auto& c : children) forward_lines(c);
  }
  if (!r || r->size() != 1) return "node " + root + " did not say where the subtrees run after the failover";
  const auto j = nlohmann::json::parse(r->front(), nullptr, false);
  if (!j.is_object() || !j.contains("assignments") || !j["assignments"].is_object())
    return "node " + root + " answered `where` with " + banyan::log::escape(r->front(), 200);
  std::vector<partitioner::assignment> now;
  for (const auto& [path, node] : j["assignments"].items()) {
    const auto index = running.c.find(node.is_string() ? node.get<std::string>() : std::string());
    if (index == partitioner::no_node) return "node " + root + " placed `" + path + "` on an unknown node";
    now.push_back({path, index, 0});
  }
  running.assignments = std::move(now);
  return {};
}

// Answers one `sleep PATH [KEEP_MS]` or `wake PATH [NODE]` request on the control socket
// (control.hpp, docs/runtime.md "Hibernate and wake"): asks the node that runs PATH and passes its
// answer on (one JSON frame); a wake that put the subtree on another node changes `running`.
void answer_sleep_wake(zmq::socket_t& control, const std::vector<std::string>& frames, std::vector<child>& children,
                       node_controls& controls, partitioner::deployment& running) {
  auto reply = [&](const std::string& text) { control.send(zmq::buffer(text), zmq::send_flags::none); };
  if (frames.size() < 2 || frames.size() > 3)
    return reply(
        nlohmann::json{{"error", "a " + frames[0] + " request is `" + frames[0] + "`, PATH and " +
                                     (frames[0] == "sleep" ? "an optional keep-alive in ms" : "an optional node")}}
            .dump());
  if (std::any_of(children.begin(), children.end(), [](const child& c) { return c.lost; }))
    if (auto why = follow_failover(children, controls, running); !why.empty())
      return reply(nlohmann::json{{"error", why}}.dump());
  const std::string node = node_of_path(running, frames[1]);
  if (node.empty()) return reply(nlohmann::json{{"error", "no assignment covers `" + frames[1] + "`"}}.dump());
  std::vector<std::string> request = frames;
  const auto id = controls.ask(node, request);
  std::vector<banyan::process*> all;
  for (auto& c : children) all.push_back(&c.p);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::optional<std::vector<std::string>> r;
  while (!(r = controls.reply(node, id)) && std::chrono::steady_clock::now() < until) {
    banyan::process::wait_any(all, std::chrono::milliseconds(2));
    for (auto& c : children) forward_lines(c);
    for (auto& c : children)
      if (c.node == node && c.p.status())
        return reply(nlohmann::json{{"error", "node " + node + " ended before it answered"}}.dump());
  }
  if (!r) controls.forget(id);
  if (!r || r->size() != 1) return reply(nlohmann::json{{"error", "node " + node + " did not answer in 60 s"}}.dump());
  const auto a = nlohmann::json::parse(r->front(), nullptr, false);
  if (a.is_object() && !a.contains("error") && a.value("to", node) != node)
    running.assignments = after_moves(running, {{frames[1], node, a["to"].get<std::string>(), {}}});
  reply(r->front());
}

// Answers one `status WAIT_MS` request on the control socket (control.hpp): asks every node whether
// the cluster start is over (`started`: a node answers once every node has been ready) and replies,
// once every node has or WAIT_MS has passed, with each node's state: started, starting or ended.
void answer_status(zmq::socket_t& control, const std::vector<std::string>& frames, std::vector<child>& children,
                   node_controls& controls) {
  std::chrono::milliseconds wait{0};
  if (frames.size() == 2) wait = std::chrono::milliseconds(std::strtoll(frames[1].c_str(), nullptr, 10));
  std::map<std::string, std::uint64_t> asked;
  std::set<std::string> started;
  std::size_t lost = 0;
  for (auto& c : children) {
    lost += c.lost ? 1 : 0;
    if (!c.done && !c.p.status()) asked[c.node] = controls.ask(c.node, {"started"});
  }
  std::vector<banyan::process*> all;
  for (auto& c : children) all.push_back(&c.p);
  const auto until = std::chrono::steady_clock::now() + wait;
  for (;;) {
    for (auto& c : children)
      if (asked.count(c.node) && !started.count(c.node) && controls.reply(c.node, asked[c.node]))
        started.insert(c.node);
    const bool ended =
        std::any_of(children.begin(), children.end(), [](child& c) { return !c.lost && (c.done || c.p.status()); });
    if (started.size() + lost == children.size() || ended || std::chrono::steady_clock::now() >= until) break;
    banyan::process::wait_any(all, std::chrono::milliseconds(5));  // wakes on a node's output or exit
    for (auto& c : children) forward_lines(c);
  }
  nlohmann::json nodes = nlohmann::json::array();
  for (auto& c : children) {
    const bool gone = c.done || c.p.status();
    nodes.push_back({{"name", c.node},
                     {"state", c.lost                  ? "lost"
                               : gone                  ? "ended"
                               : started.count(c.node) ? "started"
                                                       : "starting"}});
  }
  const nlohmann::json answer = {{"started", started.size() + lost == children.size()}, {"nodes", nodes}};
  control.send(zmq::buffer(answer.dump()), zmq::send_flags::none);
}

// Why the running app cannot take `moves` towards `next`, or nothing: an assignment names a path
// the app does not have (its tree comes from the nodes' live profiles), or a move targets a node
// whose capacity is zero.
std::string plan_refusal(const partitioner::deployment& next, const std::vector<planned_move>& moves,
                         std::vector<child>& children, node_controls& controls) {
  auto reading = take_reading(children, controls);
  if (!reading.total) return "cannot check the new deployment against the running app: " + reading.error;
  for (const auto& a : next.assignments)
    if (!reading.total->tree->find(a.path))
      return next.name + ":" + std::to_string(a.line) + ": assignment `" + a.path + "` names no component of this app";
  for (const auto& m : moves) {
    const auto& n = next.c.nodes[static_cast<std::size_t>(next.c.find(m.to))];
    const bool no_cpu = n.cpu.amount <= 0;
    const bool no_memory = n.memory && n.memory->amount <= 0;
    if (no_cpu || no_memory)
      return next.name + ":" + std::to_string(n.line) + ": node `" + n.name + "` has capacity." +
             (no_cpu ? "cpu" : "memory") + " 0, so it can take no component (the move of `" + m.path + "` there)";
  }
  return {};
}

// Answers one `reconfigure NEW` request on the control socket (control.hpp): moves every subtree
// whose node differs between `running` and NEW, one after the other (reconfigure.hpp), and then runs
// NEW. The reply is one JSON frame: each move's figures, and `error` when one failed (the moves
// before it stay done: `running` follows them).
void answer_reconfigure(zmq::socket_t& control, const std::vector<std::string>& frames, std::vector<child>& children,
                        node_controls& controls, partitioner::deployment& running, bool quiet) {
  auto reply = [&](const nlohmann::json& answer) {
    // The nodes' answers are passed on as they came: bytes that are not UTF-8 are replaced, not fatal.
    control.send(zmq::buffer(answer.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)),
                 zmq::send_flags::none);
  };
  auto refuse = [&](const std::string& why) {
    if (!quiet) banyan::log::warning(tool, "reconfigure: " + why);
    reply({{"error", why}, {"refused", true}, {"moves", nlohmann::json::array()}});
  };
  if (frames.size() != 2)
    return refuse("a reconfigure request is two frames: `reconfigure` and the new deployment's path");
  auto next = partitioner::load_deployment(frames[1]);
  if (!next) return refuse(next.error().message);
  auto moves = moves_between(running, *next);
  if (!moves) return refuse(moves.error().message);
  for (const auto& c : children)
    if (!c.lost && (c.done || c.p.status()))
      return refuse("node " + c.node + " has ended; a reconfiguration needs every node");
  if (std::any_of(children.begin(), children.end(), [](const child& c) { return c.lost; })) {
    if (auto why = follow_failover(children, controls, running); !why.empty()) return refuse(why);
    moves = moves_between(running, *next);  // from where the failover put the subtrees
    if (!moves) return refuse(moves.error().message);
  }
  // The whole plan is checked before the first move, so a refused one has moved nothing.
  if (auto why = plan_refusal(*next, *moves, children, controls); !why.empty()) return refuse(why);
  std::vector<banyan::process*> all;
  for (auto& c : children) all.push_back(&c.p);
  auto wait = [&](std::chrono::milliseconds slice) {
    banyan::process::wait_any(all, slice);
    for (auto& c : children) forward_lines(c);
  };
  // The coordinator (a move's old node) answers even when another node is lost during its move;
  // only its own end leaves nobody to answer.
  auto ended = [&](const std::string& node) -> std::string {
    for (auto& c : children)
      if (c.node == node && c.p.status()) return "node " + c.node + " ended during the move";
    return {};
  };
  const auto gathering =
      std::count_if(moves->begin(), moves->end(), [](const planned_move& m) { return !m.gathers_for.empty(); });
  if (!quiet)
    banyan::log::info(tool, "reconfigure to " + frames[1] + ": " + std::to_string(moves->size()) + " move(s)" +
                                (gathering ? " (" + std::to_string(gathering) +
                                                 " of them gather parts of a subtree that runs on "
                                                 "several nodes before it moves)"
                                           : std::string()));
  const move_channel channel{
      .ask = [&](const std::string& node,
                 const std::vector<std::string>& request) { return controls.ask(node, request); },
      .reply = [&](const std::string& node, std::uint64_t id) { return controls.reply(node, id); }};
  auto answer = run_moves(*moves, channel, wait, ended);
  // Every move that was made: the launch runs that assignment now.
  std::size_t made = 0;  // the moves run in order and stop at the first that fails
  for (const auto& m : answer["moves"]) made += m.contains("error") ? 0 : 1;
  if (made == moves->size()) {
    running.assignments = next->assignments;
  } else {
    running.assignments = after_moves(running, {moves->begin(), moves->begin() + static_cast<std::ptrdiff_t>(made)});
  }
  answer["deployment"] = frames[1];
  if (!quiet)
    banyan::log::info(tool, answer.contains("error") ? "reconfigure failed: " + answer["error"].get<std::string>()
                                                     : "reconfigured to " + frames[1]);
  reply(answer);
}

#ifdef BANYAN_LAUNCH_DASHBOARD
// A reading for the dashboard, with what the launch sees of each node's process.
void answer_dashboard(dashboard& dash, std::vector<child>& children, node_controls& controls,
                      const partitioner::deployment& d) {
  const auto asked = std::chrono::steady_clock::now();
  auto reading = take_reading(children, controls);
  dashboard_reading r{
      .total = std::move(reading.total), .error = std::move(reading.error), .health = std::move(reading.health)};
  r.taken = asked;
  r.assignments = d.assignments;
  for (const auto& n : d.c.nodes) {
    std::string what = "not started";
    for (auto& c : children) {
      if (c.node != n.name) continue;
      if (auto st = c.p.status())
        what = st->signal ? "killed by signal " + std::to_string(st->signal) : "exited " + std::to_string(st->code);
      else what = "running";
    }
    r.processes.emplace_back(n.name, what);
  }
  dash.deliver(std::move(r));
}
#endif

// A fresh folder for the nodes' profiles; empty (and an error logged) when it cannot be made.
std::filesystem::path profile_scratch() {
  char tmpl[] = "/tmp/banyan-launch-XXXXXX";
  if (!mkdtemp(tmpl)) {
    banyan::log::error(tool, std::string("cannot create a temporary folder: ") + std::strerror(errno));
    return {};
  }
  return tmpl;
}

// "a:2,b,a" -> "a,b": the hosts of a `--host` list without their slots, each once.
std::string host_names(const std::string& list) {
  std::string out;
  std::set<std::string> seen;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    item = item.substr(0, item.find(':'));
    if (seen.insert(item).second) out += (out.empty() ? "" : ",") + item;
  }
  return out;
}

// Under a cluster's own launcher: one command; every process gets the same arguments and takes its
// node from its rank. The launcher merges the output and reports failed ranks in its exit code.
int run_via(const options& o, const std::vector<std::string>& names) {
  const std::string k = std::to_string(names.size());
  std::vector<std::string> argv;
  if (o.via == "mpirun") {
    argv = {"mpirun", "-np", k, "--oversubscribe"};  // more nodes than cores is fine on one machine
    if (geteuid() == 0) argv.push_back("--allow-run-as-root");
    // mpirun fills the hosts' slots in rank order; every rank learns the list for `{host}`.
    if (!o.hosts.empty()) argv.insert(argv.end(), {"--host", o.hosts, "-x", "BANYAN_HOSTS=" + o.hosts});
  } else {
    argv = {"srun", "--ntasks", k, "--overcommit"};  // likewise
    // Slurm places the ranks and tells each the layout (SLURM_STEP_NODELIST): only the names go.
    if (!o.hosts.empty()) argv.insert(argv.end(), {"--nodelist", host_names(o.hosts)});
  }
  argv.insert(argv.end(), o.command.begin(), o.command.end());
  argv.insert(argv.end(), {"--deployment", o.deployment});
  // Every rank gets the same arguments: `{node}` makes each write its own profile.
  std::filesystem::path scratch;
  if (!o.profile.empty()) {
    scratch = profile_scratch();
    if (scratch.empty()) return 1;
    argv.insert(argv.end(), {"--profile", (scratch / "{node}.json").string()});
  }
  std::fprintf(stderr, "banyan launch: %s\n", shell_quoted(argv).c_str());
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  auto p = banyan::process::spawn(argv, {.out = output_mode::inherit, .err = output_mode::inherit});
  if (!p)
    return fail(tool, o.via + ": " + p.error().message + " (is it installed? tools/setup installs Open MPI)",
                exit_bad_arguments);
  const auto deadline = std::chrono::steady_clock::now() + o.run_for;
  bool stopping = false;
  bool limit_reached = false;  // --run-for passed: the launcher ending on launch's SIGTERM ended well
  std::vector<banyan::process*> all{&*p};
  while (!p->status()) {
    const bool timed_out = o.run_for.count() > 0 && std::chrono::steady_clock::now() >= deadline;
    if (!stopping && (pending_signal || timed_out)) {
      stopping = true;
      limit_reached = !pending_signal;
      p->signal(pending_signal ? pending_signal : SIGTERM);  // the launcher passes it on to every rank
    }
    banyan::process::wait_any(all, std::chrono::milliseconds(100));
  }
  int code = p->status()->shell_code();
  if (limit_reached && code == 128 + SIGTERM) code = 0;
  nlohmann::json summary = {{"deployment", o.deployment}, {"via", o.via}, {"command", argv}, {"exit_code", code}};
  if (!o.json) std::fprintf(stderr, "banyan launch: %s exited with %d\n", o.via.c_str(), code);
  const bool merged = scratch.empty() || merge_profiles(o, scratch, names, summary);
  if (o.json) std::printf("%s\n", summary.dump(1).c_str());
  return code == 0 && merged ? 0 : 1;
}

int run(const options& o) {
  auto d = partitioner::load_deployment(o.deployment);
  if (!d) return fail(tool, d.error().message, exit_bad_arguments);
  if (o.command.empty())
    return fail(tool, "no app given; usage: banyan launch DEPLOYMENT -- APP ARGS...", exit_bad_arguments);
  // Which nodes to start: every node but those with `join: later`; with --join only the named
  // ones, each told it joins a running deployment.
  std::vector<std::string> start;
  for (std::size_t i = 0; i < d->c.nodes.size(); ++i)
    if (o.join.empty() && !d->joins_later[i]) start.push_back(d->c.nodes[i].name);
  for (const auto& name : o.join) {
    if (d->c.find(name) < 0) {
      std::string names;
      for (const auto& n : d->c.nodes) names += (names.empty() ? "" : ", ") + n.name;
      return fail(tool, "--join `" + name + "`: no such node in " + o.deployment + " (nodes: " + names + ")",
                  exit_bad_arguments);
    }
    start.push_back(name);
  }
  if (!o.dashboard.empty() && !o.via.empty())
    return fail(
        tool, "--dashboard needs the nodes' live profiles, which only a launch of its own processes serves (not --via)",
        exit_bad_arguments);
  if (!o.dashboard.empty() && !o.join.empty())
    return fail(
        tool,
        "--dashboard with --join: the launch that started the deployment serves it (give --dashboard to that one)",
        exit_bad_arguments);
#ifdef BANYAN_LAUNCH_DASHBOARD
  // Before any node starts, so a bad address costs nothing, and the page is there from the first reading.
  std::unique_ptr<dashboard> dash;
  if (!o.dashboard.empty()) {
    std::string why;
    auto where = parse_dashboard_address(o.dashboard, o.dashboard_remote, why);
    if (!where) return fail(tool, why, exit_bad_arguments);
    dash = dashboard::start({.address = where->host,
                             .port = where->port,
                             .remote = o.dashboard_remote,
                             .deployment_file = o.deployment,
                             .deployment = *d},
                            why);
    if (!dash) return fail(tool, why, exit_bad_arguments);
    // Printed whatever the log level and with --json: the user needs it, and port 0 is known only now.
    std::fprintf(stderr, "banyan launch: dashboard at %s\n", dash->url().c_str());
    std::fflush(stderr);
  }
#else
  if (!o.dashboard.empty())
    return fail(tool,
                "this banyan was built without the dashboard: cpp-httplib was not found when it was configured "
                "(Debian: libcpp-httplib-dev; tools/setup installs it), so reconfigure and rebuild",
                exit_bad_arguments);
#endif
  if (!o.via.empty()) {
    if (!o.join.empty())
      return fail(tool, "--join is not supported with --via (start the joining node with the launcher's own command)",
                  exit_bad_arguments);
    if (start.size() != d->c.nodes.size())
      return fail(tool,
                  "--via starts every node of the deployment (rank i runs node i); " + o.deployment +
                      " has nodes with `join: later`",
                  exit_bad_arguments);
    return run_via(o, start);
  }
  std::optional<plan_driver> plan;
  if (!o.plan.empty()) {
    if (!o.join.empty())
      return fail(tool, "--plan with --join: the launch that started the deployment follows the plan",
                  exit_bad_arguments);
    std::vector<std::string> paths;
    double slot = 0, horizon = 0;
    auto p = load_plan_for(o.plan, *d, paths, slot, horizon);
    if (!p) return fail(tool, p.error().message, exit_bad_arguments);
    for (const auto& path : paths)
      if (node_of_path(*d, path).empty())
        return fail(tool, o.plan + ": subtree `" + path + "` is not in " + o.deployment, exit_bad_arguments);
    plan.emplace(std::move(*p), std::move(paths), slot, horizon);
  }
  // The nodes' profiles, final (--profile) and live, go through this folder.
  const std::filesystem::path scratch = profile_scratch();
  if (scratch.empty()) return 1;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGPIPE, SIG_IGN);
  // `banyan profile --from DEPLOYMENT` finds this launch here. A --join launch adds nodes to a
  // deployment another launch serves, so it leaves the socket to that one.
  zmq::context_t zmq_context;
  std::optional<zmq::socket_t> control;
  if (o.join.empty()) {
    try {
      control.emplace(zmq_context, zmq::socket_type::rep);
      control->set(zmq::sockopt::linger, 0);
      control->bind(control_endpoint(o.deployment));
    } catch (const zmq::error_t& e) {
      banyan::log::warning(tool, "no live profile: cannot bind " + control_endpoint(o.deployment) + ": " + e.what());
      control.reset();
    }
  }
  std::optional<profile> previous_live;

  node_controls controls;  // each node's control channel, in `scratch`
  std::vector<child> children;
  for (const auto& name : start) {
    std::vector<std::string> args = o.command;
    args.insert(args.end(), {"--deployment", o.deployment, "--node", name});
    if (!o.join.empty()) args.push_back("--join");
    if (!o.profile.empty()) args.insert(args.end(), {"--profile", (scratch / (name + ".json")).string()});
    spawn_options how{.out = output_mode::capture, .err = output_mode::capture};
    how.env.emplace_back("BANYAN_CONTROL", controls.add(name, scratch));
    if (!o.hosts.empty()) how.env.emplace_back("BANYAN_HOSTS", o.hosts);  // for endpoints with `{host}`
    auto p = banyan::process::spawn(args, how);
    if (!p) {
      std::filesystem::remove_all(scratch);
      return fail(tool, "node " + name + ": " + p.error().message, exit_bad_arguments);  // started ones are killed
    }
    if (!o.json)
      banyan::log::info(tool, "node " + name + (o.join.empty() ? "" : " joining") + " started (pid " +
                                  std::to_string(p->pid()) + ")");
    children.push_back({name, std::move(*p)});
  }

  std::vector<banyan::process*> all;
  for (auto& c : children) all.push_back(&c.p);
  const auto deadline = std::chrono::steady_clock::now() + o.run_for;
  bool stopping = false;
  auto stop_all = [&](int sig) {
    stopping = true;
    for (auto& c : children)
      if (!c.done) c.signalled = true;
    for (auto& c : children) c.p.signal(sig);
  };
  std::size_t running = children.size();
  const std::string root_node = root_node_of(*d);
  bool asked_to_stop = false;  // by a signal or --run-for: non-zero exits are not failures to name
  bool limit_reached = false;  // --run-for passed: a node that ends on launch's SIGTERM ended well
  // After a node fails, the others normally end by themselves (the SDK passes its quit on to every
  // node); launch stops them only if they have not within this grace.
  std::optional<std::chrono::steady_clock::time_point> grace_until;
  std::optional<std::uint64_t> plan_started_id;
  std::optional<std::chrono::steady_clock::time_point> plan_began;
  while (running > 0) {
    if (pending_signal && !stopping) {
      banyan::log::info(tool, "forwarding signal " + std::to_string(pending_signal) + " to every node");
      stop_all(pending_signal);
      asked_to_stop = true;
    }
    if (o.run_for.count() > 0 && !stopping && std::chrono::steady_clock::now() >= deadline) {
      banyan::log::info(tool, "--run-for " + banyan::format_duration(o.run_for) + " passed; stopping every node");
      stop_all(SIGTERM);
      asked_to_stop = true;
      limit_reached = true;
    }
    // Wakes on output, an exit or a signal; at least every 100 ms to check the deadline (10 ms
    // while a plan is followed: its changes are due on time).
    banyan::process::wait_any(all, std::chrono::milliseconds(plan ? 10 : 100));
    if (plan && !stopping) {
      // The plan's clock starts when every node has started (the root's node says so).
      if (!plan_started_id) plan_started_id = controls.ask(root_node, {"started"});
      else if (!plan_began && controls.reply(root_node, *plan_started_id))
        plan_began = std::chrono::steady_clock::now();
      if (plan_began)
        plan->step(std::chrono::duration<double>(std::chrono::steady_clock::now() - *plan_began).count(), controls, *d,
                   o.json);
    }
    zmq::message_t request;
    if (control && control->recv(request, zmq::recv_flags::dontwait)) {
      std::vector<std::string> frames{request.to_string()};
      while (request.more() && frames.size() < 8 && control->recv(request)) frames.push_back(request.to_string());
      while (request.more()) (void)control->recv(request);  // past what any request has: dropped
      if (frames.front() == "reconfigure") answer_reconfigure(*control, frames, children, controls, *d, o.json);
      else if (frames.front() == "sleep" || frames.front() == "wake")
        answer_sleep_wake(*control, frames, children, controls, *d);
      else if (frames.front() == "status") answer_status(*control, frames, children, controls);
      else answer_profile(*control, children, controls, previous_live, o.json);
    }
#ifdef BANYAN_LAUNCH_DASHBOARD
    if (dash && dash->wanted()) answer_dashboard(*dash, children, controls, *d);
#endif
    for (auto& c : children) {
      forward_lines(c);
      if (c.done || !c.p.status()) continue;
      c.done = true;
      --running;
      c.status = c.p.status()->shell_code();
      if (!o.json) banyan::log::info(tool, "node " + c.node + " exited with " + std::to_string(c.status));
      if (c.status != 0 && !stopping && !grace_until) {
        // Killed (a signal: kill -9, a crash) rather than ended by the app's own exit code, or told
        // by another node that the run ended: a node lost, whose subtrees fail over.
        if (running > 0 && c.node != root_node && c.status > 128 && !c.ended_by_peer) {
          // The run goes on without it: the root's node fails its subtrees over to the survivors.
          c.lost = true;
          banyan::log::warning(tool, "node " + c.node + " was lost (exit " + std::to_string(c.status) +
                                         "); the run goes on: node " + root_node +
                                         ", which runs the root, fails its subtrees over to the others");
        } else {
          grace_until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
        }
      }
    }
    if (grace_until && !stopping && running > 0 && std::chrono::steady_clock::now() >= *grace_until) {
      banyan::log::info(tool, "a node failed and the others are still running after 3 s; stopping them");
      stop_all(SIGTERM);
    }
  }
  for (auto& c : children) forward_lines(c);
  if (plan) {
    const auto& t = plan->done();
    banyan::log::info(tool, "plan " + o.plan + ": " + std::to_string(t.wakes) + " wake(s) and " +
                                std::to_string(t.sleeps) + " sleep(s) asked, " + std::to_string(t.failed) + " failed");
  }
  // The nodes where a failure began: non-zero, and not told by another node that it ended the run.
  std::string failed, stopped_by_them;
  for (const auto& c : children) {
    if (c.status == 0 || c.lost) continue;
    if (c.signalled && !c.ended_by_peer) continue;  // stopped by launch
    std::string& list = c.ended_by_peer ? stopped_by_them : failed;
    list += (list.empty() ? "" : ", ") + c.node;
  }
  if (!failed.empty() && !asked_to_stop && !o.json) {
    banyan::log::error(tool,
                       "failed: " + failed + (stopped_by_them.empty() ? "" : " (which ended " + stopped_by_them + ")"));
  }

  // A run ended by its own limit is a success: a node launch stopped then exits 0 or as its SIGTERM
  // says (128+15: the SDK ends a run on a signal that way), unless it had failed before.
  auto ended_by_limit = [&](const child& c) { return limit_reached && c.signalled && c.status == 128 + SIGTERM; };
  int code = 0;
  for (const auto& c : children)
    if (c.status != 0 && !ended_by_limit(c) && !c.lost) code = 1;
  nlohmann::json summary = {{"deployment", o.deployment}, {"exit_code", code}, {"nodes", nlohmann::json::array()}};
  for (const auto& c : children) {
    summary["nodes"].push_back({{"node", c.node}, {"exit_code", c.status}});
    if (c.lost) summary["failed_over"].push_back(c.node);
  }
#ifdef BANYAN_LAUNCH_DASHBOARD
  if (dash) summary["dashboard"] = dash->url();
#endif
  if (control) {
    // ZeroMQ leaves an ipc socket's file behind: without it a later `banyan profile --from` knows at
    // once that no launch runs.
    control.reset();
    std::filesystem::remove(control_socket_path(o.deployment));
  }
  if (!o.profile.empty()) {
    std::vector<std::string> names;
    for (const auto& c : children)
      if (!c.lost) names.push_back(c.node);  // a lost node wrote no profile
    if (!merge_profiles(o, scratch, names, summary)) code = 1;
  }
  std::filesystem::remove_all(scratch);
  summary["exit_code"] = code;
  if (o.json) std::printf("%s\n", summary.dump(1).c_str());
  else std::fprintf(stderr, "banyan launch: %s\n", code == 0 ? "every node succeeded" : "some node failed");
  return code;
}

}  // namespace

action setup_launch(CLI::App& sub) {
  auto o = std::make_shared<options>();
  sub.add_option("deployment", o->deployment, "Deployment YAML (nodes, endpoints, assignments)")->required();
  sub.add_option("--profile", o->profile, "Merge the nodes' profiles into this JSON file");
  auto* run_for =
      add_duration_option(sub, "--run-for", o->run_for, "Stop every node (SIGTERM) after this long (0: no limit)");
  sub.add_flag("--json", o->json, "Print a JSON summary on stdout");
  sub.add_option("--via", o->via, "Start the nodes with this launcher (rank i runs the i-th node); prints the command")
      ->check(CLI::IsMember({"mpirun", "srun"}));
  sub.add_option(
         "--hosts", o->hosts,
         "Host list, Open MPI's --host syntax (a,b:2,c: rank i runs on the i-th slot); endpoints may name `{host}`. "
         "mpirun gets --host LIST, srun --nodelist; every node gets BANYAN_HOSTS=LIST (srun: Slurm's own layout)")
      ->type_name("LIST");
  sub.add_option("--join", o->join, "Start only this node (repeatable), joining the deployment that is already running")
      ->type_name("NODE")
      ->allow_extra_args(false);  // one node per --join: what follows is not another node
  sub.add_option("command", o->command, "-- APP ARGS...: the app binary and its arguments")->required();
  sub.add_option(
         "--dashboard", o->dashboard,
         "Serve a live web page of the run on ADDR:PORT (loopback only; port 0: any free one, the URL is printed): "
         "the tree coloured by node, per-edge and per-link traffic, link health, and a re-partitioning plan")
      ->type_name("ADDR:PORT");
  sub.add_flag("--dashboard-remote", o->dashboard_remote,
               "Allow a --dashboard address other than loopback (the page has no authentication: anyone who reaches it "
               "sees the run)");
  sub.add_option("--plan", o->plan,
                 "Follow a periodic plan (banyan plan --out): wake and put to sleep its subtrees on schedule, on the "
                 "nodes it names, repeating every horizon from the start")
      ->type_name("PLAN.yaml");
  add_deprecated_alias(sub, run_for, "--timeout", tool);
  return [o] { return run(*o); };
}

}  // namespace banyan::cli
