// Spare blob buffers the writer has finished with, handed to the next transaction's put() so that a
// checkpoint is a plain memcpy into memory already faulted in, instead of fresh pages (about four
// times slower on the development machine). Bounded: the store sets the bytes it may keep (what
// the buffer's limit leaves), and trims it when the budget or free memory shrink. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace banyan::store::detail {

class buffer_pool {
 public:
  // A buffer holding a copy of `bytes`, recycled when one large enough is spare.
  std::vector<std::byte> copy(const std::byte* data, std::size_t n) {
    std::vector<std::byte> out = spare(n);
    out.assign(data, data + n);  // no reallocation when recycled: capacity >= n
    return out;
  }

  // A buffer of `n` bytes for the caller to fill: a recycled one when one large enough is spare (its
  // bytes are whatever it held), else a fresh one.
  std::vector<std::byte> take(std::size_t n) {
    std::vector<std::byte> out = spare(n);
    out.resize(n);  // no reallocation when recycled: capacity >= n
    return out;
  }

  // Keeps `buffer` while the pool stays within its bound; frees it otherwise.
  void give(std::vector<std::byte>&& buffer) {
    std::vector<std::byte> dropped;
    std::lock_guard lock(mutex_);
    const std::size_t cap = buffer.capacity();
    if (cap == 0 || bytes_ + cap > max_bytes_) {
      dropped = std::move(buffer);
      return;
    }
    bytes_ += cap;
    buffer.resize(cap);  // no reallocation; a take() of this size then fills nothing in
    spare_.emplace(cap, std::move(buffer));
  }

  // The pool may keep at most `bytes` from now on (frees the largest spares first).
  void bound(std::uint64_t bytes) {
    std::vector<std::vector<std::byte>> dropped;
    std::lock_guard lock(mutex_);
    max_bytes_ = bytes;
    while (bytes_ > max_bytes_ && !spare_.empty()) {
      auto last = std::prev(spare_.end());
      bytes_ -= last->first;
      dropped.push_back(std::move(last->second));
      spare_.erase(last);
    }
  }

  std::uint64_t bytes() const {
    std::lock_guard lock(mutex_);
    return bytes_;
  }

 private:
  // The smallest spare buffer with capacity >= n, taken out of the pool; empty when none is.
  std::vector<std::byte> spare(std::size_t n) {
    std::lock_guard lock(mutex_);
    auto it = spare_.lower_bound(n);
    if (it == spare_.end()) return {};
    std::vector<std::byte> out = std::move(it->second);
    bytes_ -= it->first;
    spare_.erase(it);
    return out;
  }

  mutable std::mutex mutex_;
  std::multimap<std::size_t, std::vector<std::byte>> spare_;  // by capacity
  std::uint64_t bytes_ = 0;
  std::uint64_t max_bytes_ = 0;
};

}  // namespace banyan::store::detail
