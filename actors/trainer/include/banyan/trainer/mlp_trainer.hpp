// A leaf that trains an MLP classifier (banyan/nn/mlp.hpp) on Fashion-MNIST: it loads the training and
// test sets, trains one mini-batch per message to itself, reports test accuracy after every epoch and,
// at the end, a summary (or JSON) on stdout, then quits the app with 0; any error is logged once and
// quits it with 2 for a bad argument or input file (missing or corrupt data, a batch larger than the
// training set, a checkpoint path that cannot be written: checked at start), or 1 when the work fails
// (a failed save).
//
// Deterministic: the epoch's shuffle depends only on (seed, epoch); the last partial batch of an epoch
// is dropped.
//
// With common.workers set, the steps run on per-core workers (banyan::cpu::worker_group), each on its
// slice of the same global mini-batch, as worker leaves under this composite (worker_leaves.hpp; build
// it with add_mlp_trainer); the model here holds the master parameters (evaluation and the checkpoint
// read it); the topology and the replicas' memory are logged at start.
#pragma once

#include "banyan/trainer/options.hpp"
#include "banyan/trainer/progress.hpp"
#include "banyan/trainer/worker_leaves.hpp"

#include <banyan/cpu/worker_group.hpp>
#include <banyan/nn/adamw.hpp>
#include <banyan/nn/checkpoint_store.hpp>
#include <banyan/nn/data.hpp>
#include <banyan/nn/mlp.hpp>
#include <banyan/sdk/component.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace banyan::trainer {

struct mlp_options {
  std::string data_dir = nn::default_fashion_mnist_dir;
  common_options common;
  int epochs = 8;
  int batch = 128;                    // images per mini-batch; at most the training set
  std::vector<int> hidden{256, 128};  // hidden layer widths
};

class mlp_trainer : public composite {
 public:
  // `workers`: the hub of its worker leaves (add_worker_leaves), needed when opts asks for workers.
  explicit mlp_trainer(std::shared_ptr<const mlp_options> opts, std::shared_ptr<worker_hub> workers = {})
      : opts_(std::move(opts)), hub_(std::move(workers)) {}
  void on_start(context& ctx) override;

 private:
  result<void> prepare(context& ctx);
  void step(context& ctx);
  void after_step(context& ctx);
  double evaluate();
  void finish(context& ctx);
  void shuffle();
  std::string position() const;

  std::shared_ptr<const mlp_options> opts_;
  std::shared_ptr<worker_hub> hub_;
  std::string app_;
  nn::image_set train_, test_;
  std::unique_ptr<nn::backend> be_;
  std::optional<nn::mlp> model_;
  std::optional<nn::adamw> opt_;
  std::unique_ptr<nn::checkpoint_store> checkpoints_;  // with a checkpoint folder
  std::optional<banyan::progress> progress_;
  std::vector<int> order_;
  std::vector<float> xb_;
  std::vector<int> yb_;
  int epoch_ = 0, pos_ = 0;
  long long steps_ = 0, total_steps_ = 0;
  float last_loss_ = 0.0f;
  double last_acc_ = 0.0;
  // Workers: the step and epoch position of the current run (the workers read their rows from them).
  long long run_first_step_ = 0;
  int run_first_pos_ = 0;
  std::unique_ptr<cpu::worker_group> group_;  // after what it reads
  std::unique_ptr<worker_driver> driver_;     // before the group goes
};

// Adds the MLP trainer to `parent` as `name`, with its worker subtree when opts->common.workers asks
// for workers (from this machine's topology; a bad --workers builds the plain trainer, which reports it).
spec& add_mlp_trainer(spec& parent, const std::string& name, std::shared_ptr<const mlp_options> opts);

}  // namespace banyan::trainer
