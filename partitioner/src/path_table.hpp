// The profile reader's index from component path to component (profile_read.cpp). Private.
//
// Open addressing over the paths themselves (no copies): a slot holds 32 bits of the hash beside
// the index, so a probe touches a path only when those match. Its slots live in huge pages where
// the kernel gives them (transparent huge pages in madvise mode): random probes into the 16 MB table
// of 10^6 paths otherwise miss the TLB on nearly every path. Not thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include <sys/mman.h>

namespace banyan::partitioner::detail {

constexpr std::uint32_t no_index = 0xFFFFFFFFu;  // no such path

// `paths` must outlive the table; indices are positions in it.
class path_table {
 public:
  explicit path_table(const std::vector<std::string>& paths) : paths_(paths) {}
  void reserve(std::size_t n) {
    std::size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    if (cap > slot_.size()) rehash(cap);
  }
  static std::size_t hash(std::string_view s) { return std::hash<std::string_view>{}(s); }
  // Brings the slot where a path of hash `h` starts its probe into the cache: inserting 10^6 paths
  // into a 16 MB table is otherwise one cache and TLB miss per path.
  void prefetch(std::size_t h) const {
    if (!slot_.empty_table()) __builtin_prefetch(slot_.data() + (h & (slot_.size() - 1)));
  }
  std::uint32_t find(std::string_view s) const {
    if (slot_.empty_table()) return no_index;
    const std::size_t mask = slot_.size() - 1, h = hash(s);
    for (std::size_t at = h & mask;; at = (at + 1) & mask) {
      const std::uint64_t x = slot_[at];
      if (x == empty) return no_index;
      if ((x >> 32) == (h >> 32) && paths_[index(x)] == s) return index(x);
    }
  }
  // Adds paths_[i]; the index already holding that path instead when there is one.
  // `h` is hash(paths_[i]).
  std::uint32_t insert(std::uint32_t i, std::size_t h) {
    if (2 * (used_ + 1) > slot_.size()) rehash(std::max<std::size_t>(16, 2 * slot_.size()));
    const std::size_t mask = slot_.size() - 1;
    for (std::size_t at = h & mask;; at = (at + 1) & mask) {
      const std::uint64_t x = slot_[at];
      if (x == empty) {
        slot_[at] = (h >> 32 << 32) | i;
        ++used_;
        return i;
      }
      if ((x >> 32) == (h >> 32) && paths_[index(x)] == paths_[i]) return index(x);
    }
  }

 private:
  static constexpr std::uint64_t empty = ~std::uint64_t{0};
  static std::uint32_t index(std::uint64_t x) { return static_cast<std::uint32_t>(x); }
  void rehash(std::size_t cap) {
    slot_buffer old(cap);
    std::swap(old, slot_);
    const std::size_t mask = cap - 1;
    for (std::uint64_t x : old) {
      if (x == empty) continue;
      std::size_t at = hash(paths_[index(x)]) & mask;
      while (slot_[at] != empty) at = (at + 1) & mask;
      slot_[at] = x;
    }
  }
  // The slots, in huge pages where the kernel gives them (madvise mode): random probes into a
  // 16 MB table otherwise miss the TLB on nearly every path.
  class slot_buffer {
   public:
    slot_buffer() = default;
    explicit slot_buffer(std::size_t n) : n_(n) {
      const std::size_t huge = 2u << 20, bytes = (n * sizeof(std::uint64_t) + huge - 1) / huge * huge;
      p_.reset(static_cast<std::uint64_t*>(std::aligned_alloc(huge, bytes)));
      if (!p_) throw std::bad_alloc();
      ::madvise(p_.get(), bytes, MADV_HUGEPAGE);
      std::fill(p_.get(), p_.get() + n, empty);
    }
    std::uint64_t* data() const { return p_.get(); }
    std::size_t size() const { return n_; }
    bool empty_table() const { return n_ == 0; }
    std::uint64_t& operator[](std::size_t i) { return p_[i]; }
    std::uint64_t operator[](std::size_t i) const { return p_[i]; }
    const std::uint64_t* begin() const { return p_.get(); }
    const std::uint64_t* end() const { return p_.get() + n_; }

   private:
    struct free_it {
      void operator()(std::uint64_t* p) const { std::free(p); }
    };
    std::unique_ptr<std::uint64_t[], free_it> p_;
    std::size_t n_ = 0;
  };
  const std::vector<std::string>& paths_;
  slot_buffer slot_;
  std::size_t used_ = 0;
};

}  // namespace banyan::partitioner::detail
