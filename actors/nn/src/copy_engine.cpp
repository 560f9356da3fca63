#include "banyan/nn/copy_engine.hpp"

#include <cstring>

namespace banyan::nn {

threaded_copy_engine::threaded_copy_engine(hook before_copy) : before_copy_(std::move(before_copy)) {
  to_host_.thread = std::thread([this] { serve(to_host_, true); });
  to_device_.thread = std::thread([this] { serve(to_device_, false); });
}

threaded_copy_engine::~threaded_copy_engine() {
  for (lane* l : {&to_host_, &to_device_}) {
    {
      std::lock_guard lock(l->m);
      l->stop = true;
    }
    l->cv.notify_all();
    l->thread.join();
  }
}

copy_engine::ticket threaded_copy_engine::issue(lane& l, bool to_host, void* dst, const void* src, std::size_t bytes) {
  ticket id;
  {
    std::lock_guard lock(l.m);
    id = ++l.issued | (to_host ? host_bit : 0);
    l.queue.push_back(job{dst, src, bytes, id});
  }
  l.cv.notify_all();
  return id;
}

copy_engine::ticket threaded_copy_engine::to_host(void* host_dst, const void* device_src, std::size_t bytes) {
  return issue(to_host_, true, host_dst, device_src, bytes);
}

copy_engine::ticket threaded_copy_engine::to_device(void* device_dst, const void* host_src, std::size_t bytes) {
  return issue(to_device_, false, device_dst, host_src, bytes);
}

void threaded_copy_engine::serve(lane& l, bool to_host) {
  for (;;) {
    job j;
    {
      std::unique_lock lock(l.m);
      l.cv.wait(lock, [&] { return l.stop || !l.queue.empty(); });
      if (l.queue.empty()) return;  // stopping, and every queued copy is done
      j = l.queue.front();
    }
    if (before_copy_) before_copy_(to_host, j.id, j.bytes);
    std::memcpy(j.dst, j.src, j.bytes);
    {
      std::lock_guard lock(l.m);
      l.queue.pop_front();
      l.done = j.id & ~host_bit;
    }
    l.cv.notify_all();
  }
}

bool threaded_copy_engine::wait(ticket t) {
  lane& l = lane_of(t);
  const std::uint64_t seq = t & ~host_bit;
  std::unique_lock lock(l.m);
  if (l.done >= seq) return false;
  if (l.stalled_on.load() < seq) {
    l.stalled_on.store(seq);
    l.stalled_on.notify_all();
  }
  l.cv.wait(lock, [&] { return l.done >= seq; });
  return true;
}

void threaded_copy_engine::drain() {
  for (lane* l : {&to_host_, &to_device_}) {
    std::unique_lock lock(l->m);
    if (l->done < l->issued && l->stalled_on.load() < l->issued) {  // waiting on all of them
      l->stalled_on.store(l->issued);
      l->stalled_on.notify_all();
    }
    l->cv.wait(lock, [&] { return l->done >= l->issued; });
  }
}

void threaded_copy_engine::await_stalled_on(ticket t) {
  lane& l = lane_of(t);
  const std::uint64_t seq = t & ~host_bit;
  for (std::uint64_t seen = l.stalled_on.load(); seen < seq; seen = l.stalled_on.load()) l.stalled_on.wait(seen);
}

}  // namespace banyan::nn
