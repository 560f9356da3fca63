// The states components keep across restarts (component::snapshot/restore, spec::keep_state).
// Private to the SDK.
//
// One slot per component: the latest snapshot, replaced by each new one. A component's restarts
// run on its own node, so a node keeps the slots of its own components only.
//
// Thread-safety: every member may be called from any thread (one mutex). Cost: a payload is shared
// bytes, so put() and get() copy a handle, never the state.
#pragma once

#include "banyan/broker/tree.hpp"
#include "banyan/sdk/payload.hpp"

#include <mutex>
#include <optional>
#include <vector>

namespace banyan::detail {

class state_store {
 public:
  explicit state_store(std::size_t components) : slots_(components) {}

  void put(vertex_id v, payload state) {
    std::lock_guard lock(mutex_);
    slots_[v] = std::move(state);
  }
  std::optional<payload> get(vertex_id v) const {
    std::lock_guard lock(mutex_);
    return slots_[v];
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::optional<payload>> slots_;
};

}  // namespace banyan::detail
