// Costs the simulator and the search read: per stage (or per layer) compute times, activation memory
// and message sizes, plus one link model. Units are the caller's (seconds, bytes, or just "1 = T_F");
// the simulator only adds and compares them.
//
// JSON form (all keys optional except t_f; see docs/pipeline.md):
//   { "stages": [ {"t_f": 1, "t_b": 2, "t_i": 1, "t_w": 1, "mem": 1, "comm_bytes": 0, "static_mem": 0}, ... ],
//     "latency": 0, "bandwidth": 0 }
// or "layers": [...] with the same fields per layer instead of "stages": measured per-layer costs
// (the nn engine's profile) are partitioned into contiguous stages that balance t_f + t_b.
// Backward: give t_b, or t_i and t_w, or t_b and one of them; t_b alone splits evenly into I and W.
// `mem` is the activation memory one microbatch holds from its F until its B (or W); default 1, so
// peak memory reads in units of M_B. `comm_bytes` is the size of the stage's output activation (and of
// the gradient sent back for it); a message takes latency + comm_bytes / bandwidth (bandwidth 0 means
// infinite). Links are not contended and communication does not occupy the rank.
#pragma once

#include <banyan/pipeline/error.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace banyan::pipeline {

struct stage_cost {
  double t_f = 1, t_b = 2, t_i = 1, t_w = 1;
  double mem = 1;
  double comm_bytes = 0;
  double static_mem = 0;
};

struct costs {
  std::vector<stage_cost> units;  // stages, or layers when per_layer
  bool per_layer = false;
  double latency = 0;
  double bandwidth = 0;
};

// Every one of `n` stages costs the same (t_b = t_i + t_w).
costs uniform_costs(int n, double t_f, double t_i, double t_w, double mem = 1);

result<costs> parse_costs(std::string_view json_text, const std::string& source = "costs");
// The JSON form parse_costs reads back to equal costs (every field, full double precision): "layers"
// when per_layer, else "stages"; `names`, when given, one per unit, as each entry's "name". Each unit's
// t_b must be t_i + t_w (as parse_costs makes it), or the file will not parse.
std::string write_costs(const costs& c, const std::vector<std::string>& names = {});

// Costs of S stages. Per-layer input: the layers are cut into S contiguous groups minimising the
// slowest group. Per-stage input with n entries: S == n uses them as they are; S a multiple of n splits
// each stage evenly into S/n chunks (times, mem and static_mem divided; comm_bytes kept).
result<std::vector<stage_cost>> stage_costs(const costs& c, int S);

// Per-layer costs only. Stage bounds are `cuts`: S+1 increasing layer indices, cuts[0] = 0,
// cuts[S] = n; stage j holds layers [cuts[j], cuts[j+1]).
// balanced_cuts: the contiguous partition into S stages minimising the slowest stage's t_f + t_b
// (a min-max DP, O(S n^2)); among equal optima, the one the DP's first-found order gives.
result<std::vector<int>> balanced_cuts(const costs& c, int S);
// Sums each stage's layers (times, mem, static_mem); comm_bytes is the stage's last layer's.
// Precondition: valid cuts for c (asserted).
std::vector<stage_cost> stages_from_cuts(const costs& c, const std::vector<int>& cuts);
// The slowest stage's t_f + t_b under these cuts: what balanced_cuts minimises.
double slowest_stage(const costs& c, const std::vector<int>& cuts);

}  // namespace banyan::pipeline
