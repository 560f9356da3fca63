// The pipeline trainer: a GPT trained pipeline-parallel by components, one stage
// leaf per rank of an action table (action.hpp), in one process or with leaves on several nodes
// (a deployment under banyan launch places them; nothing in the trainer changes).
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
// Tensor payloads are the floats themselves (native byte order: every node of a deployment is
// assumed to share it): the leaf moves the host copy gpt_stage gives it into a shared buffer and
// publishes a view of it (payload::view_of), the broker hands every subscriber in the process the same
// buffer (the runtime copies it into one envelope per link otherwise), and the receiver reads the
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
// Failure: an error in a leaf (a bad payload, a gpt_stage error, the batch source throwing) or the
// loss of a leaf's node (banyan launch: a stage node killed) is fatal: a lost stage's weights and
// in-flight activations are gone, and a restarted leaf would have no step to rejoin. The composite
// names the stages, the rank and the reason, then (quit_when_done: the trainer owns the run) logs it
// and ends the run with exit code 1, or else fails itself, escalating to its parent. Resume from the
// last checkpoint (below).
//
// Checkpoints (trainer_checkpoints): once step k's update is applied and k is due, every leaf saves
// each of its stages to `<path>.stage<s>.step<k>` (an nn checkpoint: the stage's parameter arena,
// AdamW moments and step, tagged "gpt_stage" with the model config and the stage's blocks) and says
// so; when all have, the composite writes the manifest `<path>` (JSON: the step, stages, cuts and
// stage files, replaced atomically) and tells the leaves, which then delete every other file of their
// stages (older ones, and those a killed run wrote but no manifest named). A crash in between leaves
// the previous manifest and its files in place, so the manifest always names a complete set. Multi-node: each leaf
// writes and reads on its own node, so `path` must name the same place on every node (a shared or local-on-every-node
// directory).
#pragma once

#include <banyan/nn/adamw.hpp>
#include <banyan/nn/gpt.hpp>
#include <banyan/nn/gpt_stage.hpp>
#include <banyan/pipeline/action.hpp>
#include <banyan/pipeline/simulate.hpp>
#include <banyan/sdk/app.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace banyan::pipeline {

// Checkpoints go to a folder (nn::checkpoint_store on banyan::store): each checkpoint is one store
// transaction holding every stage's state (blobs `stage0`, `stage1`, ...) and a JSON manifest (blob
// `manifest`: format, version, step, stages, cuts). The leaves encode their stages and send them to
// the composite, which commits them together once all are in: a crash keeps all of a step or none.
struct trainer_checkpoints {
  std::string path;              // the folder; "": no checkpoints
  int every = 0;                 // after every `every`-th step's update (0: only after the last step)
  std::int64_t resume_step = 0;  // > 0: each stage starts from its state of this step (read_manifest)
  bool synchronous = false;      // each checkpoint durable before the composite goes on
};

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
  bool quit_when_done = true;                               // ctx.quit(0) once the last step's update is applied
  // Each leaf records every action's start and end (a steady-clock read and a vector push per
  // action), gathered by the composite into step_report::timeline. Off: the timeline stays empty.
  bool record_timeline = false;
  trainer_checkpoints checkpoints;
};

// Tokens and targets (batch*seq_len each) of microbatch `microbatch` of `step`. Called by the leaf
// holding stage 0 (tokens) and the one holding stage S-1 (targets), on their threads: it must be
// thread-safe and give both the same microbatch.
using batch_source = std::function<void(std::int64_t step, int microbatch, int* tokens, int* targets)>;

struct step_report {
  std::int64_t step = 0;
  float loss = 0;        // mean of the step's microbatch losses
  double grad_norm = 0;  // global L2 norm before clipping
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
  // The composite's thread, once the manifest of the checkpoint after `step` steps is written.
  std::function<void(std::int64_t step, const std::string& folder)> on_checkpoint;
};

// Checks the options (a valid table, cuts that give every stage a block, a valid model and
// optimizer) and adds the trainer as the composite `name` under `parent`, with leaves r0..r{p-1}.
// Errors (errc::invalid) name the value.
result<void> add_trainer(spec& parent, const std::string& name, const trainer_options& options,
                         const trainer_hooks& hooks);

// The latest durable checkpoint's manifest in a checkpoint folder (trainer_checkpoints). Errors
// (errc::invalid) name the folder: missing, not a folder, no pipeline checkpoint in it, or one for
// other stages or cuts than `options` gives.
struct checkpoint_manifest {
  std::int64_t step = 0;
  int stages = 0;
  std::vector<int> cuts;
};
result<checkpoint_manifest> read_manifest(const std::filesystem::path& folder);
// Whether `folder` exists and holds a durable checkpoint (read_manifest says whether it is a
// pipeline's, and why a folder that cannot be read cannot).
bool has_checkpoint(const std::filesystem::path& folder);
// Checks that `m` was written for these options' stages and cuts and leaves steps to train.
result<void> check_resumable(const checkpoint_manifest& m, const std::filesystem::path& folder,
                             const trainer_options& options);

// The trainer's traffic on each link between nodes, as the broker routes it: a message goes up the
// tree from its publisher to the composite and down to each subscribing component, so it crosses the
// link from the publisher's node to the composite's (when they differ) and, once per subscribing
// leaf, from the composite's node to that leaf's (two leaves on one remote node: two crossings; a
// message between two leaves of one remote node goes through the composite's node). Per step: every microbatch's
// activations forward and its input gradient backward at every stage boundary between two ranks (batch x seq_len x
// channels floats each; a boundary inside one rank sends nothing), the tied embedding's two parts up and down (vocab x
// channels floats each), and the control messages (fixed sizes; with record_timeline, ctl/stats carries 32 bytes per
// action; checkpoints add ctl/saved and ctl/committed). `node_of_rank[r]` and `composite_node` name the nodes of leaf r
// and of the composite.
struct link_traffic {
  std::uint64_t messages = 0, bytes = 0;
  std::uint64_t tensor_messages = 0, tensor_bytes = 0;  // activations and gradients only
  friend bool operator==(const link_traffic&, const link_traffic&) = default;
};
using traffic_map = std::map<std::pair<std::string, std::string>, link_traffic>;  // (from, to) node
result<traffic_map> predict_traffic(const trainer_options& options, const std::string& composite_node,
                                    const std::vector<std::string>& node_of_rank);

// The cuts of the even split: S-1 cuts, stage s from block s*L/S. Fails when L < S.
result<std::vector<int>> even_cuts(int num_layers, int stages);

}  // namespace banyan::pipeline
