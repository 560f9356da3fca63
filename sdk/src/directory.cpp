#include "directory.hpp"

#include <utility>

namespace banyan::detail {

void directory::set(vertex_id v, caf::actor a) {
  caf::actor old;
  {
    std::lock_guard lock(mutex_);
    old = std::exchange(actors_[v], std::move(a));
    version_.fetch_add(1, std::memory_order_acq_rel);
  }
  // Released unlocked: when it is the last handle of an incarnation that never ended (one idle
  // after handing its state over), its end runs here, and its exit functor reads this directory.
}

caf::actor directory::get(vertex_id v) const {
  std::lock_guard lock(mutex_);
  return actors_[v];
}

std::vector<caf::actor> directory::running() const {
  std::vector<caf::actor> out;
  std::lock_guard lock(mutex_);
  for (const auto& a : actors_)
    if (a) out.push_back(a);
  return out;
}

}  // namespace banyan::detail
