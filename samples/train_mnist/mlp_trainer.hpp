// The trainer leaf of train_mnist: loads Fashion-MNIST, trains the MLP one mini-batch per message to
// itself, reports test accuracy after every epoch and a summary at the end.
#pragma once

#include <banyan/sdk/sdk.hpp>
#include <banyan/nn/adamw.hpp>
#include <banyan/nn/data.hpp>
#include <banyan/nn/mlp.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct mnist_train_options {
  std::string data_dir = banyan::nn::default_fashion_mnist_dir;
  std::string backend = "cpu";
  int nn_threads = 0;
  int epochs = 8;
  int batch = 128;
  std::vector<int> hidden{256, 128};
  float lr = 1e-3f;
  float weight_decay = 0.0f;
  std::string checkpoint;  // empty: do not save
  std::uint64_t seed = 1;
  bool json = false;
};

class mlp_trainer : public banyan::leaf {
 public:
  explicit mlp_trainer(std::shared_ptr<const mnist_train_options> opts) : opts_(std::move(opts)) {}
  void on_start(banyan::context& ctx) override;

 private:
  void fail(banyan::context& ctx, const std::string& message);
  void step(banyan::context& ctx);
  double evaluate();
  void finish(banyan::context& ctx);
  void progress(bool final);
  void shuffle();

  std::shared_ptr<const mnist_train_options> opts_;
  banyan::nn::image_set train_, test_;
  std::unique_ptr<banyan::nn::backend> be_;
  std::optional<banyan::nn::mlp> model_;
  std::optional<banyan::nn::adamw> opt_;
  std::vector<int> order_;
  std::vector<float> xb_;
  std::vector<int> yb_;
  int epoch_ = 0, pos_ = 0;
  long long steps_ = 0, total_steps_ = 0;
  float last_loss_ = 0.0f;
  double last_acc_ = 0.0;
  std::chrono::steady_clock::time_point started_, last_print_;
};
