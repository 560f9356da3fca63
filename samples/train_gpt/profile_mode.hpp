// train_gpt --profile-costs FILE: times the model `train_gpt --pipeline` would train
// (same --layers, --heads, --channels, --seq and vocabulary) at its microbatch shape, --batch /
// --microbatches rows (M defaults as in pipeline mode: 2P with --pipeline P, else 1), and writes the
// per-layer cost file `banyan pipeline simulate|search --costs` reads (pipeline::measure_costs: what
// each field is measured from; --profile-source stage, the default, times each layer on the stage
// code the pipeline runs, engine sums the whole model's per-layer profile). The cpu backend runs with
// --nn-threads (default 1 here: one stage of a pipeline per core), with P microbatches in flight (2
// without --pipeline; measure.hpp's in_flight). Prints a per-layer table, or with --json the run and
// the costs.
//
// --profile-stages writes a per-stage file instead (pipeline::measure_stage_costs): the P*v stages of
// the split --pipeline P [--interleave v] [--layers-per-stage ...] would train, each timed whole; for
// `banyan pipeline simulate` of that split (no --layers-per-stage there), not for the search.
//
// Errors (exit 2, before any timing): a FILE that cannot be written, names it; a batch M does not
// divide; an unknown --profile-source; --profile-stages without --pipeline or with a split that leaves
// a stage without a block; options that select another mode.
#pragma once

#include <banyan/trainer/gpt_trainer.hpp>

#include <string>
#include <vector>

namespace train_gpt {

struct profile_args {
  std::string file;              // --profile-costs
  int steps = 10;                // --profile-steps: timed steps (medians over these), after 2 warm-up steps
  std::string source = "stage";  // --profile-source: stage or engine (pipeline::timing_source)
  bool stages = false;           // --profile-stages: a per-stage file for the split --pipeline would run
  int pipeline = 0;              // --pipeline P, for M's default and the stages
  int microbatches = 0;
  int interleave = 1;                 // --interleave v: P*v stages
  std::vector<int> layers_per_stage;  // --layers-per-stage; empty: the trainer's even split
};

// The exit code: 0, 1 when profiling fails, 2 on an argument error.
int run_profile(const banyan::trainer::gpt_options& gpt, const profile_args& args);

}  // namespace train_gpt
