// Which components run in this process. Private to the SDK.
//
// A single-process run hosts everything. A node of a deployment hosts the components assigned to
// it (deployment.hpp); its roots are the components whose parent runs elsewhere (or the tree's
// root), and each is started and supervised here.
//
// A live move (docs/runtime.md, "Moving subtrees live") reassigns a subtree while the run goes on:
// move() publishes a new assignment, which every reader sees whole (an immutable snapshot behind one
// atomic pointer, kept for the run so a reader's reference never dangles) and version() moves, so a
// route built on the old one is stale (route_front.hpp).
//
// A subtree put to sleep (docs/runtime.md, "Hibernate and wake") stays assigned to its node, which
// holds what reaches it and wakes it: asleep() tells a sender that a component without an actor is
// asleep (its message goes to the gateway's hold) rather than stopped. Changing it moves version().
//
// Thread-safety: every member may be called from any thread; move(), assign() and sleep() are called
// by the node's gateway only, while the deployment is frozen (no data in flight).
#pragma once

#include "banyan/broker/placement.hpp"
#include "banyan/broker/tree.hpp"

#include <atomic>
#include <deque>
#include <memory>
#include <vector>

namespace banyan::detail {

class locality {
 public:
  locality() = default;  // everything here
  locality(std::vector<node_id> node_of, node_id self);
  locality(locality&& other) noexcept { *this = std::move(other); }
  locality& operator=(locality&& other) noexcept;

  bool multi_node() const { return multi_; }
  bool is_local(vertex_id v) const { return !multi_ || node_of()[v] == self_; }
  // The assignment now (empty in a single process). The reference stays valid for the run.
  const std::vector<node_id>& node_of() const { return *current_.load(std::memory_order_acquire); }
  node_id node_of(vertex_id v) const { return node_of()[v]; }
  // Where `v` ran before the last change of the assignment (a move or a failover; where it runs now
  // when there was none). Read on the thread that changes the assignment (the gateway's).
  node_id previous_node_of(vertex_id v) const {
    return snapshots_.size() < 2 ? node_of(v) : snapshots_[snapshots_.size() - 2][v];
  }
  node_id self() const { return self_; }
  std::uint64_t version() const { return version_.load(std::memory_order_acquire); }
  // The components this process starts itself, ascending.
  std::vector<vertex_id> roots(const component_tree& tree) const;
  // Assigns v's whole subtree to `to`.
  void move(const component_tree& tree, vertex_id v, node_id to);
  // A whole new assignment (a failover: the lost node's subtrees on survivors).
  void assign(std::vector<node_id> next);
  // Whether `v` belongs to a subtree asleep on this node.
  bool asleep(vertex_id v) const { return v < asleep_size_ && asleep_[v].load(std::memory_order_acquire); }
  // Marks v's whole subtree asleep here, or awake.
  void sleep(const component_tree& tree, vertex_id v, bool asleep);

 private:
  std::deque<std::vector<node_id>> snapshots_{std::vector<node_id>{}};  // every assignment so far
  std::atomic<const std::vector<node_id>*> current_{&snapshots_.front()};
  std::atomic<std::uint64_t> version_{1};
  std::unique_ptr<std::atomic<bool>[]> asleep_;  // per vertex (multi-node only)
  std::size_t asleep_size_ = 0;
  node_id self_ = 0;
  bool multi_ = false;
};

}  // namespace banyan::detail
