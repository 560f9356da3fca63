#include "resume_list.hpp"

#include "actor_protocol.hpp"

namespace banyan::detail {

void resume_list::add(std::uint32_t key, caf::actor who) {
  {
    std::lock_guard lock(mutex_);
    if (!closed_) {
      waiters_.emplace_back(key, std::move(who));
      return;
    }
  }
  caf::anon_send(who, resume_atom::value);
}

void resume_list::resume(bool all, std::uint32_t key) {
  std::vector<caf::actor> wake;
  {
    std::lock_guard lock(mutex_);
    std::erase_if(waiters_, [&](auto& w) {
      if (!all && w.first != key) return false;
      wake.push_back(std::move(w.second));
      return true;
    });
  }
  for (auto& a : wake) caf::anon_send(a, resume_atom::value);
}

void resume_list::close() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  resume(true, 0);
}

}  // namespace banyan::detail
