// AdamW with decoupled weight decay and global-norm gradient clipping, numerically the same update as
// torch.optim.AdamW after torch.nn.utils.clip_grad_norm_ (checked by the PyTorch reference test).
// Owns the two moment buffers (the layout of the parameter arena, padding included) on the model's
// backend.
#pragma once

#include "banyan/nn/arena.hpp"
#include "banyan/nn/backend.hpp"

#include <cstddef>
#include <vector>

namespace banyan::nn {

struct adamw_config {
  float lr = 3e-4f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  float grad_clip = 1.0f;  // max global L2 norm; <= 0 disables clipping
  result<void> validate() const;
};

class adamw {
 public:
  // Moments for `params` (params.numel() floats each: the arena's padding too, which stays zero).
  adamw(backend& be, const arena& params);

  // One step on the flat parameter and gradient buffers (the arena's numel() floats each). Clips the
  // gradients in place first. Returns the global gradient norm before clipping.
  float step(float* params, float* grads, const adamw_config& cfg);

  // Layer by layer, for gradient servers (actors/cpu): step `t` (1-based, steps() + 1 for the next
  // step) on floats [begin, end) of the buffers only, without clipping (the caller clips first when
  // it clips); the same arithmetic as step(). set_steps(t) once every range of step t is done.
  void update_range(float* params, const float* grads, std::size_t begin, std::size_t end, const adamw_config& cfg,
                    int t);
  void set_steps(int t) { t_ = t; }

  int steps() const { return t_; }
  // For checkpoints: moments to and from host, and the step count.
  std::vector<float> m_host() const;
  std::vector<float> v_host() const;
  // The moments where they live (device pointers of the backend), for a checkpoint that downloads
  // them straight into its buffer.
  const float* m_data() const { return static_cast<const float*>(m_.get()); }
  const float* v_data() const { return static_cast<const float*>(v_.get()); }
  void restore(const std::vector<float>& m, const std::vector<float>& v, int steps);

 private:
  backend* be_;
  std::size_t n_;
  buffer m_, v_;
  int t_ = 0;
};

}  // namespace banyan::nn
