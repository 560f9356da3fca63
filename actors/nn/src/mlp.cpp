#include "banyan/nn/mlp.hpp"

#include "banyan/nn/rng.hpp"
#include "layer_clock.hpp"

#include <cassert>
#include <cmath>
#include <limits>
#include <string>

namespace banyan::nn {

// Layout: per linear layer i (hidden.size()+1 of them) params fc{i}_w, fc{i}_b (ids 2i, 2i+1);
// activations fc{i} (pre-activation) then relu{i} for hidden layers (ids 2i, 2i+1), then logits,
// probs, losses. Layers: fc{i} (linear + ReLU) for hidden, "out", "loss".

result<void> mlp_config::validate() const {
  auto bad = [](const std::string& what) { return error{errc::invalid_argument, "mlp config: " + what}; };
  if (inputs <= 0) return bad("inputs = " + std::to_string(inputs) + " must be positive");
  if (classes < 2) return bad("classes = " + std::to_string(classes) + " must be at least 2");
  for (std::size_t i = 0; i < hidden.size(); ++i) {
    if (hidden[i] <= 0)
      return bad("hidden[" + std::to_string(i) + "] = " + std::to_string(hidden[i]) + " must be positive");
  }
  return {};
}

std::vector<std::int64_t> mlp_config::to_vector() const {
  std::vector<std::int64_t> v{inputs, classes, static_cast<std::int64_t>(hidden.size())};
  for (int h : hidden) v.push_back(h);
  return v;
}

std::vector<std::string> mlp_config::field_names() const {
  std::vector<std::string> v{"inputs", "classes", "hidden layers"};
  for (std::size_t i = 0; i < hidden.size(); ++i) v.push_back("hidden[" + std::to_string(i) + "]");
  return v;
}

result<mlp> mlp::create(const mlp_config& cfg, int batch, backend& be) {
  if (auto s = cfg.validate(); !s) return s.error();
  if (batch <= 0) return error{errc::invalid_argument, "mlp: batch = " + std::to_string(batch) + " must be positive"};
  return mlp(cfg, batch, be);
}

mlp::mlp(const mlp_config& cfg, int batch, backend& be) : cfg_(cfg), batch_(batch), be_(&be) {
  const int H = static_cast<int>(cfg.hidden.size());
  for (int i = 0; i < H; ++i) layer_names_.push_back("fc" + std::to_string(i));
  layer_names_.push_back("out");
  layer_names_.push_back("loss");
  fwd_ms_.assign(layer_names_.size(), 0.0);
  bwd_ms_.assign(layer_names_.size(), 0.0);
  for (arena* a : {&params_, &grads_}) {
    int fan_in = cfg.inputs;
    for (int i = 0; i <= H; ++i) {
      const int width = i < H ? cfg.hidden[i] : cfg.classes;
      a->add("fc" + std::to_string(i) + "_w", {width, fan_in}, i);
      a->add("fc" + std::to_string(i) + "_b", {width}, i);
      fan_in = width;
    }
    a->allocate(be);
  }
  for (arena* a : {&acts_, &dacts_}) {
    for (int i = 0; i < H; ++i) {
      a->add("fc" + std::to_string(i), {batch, cfg.hidden[i]}, i);
      a->add("relu" + std::to_string(i), {batch, cfg.hidden[i]}, i);
    }
    a->add("logits", {batch, cfg.classes}, H);
    a->add("probs", {batch, cfg.classes}, H + 1);
    a->add("losses", {batch}, H + 1);
    a->allocate(be);
  }
  input_ = buffer(be, sizeof(float) * static_cast<std::size_t>(batch) * cfg.inputs);
  labels_ = buffer(be, sizeof(int) * static_cast<std::size_t>(batch));
}

void mlp::init(std::uint64_t seed) {
  rng r(seed);
  std::vector<float> host(params_.numel(), 0.0f);
  for (const auto& t : params_.tensors()) {
    if (t.shape.size() != 2) continue;  // biases stay 0
    const float sd = std::sqrt(2.0f / static_cast<float>(t.shape[1]));
    float* p = host.data() + t.offset;
    for (std::size_t i = 0; i < t.numel; ++i) p[i] = sd * r.normal();
  }
  params_.from_host(*be_, host);
}

float mlp::forward(const float* x, const int* labels, int B) {
  assert(B > 0 && B <= batch_);
  B_ = B;
  has_labels_ = labels != nullptr;
  const int H = static_cast<int>(cfg_.hidden.size());
  backend& be = *be_;
  be.upload(input_.get(), x, sizeof(float) * static_cast<std::size_t>(B) * cfg_.inputs);
  if (has_labels_) be.upload(labels_.get(), labels, sizeof(int) * B);
  const float* in = input_.f32();
  int fan_in = cfg_.inputs;
  for (int i = 0; i < H; ++i) {
    const int w = cfg_.hidden[i];
    detail::layer_call(be, profiling_, fwd_ms_[i], hooks_, i, true, [&] {
      be.matmul_forward(acts_.data(2 * i), in, params_.data(2 * i), params_.data(2 * i + 1), B, fan_in, w);
      be.relu_forward(acts_.data(2 * i + 1), acts_.data(2 * i), static_cast<std::size_t>(B) * w);
    });
    in = acts_.data(2 * i + 1);
    fan_in = w;
  }
  const int K = cfg_.classes;
  float* logits = acts_.data(2 * H);
  detail::layer_call(be, profiling_, fwd_ms_[H], hooks_, H, true, [&] {
    be.matmul_forward(logits, in, params_.data(2 * H), params_.data(2 * H + 1), B, fan_in, K);
  });
  if (!has_labels_) {
    be.synchronize();
    return std::numeric_limits<float>::quiet_NaN();
  }
  detail::layer_call(be, profiling_, fwd_ms_[H + 1], hooks_, H + 1, true, [&] {
    be.softmax_crossentropy_forward(acts_.data(2 * H + 2), acts_.data(2 * H + 1), logits, labels_.i32(), B, K);
  });
  std::vector<float> losses(B);
  be.download(losses.data(), acts_.data(2 * H + 2), sizeof(float) * B);
  double sum = 0.0;
  for (float l : losses) sum += l;
  return static_cast<float>(sum / B);
}

void mlp::zero_grad() {
  grads_.zero(*be_);
  dacts_.zero(*be_);
}

void mlp::backward() {
  assert(has_labels_);
  const int H = static_cast<int>(cfg_.hidden.size());
  const int B = B_, K = cfg_.classes;
  backend& be = *be_;
  float* dlogits = dacts_.data(2 * H);
  detail::layer_call(be, profiling_, bwd_ms_[H + 1], hooks_, H + 1, false, [&] {
    be.softmax_crossentropy_backward(dlogits, acts_.data(2 * H + 1), labels_.i32(), 1.0f / static_cast<float>(B), B, K);
  });
  for (int i = H; i >= 0; --i) {
    const int out_w = i < H ? cfg_.hidden[i] : K;
    const int fan_in = i > 0 ? cfg_.hidden[i - 1] : cfg_.inputs;
    const float* in = i > 0 ? acts_.data(2 * (i - 1) + 1) : input_.f32();
    float* din = i > 0 ? dacts_.data(2 * (i - 1) + 1) : nullptr;
    const float* dout = i < H ? dacts_.data(2 * i) : dlogits;
    detail::layer_call(be, profiling_, bwd_ms_[i], hooks_, i, false, [&] {
      if (i < H) {
        be.relu_backward(dacts_.data(2 * i), acts_.data(2 * i), dacts_.data(2 * i + 1),
                         static_cast<std::size_t>(B) * out_w);
      }
      be.matmul_backward(din, grads_.data(2 * i), grads_.data(2 * i + 1), dout, in, params_.data(2 * i), B, fan_in,
                         out_w);
    });
  }
}

std::vector<int> mlp::predictions() const {
  const int H = static_cast<int>(cfg_.hidden.size());
  const int K = cfg_.classes;
  std::vector<float> logits(static_cast<std::size_t>(B_) * K);
  be_->download(logits.data(), acts_.data(2 * H), logits.size() * sizeof(float));
  std::vector<int> out(B_);
  for (int b = 0; b < B_; ++b) {
    int best = 0;
    for (int k = 1; k < K; ++k) {
      if (logits[static_cast<std::size_t>(b) * K + k] > logits[static_cast<std::size_t>(b) * K + best]) best = k;
    }
    out[b] = best;
  }
  return out;
}

std::vector<layer_info> mlp::layers() const {
  std::vector<layer_info> out;
  for (std::size_t i = 0; i < layer_names_.size(); ++i) {
    const int id = static_cast<int>(i);
    out.push_back(layer_info{layer_names_[i], params_.layer_bytes(id), acts_.layer_bytes(id), fwd_ms_[i], bwd_ms_[i]});
  }
  return out;
}

}  // namespace banyan::nn
