// Measured per-layer costs of a GPT (issue #12 item 5): the per-layer cost file the simulator and the
// search read (cost.hpp, docs/pipeline.md "Measured costs"), timed on this machine's nn engine at the
// shape one pipeline stage sees: a microbatch of `rows` sequences of `seq_len` tokens.
//
// What each field is measured from:
// - t_f, t_b: the whole model (nn::gpt with profiling on) runs `warmup` + `steps` forward + backward
//   steps on seeded random tokens; per step, each file layer's time is the sum of its engine
//   sub-layers' times (gpt::layers()): the embedding; a block = ln1 + attn + residual1 + ln2 + mlp +
//   residual2; the head = ln_f + lm_head + loss. The file's value is the median over the timed steps.
// - t_i / t_w: the engine's whole-model backward does not separate input- and weight-gradient work, so
//   the split is timed where the pipeline runs it, on nn::gpt_stage: a stage with only the embedding,
//   one with one block, one with only the head run forward, backward_input (I), backward_weight (W)
//   for the same warm-up and steps. Each layer's t_b is then divided in the median ratio
//   I / (I + W) of its kind (the embedding's I is ~0: its input is token ids).
// - mem: the activation bytes the layer keeps from its forward to its backward (gpt::layers()).
// - comm_bytes: the layer's output, rows * seq_len * channels floats (the head's is 0: its output is
//   the loss, which no stage receives).
// Times are in milliseconds, latency and bandwidth 0 (a caller that has measured the link sets them).
//
// Cost: (warmup + steps) whole-model steps plus three one-layer stages as many times; memory of one
// model at the microbatch shape. Not thread-safe across calls sharing a backend (none is shared: each
// call makes its own from `device`).
#pragma once

#include <banyan/base/error.hpp>
#include <banyan/nn/backend.hpp>
#include <banyan/nn/gpt.hpp>
#include <banyan/pipeline/cost.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace banyan::pipeline {

struct measure_options {
  nn::gpt_config model;
  int rows = 1;     // sequences per microbatch (global batch / M)
  int seq_len = 1;  // <= model.max_seq_len
  int warmup = 2;   // untimed steps first (caches, allocator, thread pool)
  int steps = 5;    // timed steps; medians over these
  std::uint64_t seed = 1;
  nn::backend_options device{.name = "cpu", .threads = 1};
};

struct measured_costs {
  costs c;                         // per_layer, L + 2 units: embedding, h0..h<L-1>, head
  std::vector<std::string> names;  // "embedding", "h0", ..., "head"
  // The median I / (I + W) measured per kind on gpt_stage.
  double input_fraction_embedding = 0, input_fraction_block = 0, input_fraction_head = 0;
};

// Fails, naming the value, on an invalid model, rows < 1, seq_len outside [1, max_seq_len], warmup < 0,
// steps < 1 or a backend that cannot be made. `progress(done, total)` is called after every step.
result<measured_costs> measure_costs(const measure_options& opt,
                                     const std::function<void(int done, int total)>& progress = {});

}  // namespace banyan::pipeline
