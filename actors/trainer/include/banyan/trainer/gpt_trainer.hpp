// A leaf that trains a character-level GPT (banyan/nn/gpt.hpp) on a text corpus (Debian's fortunes):
// it loads the corpus, builds the model on the chosen backend, then runs one optimizer step per
// message to itself, so the actor stays responsive, with periodic validation and checkpoints. At the
// end it prints generated text and a summary (or JSON) on stdout and quits the app with 0; any error
// is logged once and quits it with 2 when an argument or an input file is wrong (a bad option, a
// checkpoint path that cannot be written, a missing or empty corpus, a checkpoint to resume from that
// is unreadable, corrupt or saved for another model or corpus: all checked before training), or with
// 1 when the work fails (a loss that is not finite, a save that fails).
//
// Deterministic: batches depend only on (seed, step), so a resumed run sees the data an uninterrupted
// one would have seen.
//
// With common.workers set, the steps run on per-core workers (banyan::cpu::worker_group): worker w
// trains on rows [w*b, (w+1)*b) of the same global batch, the model here holds the master parameters
// the gradient servers update (validation, sampling and checkpoints read it), and the topology and
// the replicas' memory are logged at start. With data_parallel = K > 1 it is one of K node trainers
// under a gradient_server (data_parallel.hpp): rank r's workers train on rows [r*B/K, (r+1)*B/K),
// the node means meet at the server once per step, and rank 0 alone validates, saves checkpoints,
// samples and prints (every rank holds the same parameters). With elastic.virtual_workers = V it is
// the elastic scheduler (elastic.hpp): its children are physical workers p0.., and it sums their
// virtual workers' gradients in virtual-worker order before each optimizer step.
#pragma once

#include "banyan/trainer/data_parallel.hpp"
#include "banyan/trainer/elastic.hpp"
#include "banyan/trainer/options.hpp"
#include "banyan/trainer/progress.hpp"
#include "banyan/trainer/worker_leaves.hpp"

#include <banyan/cpu/worker_group.hpp>
#include <banyan/nn/adamw.hpp>
#include <banyan/nn/checkpoint.hpp>
#include <banyan/nn/checkpoint_store.hpp>
#include <banyan/nn/data.hpp>
#include <banyan/nn/gpt.hpp>
#include <banyan/sdk/component.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace banyan::trainer {

struct worker_plan;

struct gpt_options {
  std::string data_dir = nn::default_fortunes_dir;
  common_options common;
  int steps = 2000;
  int batch = 16;    // sequences per batch
  int seq_len = 64;  // context length
  int layers = 4;
  int heads = 4;
  int channels = 128;  // embedding width; a multiple of heads
  float grad_clip = 1.0f;
  int val_every = 200;         // validate every N steps; 0: only at the end
  int val_batches = 8;         // >= 1
  int checkpoint_every = 500;  // save every N steps; 0: only at the end
  // Continue from common.checkpoint. When the folder holds no checkpoint: a warning on stderr and a run from
  // scratch, or, with require_resume, an error (exit code 2).
  bool resume = false;
  bool require_resume = false;  // implies resume
  int sample_chars = 300;       // text generated at the end
  float temperature = 0.8f;
  // Data parallelism across node trainers (data_parallel.hpp): K > 1 node trainers, each with
  // common.workers workers on rows [rank*batch/K, (rank+1)*batch/K) of the global batch.
  int data_parallel = 1;
  // Elastic scheduling with virtual workers (elastic.hpp): elastic.virtual_workers = V > 0 splits the
  // batch into V virtual workers run by physical worker leaves p0.. that may come and go.
  elastic_options elastic;
  // Device-memory budget for the activations (nn/memory_executor.hpp): "" for none, else
  // a size ("200MiB"); one instance only (not with workers). The plan's policy, and whether to print
  // the plan (after the first step, when it is made from measured layer times).
  std::string device_memory;
  std::string memory_policy = "knapsack";
  bool print_memory_plan = false;
};

// A composite: with workers its children are the worker subtree (worker_leaves.hpp), else none.
// Build it with add_gpt_trainer, which adds that subtree.
class gpt_trainer : public composite {
 public:
  // `rank`: this node trainer's place among opts->data_parallel (0 when there is one trainer);
  // `workers`: the hub of its worker leaves (add_worker_leaves), needed when opts asks for workers.
  gpt_trainer(std::shared_ptr<const gpt_options> opts, int rank = 0, std::shared_ptr<worker_hub> workers = {})
      : opts_(std::move(opts)), rank_(rank), hub_(std::move(workers)) {}
  // Lets a worker waiting for the cluster mean go, then waits for the workers' run (worker_driver).
  ~gpt_trainer() override;
  void on_start(context& ctx) override;
  void on_child_failure(context& ctx, const std::string& child_path, const std::string& reason) override;

 private:
  result<void> prepare(context& ctx);
  void elastic_step(context& ctx, float loss);
  result<void> start_workers(context& ctx);
  void step(context& ctx);
  void ran(context& ctx, const std::vector<float>& losses);
  void after_step(context& ctx);
  float validate();
  std::string generate();
  result<void> save();
  void finish(context& ctx);
  std::string position() const;
  nn::checkpoint_identity identity() const;

  std::shared_ptr<const gpt_options> opts_;
  int rank_ = 0;
  std::string app_;
  nn::char_corpus corpus_;
  std::unique_ptr<nn::backend> be_;
  std::optional<nn::gpt> model_;
  std::optional<nn::adamw> opt_;
  std::optional<nn::text_batcher> train_, val_;
  std::unique_ptr<nn::checkpoint_store> checkpoints_;  // rank 0, with a checkpoint folder
  std::shared_ptr<const worker_plan> plan_;            // with --workers (private type: shared_ptr allows it incomplete)
  std::shared_ptr<worker_hub> hub_;
  std::unique_ptr<node_exchange> exchange_;     // with data_parallel > 1
  std::unique_ptr<cpu::worker_group> group_;    // after the model, optimizer, data and exchange it uses
  std::unique_ptr<worker_driver> driver_;       // before the group goes
  std::unique_ptr<elastic_scheduler> elastic_;  // with elastic.virtual_workers
  std::vector<float> host_params_;              // elastic: the parameters handed out (host copy)
  std::vector<float> host_grads_;
  std::vector<float> losses_;  // every step's training loss, for the summary
  std::optional<banyan::progress> progress_;
  int step_ = 0, start_step_ = 0;
  float last_loss_ = 0.0f, last_val_ = -1.0f;
};

// The checks of `o` that read no file (the options' values and how they combine, --workers against
// this machine, --device-memory's text): errc::invalid_argument naming the option and what to change.
// The trainer makes them again at start, but an app that calls this after parsing, before it builds
// the tree, reports a bad option once, not once per node trainer, and before any component starts.
result<void> check_gpt_options(const gpt_options& o);

// Adds the GPT trainer to `parent` as `name`: a gpt_trainer; with opts->common.workers its worker
// subtree from this machine's topology (worker_leaves.hpp); with opts->data_parallel = K > 1 a
// gradient_server `name` over K such node trainers n0..n<K-1> (data_parallel.hpp); with
// opts->elastic.virtual_workers its physical workers p0..p<P-1> (elastic.hpp). Options the
// trainer will refuse (a bad --workers) build the plain trainer, which reports them at start.
spec& add_gpt_trainer(spec& parent, const std::string& name, std::shared_ptr<const gpt_options> opts);

}  // namespace banyan::trainer
