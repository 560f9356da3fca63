// Monitors (context::monitor): who is told when an incarnation of a component ends. Private to the
// SDK.
//
// Per watched component, the watchers' actor addresses (weak: a monitor never keeps its watcher
// alive) with the watcher's own id for its handler. One process only: a node knows its own
// components' ends.
//
// Thread-safety: every member may be called from any thread (one mutex). Cost: of() copies the
// watched component's list.
#pragma once

#include "banyan/broker/tree.hpp"

#include <caf/all.hpp>

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

 private:
  mutable std::mutex mutex_;
  std::vector<std::vector<std::pair<caf::actor_addr, std::uint64_t>>> lists_;
};

}  // namespace banyan::detail
