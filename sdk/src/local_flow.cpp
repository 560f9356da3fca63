#include "local_flow.hpp"

namespace banyan::detail {

local_flow::local_flow(std::size_t components) : backlog_(new std::atomic<std::int64_t>[components]) {
  for (std::size_t v = 0; v < components; ++v) backlog_[v] = 0;
}

void local_flow::resume_when_drained(vertex_id v, caf::actor who) {
  waiters_.add(v, std::move(who));
  // It may have drained between the publisher's check and now (the same low-water mark as handled()).
  if (backlog_[v].load(std::memory_order_acquire) <= limit / 2) waiters_.release(v);
}

void local_flow::reset(vertex_id v) {
  backlog_[v] = 0;
  waiters_.release(v);
}

}  // namespace banyan::detail
