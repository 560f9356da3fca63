// The envelopes a link has accepted and not yet had delivered, in sequence order. Private to the
// transport.
#pragma once

#include "banyan/runtime/transport.hpp"

#include <array>
#include <cstddef>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

namespace banyan::runtime::detail {

// [0, written()) are written and wait for the peer's acknowledgement; [written(), size()) are
// accepted by send() and not written yet. Writing moves the boundary, not the envelopes. Elements
// live in fixed blocks that never move (the I/O thread encodes a batch by address outside the lock
// while send() appends), and emptied blocks are kept for reuse, so a warmed-up link allocates
// nothing per envelope.
class outbox {
 public:
  outbox() = default;
  outbox(outbox&&) = default;
  outbox& operator=(outbox&&) = default;

  std::size_t size() const { return size_; }
  std::size_t written() const { return written_; }
  std::size_t unwritten() const { return size_ - written_; }
  bool empty() const { return size_ == 0; }

  envelope& operator[](std::size_t i) {
    const std::size_t k = head_ + i;
    return (*blocks_[k / per_block])[k % per_block];
  }
  const envelope& operator[](std::size_t i) const { return const_cast<outbox&>(*this)[i]; }
  envelope& front() { return (*this)[0]; }

  void push_back(envelope&& e) {
    if ((head_ + size_) / per_block == blocks_.size()) {
      if (spare_.empty()) {
        blocks_.push_back(std::make_unique<block>());
      } else {
        blocks_.push_back(std::move(spare_.back()));
        spare_.pop_back();
      }
    }
    (*this)[size_++] = std::move(e);
  }

  // The first `n` unwritten envelopes are written now.
  void mark_written(std::size_t n) { written_ += n; }

  // What a removed envelope kept alive, to be released outside the lock.
  using kept = std::pair<shared_bytes, std::shared_ptr<const void>>;

  // Removes the first (written) envelope; its payload and receipt go to `keep`.
  void pop_front(std::vector<kept>& keep) {
    envelope& e = front();
    keep.emplace_back(std::move(e.payload), std::move(e.receipt));
    --size_;
    --written_;
    if (++head_ == per_block) {
      head_ = 0;
      spare_.push_back(std::move(blocks_.front()));
      blocks_.pop_front();
    }
  }

  // Moves every envelope, written first, to `out` and empties the outbox.
  void drain_into(std::vector<envelope>& out) {
    out.reserve(out.size() + size_);
    for (std::size_t i = 0; i < size_; ++i) out.push_back(std::move((*this)[i]));
    for (auto& c : blocks_) spare_.push_back(std::move(c));
    blocks_.clear();
    head_ = size_ = written_ = 0;
  }

 private:
  static constexpr std::size_t per_block = 64;
  using block = std::array<envelope, per_block>;
  std::deque<std::unique_ptr<block>> blocks_;
  std::vector<std::unique_ptr<block>> spare_;
  std::size_t head_ = 0;  // index of the first envelope in blocks_.front()
  std::size_t size_ = 0, written_ = 0;
};

}  // namespace banyan::runtime::detail
