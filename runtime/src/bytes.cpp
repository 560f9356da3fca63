#include "banyan/runtime/bytes.hpp"

#include <cstring>

namespace banyan::runtime {

shared_bytes::shared_bytes(std::vector<std::byte> bytes) {
  auto owner = std::make_shared<const std::vector<std::byte>>(std::move(bytes));
  data_ = owner->data();
  size_ = owner->size();
  owner_ = std::move(owner);
}

shared_bytes shared_bytes::copy_of(std::string_view text) {
  std::vector<std::byte> v(text.size());
  if (!text.empty()) std::memcpy(v.data(), text.data(), text.size());
  return shared_bytes(std::move(v));
}

}  // namespace banyan::runtime
