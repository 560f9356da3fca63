// The pipeline trainer (issue #12 item 2): a GPT trained pipeline-parallel by components, one stage
// leaf per rank of an action table (action.hpp), in one process.
//
//   /app/pp            pipeline_trainer (a composite): the loss, the tied embedding, clipping, steps
//   /app/pp/r0         stage_leaf for rank 0: the gpt_stage of each of its chunks (stages)
//   /app/pp/r1         rank 1, ...
//
// What each leaf does. It walks its rank's compute actions (F, B, I, W; a table lowered with
// SEND/RECV actions has them stripped, the sends being derived) front to back. An action whose input
// has not arrived yet blocks the walk until it arrives: arrivals are buffered by (stage, microbatch,
// kind), so the leaf runs any valid order, including ones the table's author did not foresee. After F
// of stage s < S-1 it sends the output to stage s+1; after B or I of stage s > 0 it sends the input's
// gradient to stage s-1. Between two chunks of one rank (the V placement's turn) the message stays in
// the leaf. Slots (gpt_stage.hpp) are taken at F and freed at B or W, so a rank holds its schedule's
// peak of in-flight microbatches, no more.
//
// Topics, all scoped to the trainer's subtree (scope::parent() from a leaf, self() from the
// composite), so the broker accounts each activation on the edges leaf -> composite -> leaf:
//   act/<s>/<i>    the input activations of stage s for microbatch i, (B,T,C) floats
//   grad/<s>/<i>   the gradient of stage s's output for microbatch i, (B,T,C) floats
//   tied/up/<s>    the end stage s's part of the tied embedding's gradient, V*C floats (to the composite)
//   tied/down/<s>  the other end's part, forwarded by the composite to the owner of stage s
//   ctl/...        step control (small fixed structs, see trainer.cpp)
// Tensor payloads are the floats themselves (native byte order; one process for now): the leaf moves
// the host copy gpt_stage gives it into a shared buffer and publishes a view of it
// (payload::view_of), the broker hands every subscriber the same buffer, and the receiver reads the
// floats in place. No tensor byte is copied between publish and use; the one copy is gpt_stage's
// device-to-host read (output_host, input_grad_host), which a CUDA stage needs anyway.
//
// What the composite coordinates, per step: every leaf reports the end of its actions (the losses of
// the last stage's microbatches, the tied-embedding parts); the composite forwards each end's part to
// the other end (both add it: the same sum, so both copies of wte stay equal), collects each leaf's
// gradient sum of squares (wte counted once) for global-norm clipping exactly as the whole model's
// adamw clips, reports the step's loss (mean of the microbatch losses), and starts the next step
// with the clip coefficient; each leaf then runs AdamW on its own stages.
//
// Failure: an error in a leaf (a bad payload, a gpt_stage error, the batch source throwing) throws,
// and the trainer's supervision gives up at once, escalating to its parent: a restarted leaf would
// have fresh weights and no step to rejoin. A restart of the whole trainer starts from step 0. Not for multi-node yet: tensors are
// native floats and a restarted leaf has fresh weights.
#pragma once

#include <banyan/nn/adamw.hpp>
#include <banyan/nn/gpt.hpp>
#include <banyan/nn/gpt_stage.hpp>
#include <banyan/pipeline/action.hpp>
#include <banyan/pipeline/simulate.hpp>
#include <banyan/sdk/app.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace banyan::pipeline {

struct trainer_options {
  nn::gpt_config model;
  int batch = 0;    // B of every microbatch
  int seq_len = 0;  // T of every microbatch
  table schedule;   // any source: a compiled DSL program, a .pipe, a torch CSV, a search result
  // Stage s runs blocks [cuts[s-1], cuts[s]); empty: as even as possible (stage s from s*L/S).
  std::vector<int> cuts;
  int steps = 1;
  std::uint64_t seed = 0;  // gpt::init(seed) values, by tensor name
  nn::adamw_config optimizer;
  nn::backend_options device{.name = "cpu", .threads = 1};  // one backend per leaf
  bool quit_when_done = true;  // ctx.quit(0) once the last step's update is applied
  // Each leaf records every action's start and end (a steady-clock read and a vector push per
  // action), gathered by the composite into step_report::timeline. Off: the timeline stays empty.
  bool record_timeline = false;
};

// Tokens and targets (batch*seq_len each) of microbatch `microbatch` of `step`. Called by the leaf
// holding stage 0 (tokens) and the one holding stage S-1 (targets), on their threads: it must be
// thread-safe and give both the same microbatch.
using batch_source = std::function<void(std::int64_t step, int microbatch, int* tokens, int* targets)>;

struct step_report {
  std::int64_t step = 0;
  float loss = 0;          // mean of the step's microbatch losses
  double grad_norm = 0;    // global L2 norm before clipping
  // Per stage: the most slots in use at once during the step (measured), and that many times the
  // bytes of one slot (nn::gpt_stage::slot_bytes): the stage's peak activation memory.
  std::vector<int> peak_slots;
  std::vector<std::uint64_t> activation_bytes;
  // With trainer_options::record_timeline: the step as it ran, in the simulator's type so render.hpp
  // draws it unchanged (chrome_trace, svg_gantt). Times are MILLISECONDS of the steady clock from the
  // step's origin, the earliest moment a rank began its actions (each rank first applies the previous
  // step's update, not counted); one event per compute action, in rank order then start. makespan,
  // busy, start, end and both bubble ratios as simulate() defines them; peak_memory per rank is the
  // sum of its stages' activation_bytes. `bubble` is 1 - sum busy / (ranks x makespan).
  sim_result timeline;
  double bubble = 0;
};

struct trainer_hooks {
  batch_source data;
  std::function<void(const step_report&)> on_step;  // the composite's thread, once per step
  // Each stage's gradients after the step's backward passes and the tied-embedding sum, before
  // clipping and the update: for tests and inspection. A leaf's thread.
  std::function<void(std::int64_t step, int stage, const nn::gpt_stage&)> on_gradients;
  std::function<void()> on_done;  // the composite's thread, after the last update
};

// Checks the options (a valid table, cuts that give every stage a block, a valid model and
// optimizer) and adds the trainer as the composite `name` under `parent`, with leaves r0..r{p-1}.
// Errors (errc::invalid) name the value.
result<void> add_trainer(spec& parent, const std::string& name, const trainer_options& options,
                         const trainer_hooks& hooks);

// The cuts of the even split: S-1 cuts, stage s from block s*L/S. Fails when L < S.
result<std::vector<int>> even_cuts(int num_layers, int stages);

}  // namespace banyan::pipeline
