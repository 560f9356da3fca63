// Measured per-layer costs of a GPT: the per-layer cost file the simulator and the
// search read (cost.hpp, docs/pipeline.md "Measured costs"), timed on this machine's nn engine at the
// shape one pipeline stage sees: a microbatch of `rows` sequences of `seq_len` tokens.
//
// What each field is measured from, by `source`:
// - stage (the default): each file layer runs alone on the code the pipeline trainer runs,
//   nn::gpt_stage: the embedding, each block l, the head (ln_f + lm_head + loss) as a one-layer stage;
//   t_f is its forward, t_i its backward_input, t_w its backward_weight (t_b = t_i + t_w), each the
//   median over `steps` rounds after `warmup`, a round being `in_flight` forwards, then their
//   backwards. A stage's per-pass work outside the kernels (zeroing the slot's
//   activation gradients, the input upload) is counted, as it is when the trainer runs the stage.
// - engine: t_f and t_b are the engine's per-layer profile of the whole model (nn::gpt with
//   profiling on, gpt::layers()): per step, the sum of the file layer's sub-layers (the embedding; a
//   block = ln1 + attn + residual1 + ln2 + mlp + residual2; the head = ln_f + lm_head + loss), median
//   over the steps. The whole model's backward does not separate input- and weight-gradient work, so
//   t_b is split in the ratio I / (I + W) timed as above on the embedding, block 0 and the head.
//   It reads below what a stage takes (docs/benchmarks.md, "Measured vs simulated"): work outside
//   every layer's timer is missing, e.g. clearing the activation gradients (gpt::zero_grad), which
//   gpt_stage does inside backward_input.
// Both: mem is the activation bytes the layer keeps from its forward to its backward (gpt::layers());
// comm_bytes the layer's output, rows * seq_len * channels floats (the head's is 0: its output is the
// loss, which no stage receives).
// Times are in milliseconds, latency and bandwidth 0 (a caller that has measured the link sets them).
//
// Cost: (warmup + steps) rounds of each one-layer stage (engine: steps of the whole model and rounds
// of three one-layer stages); memory of one model at the microbatch shape. Each call makes its own backend from
// `device`, so calls on different threads share nothing.
#pragma once

#include <banyan/base/error.hpp>
#include <banyan/nn/backend.hpp>
#include <banyan/nn/gpt.hpp>
#include <banyan/nn/gpt_stage.hpp>
#include <banyan/pipeline/cost.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace banyan::pipeline {

enum class timing_source { stage, engine };

struct measure_options {
  nn::gpt_config model;
  int rows = 1;     // sequences per microbatch (global batch / M)
  int seq_len = 1;  // <= model.max_seq_len
  int warmup = 2;   // untimed steps first (caches, allocator, thread pool)
  int steps = 5;    // timed steps; medians over these
  // Microbatches whose activations are live at once while a layer is timed on gpt_stage: forwards of
  // in_flight microbatches, then their backwards, as a pipeline stage holds several (so that one
  // microbatch's activations are not timed warm in the cache as a pipeline would not find them).
  int in_flight = 2;
  std::uint64_t seed = 1;
  timing_source source = timing_source::stage;
  nn::backend_options device{.name = "cpu", .threads = 1};
};

struct measured_costs {
  costs c;                         // per_layer, L + 2 units: embedding, h0..h<L-1>, head
  std::vector<std::string> names;  // "embedding", "h0", ..., "head"
  // I / (I + W) of the embedding, block 0 and the head, timed on gpt_stage.
  double input_fraction_embedding = 0, input_fraction_block = 0, input_fraction_head = 0;
};

// Fails, naming the value, on an invalid model, rows < 1, seq_len outside [1, max_seq_len], warmup < 0,
// steps < 1, in_flight < 1 or a backend that cannot be made. `progress(done, total)` is called after every step.
result<measured_costs> measure_costs(const measure_options& opt,
                                     const std::function<void(int done, int total)>& progress = {});

// Costs of whole stages, for one fixed split: each of `stages` timed as one gpt_stage, as a layer is
// above (its forward, backward_input, backward_weight with in_flight microbatches), into a per-stage
// file (per_layer false, names "stage0", ...). It counts what a per-layer file cannot: a stage of
// several blocks takes longer than the sum of its blocks timed alone (docs/benchmarks.md, "Measured
// vs simulated"). mem sums the stage's layers; comm_bytes as above (0 for the stage with the head).
// Fails like measure_costs, and on an empty or invalid slice (gpt_stage::create's message).
result<measured_costs> measure_stage_costs(const measure_options& opt, const std::vector<nn::stage_slice>& stages,
                                           const std::function<void(int done, int total)>& progress = {});

}  // namespace banyan::pipeline
