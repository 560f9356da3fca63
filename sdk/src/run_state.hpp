// State shared by all component actors of one run: the tree, the broker's routing table, the load
// meter and the directory from component to its current actor. Private to the SDK.
#pragma once

#include "banyan/broker/placement.hpp"
#include "banyan/broker/profile.hpp"
#include "banyan/broker/routing.hpp"
#include "banyan/runtime/transport.hpp"
#include "banyan/sdk/app.hpp"

#include <caf/all.hpp>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <string_view>
#include <vector>

namespace banyan::detail {

using deliver_atom = caf::atom_constant<caf::atom("deliver")>;
using post_atom = caf::atom_constant<caf::atom("post")>;
using request_atom = caf::atom_constant<caf::atom("request")>;
using shutdown_atom = caf::atom_constant<caf::atom("shutdown")>;
using started_atom = caf::atom_constant<caf::atom("started")>;
using ready_atom = caf::atom_constant<caf::atom("ready")>;
using lost_atom = caf::atom_constant<caf::atom("lost")>;
using resume_atom = caf::atom_constant<caf::atom("resume")>;
using reply_atom = caf::atom_constant<caf::atom("reply")>;        // a reply from another node
using expire_atom = caf::atom_constant<caf::atom("expire")>;      // a cross-node request's timeout

class node_runtime;

// Paused actors (component_actor::pause) waiting on something named by a key — a congested
// component or node link. Each gets exactly one `resume`: when its key is released, or at close(),
// after which add() resumes at once.
class resume_list {
 public:
  void add(std::uint32_t key, caf::actor who);
  void release(std::uint32_t key) { resume(false, key); }
  void close();

 private:
  void resume(bool all, std::uint32_t key);
  std::mutex mutex_;
  std::vector<std::pair<std::uint32_t, caf::actor>> waiters_;
  bool closed_ = false;
};

// A published message as all its in-process subscribers share it.
struct route_info {
  std::string topic;
  vertex_id publisher;
  vertex_id scope;
  std::shared_ptr<const route> plan;
  std::vector<caf::actor> targets;   // parallel to plan->targets(); invalid for remote targets
  std::vector<std::uint32_t> local;  // indices of the targets this node delivers to
  std::vector<hop> hops;             // copies for other nodes (multi-node runs only)
  std::uint64_t routing_version;
  std::uint64_t directory_version;
};

struct envelope {
  std::shared_ptr<const route_info> info;
  payload data;
  std::uint64_t sequence;
  // Set for a message from another node: its link's delivery receipt, released (credit to the
  // sending node) when every local target has handled the message.
  std::shared_ptr<const void> receipt;
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

  // In-process flow control: deliveries sent to each component and not yet handled. A publisher
  // that finds a target at `backlog_limit` pauses (component_actor::pause) until it is down to half.
  static constexpr std::int64_t backlog_limit = 1024;
  void queued(vertex_id v) { backlog_[v].fetch_add(1, std::memory_order_relaxed); }
  void handled(vertex_id v) {
    if (backlog_[v].fetch_sub(1, std::memory_order_acq_rel) - 1 == backlog_limit / 2) resume_drained(v);
  }
  bool congested(vertex_id v) const { return backlog_[v].load(std::memory_order_relaxed) >= backlog_limit; }
  void resume_when_drained(vertex_id v, caf::actor who);

  // --- multi-node runs (see node.hpp); in a single process every component is local -----------
  void set_node(node_runtime* node, std::vector<node_index> node_of, node_index self);
  node_runtime* node() const { return node_; }
  bool is_local(vertex_id v) const { return node_ == nullptr || node_of_[v] == self_; }
  const std::vector<node_index>& node_of() const { return node_of_; }
  // The components this process starts itself: the root, or every local component whose parent
  // runs elsewhere.
  std::vector<vertex_id> local_roots() const;
  // Publishes wait until every node has started (so no node misses another's early messages).
  bool cluster_ready() const { return cluster_ready_.load(std::memory_order_acquire); }
  void set_cluster_ready();
  void local_root_started();
  void wait_local_started();
  bool ending() const;
  // Runs in the gateway actor for each envelope from another node.
  void handle_remote(node_runtime& node, const std::string& peer, runtime::envelope& e);
  void notify_child_lost(vertex_id parent, std::string child_path, std::string reason);

  // Completion: the first quit() code wins; the root's termination (every local root's, in a
  // multi-node run, or the failure of any) ends the run.
  void request_quit(int exit_code, bool urgent = false);
  bool urgent_stop() const;
  void set_roots_alive(std::size_t n);
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

  void resume_drained(vertex_id v);
  std::unique_ptr<std::atomic<std::int64_t>[]> backlog_;
  resume_list drain_waiters_;

  node_runtime* node_ = nullptr;
  std::vector<node_index> node_of_;
  node_index self_ = 0;
  std::atomic<bool> cluster_ready_{true};
  std::size_t local_roots_started_ = 0;
  struct remote_route {
    std::shared_ptr<route_info> info;
    std::uint64_t routing_version;
  };
  std::unordered_map<std::string, remote_route> remote_routes_;  // gateway actor only
  std::vector<std::pair<std::string, runtime::envelope>> early_data_;  // gateway actor only

  mutable std::mutex done_mutex_;
  std::condition_variable done_cv_;
  bool quit_requested_ = false;
  bool urgent_ = false;
  int exit_code_ = 0;
  bool root_down_ = false;
  std::size_t roots_alive_ = 1;
  bool root_failed_ = false;
};

}  // namespace banyan::detail

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<const banyan::detail::envelope>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(banyan::detail::task)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(banyan::payload)
