#include "completion.hpp"

namespace banyan::detail {

void completion::request_quit(int exit_code, bool urgent) {
  std::lock_guard lock(mutex_);
  if (urgent) urgent_ = true;
  if (!quit_requested_) {
    quit_requested_ = true;
    exit_code_ = exit_code;
  }
  cv_.notify_all();
}

bool completion::urgent() const {
  std::lock_guard lock(mutex_);
  return urgent_;
}

void completion::set_roots_alive(std::size_t n) {
  std::lock_guard lock(mutex_);
  roots_alive_ = n;
}

void completion::root_down(bool failed) {
  std::lock_guard lock(mutex_);
  if (roots_alive_) --roots_alive_;
  // One failed local root ends this node's run; otherwise the run ends when all are down.
  if (failed) root_failed_ = true;
  if (failed || roots_alive_ == 0) root_down_ = true;
  cv_.notify_all();
}

void completion::root_arrived() {
  std::lock_guard lock(mutex_);
  ++roots_alive_;
}

void completion::root_left() {
  std::lock_guard lock(mutex_);
  if (roots_alive_) --roots_alive_;
  cv_.notify_all();
}

completion::wake completion::wait(std::optional<std::chrono::steady_clock::time_point> deadline,
                                  std::chrono::milliseconds slice) {
  std::unique_lock lock(mutex_);
  auto until = std::chrono::steady_clock::now() + slice;
  if (deadline && *deadline < until) until = *deadline;
  cv_.wait_until(lock, until, [&] { return quit_requested_ || root_down_; });
  if (root_down_) return wake::root_down;
  if (quit_requested_) return wake::quit;
  if (deadline && std::chrono::steady_clock::now() >= *deadline) return wake::deadline;
  return wake::idle;
}

void completion::wait_roots_down() {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return roots_alive_ == 0; });
}

bool completion::ending() const {
  std::lock_guard lock(mutex_);
  return quit_requested_ || root_down_;
}

int completion::exit_code() const {
  std::lock_guard lock(mutex_);
  if (quit_requested_) return exit_code_;
  return root_failed_ ? 1 : 0;
}

bool completion::root_failed() const {
  std::lock_guard lock(mutex_);
  return root_failed_;
}

void completion::root_started() {
  std::lock_guard lock(mutex_);
  ++roots_started_;
  cv_.notify_all();
}

void completion::wait_started(std::size_t roots) {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return roots_started_ >= roots || quit_requested_ || root_down_; });
}

}  // namespace banyan::detail
