// A GPT-2-style decoder (pre-norm blocks, causal multi-head attention, GELU MLP, tied token
// embedding and output head), with every layer's forward and backward called explicitly.
//
// State lives in four arenas sized from (config, batch, seq_len) at creation: parameters, their
// gradients, activations and activation gradients. Nothing is allocated per step.
//
// Usage per step: forward(tokens, targets) -> zero_grad() -> backward() -> optimizer.step(params,
// grads). Not thread-safe; one gpt per thread (the backend parallelises inside each layer).
//
// With a device-memory budget (memory_options) the activations and activation gradients
// are not two arenas but one pool of at most `budget` bytes run by a memory_executor: each layer's saved
// activations are kept, swapped to host memory or recomputed as the plan says. The first step that
// has a backward runs with per-layer timing on and a plan made from estimated costs; after it the
// model plans again from the measured times (and the copy bandwidth the executor measured). The
// results are bit-identical to the model without a budget on the cpu backend, whatever the plan.
#pragma once

#include "banyan/nn/arena.hpp"
#include "banyan/nn/backend.hpp"
#include "banyan/nn/memory_executor.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace banyan::nn {

struct gpt_config {
  int vocab_size = 0;
  int max_seq_len = 0;  // context length; rows of the position embedding
  int num_layers = 0;
  int num_heads = 0;
  int channels = 0;  // must be divisible by num_heads
  // Names the first field that is out of range.
  result<void> validate() const;
  std::vector<std::int64_t> to_vector() const;    // for checkpoints
  static std::vector<std::string> field_names();  // to_vector()'s fields, in order ("channels")
  friend bool operator==(const gpt_config&, const gpt_config&) = default;
};

class gpt {
 public:
  // batch, seq_len: the largest (B,T) a forward pass will see (seq_len <= max_seq_len).
  // memory: a device-memory budget for the activations (per model instance, so each pipeline stage
  // can have its own); fails, naming the minimum, when no plan fits it. With memory->host_budget the
  // host pool's bytes are taken from that shared budget first, which may wait for a checkpoint store
  // to flush (memory_executor::set_plan: errc::timeout when it does not in time).
  static result<gpt> create(const gpt_config& cfg, int batch, int seq_len, backend& be,
                            std::optional<memory_options> memory = std::nullopt);

  // GPT-2 initialisation from `seed`: weights N(0, 0.02), residual projections scaled by
  // 1/sqrt(2L), biases 0, layernorm weights 1.
  void init(std::uint64_t seed);

  // tokens, targets: host arrays of B*T ids in [0, vocab); targets may be null (no loss). B <= batch,
  // T <= seq_len. Returns the mean cross-entropy, or NaN without targets.
  float forward(const int* tokens, const int* targets, int B, int T);
  void zero_grad();
  // Gradients of the mean loss of the last forward (which must have had targets).
  void backward();

  // Row (b,t) of the last forward's logits, on the host: vocab_size floats. With a memory budget,
  // only after a forward without targets (a training forward frees the logits after the loss).
  std::vector<float> logits_row(int b, int t) const;
  std::vector<float> logits_host() const;  // (B,T,V) of the last forward

  arena& params() { return params_; }
  arena& grads() { return grads_; }
  const arena& params() const { return params_; }
  const arena& grads() const { return grads_; }
  // The activations' layout (with a memory budget it is not allocated: the executor places them).
  const arena& activations() const { return acts_; }
  // The activations and layers as the memory planner sees them (ops are layers()).
  memory_graph memory_layout() const;
  // With a memory budget: the executor (its plan, graph, stats); null without one.
  const memory_executor* memory() const { return mem_.get(); }
  memory_executor* memory() { return mem_.get(); }
  // Plans again from the last measured per-layer times (after a step with a backward) with `policy`.
  // Errors: the planner's; set_plan's (a larger host pool not free in the shared host budget), in
  // which case the old plan stays. The automatic replan after the first step keeps it the same way.
  result<void> replan_memory(memory_policy policy);
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
  gpt(const gpt_config& cfg, int batch, int seq_len, backend& be, bool allocate_activations);
  template <class F>
  void timed(int layer, bool forward, F&& f);
  // One layer's kernels; `again`: a recompute during the backward (timed, no layer hooks).
  void forward_layer(int layer, bool again);
  void backward_layer(int layer);
  float* act(int id) const { return mem_ ? mem_->act(id) : acts_.data(id); }
  float* dact(int id) const { return mem_ ? mem_->grad(id) : dacts_.data(id); }
  memory_costs measured_costs() const;

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
  std::unique_ptr<memory_executor> mem_;
  bool measuring_ = false;  // with a budget: until the first backward has timed every layer
};

}  // namespace banyan::nn
