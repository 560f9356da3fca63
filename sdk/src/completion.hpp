// The run's start and completion latch: when banyan::run's main thread may announce this node, and
// when and how the run ends. Private to the SDK.
//
// Ending: the first request_quit() sets the exit code (later ones only add urgency); a root's end
// reports through root_down(). In a multi-node run each local subtree root counts: one failed root
// ends the run, otherwise the last one down does. exit_code() is quit()'s code, else 1 when a root
// failed, else 0. Urgent (a signal) means: stop ahead of queued messages.
// Starting: each local root reports once its subtree has started; wait_started() returns when all
// have, or when the run is ending (so a run stopped during start never waits forever).
//
// Thread-safety: every member may be called from any thread (one mutex and condition variable).
// The waits block their caller; nothing here is called from an actor's handler except the
// non-blocking reports (request_quit, root_down, root_started).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>

namespace banyan::detail {

class completion {
 public:
  // --- ending ---
  void request_quit(int exit_code, bool urgent = false);
  bool urgent() const;
  void set_roots_alive(std::size_t n);
  void root_down(bool failed);
  // A live move brought a root to this node, or took one away (not an end: the run goes on).
  void root_arrived();
  void root_left();
  // Waits at most `slice` for quit, the roots' end or `deadline` (if set); `idle` means none came.
  enum class wake { quit, root_down, deadline, idle };
  wake wait(std::optional<std::chrono::steady_clock::time_point> deadline, std::chrono::milliseconds slice);
  // Waits until every root is down (after a shutdown was sent).
  void wait_roots_down();
  bool ending() const;  // quit requested or a root down
  int exit_code() const;
  bool root_failed() const;

  // --- starting ---
  void root_started();
  // Waits until `roots` roots have started, or the run is ending.
  void wait_started(std::size_t roots);

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool quit_requested_ = false;
  bool urgent_ = false;
  int exit_code_ = 0;
  bool root_down_ = false;
  std::size_t roots_alive_ = 1;
  bool root_failed_ = false;
  std::size_t roots_started_ = 0;
};

}  // namespace banyan::detail
