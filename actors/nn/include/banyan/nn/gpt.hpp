// A GPT-2-style decoder (pre-norm blocks, causal multi-head attention, GELU MLP, tied token
// embedding and output head), with every layer's forward and backward called explicitly.
//
// State lives in four arenas sized from (config, batch, seq_len) at creation: parameters, their
// gradients, activations and activation gradients. Nothing is allocated per step.
//
// Usage per step: forward(tokens, targets) -> zero_grad() -> backward() -> optimizer.step(params,
// grads). Not thread-safe; one gpt per thread (the backend parallelises inside each layer).
#pragma once

#include "banyan/nn/arena.hpp"
#include "banyan/nn/backend.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace banyan::nn {

struct gpt_config {
  int vocab_size = 0;
  int max_seq_len = 0;  // context length; rows of the position embedding
  int num_layers = 0;
  int num_heads = 0;
  int channels = 0;     // must be divisible by num_heads
  // Names the first field that is out of range.
  result<void> validate() const;
  std::vector<std::int64_t> to_vector() const;  // for checkpoints
  static std::vector<std::string> field_names();  // to_vector()'s fields, in order ("channels")
  friend bool operator==(const gpt_config&, const gpt_config&) = default;
};

class gpt {
 public:
  // batch, seq_len: the largest (B,T) a forward pass will see (seq_len <= max_seq_len).
  static result<gpt> create(const gpt_config& cfg, int batch, int seq_len, backend& be);

  // GPT-2 initialisation from `seed`: weights N(0, 0.02), residual projections scaled by
  // 1/sqrt(2L), biases 0, layernorm weights 1.
  void init(std::uint64_t seed);

  // tokens, targets: host arrays of B*T ids in [0, vocab); targets may be null (no loss). B <= batch,
  // T <= seq_len. Returns the mean cross-entropy, or NaN without targets.
  float forward(const int* tokens, const int* targets, int B, int T);
  void zero_grad();
  // Gradients of the mean loss of the last forward (which must have had targets).
  void backward();

  // Row (b,t) of the last forward's logits, on the host: vocab_size floats.
  std::vector<float> logits_row(int b, int t) const;
  std::vector<float> logits_host() const;  // (B,T,V) of the last forward

  arena& params() { return params_; }
  arena& grads() { return grads_; }
  const arena& params() const { return params_; }
  const arena& grads() const { return grads_; }
  const arena& activations() const { return acts_; }
  const gpt_config& config() const { return cfg_; }
  backend& device() const { return *be_; }
  // Parameters, without the arena's alignment padding (params().numel() includes it).
  std::size_t num_params() const { return params_.tensor_numel(); }

  // Per-layer bytes and (with profiling on) forward/backward times of the last step.
  std::vector<layer_info> layers() const;
  void set_profiling(bool on) { profiling_ = on; }
  // Called around every layer from now on (arena.hpp); empty hooks remove them.
  void set_layer_hooks(layer_hooks hooks) { hooks_ = std::move(hooks); }

 private:
  gpt(const gpt_config& cfg, int batch, int seq_len, backend& be);
  template <class F>
  void timed(int layer, bool forward, F&& f);

  gpt_config cfg_;
  int batch_, seq_len_;
  backend* be_;
  arena params_, grads_, acts_, dacts_;
  buffer tokens_, targets_;
  std::vector<std::string> layer_names_;
  std::vector<double> fwd_ms_, bwd_ms_;
  int B_ = 0, T_ = 0;
  bool has_targets_ = false;
  bool profiling_ = false;
  layer_hooks hooks_;
};

}  // namespace banyan::nn
