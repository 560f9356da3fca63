// Asynchronous copies between a backend's device memory and host memory, both directions at once and
// beside the compute: the memory manager's offloads and prefetches (memory_executor.hpp).
//
// Ordering contract: a copy issued after a kernel sees that kernel's writes; a kernel issued after
// wait(t) sees copy t complete (and a copy to host is finished with its device bytes, which may be
// reused). Between issue and wait the caller must neither write the source nor touch the destination.
// A resource: move-only, used from the model's thread (the copies themselves run elsewhere).
//
// backend::make_copy_engine() makes the backend's own: on CUDA two copy streams with events and the
// compute stream waiting on them (no host block); on the CPU (device memory is host memory)
// threaded_copy_engine, one copy thread per direction.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace banyan::nn {

class copy_engine {
 public:
  using ticket = std::uint64_t;
  virtual ~copy_engine() = default;
  copy_engine() = default;
  copy_engine(const copy_engine&) = delete;
  copy_engine& operator=(const copy_engine&) = delete;

  virtual ticket to_host(void* host_dst, const void* device_src, std::size_t bytes) = 0;
  virtual ticket to_device(void* device_dst, const void* host_src, std::size_t bytes) = 0;
  // Returns true when the copy had not finished yet (the caller, or on CUDA the compute stream,
  // had to wait for it): what the executor counts as a late copy.
  virtual bool wait(ticket t) = 0;
  // Waits for every copy issued so far.
  virtual void drain() = 0;
};

// The CPU engine: two threads, each copying its direction's queue in order with memcpy.
class threaded_copy_engine final : public copy_engine {
 public:
  // Runs on the copy thread before each copy (tests slow copies down with it); may be empty.
  using hook = std::function<void(bool to_host, ticket t, std::size_t bytes)>;
  explicit threaded_copy_engine(hook before_copy = {});
  ~threaded_copy_engine() override;

  ticket to_host(void* host_dst, const void* device_src, std::size_t bytes) override;
  ticket to_device(void* device_dst, const void* host_src, std::size_t bytes) override;
  bool wait(ticket t) override;
  void drain() override;

  // For tests: blocks until a wait() on this direction's ticket `t` or a later one (or a drain())
  // has had to block, i.e. the model is stalled on a copy that has not arrived.
  void await_stalled_on(ticket t);

 private:
  struct job {
    void* dst;
    const void* src;
    std::size_t bytes;
    ticket id;
  };
  struct lane {
    std::mutex m;
    std::condition_variable cv;
    std::deque<job> queue;
    std::uint64_t issued = 0;
    std::uint64_t done = 0;                    // every ticket with a sequence <= done has finished
    std::atomic<std::uint64_t> stalled_on{0};  // highest sequence a wait blocked on
    bool stop = false;
    std::thread thread;
  };
  static constexpr ticket host_bit = 1ull << 63;
  ticket issue(lane& l, bool to_host, void* dst, const void* src, std::size_t bytes);
  void serve(lane& l, bool to_host);
  lane& lane_of(ticket t) { return (t & host_bit) != 0 ? to_host_ : to_device_; }

  hook before_copy_;
  lane to_host_, to_device_;
};

}  // namespace banyan::nn
