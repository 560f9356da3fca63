// The trainer leaf of train_gpt: loads the corpus, builds the model on the chosen backend, then runs
// one optimizer step per message to itself (so the actor stays responsive), with periodic validation,
// checkpoints and, at the end, generated sample text and a summary.
#pragma once

#include <banyan/sdk/sdk.hpp>
#include <banyan/nn/adamw.hpp>
#include <banyan/nn/data.hpp>
#include <banyan/nn/gpt.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

struct gpt_train_options {
  std::string data_dir = banyan::nn::default_fortunes_dir;
  std::string backend = "cpu";
  int nn_threads = 0;
  int steps = 2000;
  int batch = 16;
  int seq_len = 64;
  int layers = 4;
  int heads = 4;
  int channels = 128;
  float lr = 1e-3f;
  float weight_decay = 0.0f;
  float grad_clip = 1.0f;
  int val_every = 200;
  int val_batches = 8;
  std::string checkpoint = "train_gpt.ckpt";
  int checkpoint_every = 500;
  bool resume = false;
  int sample_chars = 300;
  float temperature = 0.8f;
  std::uint64_t seed = 1;
  bool json = false;
};

class gpt_trainer : public banyan::leaf {
 public:
  explicit gpt_trainer(std::shared_ptr<const gpt_train_options> opts) : opts_(std::move(opts)) {}
  void on_start(banyan::context& ctx) override;

 private:
  void fail(banyan::context& ctx, const std::string& message);
  void step(banyan::context& ctx);
  float validate();
  std::string generate();
  void finish(banyan::context& ctx);
  void progress(bool final);

  std::shared_ptr<const gpt_train_options> opts_;
  banyan::nn::char_corpus corpus_;
  std::unique_ptr<banyan::nn::backend> be_;
  std::optional<banyan::nn::gpt> model_;
  std::optional<banyan::nn::adamw> opt_;
  std::optional<banyan::nn::text_batcher> train_, val_;
  int step_ = 0, start_step_ = 0;
  float last_loss_ = 0.0f, last_val_ = -1.0f;
  std::chrono::steady_clock::time_point started_, last_print_;
};
