#include "banyan/sdk/options.hpp"

#include "cluster/deployment.hpp"
#include "command_line.hpp"

#include "banyan/base/log.hpp"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <mutex>

namespace banyan {

namespace {

// banyan::run's own options (docs/sdk.md, docs/cli.md), bound to `c`; listed in their own group.
void add_run_options(options& o, detail::command_line& c) {
  o.add("--mode", c.mode,
        "Routing: hier (along the tree), flat-p2p (one copy per subscriber) or flat-node (one per node)");
  o.add("--threads", c.run.threads, "CAF scheduler threads (default: the machine's cores)");
  o.add("--profile", c.run.profile_path,
        "Write the run's traffic profile (JSON) to this file ({node}: the node's name)");
  o.add("--report", c.run.report, "Print the per-edge traffic table at the end");
  o.add("--run-for", c.run.max_runtime, "Stop after this long, e.g. 30s (default: until the app quits)");
  o.add("--deployment", c.run.deployment, "Run as one node of this deployment (YAML, see docs/formats.md)");
  o.add("--node", c.run.node,
        "This node's name in the deployment (default: the i-th node for launcher rank i: mpirun, srun)");
  o.add("--join", c.run.join, "Join a deployment that is already running (wait only for the root's node at start)");
  o.add("--heartbeat-timeout", c.run.heartbeat_timeout,
        "A peer node silent this long is stalled (given up after --give-up-after, or at once if its process is gone)")
      .positive();
  o.add("--give-up-after", c.run.give_up_after,
        "A stalled peer node still silent this long is given up: what it ran is reported lost and fails over "
        "(at least --heartbeat-timeout)")
      .positive();
  o.add("--start-timeout", c.run.start_timeout, "Give up when the peer nodes are not all up this long after start")
      .positive();
  o.add("--max-payload", c.run.max_payload_bytes,
        "Largest payload a publish or request may carry in a multi-node run (bytes)")
      .positive();
  o.add("--state-dir", c.run.state_dir,
        "Multi-node: keep every component state (keep_state) durable in this folder, shared by the nodes, so a "
        "failover restarts a lost component from it");
  o.add("--insecure", c.run.insecure,
        "Multi-node: allow a deployment without CURVE keys on endpoints that are not loopback (anyone who reaches "
        "them can join as a node)");
  // The spelling before docs/cli.md, for one release; hidden from --help, warned about in parse().
  o.add("--heartbeat-timeout-ms", c.heartbeat_ms, "").positive();
  for (const char* name :
       {"--mode", "--threads", "--profile", "--report", "--run-for", "--deployment", "--node", "--join",
        "--heartbeat-timeout", "--give-up-after", "--start-timeout", "--max-payload", "--state-dir", "--insecure"})
    c.cli.get_option(name)->group("banyan options");
  c.cli.get_option("--heartbeat-timeout-ms")->group("");
  c.cli.get_option("--mode")->type_name("hier|flat-p2p|flat-node");
  c.cli.get_option("--threads")->default_str("");  // 0 stands for "the machine's cores"
  c.cli.get_option("--run-for")->default_str("");  // 0 stands for "until the app quits"
}

// What CLI11 cannot check alone; prints the problem like CLI11 does. Returns false on an error.
bool check_run_options(detail::command_line& c) {
  auto fail = [](const std::string& what) {
    std::cerr << what << "\nRun with --help for more information.\n";
    return false;
  };
  auto mode = parse_routing_mode(c.mode);
  if (!mode) return fail("--mode: " + mode.error().message);
  c.run.mode = *mode;
  if (c.cli.count("--heartbeat-timeout-ms")) {
    if (!c.warned_heartbeat_ms) log::warning("banyan", "--heartbeat-timeout-ms is deprecated; use --heartbeat-timeout");
    c.warned_heartbeat_ms = true;
    if (!c.cli.count("--heartbeat-timeout")) c.run.heartbeat_timeout = std::chrono::milliseconds(c.heartbeat_ms);
  }
  if (!c.run.node.empty() && c.run.deployment.empty()) return fail("--node needs --deployment FILE");
  if (c.run.join && c.run.deployment.empty()) return fail("--join needs --deployment FILE");
  // --deployment without --node: the node comes from a launcher's rank (mpirun, srun).
  if (!c.run.deployment.empty() && c.run.node.empty() &&
      std::none_of(std::begin(detail::launcher_rank_variables), std::end(detail::launcher_rank_variables),
                   [](const char* var) { return std::getenv(var) != nullptr; })) {
    return fail("--deployment needs --node NAME (or a launcher's rank: mpirun and srun set one)");
  }
  return true;
}

}  // namespace

namespace {

// Every live options' bound variables, for holds_option_variable (app.hpp's constructor arguments).
std::mutex bound_mutex;
std::vector<const void*>& bound_variables() {
  static std::vector<const void*> v;
  return v;
}

}  // namespace

bool detail::holds_option_variable(const void* begin, std::size_t size) {
  const auto* b = static_cast<const char*>(begin);
  std::lock_guard lock(bound_mutex);
  for (const void* v : bound_variables()) {
    const auto* p = static_cast<const char*>(v);
    if (p >= b && p < b + size) return true;
  }
  return false;
}

options::options(const std::string& app_name) : impl_(std::make_unique<detail::command_line>(app_name)) {}

options::~options() {
  if (!impl_) return;  // moved from
  std::lock_guard lock(bound_mutex);
  auto& all = bound_variables();
  for (const auto& b : impl_->bindings) {
    if (auto it = std::find(all.begin(), all.end(), b.variable); it != all.end()) all.erase(it);
  }
}
options::options(options&&) noexcept = default;
options& options::operator=(options&&) noexcept = default;

void options::description(std::string text) { impl_->cli.description(std::move(text)); }

options::option options::add_binding(std::string name, std::string help, detail::option_binding b) {
  if (b.variable) {
    std::lock_guard lock(bound_mutex);
    bound_variables().push_back(b.variable);
  }
  auto& binding = impl_->bindings.emplace_back(std::move(b));
  auto* bound = &binding;
  const std::string shown = name;
  CLI::Option* opt = nullptr;
  if (binding.flag) {
    opt = impl_->cli.add_flag_function(
        name, [bound](std::int64_t count) { bound->set_flag(count > 0); }, help);
  } else if (binding.list) {
    opt = impl_->cli.add_option_function<std::vector<std::string>>(
        name,
        [bound, shown](const std::vector<std::string>& items) {
          bound->reset();
          for (const auto& item : items)
            if (auto wrong = bound->parse(item, bound->positive)) throw CLI::ValidationError(shown, *wrong);
        },
        help);
    opt->delimiter(',');
  } else {
    opt = impl_->cli.add_option_function<std::string>(
        name,
        [bound, shown](const std::string& text) {
          if (auto wrong = bound->parse(text, bound->positive)) throw CLI::ValidationError(shown, *wrong);
        },
        help);
  }
  if (!binding.type.empty()) opt->type_name(binding.type);
  if (!binding.default_text.empty()) opt->default_str(binding.default_text);
  return option(bound);
}

std::optional<int> options::parse(int argc, char** argv) {
  auto& c = *impl_;
  if (!c.run_options_added) {
    c.run_options_added = true;
    add_run_options(*this, c);
  }
  try {
    c.cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help (and --help-all) end with 0; every other parse error is a bad argument: 2.
    const int code = c.cli.exit(e);
    return code == 0 ? 0 : 2;
  }
  if (!check_run_options(c)) return 2;
  return std::nullopt;
}

}  // namespace banyan
