// The simulator: runs an action table against per-stage costs and predicts time and memory.
//
// Model. Each rank executes its actions in table order, one at a time. A compute action starts when
// the rank is free and its inputs are there, and takes T_F, T_B, T_I or T_W of its stage. A SEND takes
// no rank time and its message arrives latency + comm_bytes / bandwidth later; a RECV takes no rank
// time but blocks the rank until the message has arrived. Compute-only tables are lowered first
// (lower.hpp), so both forms give the same prediction.
// Memory: an F allocates its stage's `mem` when it starts; B, or W for split backwards, frees it when
// it ends. A rank's memory is its stages' static_mem plus the activations it holds.
//
// Bubble conventions (docs/pipeline.md, and the test names say which one they check):
//   bubble_ratio      = sum_r (makespan - busy_r) / sum_r busy_r        -- "global": GPipe (p-1)/m
//   span_bubble_ratio = sum_r (end_r - start_r - busy_r) / sum_r busy_r -- idle inside each rank's span
#pragma once

#include <banyan/pipeline/action.hpp>
#include <banyan/pipeline/cost.hpp>

#include <vector>

namespace banyan::pipeline {

struct link_model {
  double latency = 0;
  double bandwidth = 0;  // 0 = infinite
};

struct sim_event {
  int rank = 0;
  action a;
  double start = 0, end = 0;  // for a RECV: when it started waiting and when the data arrived
};

struct sim_result {
  double makespan = 0;
  double bubble_ratio = 0;
  double span_bubble_ratio = 0;
  std::vector<double> busy;         // per rank: total compute time
  std::vector<double> start, end;   // per rank: first compute start, last compute end
  std::vector<double> peak_memory;  // per rank
  std::vector<sim_event> events;    // every action, in rank order; only when asked for
  double max_peak_memory() const;
};

struct sim_options {
  bool validate = true;  // run validate() first; the search turns it off for tables it built
  bool record_events = false;
};

// `stage` has one entry per stage of the table. Errors: a validation violation, a deadlock (with rank
// and step), or a cost list of the wrong length.
result<sim_result> simulate(const table& t, const std::vector<stage_cost>& stage, const link_model& link = {},
                            const sim_options& opt = {});

}  // namespace banyan::pipeline
