// train_gpt --pipeline P: the same GPT, data and optimizer as the whole-model
// trainer, trained pipeline-parallel by banyan::pipeline_trainer (/train_gpt/trainer is its composite,
// r0..r<P-1> its stage leaves) over an action table: a shipped program by name, a .pipe program or a
// torch CSV table.
//
// The global batch of --batch rows is split in M microbatches of batch/M rows (rows [i*b, (i+1)*b)
// of the batch the whole-model trainer draws for the same (seed, step)), so both runs see the same
// data and, with the same seed, give the same losses (float sums in another order: within 1e-5).
//
// Per step it shows the loss, tokens/s (the step's wall time, from the previous step's report; the
// first step's includes the start), the measured bubble (1 - sum busy / (P x span)) and per stage the
// peak of slots in use x one slot's bytes (nn::gpt_stage::slot_bytes). --json prints all of it once at the end; --trace
// FILE writes the last step's timeline as a Chrome trace (.json) or an SVG Gantt chart (.svg), in the simulator's
// format.
//
// Checkpoints: --checkpoint names a folder; after every --checkpoint-every steps and at the end, every
// stage's state and a manifest go into it as one store transaction (pipeline_trainer's checkpoints:
// the stages are encoded on their nodes and stored by the composite); --resume / --require-resume
// continue from it (the same --pipeline, split and
// schedule shape; the batches depend only on (seed, step), so the loss curve goes on as it would have).
//
// Not in pipeline mode: validation, sampling, --workers, --elastic, --data-parallel, --device-memory
// (argument errors, exit 2).
#pragma once

#include <banyan/sdk/app.hpp>
#include <banyan/trainer/gpt_trainer.hpp>

#include <memory>
#include <string>
#include <vector>

namespace train_gpt {

struct pipeline_args {
  int pipeline = 0;               // P ranks; 0: the whole-model trainer
  std::string schedule = "1f1b";  // shipped name, file.pipe or file.csv
  int microbatches = 0;           // M; 0: 2P
  int interleave = 1;             // v, chunks per rank, for programs written with `chunks v`
  std::string trace;              // FILE.json or FILE.svg: the last step's timeline
  // Layers per stage as `banyan pipeline search` prints them (the embedding and the head count as
  // layers: L+2 in all); empty: the even split of the blocks.
  std::vector<int> layers_per_stage;
};

// Checks the arguments, loads the corpus and the schedule and adds the pipeline trainer under
// app.root(). Errors are argument errors (the caller exits 2) naming the option or the file and line.
banyan::result<void> add_pipeline_trainer(banyan::app& app, const banyan::trainer::gpt_options& gpt,
                                          const pipeline_args& args);

}  // namespace train_gpt
