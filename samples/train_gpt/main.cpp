// train_gpt: trains a small character-level GPT on the fortunes corpus as a banyan app
// (/train_gpt/trainer does the work, banyan::trainer::gpt_trainer; with --workers its children are
// the per-core workers, numa<d>/w<i>; with --data-parallel K it is a gradient server over K such
// node trainers /train_gpt/trainer/n0..n<K-1>; with --elastic it is the elastic scheduler over
// physical workers /train_gpt/trainer/p0..; with --pipeline P it is banyan::pipeline_trainer's
// composite over stage leaves /train_gpt/trainer/r0..r<P-1>, pipeline_mode.hpp).
// `train_gpt --help` lists the options.
#include <banyan/sdk/sdk.hpp>
#include <banyan/trainer/gpt_trainer.hpp>

#include "pipeline_mode.hpp"
#include "profile_mode.hpp"

#include <cstdio>
#include <memory>

namespace {
constexpr int default_virtual_workers = 8;  // --elastic without --virtual-workers
}  // namespace

int main(int argc, char** argv) {
  using banyan::trainer::gpt_options;
  auto opts = std::make_shared<gpt_options>();
  opts->common.checkpoint = "train_gpt.checkpoints";
  banyan::app app{"train_gpt"};
  auto& cli = app.options();
  cli.description(
      "Train a character-level GPT on Debian's fortunes; shows progress, validation loss, "
      "saves and resumes checkpoints, and prints generated text.");
  cli.add("--data", opts->data_dir, "Fortunes directory");
  banyan::trainer::add_common_options(cli, opts->common);
  cli.add("--steps", opts->steps, "Total optimizer steps").positive();
  cli.add("--batch", opts->batch, "Sequences per batch").positive();
  cli.add("--seq", opts->seq_len, "Context length").positive();
  cli.add("--layers", opts->layers, "Transformer blocks");
  cli.add("--heads", opts->heads, "Attention heads");
  cli.add("--channels", opts->channels, "Embedding width");
  cli.add("--grad-clip", opts->grad_clip, "Global gradient-norm clip (0: off)");
  cli.add("--val-every", opts->val_every, "Validate every N steps (0: only at the end)");
  cli.add("--val-batches", opts->val_batches, "Batches per validation").positive();
  cli.add("--checkpoint", opts->common.checkpoint, "Checkpoint folder ('' disables saving; docs/store.md)");
  cli.add("--checkpoint-every", opts->checkpoint_every, "Save every N steps (0: only at the end)");
  cli.add("--resume", opts->resume, "Continue from --checkpoint; when it is missing, warn and train from scratch");
  cli.add("--require-resume", opts->require_resume, "Continue from --checkpoint; fail when it is missing");
  cli.add("--sample-chars", opts->sample_chars, "Characters of text to generate at the end");
  cli.add("--temperature", opts->temperature, "Sampling temperature").positive();
  cli.add("--seed", opts->common.seed, "Seed for initialisation, batches and sampling");
  cli.add("--data-parallel", opts->data_parallel,
          "K > 1: K node trainers /train_gpt/trainer/n0.. (each with --workers) under one gradient server; "
          "a deployment may put them on different nodes")
      .positive();
  cli.add("--device-memory", opts->device_memory,
          "Device-memory budget for activations and their gradients, e.g. 200MiB (keeps, swaps to host or "
          "recomputes each layer's activations to fit; one instance only)");
  cli.add(
      "--memory-policy", opts->memory_policy,
      "With --device-memory: knapsack (DELTA), greedy (Capuchin-style), recompute (sqrt(n) checkpoints), swap or keep");
  cli.add("--memory-plan", opts->print_memory_plan, "With --device-memory: print the memory plan after the first step");
  bool elastic = false;
  auto& e = opts->elastic;
  cli.add("--elastic", elastic,
          "Elastic training: the batch is split into --virtual-workers (default 8, must divide --batch) run by "
          "physical workers "
          "/train_gpt/trainer/p0.. that may join and leave; the losses do not depend on which are present");
  cli.add("--virtual-workers", e.virtual_workers, "Virtual workers (implies --elastic); must divide --batch");
  cli.add("--physical-workers", e.physical_workers,
          "Physical worker slots p0..p<N-1> (a deployment places them on nodes)")
      .positive();
  cli.add("--worker-threads", e.worker_threads, "Threads per physical worker (each runs whole virtual workers)")
      .positive();
  cli.add("--min-workers", e.min_workers, "The first step waits for this many physical workers (0: all of them)");
  cli.add("--throttle", e.throttle,
          "WORKER=FACTOR, e.g. p1=3: that worker takes FACTOR times as long (emulates a slower device)");
  cli.add("--balance", e.balance, "Virtual workers per physical worker: measured (by speed) or even (by threads only)");
  cli.add("--wait-for-workers", e.wait_for_workers,
          "With no physical worker left, fail after this long without one joining");
  train_gpt::pipeline_args pp;
  cli.add("--pipeline", pp.pipeline,
          "P > 0: train pipeline-parallel on P stage leaves /train_gpt/trainer/r0.. walking --schedule "
          "(no validation or sample; each checkpoint holds every stage's state in one transaction)");
  cli.add("--schedule", pp.schedule,
          "With --pipeline: a shipped program (1f1b, gpipe, zb-h1, zb-v, ...), a .pipe program or a torch .csv table");
  cli.add("--microbatches", pp.microbatches, "With --pipeline: microbatches M per step, dividing --batch (0: 2P)");
  cli.add("--interleave", pp.interleave, "With --pipeline: chunks per rank v, for programs written with `chunks v`");
  cli.add("--layers-per-stage", pp.layers_per_stage,
          "With --pipeline: the split as `banyan pipeline search` prints it, e.g. 2,1,3 (embedding and head count as "
          "layers; default: the blocks split evenly)");
  cli.add("--trace", pp.trace,
          "With --pipeline: write the last step's measured timeline, FILE.json (Chrome trace) or FILE.svg (Gantt)");
  train_gpt::profile_args prof;
  cli.add("--profile-costs", prof.file,
          "Write FILE: the per-layer cost file (ms) of this model at the microbatch shape (--batch / --microbatches "
          "rows), for banyan pipeline simulate|search --costs; then exit");
  cli.add("--profile-steps", prof.steps, "With --profile-costs: timed steps, after 2 warm-up steps (medians)");
  cli.add("--profile-stages", prof.stages,
          "With --profile-costs and --pipeline: a per-stage file of the split --pipeline would train, each stage timed "
          "whole (for simulate of that split)");
  cli.add("--profile-source", prof.source,
          "With --profile-costs: stage (each layer alone on the pipeline's stage code) or engine (the whole "
          "model's per-layer profile, backward split by the stage's I/W ratio)");
  // The tree's shape depends on --workers, --data-parallel and --elastic: parse before building it
  // (banyan::run parses again).
  if (auto exit_code = cli.parse(argc, argv)) return *exit_code;
  if (elastic && e.virtual_workers == 0) {
    e.virtual_workers = default_virtual_workers;
    if (opts->batch % e.virtual_workers != 0) {
      int fits = default_virtual_workers;  // the most virtual workers, up to the default, that divide --batch
      while (opts->batch % fits != 0) --fits;
      std::fprintf(stderr,
                   "train_gpt: error: --batch %d: --elastic splits it into --virtual-workers, %d by default, "
                   "which do not divide %d; give --virtual-workers %d (or another divisor of %d), or a "
                   "--batch that is a multiple of %d\n",
                   opts->batch, default_virtual_workers, opts->batch, fits, opts->batch, default_virtual_workers);
      return 2;
    }
  }
  // Once, before any component starts (each node trainer would report a bad option again).
  if (pp.pipeline == 0 && prof.file.empty()) {
    if (auto ok = banyan::trainer::check_gpt_options(*opts); !ok) {
      std::fprintf(stderr, "train_gpt: error: %s\n", ok.error().message.c_str());
      return 2;
    }
  }
  if (!prof.file.empty()) {
    prof.pipeline = pp.pipeline;
    prof.microbatches = pp.microbatches;
    prof.interleave = pp.interleave;
    prof.layers_per_stage = pp.layers_per_stage;
    return train_gpt::run_profile(*opts, prof);
  }
  if (pp.pipeline != 0) {
    if (auto added = train_gpt::add_pipeline_trainer(app, *opts, pp); !added) {
      std::fprintf(stderr, "train_gpt: error: %s\n", added.error().message.c_str());
      return 2;
    }
    return banyan::run(app, argc, argv);
  }
  banyan::trainer::add_gpt_trainer(app.root(), "trainer", opts);
  return banyan::run(app, argc, argv);
}
