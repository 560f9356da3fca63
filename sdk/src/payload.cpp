#include "banyan/sdk/payload.hpp"

#include <cstring>

namespace banyan {

payload payload::copy_of(std::span<const std::byte> bytes) {
  std::size_t words = (bytes.size() + sizeof(capnp::word) - 1) / sizeof(capnp::word);
  auto array = kj::heapArray<capnp::word>(words);
  if (words) {
    std::memset(array.begin(), 0, words * sizeof(capnp::word));
    std::memcpy(array.begin(), bytes.data(), bytes.size());
  }
  payload p;
  p.buffer_ = std::make_shared<const kj::Array<capnp::word>>(std::move(array));
  p.size_ = bytes.size();
  return p;
}

payload payload::copy_of(std::string_view bytes) {
  return copy_of(std::as_bytes(std::span<const char>(bytes.data(), bytes.size())));
}

payload payload::from_words(kj::Array<capnp::word>&& words) {
  payload p;
  p.size_ = words.size() * sizeof(capnp::word);
  p.buffer_ = std::make_shared<const kj::Array<capnp::word>>(std::move(words));
  return p;
}

std::span<const std::byte> payload::bytes() const {
  if (!buffer_) return {};
  return {reinterpret_cast<const std::byte*>(buffer_->begin()), size_};
}

kj::ArrayPtr<const capnp::word> payload::words() const {
  if (!buffer_) return {};
  return buffer_->asPtr();
}

}  // namespace banyan
