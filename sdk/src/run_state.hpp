// The state shared by every actor of one run: a thin aggregate of single-concern parts, each in its
// own header with its own contract. Private to the SDK.
//
//   part                      header               who may touch it
//   tree, specs, options      (here)               immutable after construction: any thread
//   routing, loads            broker/routing.hpp   thread-safe (the broker's own locks)
//   actors                    directory.hpp        thread-safe: component -> actor, versioned
//   flow                      local_flow.hpp       thread-safe: in-process backlogs and pauses
//   where                     locality.hpp         any thread; changed by a live move only
//   front                     route_front.hpp      any thread; each actor keeps its own route_cache
//   done                      completion.hpp       thread-safe: start and exit latch
//   kept                      state_store.hpp      thread-safe: states kept across restarts
//   watching                  watchers.hpp         thread-safe: monitors of components' ends
//   requests                  request_traffic.hpp  thread-safe: request/reply traffic per tree edge
//   arrivals                  move_state.hpp       thread-safe: incarnations a live move brings here
//   node                      node.hpp, gateway.hpp multi-node runs only (null otherwise)
//
// Only operations that span parts live here (set_actor, forget_subtree, tell_watchers, set_node, set_cluster_ready);
// everything else is a call on one part. A new per-run service (pipeline stages, workers, a scheduler) is one more
// part: its own header stating its thread-safety, a member and an accessor here, reached by actors through
// component_actor::state(). Parts never reach back into run_state.
#pragma once

#include "completion.hpp"
#include "directory.hpp"
#include "durable_states.hpp"
#include "local_flow.hpp"
#include "locality.hpp"
#include "move_state.hpp"
#include "request_traffic.hpp"
#include "route_front.hpp"
#include "state_store.hpp"
#include "watchers.hpp"

#include "banyan/broker/profile.hpp"
#include "banyan/broker/routing.hpp"
#include "banyan/sdk/app.hpp"

#include <caf/all.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

namespace banyan::detail {

class node_runtime;

class run_state : public std::enable_shared_from_this<run_state> {
 public:
  run_state(const app& application, const run_options& options);

  const component_tree& tree() const { return *tree_; }
  std::shared_ptr<const component_tree> shared_tree() const { return tree_; }
  const spec& spec_of(vertex_id v) const { return *specs_[v]; }
  // Whether `v` or one of its ancestors is a dynamic child (spec::dynamic): not started with the run.
  bool under_dynamic(vertex_id v) const {
    for (;; v = tree_->parent(v)) {
      if (specs_[v]->is_dynamic()) return true;
      if (v == 0) return false;
    }
  }
  const run_options& options() const { return options_; }

  routing_table& routing() { return routing_; }
  load_meter& loads() { return loads_; }
  directory& actors() { return actors_; }
  local_flow& flow() { return flow_; }
  const locality& where() const { return where_; }
  locality& where() { return where_; }
  bool is_local(vertex_id v) const { return where_.is_local(v); }
  const route_front& front() const { return front_; }
  completion& done() { return done_; }
  state_store& kept() { return kept_; }
  watchers& watching() { return watching_; }
  request_traffic& requests() { return requests_; }
  move_arrivals& arrivals() { return arrivals_; }
  orphaned_publishes& orphans() { return orphans_; }
  node_runtime* node() const { return node_; }
  // With run_options::state_dir on a node: where kept states are also made durable (else null).
  durable_states* durable() const { return durable_.get(); }
  void set_durable(std::unique_ptr<durable_states> d) { durable_ = std::move(d); }

  // Registers `a` as the actor running `v` (invalid: none) and starts its backlog afresh; `a`
  // registered already is no change (a component registers itself before its on_start runs, and
  // its supervisor registers it after the spawn, in either order).
  void set_actor(vertex_id v, caf::actor a);

  // Drops every subscription the components of v's subtree on this node made (here and, through
  // the node, at every peer): what a stopped or failed incarnation subscribed must not outlive it.
  // `lost`: the subtree's node is gone, and this node forgets its replicas of that node's
  // subscriptions too, so routes stop leading there until it starts again. It does not tell the
  // others: only a component's node may end its subscriptions (every survivor forgets its own
  // replicas when it applies the loss).
  void forget_subtree(vertex_id v, bool lost = false);
  // An incarnation of `v` ended (`why`: "stopped", or its failure): every monitor of it hears it, on
  // this node and, through the node, on others.
  void tell_watchers(vertex_id v, const std::string& why);

  // Multi-node: makes this run one node of a deployment. Call before any actor starts.
  void set_node(node_runtime* node, locality where);
  // Publishes wait (each incarnation's outbound gate holds them, in order) until every node is ready, so no node
  // misses another's early messages. Always true in a single process.
  bool cluster_ready() const { return cluster_ready_.load(std::memory_order_acquire); }
  // Every node is ready: logs it once and tells every running actor to flush what it held.
  void set_cluster_ready();
  // A live move freezes the deployment (docs/runtime.md, "Moving subtrees live"): publishes and
  // requests wait as during the start (held in order by each outbound gate), data from other
  // nodes waits in the gateway; thaw() releases them all, as the start's end does.
  void freeze();
  void thaw();
  bool frozen() const { return frozen_.load(std::memory_order_acquire); }

 private:
  std::shared_ptr<component_tree> tree_;
  std::vector<const spec*> specs_;
  run_options options_;
  routing_table routing_;
  load_meter loads_;
  directory actors_;
  std::mutex set_actor_mutex_;  // set_actor's check and change are one step
  local_flow flow_;
  locality where_;
  route_front front_{routing_, actors_, where_};
  completion done_;
  state_store kept_{tree_->size()};
  watchers watching_{tree_->size()};
  request_traffic requests_{tree_};
  move_arrivals arrivals_;
  orphaned_publishes orphans_;
  node_runtime* node_ = nullptr;
  std::unique_ptr<durable_states> durable_;
  std::atomic<bool> cluster_ready_{true};
  std::atomic<bool> frozen_{false};
  std::atomic<bool> said_ready_{false};
};

}  // namespace banyan::detail
