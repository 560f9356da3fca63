// One pipeline stage's slice of a gpt (gpt.hpp), the base of the pipeline stage components
// (pipeline/trainer.hpp): a contiguous run of blocks, with the token and position embedding on the first stage and the
// final layernorm, the tied output head and the loss on the last.
//
// Guarantees. Run every stage's forward and backward over the m microbatches of a step (in any order
// a pipeline schedule allows) and the gradients equal, up to float rounding, those of the whole gpt
// after forward + backward on the m microbatches concatenated along the batch (m*B rows), once the two
// parts of the tied embedding's gradient are summed (below); the step's loss, the mean of the m
// microbatch losses, equals that model's loss. init(seed) gives each parameter exactly the value
// gpt::init(seed) gives it, so a stage can be checked against (or loaded from) the whole model by
// tensor name: the arenas use the whole model's names ("wte", "h3.qkv_w", "lnf_b").
//
// Slots. A stage holds the activations of each in-flight microbatch in its own slot, from its
// forward until its backward has finished: size `slots` by the schedule's peak (the simulator's
// sim_result::peak_memory of this rank with mem = 1, static_mem = 0; 1-F-1-B needs S - s on stage s).
// A slot goes free -> forward -> [backward_input -> backward_weight | backward] -> done, and done
// slots take the next forward. Each slot owns its activations and their gradients (the weight pass
// reads both), so memory is `slots` x one microbatch's activations, twice. The memory budget of
// gpt::create (memory_executor) is not supported here yet: stage slots are kept whole.
//
// Backward split. backward_input (I) computes the gradient of the stage's input (what the previous
// stage needs) and the activation gradients inside; backward_weight (W) then adds this microbatch's
// parameter gradients. backward (B) is I then W. Gradients ACCUMULATE over microbatches until
// zero_grad(). The loss gradient of each microbatch is scaled by 1/(B*T*microbatches): gradients are of
// the step's mean loss, as in the whole model on the concatenated batch.
//
// Tied embedding. The token embedding wte (V,C) is read by the first stage's embedding and the last
// stage's head; each holds a copy, initialised alike, and computes its own part of the gradient.
// Before the optimizer step the ends exchange parts: both read tied_embedding_grad_host() first, then
// each calls add_tied_embedding_grad(the other's part). Float addition commutes, so both copies get the
// same sum and stay equal under the same optimizer step. A stage with both ends (S = 1) has one wte.
//
// Errors (result values, every message names the stage, the slot or the value): bad cuts or slices,
// a slot out of range, a pass out of order on a slot, a missing input. Shapes: every microbatch is
// exactly (batch, seq_len). Not thread-safe; one stage per thread, like gpt. Move-only.
#pragma once

#include "banyan/nn/arena.hpp"
#include "banyan/nn/backend.hpp"
#include "banyan/nn/gpt.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace banyan::nn {

// Which part of the model a stage runs: blocks [first_block, last_block), after the embedding when
// has_embedding, before ln_f + head + loss when has_head.
struct stage_slice {
  int first_block = 0;
  int last_block = 0;
  bool has_embedding = false;
  bool has_head = false;
  friend bool operator==(const stage_slice&, const stage_slice&) = default;
};

// The S = cuts.size() + 1 slices of a model of `num_layers` blocks cut before each block in `cuts`:
// stage s runs blocks [cuts[s-1], cuts[s]) (uneven allowed). Fails, naming the cut, when a stage would
// have no block: the cuts must be strictly increasing within [1, num_layers - 1].
result<std::vector<stage_slice>> cut_stages(int num_layers, const std::vector<int>& cuts);

struct stage_options {
  int batch = 0;         // B of every microbatch
  int seq_len = 0;       // T of every microbatch, <= max_seq_len
  int slots = 1;         // microbatches in flight at once (above)
  int microbatches = 1;  // per optimizer step: scales the loss gradient by 1/microbatches
};

// What a forward reads; host arrays.
struct stage_input {
  const int* tokens = nullptr;         // first stage: B*T token ids in [0, vocab)
  const float* activations = nullptr;  // other stages: (B,T,C), the previous stage's output
  const int* targets = nullptr;        // last stage: B*T target ids, or null for no loss (no backward)
};

class gpt_stage {
 public:
  // Fails on an invalid config or options, or a slice out of range or empty (no blocks, embedding or
  // head), naming the value.
  static result<gpt_stage> create(const gpt_config& cfg, const stage_slice& slice, const stage_options& opt,
                                  backend& be);
  // Bytes of one slot (its activations and their gradients) of such a stage, without creating it:
  // a stage holds `slots` of them.
  static std::uint64_t slot_bytes(const gpt_config& cfg, const stage_slice& slice, int batch, int seq_len);
  // Floats of such a stage's parameter arena (params().numel(), alignment padding included), without
  // creating it.
  static std::size_t param_floats(const gpt_config& cfg, const stage_slice& slice);

  // This slice's parameters as gpt::init(seed) sets them. Costs the random draws of the whole model
  // (those of the other stages are drawn and dropped), but only this stage's memory.
  void init(std::uint64_t seed);

  // Runs the slice on microbatch `in` into `slot`, which must be free or done. Returns the
  // microbatch's mean loss on the last stage with targets, NaN otherwise.
  result<float> forward(int slot, const stage_input& in);
  // I: from the gradient of this stage's output (host (B,T,C); null on the last stage, which starts
  // from its loss) to the gradient of its input (input_grad_host). The slot must hold a forward.
  result<void> backward_input(int slot, const float* output_grad);
  // W: adds the slot's parameter gradients; the slot must have had backward_input. The slot is done.
  result<void> backward_weight(int slot);
  // B = I + W.
  result<void> backward(int slot, const float* output_grad);
  // Drops the microbatch in `slot` (free again): for a forward that will have no backward.
  result<void> release(int slot);
  void zero_grad();

  // The slot's output (B,T,C) (logits (B,T,V) on the last stage) after its forward, and the gradient
  // of its input (B,T,C) after its backward_input (an error on the first stage, whose input is tokens).
  // Valid until the slot's next forward.
  result<std::vector<float>> output_host(int slot) const;
  result<std::vector<float>> input_grad_host(int slot) const;

  // This stage's part of the tied embedding's gradient, V*C floats; an error on a stage with neither
  // end. add_tied_embedding_grad adds the other end's part (V*C floats); an error on a stage with
  // neither end or with both (its gradient already sums the two parts).
  result<std::vector<float>> tied_embedding_grad_host() const;
  result<void> add_tied_embedding_grad(std::span<const float> other_part);

  arena& params() { return params_; }
  arena& grads() { return grads_; }
  const arena& params() const { return params_; }
  const arena& grads() const { return grads_; }
  const gpt_config& config() const { return cfg_; }
  const stage_slice& slice() const { return slice_; }
  const stage_options& options() const { return opt_; }
  backend& device() const { return *be_; }

 private:
  enum class slot_state { free, forwarded, input_done, done };
  struct slot_data {
    arena acts, dacts;  // this stage's activations and their gradients, one microbatch
    buffer tokens, targets;
    slot_state state = slot_state::free;
    bool has_targets = false;
  };
  gpt_stage(const gpt_config& cfg, const stage_slice& slice, const stage_options& opt, backend& be);
  result<void> check_slot(int slot, const char* pass) const;
  std::string where() const;  // "gpt_stage [2, 4) + head"
  void block_forward(slot_data& s, int l);
  void block_backward_input(slot_data& s, int l);
  void block_backward_weight(slot_data& s, int l);
  int a_out() const;  // the stage's output activation (or the input of ln_f)

  gpt_config cfg_;
  stage_slice slice_;
  stage_options opt_;
  backend* be_;
  arena params_, grads_;
  std::vector<slot_data> slots_;
  int p_wte_ = -1, p_wpe_ = -1, p_blocks_ = 0, p_lnfw_ = -1, p_lnfb_ = -1;
  buffer scratch_;  // V*C floats for add_tied_embedding_grad
};

}  // namespace banyan::nn
