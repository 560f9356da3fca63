// What `banyan partition` needs to know about a profile's loads beyond the partitioner's tree: the
// measurement window, the messages each component handled (the samples behind its CPU load), how far
// the CPU loads can be trusted, and loads in a stable unit (`--load messages`).
//
// Why: a component's CPU load is the sum of its handlers' times in one run. From a short run, or for
// a component that handled a few messages, it is mostly noise (cold caches, preemption, the first
// call's allocations), and capacities given as percentages of the total load turn that noise into
// different partitions: the same app partitioned twice cost 162 and 20160. Message counts
// of the same app and input do not change between runs.
#pragma once

#include "banyan/partitioner/io.hpp"
#include "banyan/partitioner/model.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace banyan::cli {

// How much of the CPU load was measured well enough to partition by.
struct load_confidence {
  // A component's CPU load is well sampled when it comes from at least this many messages and this
  // much handler time (far above the clock's and the scheduler's jitter).
  static constexpr std::uint64_t min_messages = 100;
  static constexpr double min_cpu_s = 1e-3;
  // The loads are trusted when the well-sampled components hold at least this share of the total
  // CPU load, and the total is at least `min_total_cpu_s`.
  static constexpr double min_well_sampled_share = 0.8;
  static constexpr double min_total_cpu_s = 0.01;

  double window_s = 0;              // the profile's duration_s: how long the run measured (0: not recorded)
  double cpu_s = 0;                 // total handler CPU seconds
  std::uint64_t messages = 0;       // total messages handled
  bool has_messages = false;        // the profile records load.messages (a run's profile does; gen-tree's not)
  double well_sampled_share = 0;    // share of cpu_s held by well-sampled components (1 when cpu_s is 0)
  std::size_t thin_components = 0;  // components with CPU load that is not well sampled

  // Judged only when the profile has message counts (a synthetic profile's loads are exact).
  bool judged() const { return has_messages && cpu_s > 0; }
  bool trusted() const {
    return !judged() || (well_sampled_share >= min_well_sampled_share && cpu_s >= min_total_cpu_s);
  }
  // "high", "low" or "unknown" (not judged).
  const char* level() const { return !judged() ? "unknown" : trusted() ? "high" : "low"; }
  // One line saying what was measured and, when not trusted, why and what to do.
  std::string describe() const;
};

// Judges the CPU loads of `t` (as read, before any replacement) with the measurements read beside
// it (partitioner::load_profile's `m`), without reading the file again.
load_confidence judge_loads(const partitioner::tree& t, const partitioner::profile_measurements& m);

// Replaces `t`'s CPU loads by the messages each component handled. Errors name `file`: the profile
// has no message counts, or none is above 0.
result<void> use_message_loads(partitioner::tree& t, const partitioner::profile_measurements& m,
                               const std::string& file);

}  // namespace banyan::cli
