// Message payloads: immutable, shared, word-aligned bytes.
//
// A payload is a value that shares one buffer: copying it copies a pointer, so fanning one message out
// to many subscribers in a process never copies the bytes. Typed payloads are Cap'n Proto messages in
// flat-array form; raw bytes are allowed too (and are what crosses node links, unchanged).
//
// A payload that arrived from another node shares the received link frame of its batch when it can
// be read in place (see view_of), so keeping it keeps that frame's memory alive.
#pragma once

#include "banyan/sdk/error.hpp"

#include <capnp/message.h>
#include <capnp/serialize.h>

#include <cstddef>
#include <memory>
#include <span>
#include <string>

namespace banyan {

class payload {
 public:
  payload() = default;
  // Copies `bytes` once into a word-aligned buffer.
  static payload copy_of(std::span<const std::byte> bytes);
  static payload copy_of(std::string_view bytes);
  // Takes ownership of a flat-array Cap'n Proto message.
  static payload from_words(kj::Array<capnp::word>&& words);
  // Shares `size` bytes at `data`, kept alive by `owner`, when Cap'n Proto can read them in place
  // (8-byte aligned, a whole number of words; every flat-array message is); otherwise copies them
  // once like copy_of. `data` must stay valid and unchanged while `owner` lives.
  static payload view_of(std::shared_ptr<const void> owner, const std::byte* data, std::size_t size);
  // Builds a typed payload: `fill(Schema::Builder)` sets its fields.
  template <class Schema, class Fill>
  static payload build(Fill&& fill) {
    capnp::MallocMessageBuilder builder;
    fill(builder.initRoot<Schema>());
    return from_words(capnp::messageToFlatArray(builder));
  }

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // The bytes as words for Cap'n Proto; the last word is zero-padded.
  kj::ArrayPtr<const capnp::word> words() const;
  // The buffer's owner, to share the bytes without copying (e.g. with a node link).
  std::shared_ptr<const void> owner() const { return owner_; }
  // True when both share one buffer (used to prove fan-out does not copy).
  bool same_buffer(const payload& other) const { return owner_ == other.owner_ && data_ == other.data_; }

 private:
  std::shared_ptr<const void> owner_;
  const std::byte* data_ = nullptr;  // word-aligned; null when empty
  std::size_t size_ = 0;
  std::size_t words_ = 0;  // size_ rounded up to whole words (the last one zero-padded)
};

// Validates `p` as a `Schema` message (the whole message is traversed, so every pointer is checked) and
// calls `use(Schema::Reader)`. A payload that fails validation gives an error naming `what` (e.g. the
// topic) and Cap'n Proto's reason; `use` is not called.
template <class Schema, class Use>
result<void> read_as(const payload& p, const std::string& what, Use&& use) {
  try {
    capnp::FlatArrayMessageReader reader(p.words());
    auto root = reader.getRoot<Schema>();
    (void)root.totalSize();
    use(root);
    return {};
  } catch (const kj::Exception& e) {
    return error{sdk::errc::invalid_payload,
                 what + ": payload of " + std::to_string(p.size()) +
                     " bytes is not a valid message: " + std::string(e.getDescription().cStr())};
  }
}

}  // namespace banyan
