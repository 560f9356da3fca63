// Monitors (context::monitor): who is told when an incarnation of a component ends. Private to the
// SDK.
//
// Per watched component, the watchers' actor addresses (weak: a monitor never keeps its watcher
// alive) with the watcher's own id for its handler; and watchers on other nodes (their node, vertex
// and id), who are told by a `down` envelope (node_wire.hpp). Ids come from next_id(), unique in
// this process across incarnations, so news meant for an ended watcher never reaches its successor.
//
// Thread-safety: every member may be called from any thread (one mutex). Cost: of() copies the
// watched component's list.
#pragma once

#include "banyan/broker/tree.hpp"

#include <caf/all.hpp>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

namespace banyan::detail {

class watchers {
 public:
  explicit watchers(std::size_t components) : lists_(components) {}

  void add(vertex_id watched, caf::actor_addr watcher, std::uint64_t id) {
    std::lock_guard lock(mutex_);
    lists_[watched].emplace_back(std::move(watcher), id);
  }
  std::vector<std::pair<caf::actor_addr, std::uint64_t>> of(vertex_id watched) const {
    std::lock_guard lock(mutex_);
    return lists_[watched];
  }

  struct remote_watcher {
    std::uint32_t node;
    vertex_id watcher;
    std::uint64_t id;
  };
  void add_remote(vertex_id watched, remote_watcher w) {
    std::lock_guard lock(mutex_);
    remote_[watched].push_back(w);
  }
  std::vector<remote_watcher> remote_of(vertex_id watched) const {
    std::lock_guard lock(mutex_);
    return remote_[watched];
  }
  std::uint64_t next_id() { return next_.fetch_add(1, std::memory_order_relaxed); }
  // Ends before the cluster was ready, with their reasons: a monitor made meanwhile on another node
  // reaches this one only once the cluster is ready, and hears of them then.
  void add_early_end(vertex_id watched, std::string reason) {
    std::lock_guard lock(mutex_);
    early_[watched].push_back(std::move(reason));
  }
  std::vector<std::string> early_ends_of(vertex_id watched) const {
    std::lock_guard lock(mutex_);
    return early_[watched];
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::vector<std::pair<caf::actor_addr, std::uint64_t>>> lists_;
  std::vector<std::vector<remote_watcher>> remote_{lists_.size()};
  std::vector<std::vector<std::string>> early_{lists_.size()};
  std::atomic<std::uint64_t> next_{1};
};

}  // namespace banyan::detail
