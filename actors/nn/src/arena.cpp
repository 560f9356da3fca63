#include "banyan/nn/arena.hpp"

#include <cassert>

namespace banyan::nn {

int arena::add(std::string name, std::vector<int> shape, int layer) {
  assert(mem_.get() == nullptr && "arena::add after allocate");
  std::size_t n = 1;
  for (int d : shape) {
    assert(d > 0);
    n *= static_cast<std::size_t>(d);
  }
  // Keep every tensor 16-float (64-byte) aligned for SIMD and coalesced CUDA loads.
  const std::size_t offset = (numel_ + 15) / 16 * 16;
  tensors_.push_back(tensor_info{std::move(name), std::move(shape), offset, n, layer});
  numel_ = offset + n;
  return static_cast<int>(tensors_.size()) - 1;
}

void arena::allocate(backend& be) { mem_ = buffer(be, numel_ * sizeof(float)); }

void arena::share(const arena& owner) {
  assert(owner.numel_ == numel_ && owner.tensors_.size() == tensors_.size() && "arena::share: another layout");
  mem_.reset();
  shared_ = owner.base();
}

int arena::find(std::string_view name) const {
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    if (tensors_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

std::size_t arena::tensor_numel() const {
  std::size_t n = 0;
  for (const auto& t : tensors_) n += t.numel;
  return n;
}

std::size_t arena::layer_bytes(int layer) const {
  std::size_t n = 0;
  for (const auto& t : tensors_) {
    if (t.layer == layer) n += t.numel;
  }
  return n * sizeof(float);
}

std::vector<float> arena::to_host(backend& be) const {
  std::vector<float> host(numel_);
  if (numel_ > 0) be.download(host.data(), base(), bytes());
  return host;
}

void arena::from_host(backend& be, const std::vector<float>& host) {
  assert(host.size() == numel_);
  if (numel_ > 0) be.upload(base(), host.data(), bytes());
}

}  // namespace banyan::nn
