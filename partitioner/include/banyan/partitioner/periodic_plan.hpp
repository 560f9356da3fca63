// Planning and judging periodic schedules (docs/periodic.md):
//   - simulate: Monte Carlo of workflow instances under a schedule, with wake-up and response times
//     drawn from the measured histograms: each workflow's probability of meeting its deadline
//     (Wilson interval) and the schedule's expected cost;
//   - make_plan: the cheapest schedule whose every workflow meets its reliability target, by an
//     exact time-indexed MIP on CBC or an LP-relaxation-and-rounding heuristic, each followed by
//     the same Monte-Carlo-driven repair;
//   - baselines: always-on, on-demand with a fixed keep-alive, the hybrid histogram policy.
//
// Everything is seeded: same workload, options and seed, same plan and figures. Thread-compatible;
// the MIP runs CBC in a forked child (so callers must not rely on other threads meanwhile).
#pragma once

#include "banyan/partitioner/periodic.hpp"

#include <functional>

namespace banyan::partitioner::periodic {

struct simulate_options {
  std::uint64_t samples = 100000;  // workflow instances per workflow (spread over its instances in the horizon)
  std::uint64_t seed = 1;
  double z = 1.959964;  // the Wilson interval's normal quantile (95%)
};

struct workflow_outcome {
  std::string name;
  std::uint64_t samples = 0, met = 0;
  double target = 0;
  double fraction = 0, low = 0, high = 0;  // met / samples and its Wilson interval
  bool meets() const { return fraction >= target; }
};

struct evaluation {
  double cost = 0;          // expected cost per horizon: planned node-slots plus on-demand ones
  double planned_cost = 0;  // the node-slots the schedule itself keeps awake
  double met_fraction = 0;  // over all simulated instances
  std::vector<workflow_outcome> workflows;
  std::uint64_t seed = 0;
};

// The Wilson score interval of `met` successes in `n` trials at normal quantile z.
std::pair<double, double> wilson(std::uint64_t met, std::uint64_t n, double z = 1.959964);

// Simulates `o.samples` instances of every workflow under `s`. Instances of a workflow are
// independent: a subtree's on-demand wake-ups are shared within an instance, not across instances
// (planned awake slots are shared by all). Cost: every slot in which anything is awake on a node
// costs that node's cost_per_hour x slot; on-demand awake time counts with its probability.
evaluation simulate(const workload& w, const schedule& s, const simulate_options& o = {});

// The cost per horizon of the schedule's planned awake slots alone (no simulation).
double planned_cost(const workload& w, const schedule& s);

enum class plan_algorithm { mip, heuristic, automatic };
const char* to_string(plan_algorithm a);

struct plan_options {
  plan_algorithm algorithm = plan_algorithm::automatic;
  double time_limit_s = 30;  // for the MIP (each solve); the heuristic ignores it
  simulate_options simulation;
  // `automatic` runs the MIP when its model has at most this many columns, else the heuristic.
  std::size_t mip_max_columns = 20000;
  // The quantile of wake-up and response times the model's nominal timelines use (0: each
  // workflow's own reliability target). Lower values give cheaper first plans that the repair
  // then widens where the Monte Carlo finds them short.
  double planning_quantile = 0;
  std::size_t max_repairs = 40;  // rounds of Monte-Carlo-driven repair before giving up
  // Called now and then with what is being done ("mip", "repair 3: 2 workflows short").
  std::function<void(const std::string&)> on_progress;
};

struct plan_outcome {
  schedule s;
  evaluation e;
  std::string algorithm;     // "mip" or "heuristic"
  double model_cost = 0;     // the model's cost of the first solve (before repair)
  double lower_bound = 0;    // proven lower bound on the model's optimum (0: none)
  bool optimal = false;      // the first solve was proven optimal
  std::vector<int> margins;  // per workflow: slots added before and after each instance by repair
  std::size_t repairs = 0;
  double seconds = 0;
};

// The cheapest schedule within node capacities whose every workflow meets its target. Errors:
// errc::over_capacity when no schedule fits the nodes, errc::invalid naming the workflow and its
// best reachable probability (every subtree awake all the time) when a target cannot be met.
result<plan_outcome> make_plan(const workload& w, const plan_options& o = {});

// The baselines, each a schedule on the subtrees' deployment nodes (their `home`; without one the
// nodes of `placement`): always-on; on-demand with a fixed keep-alive (Knative's scale-to-zero,
// 60 s); the hybrid histogram policy of Shahrad et al. (ATC 2020): per subtree, the idle times
// between its requests over the horizon, and pre-warm / keep-alive windows from their 5th and 99th
// percentiles (10% margins), or, when most idle times are beyond the histogram's 4 hours, windows
// around the predicted next idle time (85% to 115% of it).
schedule always_on(const workload& w, const std::vector<node_id>& placement);
schedule fixed_keep_alive(const workload& w, const std::vector<node_id>& placement, double keep_alive_s = 60);
schedule hybrid_histogram(const workload& w, const std::vector<node_id>& placement);

// A seeded random workload (tests and tools/bench/periodic_bench.cpp): `subtrees` subtrees with
// demands 1-4, wake-ups of 10-90 s and response times of 5-120 s (three-bucket histograms), in
// workflows of 2-5 requests (chains and fans, each subtree in one or two workflows) with periods
// dividing the horizon, deadlines with 30-100% slack over the nominal critical path, targets
// 0.95-0.999; `nodes` nodes of unequal cost and capacity with about `slack` times the peak
// demand in total. Same seed and shape, same workload (own PRNG).
struct workload_shape {
  std::size_t subtrees = 6;
  std::size_t nodes = 2;
  double slot = 300;      // seconds
  double horizon = 7200;  // seconds
  double slack = 1.5;
  double message_cost = 0.001;
};
workload random_workload(std::uint64_t seed, const workload_shape& shape = {});

}  // namespace banyan::partitioner::periodic
