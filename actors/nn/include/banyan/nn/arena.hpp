// Arenas: one allocation per kind of state (parameters, gradients, activations, activation
// gradients), laid out up front from a model config. Each tensor is a named slice with a shape and an
// owning layer, so the memory manager can offload or recompute exactly one layer's activations and a
// pipeline search can cut the model between layers knowing every byte on each side.
//
// Contract: declare every tensor with add(), then allocate() once; offsets never change afterwards,
// so pointers from data() stay valid for the arena's life. Move-only (it owns device memory).
#pragma once

#include "banyan/nn/backend.hpp"

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace banyan::nn {

struct tensor_info {
  std::string name;        // "h0.qkv_w", "h3.att"
  std::vector<int> shape;  // row-major
  std::size_t offset = 0;  // in floats from the arena base
  std::size_t numel = 0;
  int layer = -1;  // index into the model's layers()
};

class arena {
 public:
  // Returns the tensor's id. Shapes must be positive (asserted: shapes come from validated configs).
  int add(std::string name, std::vector<int> shape, int layer);
  void allocate(backend& be);

  float* data(int id) const { return base() + tensors_[id].offset; }
  float* base() const { return shared_ != nullptr ? shared_ : mem_.f32(); }
  // Floats in the allocation: the tensors plus the zero padding that starts each tensor at a
  // multiple of 16 floats (64 bytes). Optimizer state and checkpoints cover exactly this.
  std::size_t numel() const { return numel_; }
  std::size_t bytes() const { return numel_ * sizeof(float); }
  // Floats in the tensors alone (no padding): a model's parameter count.
  std::size_t tensor_numel() const;
  const std::vector<tensor_info>& tensors() const { return tensors_; }
  // -1 when absent.
  int find(std::string_view name) const;
  // Bytes of the tensors owned by `layer`.
  std::size_t layer_bytes(int layer) const;

  // Reads and writes go to `owner`'s memory from now on (its layout must be this arena's: the same
  // model config); this arena's own allocation is released. For workers that share one read-only
  // parameter copy (actors/cpu). `owner` must outlive this arena.
  void share(const arena& owner);
  bool shared() const { return shared_ != nullptr; }

  void zero(backend& be) { be.zero(base(), bytes()); }
  std::vector<float> to_host(backend& be) const;
  // `host` must hold numel() floats (asserted).
  void from_host(backend& be, const std::vector<float>& host);

 private:
  std::vector<tensor_info> tensors_;
  std::size_t numel_ = 0;
  buffer mem_;
  float* shared_ = nullptr;
};

// What the memory manager and the pipeline search read about one layer of a model. Times are of the
// last forward/backward pass run with profiling on (0 otherwise); on CUDA they include a device
// synchronize per layer, so profile only when the numbers are wanted.
struct layer_info {
  std::string name;                  // "embedding", "h0.attn", "lm_head"
  std::size_t param_bytes = 0;       // parameters (the gradients and each AdamW moment match this)
  std::size_t activation_bytes = 0;  // activations kept for backward (activation grads match this)
  double forward_ms = 0.0;
  double backward_ms = 0.0;
};

// Calls a model makes around its layers, for data-parallel workers (actors/cpu): before_forward(l)
// right before layer l's forward (to wait for that layer's updated parameters), after_backward(l)
// right after layer l's backward, when the gradients of the parameters layer l owns are final (a
// tensor used by a later layer, like the tied embedding, is owned by the earliest one, whose backward
// runs last). Either may be empty. They run on the model's thread.
struct layer_hooks {
  std::function<void(int layer)> before_forward;
  std::function<void(int layer)> after_backward;
};

}  // namespace banyan::nn
