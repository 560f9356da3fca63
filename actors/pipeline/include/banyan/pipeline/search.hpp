// Schedule search: finds a schedule expressible in the DSL with the smallest simulated makespan whose
// peak memory on every rank stays within a cap.
//
// How (docs/pipeline.md has the measurements):
//   1. seeds: every shipped program at every allowed v and placement, and with per-layer costs on
//      each of the balanced split, the even split (stage j from layer j*n/S) and the even split of
//      the inner layers (train_gpt's default); the best that fits the cap is the baseline, and as
//      `best` only ever improves, the result is never worse than any of them;
//   2. genetic search over list-scheduler policies (greedy.hpp: per-rank warm-up depth, F-vs-backward
//      preference, W deferral, chunk order, split backward), each tried by building the table and
//      tested on the simulator (Koala's try-test evaluation);
//   3. a try-test local search on the per-rank action order of the best tables (move one action,
//      keep the move when the simulator says it is no worse and it fits the cap).
// With per-layer costs the split is a search dimension too: from the balanced (min-max DP) split, a
// hill climb moves one stage boundary by one layer at a time, scoring each split by the shipped
// programs and a few list-scheduler policies on it; the genetic and local phases then also work on the
// best split found.
// Deterministic for a given seed when `max_evaluations` (or the generation and step counts), not the
// time limit, ends the search; `search_result::time_cut` says when the clock ended it.
#pragma once

#include <banyan/pipeline/cost.hpp>
#include <banyan/pipeline/dsl.hpp>
#include <banyan/pipeline/simulate.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace banyan::pipeline {

struct search_progress {
  std::string phase;  // "seeds", "genetic", "local"
  int step = 0, steps = 0;
  double elapsed_s = 0;
  double best_makespan = 0;
  int evaluations = 0;
};

struct search_options {
  int p = 4;
  int m = 8;
  double mem_cap = 0;                    // per rank, in the costs' memory unit; 0 = no cap
  std::vector<int> chunk_options{1, 2};  // values of v to consider
  double time_limit_s = 30;
  int generations = 60;  // genetic generations
  int population = 24;
  int local_steps = 4000;  // try-test moves in the local search
  std::uint64_t seed = 1;
  int max_evaluations = 0;                               // simulations at most (0 = no budget); the reproducible limit
  int split_evaluations = 400;                           // of those, at most this many for the split hill climb
  bool search_splits = true;                             // per-layer costs only: move layers between stages
  std::function<void(const search_progress&)> progress;  // called now and then; may be empty
};

struct scored_schedule {
  std::string origin;  // "program zb-h1 v=1", "genetic", "local search"
  int v = 1;
  placement place = placement::loop;
  table t;  // compute-only
  sim_result sim;
  std::vector<int> cuts;  // per-layer costs: stage j holds layers [cuts[j], cuts[j+1]); else empty
};

struct search_result {
  scored_schedule best;
  std::optional<scored_schedule> best_predefined;            // the best shipped program within the cap (per-layer
                                                             // costs: on the balanced or a reference split)
  std::optional<scored_schedule> best_predefined_any_split;  // ... on any split the search tried
  std::string dsl;                                           // `best` as a DSL program
  int evaluations = 0;
  double seconds = 0;
  std::vector<std::string> notes;  // what each phase reached, for the summary
  bool time_cut = false;           // the time limit, not the budget, ended a phase
};

// Errors: no shape fits (costs cannot be split into p*v stages) or nothing fits the cap.
result<search_result> search(const costs& c, const search_options& opt);

// A lower bound on the makespan of every schedule of these costs on p ranks with m microbatches,
// whatever the split into stages, the chunk count and the placement (docs/pipeline.md, "Lower
// bound", has the proof). Per-layer costs are the split-free units; per-stage costs count each given
// stage as one unit. Communication is taken as free, so the bound holds with any link too.
double makespan_lower_bound(const costs& c, int p, int m);

}  // namespace banyan::pipeline
