// Paused actors (component_actor::pause) waiting on something named by a key: a congested component
// (local_flow.hpp) or a node link without credit (node.hpp). Private to the SDK.
//
// Contract: each waiter gets exactly one `resume` — when its key is released, or at close(); after
// close(), add() resumes at once. A resume may arrive after the pause it was meant for has ended;
// component actors ignore such late ones.
//
// Thread-safety: every member may be called from any thread (one mutex; messages are sent after
// it is released). Cost: release() is linear in the number of waiters, which is at most the number
// of paused actors.
#pragma once

#include <caf/all.hpp>

#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

namespace banyan::detail {

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

}  // namespace banyan::detail
