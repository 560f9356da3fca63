// Immutable, shared payload bytes: what an envelope carries across a link unchanged.
//
// A value: copies share one buffer (no byte copy), and the bytes never change after construction,
// so any number of threads may read them. The owner keeps the buffer alive. Sending copies each
// payload once, into the one ZeroMQ frame that carries its batch; on the receiving side the owner is
// that frame, so receiving and delivering copy nothing (the SDK hands subscribers a view of it
// when the bytes are word-aligned, see banyan::payload::view_of).
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

namespace banyan::runtime {

class shared_bytes {
 public:
  shared_bytes() = default;
  // Takes the vector's buffer (one allocation for the shared owner, no byte copy).
  explicit shared_bytes(std::vector<std::byte> bytes);
  // Copies the text's bytes (convenience for tests and small control messages).
  static shared_bytes copy_of(std::string_view text);
  // A view into memory owned by `owner`; `data` must stay valid while `owner` lives.
  shared_bytes(std::shared_ptr<const void> owner, const std::byte* data, std::size_t size)
      : owner_(std::move(owner)), data_(data), size_(size) {}

  std::span<const std::byte> span() const { return {data_, size_}; }
  std::string_view text() const { return {reinterpret_cast<const char*>(data_), size_}; }
  const std::byte* data() const { return data_; }
  // Whoever keeps the bytes alive (to share them further without a copy).
  const std::shared_ptr<const void>& owner() const { return owner_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  std::shared_ptr<const void> owner_;
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace banyan::runtime
