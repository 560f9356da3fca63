// Schedule search: finds a schedule expressible in the DSL with the smallest simulated makespan whose
// peak memory on every rank stays within a cap.
//
// How (docs/pipeline.md has the measurements):
//   1. seeds: every shipped program at every allowed v; the best that fits the cap is the baseline,
//      so the result is never worse than it;
//   2. genetic search over list-scheduler policies (greedy.hpp: per-rank warm-up depth, F-vs-backward
//      preference, W deferral, chunk order, split backward), each tried by building the table and
//      tested on the simulator (Koala's try-test evaluation);
//   3. a try-test local search on the per-rank action order of the best tables (move one action,
//      keep the move when the simulator says it is no worse and it fits the cap).
// Deterministic for a given seed when the generation budget, not the time limit, ends the search.
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
  double mem_cap = 0;                   // per rank, in the costs' memory unit; 0 = no cap
  std::vector<int> chunk_options{1, 2};  // values of v to consider
  double time_limit_s = 30;
  int generations = 60;                 // genetic generations
  int population = 24;
  int local_steps = 4000;               // try-test moves in the local search
  std::uint64_t seed = 1;
  std::function<void(const search_progress&)> progress;  // called now and then; may be empty
};

struct scored_schedule {
  std::string origin;  // "program zb-h1 v=1", "genetic", "local search"
  int v = 1;
  placement place = placement::loop;
  table t;              // compute-only
  sim_result sim;
};

struct search_result {
  scored_schedule best;
  std::optional<scored_schedule> best_predefined;  // the best shipped program within the cap
  std::string dsl;                                 // `best` as a DSL program
  int evaluations = 0;
  double seconds = 0;
  std::vector<std::string> notes;  // what each phase reached, for the summary
};

// Errors: no shape fits (costs cannot be split into p*v stages) or nothing fits the cap.
result<search_result> search(const costs& c, const search_options& opt);

}  // namespace banyan::pipeline
