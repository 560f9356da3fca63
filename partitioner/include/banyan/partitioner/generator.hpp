// Seeded generator of hierarchical workloads (`banyan gen-tree`): a component tree with loads and
// traffic with locality, and a matching cluster. Same options and seed, same output, on any machine
// (uses its own PRNG and distributions, not <random>'s implementation-defined ones).
#pragma once

#include "banyan/partitioner/model.hpp"

#include <cstdint>
#include <string>

namespace banyan::partitioner {

struct generator_options {
  std::size_t components = 100;  // exact number of vertices, >= 1
  std::uint64_t seed = 1;
  double fanout_mean = 4;             // children per composite ~ 1 + geometric with this mean - 1
  double leaf_fraction_depth = 0.35;  // share of new vertices that are leaves at each level
  double load_sigma = 1.0;            // leaf CPU load ~ lognormal(0, sigma); composites get 5% of that
  double messages_per_leaf = 20;      // flows each leaf publishes
  double locality = 0.85;             // probability that a flow stays within the publisher's parent
                                      // subtree; otherwise its scope is a random higher ancestor
  bool memory = false;                // also give loads a memory dimension
  // Cluster
  std::size_t nodes = 4;
  double slack = 1.25;        // total capacity / total load
  double heterogeneity = 0;   // 0: equal nodes; h: capacity_i ~ uniform(1-h, 1+h), rescaled
  std::size_t rack_size = 0;  // > 0: groups of this many nodes, link cost same 1 / other 4
  std::string root_name = "app";
  std::string endpoint_base = "tcp://127.0.0.1:";  // endpoints are base + (7100 + i)
  bool with_paths = true;                          // false saves memory for 10^6-vertex benchmarks
};

// The tree only. Validated (asserted) to satisfy the tree invariant.
tree generate_tree(const generator_options& o);
// A cluster matching `t`'s total loads under o.slack.
cluster generate_cluster(const tree& t, const generator_options& o);

}  // namespace banyan::partitioner
