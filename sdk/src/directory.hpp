// The directory: which actor runs each component now. Private to the SDK.
//
// Versioned: every set() bumps version() before it returns, so a route that snapshotted actors
// (route_front.hpp) knows it is stale when the version moved. An entry is invalid while its
// component is not running (not started yet, between incarnations, on another node, stopped).
//
// Thread-safety: every member may be called from any thread (one mutex for the table; version() is
// an atomic read). Cost: get() and set() take the mutex; running() copies the table.
#pragma once

#include "banyan/broker/tree.hpp"

#include <caf/all.hpp>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace banyan::detail {

class directory {
 public:
  explicit directory(std::size_t components) : actors_(components) {}

  void set(vertex_id v, caf::actor a);
  caf::actor get(vertex_id v) const;
  std::uint64_t version() const { return version_.load(std::memory_order_acquire); }
  // Every actor running now (a snapshot).
  std::vector<caf::actor> running() const;

 private:
  mutable std::mutex mutex_;
  std::vector<caf::actor> actors_;
  std::atomic<std::uint64_t> version_{1};
};

}  // namespace banyan::detail
