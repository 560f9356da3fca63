#include "banyan/sdk/app.hpp"

#include "component_actor.hpp"
#include "run_state.hpp"

#include <csignal>
#include <iostream>
#include <thread>

namespace banyan {

spec& spec::add(std::string name, bool is_composite, supervision policy, factory make) {
  if (!composite_)
    throw std::logic_error("component `" + name_ + "` is a leaf; only composites have children");
  children_.emplace_back(std::move(name), is_composite, policy, std::move(make));
  return children_.back();
}

app::app(std::string root_name, supervision root_policy)
    : root_(std::move(root_name), true, root_policy, [] { return std::unique_ptr<component>(new composite()); }),
      cli_(std::make_unique<CLI::App>("banyan app " + root_.name())) {}

namespace {

// Blocks SIGINT/SIGTERM for the run (CAF's threads inherit the mask) and turns them into quit(128+sig).
class signal_guard {
 public:
  explicit signal_guard(detail::run_state& state) {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
    waiter_ = std::thread([this, &state] {
      timespec slice{0, 20'000'000};
      while (!done_.load()) {
        int sig = sigtimedwait(&set_, nullptr, &slice);
        if (sig > 0) state.request_quit(128 + sig);
      }
    });
  }
  ~signal_guard() {
    done_.store(true);
    waiter_.join();
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t set_{}, old_{};
  std::atomic<bool> done_{false};
  std::thread waiter_;
};

}  // namespace

run_result run(app& application, const run_options& options) {
  auto state = std::make_shared<detail::run_state>(application, options);
  run_result out;
  auto started = std::chrono::steady_clock::now();
  {
    signal_guard signals(*state);
    caf::actor_system_config cfg;
    unsigned threads = options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
    cfg.set("scheduler.max-threads", static_cast<std::size_t>(threads));
    caf::actor_system system{cfg};
    auto root = system.spawn<detail::component_actor>(state, vertex_id{0}, caf::actor_addr{});
    state->set_actor(0, root);
    root->attach_functor([state](const caf::error& reason) {
      state->root_down(reason && reason != caf::exit_reason::normal && reason != caf::exit_reason::user_shutdown);
    });
    std::optional<std::chrono::steady_clock::time_point> deadline;
    if (options.max_runtime.count() > 0) deadline = started + options.max_runtime;
    while (true) {
      auto w = state->wait(deadline, std::chrono::milliseconds(200));
      if (w == detail::run_state::wake::idle) continue;
      if (w != detail::run_state::wake::root_down) caf::anon_send(root, detail::shutdown_atom::value);
      break;
    }
    state->wait_root_down();
    root = caf::actor{};
    system.await_all_actors_done();
  }
  out.exit_code = state->exit_code();
  out.traffic.tree = state->shared_tree();
  out.traffic.mode = options.mode;
  out.traffic.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  out.traffic.loads = state->loads().snapshot();
  out.traffic.edges = state->routing().traffic();
  out.traffic.composite.resize(state->tree().size());
  for (vertex_id v = 0; v < state->tree().size(); ++v) out.traffic.composite[v] = state->spec_of(v).is_composite();
  return out;
}

int run(app& application, int argc, char** argv) {
  CLI::App& cli = application.cli();
  run_options options;
  std::string mode = "hier";
  double run_for = 0;
  cli.add_option("--mode", mode, "Routing: hier (along the tree) or flat-p2p (one copy per subscriber)")
      ->check(CLI::IsMember({"hier", "flat-p2p"}))
      ->capture_default_str();
  cli.add_option("--threads", options.threads, "CAF scheduler threads (default: the machine's cores)");
  cli.add_option("--profile", options.profile_path, "Write the run's traffic profile (JSON) to this file");
  cli.add_flag("--report", options.report, "Print the per-edge traffic table at the end");
  cli.add_option("--run-for", run_for, "Stop after this many seconds (default: until the app quits)");
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli.exit(e);
  }
  options.mode = *parse_routing_mode(mode);
  options.max_runtime = std::chrono::milliseconds(static_cast<long long>(run_for * 1000));
  run_result r;
  try {
    r = run(application, options);
  } catch (const std::exception& e) {
    std::cerr << "banyan: " << e.what() << "\n";
    return 2;
  }
  if (options.report) std::cout << r.traffic.traffic_table();
  if (!options.profile_path.empty()) {
    auto written = r.traffic.write(options.profile_path);
    if (!written) {
      std::cerr << "banyan: " << written.error().what() << "\n";
      return r.exit_code ? r.exit_code : 1;
    }
  }
  return r.exit_code;
}

}  // namespace banyan
