// What sizes the store's host buffer: the machine's free memory and an in-process budget shared
// with other users of host memory (the nn memory manager's host pool).
//
// memory_source: how much memory the process may still take. system_memory_source() reads cgroup v2
// (memory.max - memory.current of the process's cgroup, when memory.max is a number) and
// /proc/meminfo's MemAvailable, and answers the smaller. Tests inject their own source.
//
// memory_budget: a pool of host bytes with one rule, "flush, never drop". Buffers hold() bytes from
// it (above their floor) and release() them when their data is durable; a user such as a host pool
// take()s bytes, and take() waits until the holders have flushed enough to make room (a holder never
// gives back data it has not written). give() returns taken bytes. Thread-safe.
//
// Who shares one today: blob_stores (options::budget) hold; the nn memory manager's host pool for
// swapped activations (nn::memory_options::host_budget) takes. Its executor take()s the pool's bytes
// before allocating it (a larger pool later: the difference), waits at most host_budget_wait (60 s
// by default) and fails with nn::errc::timeout, naming the bytes, when the stores did not flush in
// time; it give()s them all back when it is destroyed. Give both the same shared_ptr.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace banyan::store {

class memory_source {
 public:
  virtual ~memory_source() = default;
  // Bytes the process may still allocate; nullopt when the source cannot tell (then ignored).
  virtual std::optional<std::uint64_t> available() = 0;
};

// Reads cgroup v2 below `cgroup_root` (default /sys/fs/cgroup) and `meminfo` (default /proc/meminfo).
std::shared_ptr<memory_source> system_memory_source(std::string cgroup_root = "/sys/fs/cgroup",
                                                    std::string meminfo = "/proc/meminfo",
                                                    std::string self_cgroup = "/proc/self/cgroup");

// A source answering what `read` returns (tests).
std::shared_ptr<memory_source> function_memory_source(std::function<std::optional<std::uint64_t>()> read);

class memory_budget {
 public:
  explicit memory_budget(std::uint64_t capacity) : capacity_(capacity) {}

  std::uint64_t capacity() const { return capacity_; }
  // Bytes neither taken nor held (0 while a take() waits for holders).
  std::uint64_t free() const;
  std::uint64_t taken() const;
  std::uint64_t held() const;

  // Takes `bytes` for the caller. Waits, at most `limit`, until holders have released enough that
  // taken + held <= capacity; on timeout nothing is taken and the answer is false. Holders are told
  // (their limit shrinks at once), so they flush and refuse new bytes meanwhile.
  bool take(std::uint64_t bytes, std::chrono::milliseconds limit);
  void give(std::uint64_t bytes);

  // For buffers: hold() bytes when they enter the buffer beyond its floor, release() them once
  // durable. hold() never waits: the buffer checks free() first (its back-pressure).
  void hold(std::uint64_t bytes);
  void release(std::uint64_t bytes);
  // `listener` is called (without the budget's lock) when take() starts or gives up and after
  // give(), so a holder re-checks its limit. Several holders (stores) may share one budget.
  // remove_listener() returns once no call of that listener is running.
  std::uint64_t add_listener(std::function<void()> listener);
  void remove_listener(std::uint64_t id);

 private:
  const std::uint64_t capacity_;
  mutable std::mutex mutex_;
  std::mutex calls_;  // held while listeners are called
  std::condition_variable released_;
  std::uint64_t taken_ = 0;
  std::uint64_t held_ = 0;
  std::map<std::uint64_t, std::shared_ptr<std::function<void()>>> listeners_;
  std::uint64_t next_listener_ = 1;
  void notify_listeners();
};

}  // namespace banyan::store
