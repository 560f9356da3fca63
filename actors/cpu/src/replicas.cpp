#include "banyan/cpu/replicas.hpp"

#include <optional>

namespace banyan::cpu {

namespace {

class gpt_replica final : public replica {
 public:
  gpt_replica(nn::gpt model, int batch, int seq, int worker, text_slice data)
      : model_(std::move(model)), batch_(batch), seq_(seq), worker_(worker), data_(std::move(data)) {}
  nn::arena& params() override { return model_.params(); }
  nn::arena& grads() override { return model_.grads(); }
  void set_layer_hooks(nn::layer_hooks hooks) override { model_.set_layer_hooks(std::move(hooks)); }
  float forward(std::int64_t step) override {
    data_(step, worker_, tokens_, targets_);
    return model_.forward(tokens_.data(), targets_.data(), batch_, seq_);
  }
  void zero_grad() override { model_.zero_grad(); }
  void backward() override { model_.backward(); }
  std::size_t activation_bytes() const override { return 2 * model_.activations().bytes(); }

 private:
  nn::gpt model_;
  int batch_, seq_, worker_;
  text_slice data_;
  std::vector<int> tokens_, targets_;
};

class mlp_replica final : public replica {
 public:
  mlp_replica(nn::mlp model, int batch, int worker, image_slice data)
      : model_(std::move(model)), batch_(batch), worker_(worker), data_(std::move(data)) {}
  nn::arena& params() override { return model_.params(); }
  nn::arena& grads() override { return model_.grads(); }
  void set_layer_hooks(nn::layer_hooks hooks) override { model_.set_layer_hooks(std::move(hooks)); }
  float forward(std::int64_t step) override {
    data_(step, worker_, x_, labels_);
    return model_.forward(x_.data(), labels_.data(), batch_);
  }
  void zero_grad() override { model_.zero_grad(); }
  void backward() override { model_.backward(); }
  std::size_t activation_bytes() const override {
    std::size_t n = 0;
    for (const auto& l : model_.layers()) n += l.activation_bytes;
    return 2 * n;
  }

 private:
  nn::mlp model_;
  int batch_, worker_;
  image_slice data_;
  std::vector<float> x_;
  std::vector<int> labels_;
};

}  // namespace

replica_factory gpt_replicas(const nn::gpt_config& cfg, int batch, int seq_len, text_slice data) {
  return [=](nn::backend& be, int worker) -> result<std::unique_ptr<replica>> {
    auto m = nn::gpt::create(cfg, batch, seq_len, be);
    if (!m) return std::move(m).error();
    return std::unique_ptr<replica>(std::make_unique<gpt_replica>(std::move(m).value(), batch, seq_len, worker, data));
  };
}

replica_factory mlp_replicas(const nn::mlp_config& cfg, int batch, image_slice data) {
  return [=](nn::backend& be, int worker) -> result<std::unique_ptr<replica>> {
    auto m = nn::mlp::create(cfg, batch, be);
    if (!m) return std::move(m).error();
    return std::unique_ptr<replica>(std::make_unique<mlp_replica>(std::move(m).value(), batch, worker, data));
  };
}

}  // namespace banyan::cpu
