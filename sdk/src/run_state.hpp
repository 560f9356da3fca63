// State shared by all component actors of one run: the tree, the broker's routing table, the load
// meter and the directory from component to its current actor. Private to the SDK.
#pragma once

#include "banyan/broker/profile.hpp"
#include "banyan/broker/routing.hpp"
#include "banyan/sdk/app.hpp"

#include <caf/all.hpp>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string_view>
#include <vector>

namespace banyan::detail {

using deliver_atom = caf::atom_constant<caf::atom("deliver")>;
using post_atom = caf::atom_constant<caf::atom("post")>;
using request_atom = caf::atom_constant<caf::atom("request")>;
using shutdown_atom = caf::atom_constant<caf::atom("shutdown")>;
using started_atom = caf::atom_constant<caf::atom("started")>;

// A published message as all its in-process subscribers share it.
struct route_info {
  std::string topic;
  vertex_id publisher;
  vertex_id scope;
  std::shared_ptr<const route> plan;
  std::vector<caf::actor> targets;  // parallel to plan->targets()
  std::uint64_t routing_version;
  std::uint64_t directory_version;
};

struct envelope {
  std::shared_ptr<const route_info> info;
  payload data;
  std::uint64_t sequence;
};

struct task {
  std::function<void()> fn;
};

class run_state {
 public:
  run_state(const app& application, const run_options& options);

  const component_tree& tree() const { return *tree_; }
  std::shared_ptr<const component_tree> shared_tree() const { return tree_; }
  const spec& spec_of(vertex_id v) const { return *specs_[v]; }
  routing_table& routing() { return routing_; }
  load_meter& loads() { return loads_; }
  const run_options& options() const { return options_; }

  // The directory: which actor currently runs each component (invalid while it is not running).
  void set_actor(vertex_id v, caf::actor a);
  caf::actor actor_of(vertex_id v);
  std::uint64_t directory_version() const { return directory_version_.load(std::memory_order_acquire); }

  void log(std::string_view path, std::string_view line);

  // Completion: the first quit() code wins; the root's termination ends the run.
  void request_quit(int exit_code);
  void root_down(bool failed);
  // Waits at most `slice` for quit, the root's termination or `deadline` (if set); `idle` means none.
  enum class wake { quit, root_down, deadline, idle };
  wake wait(std::optional<std::chrono::steady_clock::time_point> deadline, std::chrono::milliseconds slice);
  void wait_root_down();
  int exit_code() const;
  bool root_failed() const;

 private:
  void add_specs(const spec& s, vertex_id v);

  std::shared_ptr<component_tree> tree_;
  std::vector<const spec*> specs_;
  run_options options_;
  routing_table routing_;
  load_meter loads_;

  std::mutex directory_mutex_;
  std::vector<caf::actor> actors_;
  std::atomic<std::uint64_t> directory_version_{1};

  std::mutex log_mutex_;

  mutable std::mutex done_mutex_;
  std::condition_variable done_cv_;
  bool quit_requested_ = false;
  int exit_code_ = 0;
  bool root_down_ = false;
  bool root_failed_ = false;
};

}  // namespace banyan::detail

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<const banyan::detail::envelope>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(banyan::detail::task)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(banyan::payload)
