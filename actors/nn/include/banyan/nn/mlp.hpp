// A multi-layer perceptron classifier: inputs -> (linear, ReLU) x hidden -> linear -> softmax
// cross-entropy. Same arenas, backends and optimizer as gpt; used by the Fashion-MNIST sample.
// Not thread-safe; one mlp per thread.
#pragma once

#include "banyan/nn/arena.hpp"
#include "banyan/nn/backend.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace banyan::nn {

struct mlp_config {
  int inputs = 0;
  std::vector<int> hidden;  // widths of the hidden layers, may be empty (logistic regression)
  int classes = 0;
  result<void> validate() const;
  std::vector<std::int64_t> to_vector() const;   // for checkpoints
  std::vector<std::string> field_names() const;  // to_vector()'s fields ("inputs", ..., "hidden[0]")
  friend bool operator==(const mlp_config&, const mlp_config&) = default;
};

class mlp {
 public:
  static result<mlp> create(const mlp_config& cfg, int batch, backend& be);

  // He-normal weights for ReLU layers (std sqrt(2/fan_in)), zero biases.
  void init(std::uint64_t seed);

  // x: host (B, inputs); labels: host (B) in [0, classes) or null. B <= batch.
  // Returns the mean cross-entropy, or NaN without labels.
  float forward(const float* x, const int* labels, int B);
  void zero_grad();
  void backward();
  // Arg-max class of each row of the last forward (B values).
  std::vector<int> predictions() const;

  arena& params() { return params_; }
  arena& grads() { return grads_; }
  const arena& params() const { return params_; }
  const mlp_config& config() const { return cfg_; }
  // Parameters, without the arena's alignment padding (params().numel() includes it).
  std::size_t num_params() const { return params_.tensor_numel(); }
  std::vector<layer_info> layers() const;
  void set_profiling(bool on) { profiling_ = on; }
  // Called around every layer from now on (arena.hpp); empty hooks remove them.
  void set_layer_hooks(layer_hooks hooks) { hooks_ = std::move(hooks); }

 private:
  mlp(const mlp_config& cfg, int batch, backend& be);

  mlp_config cfg_;
  int batch_;
  backend* be_;
  arena params_, grads_, acts_, dacts_;
  buffer input_, labels_;
  std::vector<std::string> layer_names_;
  std::vector<double> fwd_ms_, bwd_ms_;
  int B_ = 0;
  bool has_labels_ = false;
  bool profiling_ = false;
  layer_hooks hooks_;
};

}  // namespace banyan::nn
