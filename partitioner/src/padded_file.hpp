// A file mapped read-only into memory and followed by zero bytes, as simdjson reads up to
// `padding` bytes past the end of its input. Private to the partitioner's readers.
//
// Why a mapping and not a copy: a 10^6-component profile is ~280 MB. Mapped, its pages can be
// handed back to the kernel once parsed (`release_before`), so the reader's peak is the file plus
// simdjson's index rather than the file plus everything built from it. Handing pages back is safe
// at any time: the mapping is private and never written, so a page read again comes back from the
// file.
//
// Move-only resource: the mapping lives until the object is destroyed.
#pragma once

#include "banyan/partitioner/model.hpp"

#include <cstddef>
#include <string>
#include <utility>

namespace banyan::partitioner::detail {

class padded_file {
 public:
  // Maps `path`; errc::io naming the path when it cannot be opened or mapped (a pipe, say: the
  // caller then reads it another way).
  static result<padded_file> map(const std::string& path, std::size_t padding);

  padded_file(padded_file&& o) noexcept
      : base_(std::exchange(o.base_, nullptr)), size_(o.size_), mapped_(o.mapped_), released_(o.released_) {}
  padded_file& operator=(padded_file&&) = delete;
  padded_file(const padded_file&) = delete;
  ~padded_file();

  const char* data() const { return static_cast<const char*>(base_); }
  std::size_t size() const { return size_; }
  std::size_t capacity() const { return mapped_; }  // size() plus at least `padding` zero bytes

  // Drops the resident pages that lie wholly before `p` (a position in data()), in steps of a
  // few MB. Later reads of those bytes still see the file.
  void release_before(const char* p);

 private:
  padded_file(void* base, std::size_t size, std::size_t mapped) : base_(base), size_(size), mapped_(mapped) {}
  void* base_;
  std::size_t size_, mapped_, released_ = 0;
};

}  // namespace banyan::partitioner::detail
