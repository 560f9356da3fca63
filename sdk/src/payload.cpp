#include "banyan/sdk/payload.hpp"

#include <cstdint>
#include <cstring>

namespace banyan {

payload payload::copy_of(std::span<const std::byte> bytes) {
  std::size_t words = (bytes.size() + sizeof(capnp::word) - 1) / sizeof(capnp::word);
  auto array = kj::heapArray<capnp::word>(words);
  if (words) {
    std::memset(array.begin(), 0, words * sizeof(capnp::word));
    std::memcpy(array.begin(), bytes.data(), bytes.size());
  }
  payload p = from_words(std::move(array));
  p.size_ = bytes.size();
  return p;
}

payload payload::copy_of(std::string_view bytes) {
  return copy_of(std::as_bytes(std::span<const char>(bytes.data(), bytes.size())));
}

payload payload::from_words(kj::Array<capnp::word>&& words) {
  payload p;
  p.words_ = words.size();
  p.size_ = words.size() * sizeof(capnp::word);
  auto buffer = std::make_shared<const kj::Array<capnp::word>>(std::move(words));
  if (p.words_) p.data_ = reinterpret_cast<const std::byte*>(buffer->begin());
  p.owner_ = std::move(buffer);
  return p;
}

payload payload::view_of(std::shared_ptr<const void> owner, const std::byte* data, std::size_t size) {
  const bool in_place =
      reinterpret_cast<std::uintptr_t>(data) % alignof(capnp::word) == 0 && size % sizeof(capnp::word) == 0;
  if (!in_place) return copy_of(std::span<const std::byte>(data, size));
  payload p;
  if (size == 0) return p;
  p.owner_ = std::move(owner);
  p.data_ = data;
  p.size_ = size;
  p.words_ = size / sizeof(capnp::word);
  return p;
}

kj::ArrayPtr<const capnp::word> payload::words() const { return {reinterpret_cast<const capnp::word*>(data_), words_}; }

}  // namespace banyan
