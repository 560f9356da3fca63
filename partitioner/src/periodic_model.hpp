// The periodic planner's model, shared by its exact MIP, its heuristic and the baselines.
//
// Time decisions come as *patterns*: per workflow, which of its subtrees are woken ahead of their
// first request of an instance (pre-wake: the wake-up overlaps what precedes) and which are woken
// on demand (the request waits for the wake-up). A pattern fixes the instance's nominal timeline
// (requests issued as soon as their predecessors allow, durations at the workflow's reliability
// quantile) and so, per subtree, the window it must be awake in each instance: from its wake-up to
// its last request's end, plus the jitter. Patterns whose nominal timeline misses the deadline are
// dropped (all-pre-wake is kept if none is left). Precedence, lead time and deadlines live in the
// patterns; the MIP and the heuristic choose one pattern per workflow and one node per subtree:
//
//   min  sum_n cost_n x slot x sum_t u[n][t]  +  message_cost x sum_talks messages x link(node a, node b)
//   s.t. awake(s, t) = OR over workflows using s of its chosen pattern's windows (+ repair margins)
//        sum_{s on n, awake at t} demand_s <= capacity_n;  u[n][t] = 1 when anything on n is awake at t
//
// A subtree stays on one node over the horizon (it sleeps where it woke).
#pragma once

#include "banyan/partitioner/periodic_plan.hpp"

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace banyan::partitioner::periodic::detail {

// splitmix64: portable and seeded (no <random> distributions, so the same seed gives the same
// draws on every standard library).
struct rng {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

// One instance of workflow `f`: requests are issued as soon as their predecessors allow (a
// publish's successors wait for its start, a request's for its end), in order of issue time.
// `start(q, issue)` says when request q issued at `issue` (seconds after the release) starts at its
// subtree; `response(q)` how long it takes. Fills issue/start/finish; returns the last finish.
template <class Start, class Response>
double run_instance(const workflow_spec& wf, const std::vector<std::vector<std::size_t>>& successors, Start&& start,
                    Response&& response, std::vector<double>& issue, std::vector<double>& begin,
                    std::vector<double>& finish, std::vector<int>& waiting) {
  const std::size_t n = wf.requests.size();
  issue.assign(n, 0);
  begin.assign(n, 0);
  finish.assign(n, 0);
  waiting.resize(n);
  for (std::size_t q = 0; q < n; ++q) waiting[q] = static_cast<int>(wf.requests[q].after.size());
  double last = 0;
  for (std::size_t done = 0; done < n; ++done) {
    std::size_t next = n;  // the ready request issued first (ties: lowest index)
    for (std::size_t q = 0; q < n; ++q) {
      if (waiting[q] == 0 && (next == n || issue[q] < issue[next])) next = q;
    }
    waiting[next] = -1;
    begin[next] = start(next, issue[next]);
    finish[next] = begin[next] + response(next);
    last = std::max(last, finish[next]);
    for (auto s : successors[next]) {
      issue[s] = std::max(issue[s], wf.requests[next].publish ? begin[next] : finish[next]);
      --waiting[s];
    }
  }
  return last;
}

struct pattern {
  std::vector<std::uint8_t> prewake;              // per subtree of the workflow
  double finish = 0;                              // nominal end after the release, seconds
  std::vector<std::pair<double, double>> window;  // per subtree of the workflow: awake [from, to) after the release
};

struct flow_model {
  std::vector<std::size_t> subtrees;                 // distinct subtrees, in order of first request
  std::vector<std::size_t> local;                    // per request: index into `subtrees`
  std::vector<std::vector<std::size_t>> successors;  // per request
  std::vector<pattern> patterns;                     // [0] is all-pre-wake
};

struct talk {
  std::size_t a = 0, b = 0;  // subtrees
  double messages = 0;       // per horizon
};

struct model {
  const workload* w = nullptr;
  std::size_t T = 0;
  double slot_hours = 0;
  std::vector<flow_model> flows;
  std::vector<talk> talks;
  std::vector<std::vector<std::size_t>> flows_of;  // per subtree
};

// `quantile` 0: each workflow's reliability target is the quantile of its nominal durations.
model build_model(const workload& w, double quantile = 0);

// Calls `at(slot)` for every slot of the horizon that subtree j of flow f must be awake in under
// pattern p with `margin` extra slots before and after each instance's window (each slot once).
template <class F>
void for_each_slot(const model& m, std::size_t f, const pattern& p, std::size_t j, int margin, F&& at) {
  const workflow_spec& wf = m.w->workflows[f];
  const auto T = static_cast<std::int64_t>(m.T);
  const std::size_t n = wf.instances(m.w->horizon);
  std::vector<std::uint8_t> seen(m.T, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const double release = wf.phase + static_cast<double>(i) * wf.period;
    const double from = release + p.window[j].first, to = release + p.window[j].second + wf.jitter;
    std::int64_t first = static_cast<std::int64_t>(std::floor(from / m.w->slot + 1e-9)) - margin;
    std::int64_t last = std::max(first, static_cast<std::int64_t>(std::ceil(to / m.w->slot - 1e-9)) - 1) + margin;
    if (last - first + 1 >= T) {
      first = 0;
      last = T - 1;
    }
    for (std::int64_t t = first; t <= last; ++t) {
      const auto slot = static_cast<std::size_t>(((t % T) + T) % T);
      if (!seen[slot]) {
        seen[slot] = 1;
        at(slot);
      }
    }
  }
}

struct choice {
  std::vector<int> pattern;   // per workflow
  std::vector<node_id> node;  // per subtree
};

// Awake slots per subtree (coverage counts over workflows) under `c`.
std::vector<std::vector<std::uint8_t>> awake_of(const model& m, const std::vector<int>& patterns,
                                                const std::vector<int>& margins);
schedule to_schedule(const model& m, const choice& c, const std::vector<int>& margins);

struct model_eval {
  double cost = 0;
  bool feasible = true;
  std::string violation;
};
model_eval model_cost(const model& m, const choice& c, const std::vector<int>& margins);
double traffic_cost(const model& m, const std::vector<node_id>& node);

struct solved {
  bool found = false;
  choice c;
  double cost = 0;
  double bound = 0;  // proven lower bound (0: none)
  bool optimal = false;
  std::string message;
  std::size_t columns = 0;
};

// Columns of the MIP for these margins (to choose mip or heuristic).
std::size_t mip_columns(const model& m, const std::vector<int>& margins);
// Which patterns and nodes the MIP may use (empty: all), for the heuristic's restricted pass.
struct support {
  std::vector<std::vector<std::uint8_t>> pattern;  // per flow, per pattern
  std::vector<std::vector<std::uint8_t>> node;     // per subtree, per node
};
solved solve_mip(const model& m, const std::vector<int>& margins, double time_limit_s, const choice* warm,
                 const support* only = nullptr);
solved solve_heuristic(const model& m, const std::vector<int>& margins);

}  // namespace banyan::partitioner::periodic::detail
