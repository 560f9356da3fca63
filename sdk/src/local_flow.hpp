// In-process flow control: deliveries sent to each component and not yet handled (its backlog).
// Private to the SDK; docs/sdk.md "Flow control" describes the behaviour.
//
// A publisher that leaves a target at `limit` pauses (component_actor::pause) and asks for a
// `resume` when that target is down to `limit / 2` (resume_when_drained). The publisher counts a
// delivery before sending it (queued), the target after handling it (handled), so a backlog is never
// negative while an incarnation lives. reset() forgets a component's backlog when its actor changes:
// what was queued for the old incarnation is gone with it.
//
// Thread-safety: every member may be called from any thread (one atomic per component, and the
// resume_list's lock). Cost: queued/handled/congested are one atomic operation (handled: per batch).
#pragma once

#include "resume_list.hpp"

#include "banyan/broker/tree.hpp"

#include <caf/all.hpp>

#include <atomic>
#include <cstdint>
#include <memory>

namespace banyan::detail {

class local_flow {
 public:
  static constexpr std::int64_t limit = 1024;

  explicit local_flow(std::size_t components);

  void queued(vertex_id v) { backlog_[v].fetch_add(1, std::memory_order_relaxed); }
  // `n` deliveries to `v` handled (a component reports those of one run of its actor at once).
  void handled(vertex_id v, std::int64_t n) {
    const std::int64_t before = backlog_[v].fetch_sub(n, std::memory_order_acq_rel);
    if (before > limit / 2 && before - n <= limit / 2) waiters_.release(v);
  }
  bool congested(vertex_id v) const { return backlog_[v].load(std::memory_order_relaxed) >= limit; }
  // `who` gets one `resume` once `v` is down to limit / 2 (at once if it already is).
  void resume_when_drained(vertex_id v, caf::actor who);
  // A new incarnation of `v` (or none) starts with no backlog; its waiters are resumed.
  void reset(vertex_id v);

 private:
  std::unique_ptr<std::atomic<std::int64_t>[]> backlog_;
  resume_list waiters_;
};

}  // namespace banyan::detail
