// A list scheduler that builds an action table by simulating the pipeline and, whenever a rank is
// free, picking among the actions that are ready right then (the approach of the zero-bubble paper's
// automatic scheduler). Its knobs are the search's genes (search.hpp); every table it returns is
// valid, runs forwards and backwards per chunk in ascending microbatch order (so it is expressible
// in the DSL) and keeps every rank's memory within `mem_cap`.
#pragma once

#include <banyan/pipeline/action.hpp>
#include <banyan/pipeline/cost.hpp>
#include <banyan/pipeline/dsl.hpp>
#include <banyan/pipeline/simulate.hpp>

#include <vector>

namespace banyan::pipeline {

struct greedy_policy {
  int v = 1;
  placement place = placement::loop;
  bool split_backward = true;        // I + W (W fills idle time) or one B
  std::vector<int> max_inflight;     // per rank: forwards held at most (warm-up depth); 0 = no limit
  std::vector<char> prefer_forward;  // per rank: run a ready F before a ready backward
  bool deep_chunk_first = true;      // among ready F of several chunks, the later stage first
  std::vector<int> w_delay;  // per rank: W goes before F once more than this many are pending; -1 = only when idle
};

// Errors: the memory cap is too small for even one microbatch, or the policy stalls (reported with
// the rank and time). `stage` has p*v entries.
result<table> greedy_schedule(int p, int m, const std::vector<stage_cost>& stage, const link_model& link,
                              double mem_cap, const greedy_policy& policy);

}  // namespace banyan::pipeline
