// train_gpt --profile-costs FILE (issue #12 item 5): times the model `train_gpt --pipeline` would train
// (same --layers, --heads, --channels, --seq and vocabulary) at its microbatch shape, --batch /
// --microbatches rows (M defaults as in pipeline mode: 2P with --pipeline P, else 1), and writes the
// per-layer cost file `banyan pipeline simulate|search --costs` reads (pipeline::measure_costs: what
// each field is measured from; --profile-source stage, the default, times each layer on the stage
// code the pipeline runs, engine sums the whole model's per-layer profile). The cpu backend runs with
// --nn-threads (default 1 here: one stage of a pipeline per core), with P microbatches in flight (2
// without --pipeline; measure.hpp's in_flight). Prints a per-layer table, or with --json the run and
// the costs.
//
// Errors (exit 2, before any timing): a FILE that cannot be written, names it; a batch M does not
// divide; an unknown --profile-source; options that select another mode.
#pragma once

#include <banyan/trainer/gpt_trainer.hpp>

#include <string>

namespace train_gpt {

struct profile_args {
  std::string file;  // --profile-costs
  int steps = 10;    // --profile-steps: timed steps (medians over these), after 2 warm-up steps
  std::string source = "stage";  // --profile-source: stage or engine (pipeline::timing_source)
  int pipeline = 0;  // --pipeline P, for M's default
  int microbatches = 0;
};

// The exit code: 0, 1 when profiling fails, 2 on an argument error.
int run_profile(const banyan::trainer::gpt_options& gpt, const profile_args& args);

}  // namespace train_gpt
