// Periodic deployment (MDP-LPR): subtrees used rarely and on a rhythm sleep between requests. This
// header holds the workload (what runs when, with measured wake-up and response times) and the
// schedule (when each subtree is awake and where), read from and written to YAML
// (docs/formats.md, "Workload" and "Periodic plan"); periodic_plan.hpp plans and evaluates them.
//
// Time: a schedule covers one horizon (e.g. a day) cut into slots (e.g. a minute); it repeats, so
// time is cyclic modulo the horizon. Every workflow's period divides the horizon.
//
// Values only: every type here is copyable and holds no resources. Errors name file:line.
#pragma once

#include "banyan/partitioner/io.hpp"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace banyan::partitioner::periodic {

// A measured distribution of durations in seconds, as the runtime will write it: bucket i holds
// `counts[i]` observations in [bounds[i], bounds[i+1]) (a zero-width bucket is a point mass).
// Invariant (checked by the reader): bounds non-decreasing and >= 0, counts >= 0 with a positive
// sum, bounds.size() == counts.size() + 1.
struct histogram {
  std::vector<double> bounds;
  std::vector<double> counts;

  static histogram constant(double seconds) { return {{seconds, seconds}, {1}}; }
  double min() const;  // lower bound of the first non-empty bucket
  double max() const;  // upper bound of the last non-empty bucket
  double mean() const;
  // The q-quantile (q in [0, 1]), uniform within a bucket.
  double quantile(double q) const;
  // A draw from two uniforms in [0, 1): the bucket by counts, then uniformly within it.
  double sample(double u_bucket, double u_within) const;
};

struct subtree_spec {
  std::string path;
  double demand = 0;  // capacity taken on its node while awake (the unit of the nodes' capacity)
  histogram wake;     // from the start of a wake-up until it serves
  histogram response;
  int line = 0;
};

struct request_spec {
  std::string id;
  std::size_t subtree = 0;         // index into workload::subtrees
  bool publish = false;            // successors wait for its delivery only, not its reply
  std::vector<std::size_t> after;  // predecessors (indices into the workflow's requests)
  double traffic = 1;              // messages per instance between it and each predecessor's subtree
  int line = 0;
};

struct workflow_spec {
  std::string name;
  double period = 0, phase = 0, jitter = 0, deadline = 0;  // seconds; release i at phase + i period + U[0, jitter)
  double reliability = 0.99;                               // target probability of meeting the deadline
  std::vector<request_spec> requests;                      // in a topological order (the reader sorts them)
  int line = 0;
  std::size_t instances(double horizon) const { return static_cast<std::size_t>(std::llround(horizon / period)); }
};

struct node_info {
  std::string name;
  double capacity = 0;
  double cost_per_hour = 0;  // paid for every slot in which anything is awake on it
};

struct workload {
  std::string name;                   // the file, for messages
  double slot = 60, horizon = 86400;  // seconds
  double message_cost = 0;            // cost per message x link cost between the subtrees' nodes
  std::vector<node_info> nodes;
  std::vector<double> link_cost;  // row-major k x k; empty: 1 between different nodes
  std::vector<subtree_spec> subtrees;
  std::vector<workflow_spec> workflows;
  std::vector<node_id> home;           // per subtree: its node in the deployment (no_node without one)
  std::string deployment_fingerprint;  // of the deployment it was read against (empty: none)

  std::size_t slots() const { return static_cast<std::size_t>(std::llround(horizon / slot)); }
  double link(node_id a, node_id b) const {
    if (a == b) return 0;
    return link_cost.empty() ? 1.0 : link_cost[static_cast<std::size_t>(a) * nodes.size() + b];
  }
};

// What a workload is checked against. With a deployment, nodes come from its cluster (capacity.cpu;
// the workload's `nodes` give costs and may override capacities) and every subtree must be one of
// its assignment paths, or a component of `profile` when that is given too; a workload naming
// another deployment (`deployment: {fingerprint}`) is refused.
struct workload_context {
  const deployment* d = nullptr;
  const tree* profile = nullptr;
};

// Reads a workload. Errors (errc::invalid / parse) name file:line: an unknown subtree, a cycle in a
// workflow, a deadline below the sum of the minimum response times along the critical path, a
// period of 0 or one that does not divide the horizon, a malformed histogram, a workload for another
// deployment.
result<workload> parse_workload(const std::string& text, const std::string& name, const workload_context& ctx = {});
result<workload> load_workload(const std::string& path, const workload_context& ctx = {});

// A duration: a number of seconds or a number with a unit (ms, s, m, h, d): "90s", "1.5m", "1d".
std::optional<double> parse_duration(const std::string& text);

// A deployment's identity, so that a plan made for one is refused for another: a hash of its nodes
// (name, capacity) and assignments (path, node), "fnv1a64:<16 hex digits>".
std::string fingerprint(const deployment& d);

// When each subtree is awake and where: the plan a runtime follows, or a baseline policy put in the
// same terms. Awake slots are woken at the start of their run of slots (the wake-up time is part of
// the awake time) and put to sleep at its end, once in-flight requests are done. A request to a
// sleeping subtree wakes it on demand; it then stays awake `keep_alive` seconds after that request.
struct schedule {
  std::string policy;                            // "plan", "always-on", "keep-alive-60s", "hybrid-histogram"
  std::vector<node_id> node;                     // per subtree
  std::vector<std::vector<std::uint8_t>> awake;  // per subtree, per slot (1: awake)
  std::vector<double> keep_alive;                // per subtree, seconds (0: sleep as soon as done)
};

// One workflow's predicted probability of meeting its deadline, with its Wilson interval.
struct workflow_reliability {
  std::string name;
  double target = 0, predicted = 0, low = 0, high = 0;
};

// A plan file's content beside the schedule (docs/formats.md, "Periodic plan").
struct plan_file {
  schedule s;
  std::string deployment;              // the deployment file it was made for (informational)
  std::string deployment_fingerprint;  // checked against the deployment it is used with
  std::string algorithm;
  double cost = 0;  // predicted cost per horizon
  std::uint64_t seed = 0, samples = 0;
  std::vector<workflow_reliability> reliability;
};

void write_plan(std::ostream& out, const workload& w, const plan_file& p);
// Reads a plan for `w`: a plan for another deployment (fingerprint), an unknown subtree or node, a
// different slot or horizon, or an interval outside the horizon is an error naming file:line.
result<plan_file> parse_plan(const std::string& text, const std::string& name, const workload& w);
result<plan_file> load_plan(const std::string& path, const workload& w);
// Reads a plan to run on deployment `d` (`banyan launch --plan`), without its workload: `shape`
// gets the plan's slot, horizon and subtrees and `d`'s nodes; the same errors as above.
result<plan_file> load_plan(const std::string& path, const deployment& d, workload& shape);

}  // namespace banyan::partitioner::periodic
