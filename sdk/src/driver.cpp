// banyan::run (app.hpp): starts an app's tree in this process, alone or as one node of a
// deployment, runs it until it quits, a signal or --run-for ends it, and returns how it ended with
// its traffic. Under `banyan launch` it also serves the launch's control channel.
#include "banyan/sdk/app.hpp"

#include "cluster/control_channel.hpp"
#include "cluster/deployment.hpp"
#include "cluster/node.hpp"
#include "command_line.hpp"
#include "component_actor.hpp"
#include "run_state.hpp"

#include <nlohmann/json.hpp>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <thread>

namespace banyan {

namespace {

// Turns SIGINT/SIGTERM during the run into quit(128+sig). A handler (not a blocked mask) because
// libraries may have started threads before the run (e.g. a BLAS thread pool), and a signal may
// land on any of them. The handler only stores the signal and writes to an eventfd (both
// async-signal-safe); a watcher thread blocked on the eventfd acts on it.
std::atomic<int> caught_signal{0};
std::atomic<int> signal_fd{-1};
static_assert(std::atomic<int>::is_always_lock_free);
extern "C" void on_quit_signal(int sig) {
  caught_signal.store(sig);
  std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(signal_fd.load(), &one, sizeof one);
}

class signal_guard {
 public:
  explicit signal_guard(detail::completion& done) : fd_(::eventfd(0, EFD_CLOEXEC)) {
    if (fd_ < 0) throw std::runtime_error("eventfd failed");
    caught_signal = 0;
    signal_fd = fd_;
    struct sigaction sa {};
    sa.sa_handler = on_quit_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
    watcher_ = std::thread([this, &done] {
      std::uint64_t v;
      while (::read(fd_, &v, sizeof v) == sizeof v || errno == EINTR) {
        if (done_.load()) return;
        if (int sig = caught_signal.exchange(0)) done.request_quit(128 + sig, /*urgent=*/true);
      }
    });
  }
  ~signal_guard() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
    done_.store(true);
    std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(fd_, &one, sizeof one);
    watcher_.join();
    signal_fd = -1;
    ::close(fd_);
  }

 private:
  int fd_;
  struct sigaction old_int_ {
  }, old_term_{};
  std::atomic<bool> done_{false};
  std::thread watcher_;
};

// The profile of the run so far. Safe while the actors run: the loads are relaxed atomics, the
// routing table's and the request counters' reads are documented safe from any thread.
profile traffic_so_far(detail::run_state& state, const run_options& options,
                       std::chrono::steady_clock::time_point started) {
  profile p;
  p.tree = state.shared_tree();
  p.mode = options.mode;
  p.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  p.loads = state.loads().snapshot();
  p.edges = state.routing().traffic();
  state.requests().add_to(p.edges);  // request/reply traffic on the edges of its paths
  p.flows = state.routing().flows();
  p.composite.resize(state.tree().size());
  for (vertex_id v = 0; v < state.tree().size(); ++v) p.composite[v] = state.spec_of(v).is_composite();
  return p;
}

// The node's link health for the live profile (docs/runtime.md, "Dashboard"): per link, what the
// transport says of it now (up, stalled, gone: the dashboard's up / stalled / lost), whether a send
// would wait for credit (publishers pause), and its counters; and how often this node's publishers
// paused, and what it refused of each peer's envelopes. Safe from any thread.
std::string link_health_json(const detail::node_runtime* node) {
  if (!node) return "{}";
  const auto& names = node->deployment().names;
  nlohmann::json links = nlohmann::json::array();
  for (std::size_t n = 0; n < names.size(); ++n) {
    if (n == node->deployment().self) continue;
    const auto s = node->link_health(static_cast<node_id>(n));
    links.push_back({{"to", names[n]},
                     {"health", s.stalled        ? "stalled"
                                : s.up           ? "up"
                                : s.sessions > 0 ? "lost"
                                                 : "connecting"},
                     {"credit_full", node->link_full(static_cast<node_id>(n))},
                     {"credit_waits", s.credit_waits},
                     {"outstanding", s.outstanding},
                     {"outstanding_bytes", s.outstanding_bytes},
                     {"messages_received", s.messages_received},
                     {"bytes_received", s.bytes_received},
                     {"stalls", s.stalls},
                     {"sessions", s.sessions},
                     {"resent", s.resent},
                     {"send_failures", s.send_failures},
                     {"lost_on_down", s.lost_on_down}});
  }
  // What this node refused of each peer's envelopes (not the sender's to send), per kind.
  nlohmann::json refused = nlohmann::json::object();
  for (const auto& [key, count] : node->refused_counts()) refused[names[key.first]][key.second] = count;
  const nlohmann::json health = {{"node", node->self_name()},
                                 {"publisher_pauses", node->publisher_pauses()},
                                 {"links", links},
                                 {"refused", refused}};
  return health.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

run_result run(app& application, const run_options& options) {
  auto state = std::make_shared<detail::run_state>(application, options);
  run_result out;
  auto fail = [&](const error& e) {
    out.exit_code = 2;
    out.error = e.what();
    return out;
  };
  std::unique_ptr<detail::node_runtime> node;
  if (!options.deployment.empty()) {
    auto d = detail::resolve_deployment(options.deployment, options.node, state->tree(), options.insecure);
    if (!d) return fail(d.error());
    node = std::make_unique<detail::node_runtime>(*state, std::move(*d));
    state->set_node(node.get(), detail::locality(node->deployment().node_of, node->deployment().self));
    if (!options.state_dir.empty()) {
      auto durable = detail::durable_states::open(options.state_dir, node->self_name());
      if (!durable) return fail(durable.error());
      state->set_durable(std::move(durable).value());
    }
  }
  auto started = std::chrono::steady_clock::now();
  {
    auto& done = state->done();
    std::unique_ptr<detail::control_channel> control;
    signal_guard signals(done);
    caf::actor_system_config cfg;
    unsigned threads = options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
    cfg.set("scheduler.max-threads", static_cast<std::size_t>(threads));
    // An actor gives its thread back after this many messages, so one with a long backlog (a slow
    // subscriber) cannot keep the gateway or a shutdown waiting behind it for seconds.
    cfg.set("scheduler.max-throughput", static_cast<std::size_t>(100));
    caf::actor_system system{cfg};
    if (node) {
      auto r = node->start(system, options);
      if (!r) {
        node->stop();
        return fail(r.error());
      }
    }
    // Under `banyan launch`: its live profile and live move requests (control_channel.hpp).
    if (const auto endpoint = detail::control_endpoint_from_environment(); !endpoint.empty()) {
      auto opened = detail::control_channel::open(
          endpoint,
          [state, &options, started, n = node.get()] {
            auto p = traffic_so_far(*state, options, started);
            if (n) p.links = n->data_links();  // relaxed atomic counters
            return std::pair{p.to_json_text(), link_health_json(n)};
          },
          node.get());
      if (!opened) {
        if (node) node->stop();
        return fail(opened.error());
      }
      control = std::move(*opened);
    }
    auto roots = state->where().roots(state->tree());
    done.set_roots_alive(roots.size());
    // The tree's root is started and stopped from here; the other roots of a node (whose parents
    // run on other nodes) by the node's gateway, which stands in for their remote supervisors.
    // A node may host nothing at start (a spare, or a target for moves): it still joins the cluster
    // and waits for the app's end like any other.
    const bool only_the_root = roots.size() == 1 && roots.front() == 0;
    if (node && !only_the_root) node->host_roots();
    std::vector<caf::actor> root_actors;
    for (auto v : roots) {
      if (v != 0) continue;
      auto a = detail::spawn_component(system, state, v, caf::actor_addr{}, true);
      state->set_actor(v, a);
      a->attach_functor([state](const caf::error& reason) {
        state->done().root_down(reason && reason != caf::exit_reason::normal &&
                                reason != caf::exit_reason::user_shutdown);
      });
      root_actors.push_back(a);
    }
    std::thread announcer;
    if (node) {
      announcer = std::thread([&] {
        state->done().wait_started(roots.size());
        if (!state->done().ending()) node->announce_ready();
      });
    }
    std::optional<std::chrono::steady_clock::time_point> deadline;
    if (options.max_runtime.count() > 0) deadline = started + options.max_runtime;
    while (true) {
      auto w = done.wait(deadline, std::chrono::seconds(1));
      if (w == detail::completion::wake::idle) continue;
      if (node) {
        node->broadcast_quit(done.exit_code(), done.urgent());  // one node's quit ends the whole app
        node->release_publishers();                             // a paused publisher must not hold up the stop
      }
      // quit(): a graceful stop (what was sent before is delivered first). A signal: stop now, ahead
      // of queued messages, so a backlog cannot hold the process.
      for (const auto& a : root_actors) {
        if (done.urgent()) caf::anon_send<caf::message_priority::high>(a, detail::shutdown_atom::value, true);
        else caf::anon_send(a, detail::shutdown_atom::value, false);
      }
      if (node) node->shutdown_hosted(done.urgent());
      break;
    }
    done.wait_roots_down();
    root_actors.clear();
    if (announcer.joinable()) announcer.join();
    control.reset();  // before the node: a move's answer may still come, and is then dropped
    if (node) {
      out.traffic.links = node->data_links();
      node->stop();
    }
    system.await_all_actors_done();
  }
  if (node && !node->start_error().empty()) {
    out.exit_code = 2;
    out.error = node->start_error();
    return out;
  }
  out.exit_code = state->done().exit_code();
  auto links = std::move(out.traffic.links);
  out.traffic = traffic_so_far(*state, options, started);
  out.traffic.links = std::move(links);
  return out;
}

int run(app& application, int argc, char** argv) {
  auto& opts = application.options();
  if (auto exit_code = opts.parse(argc, argv)) return *exit_code;  // --help, or a bad argument (2)
  const run_options options = opts.impl_->run;
  run_result r;
  try {
    r = run(application, options);
  } catch (const std::exception& e) {
    std::cerr << "banyan: " << e.what() << "\n";
    return 2;
  }
  if (!r.error.empty()) {
    std::cerr << "banyan: " << r.error << "\n";
    return r.exit_code;
  }
  if (options.report) std::cout << r.traffic.traffic_table();
  if (!options.profile_path.empty()) {
    auto written = r.traffic.write(detail::profile_path_of(options));
    if (!written) {
      std::cerr << "banyan: " << written.error().what() << "\n";
      return r.exit_code ? r.exit_code : 1;
    }
  }
  return r.exit_code;
}

}  // namespace banyan
