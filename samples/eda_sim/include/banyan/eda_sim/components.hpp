// The component version: the elaborated design as a banyan app. Every module instance is a
// composite; an instance's own cells are one leaf (a leaf_engine inside a banyan::leaf); the top
// ports are the `io` leaf under the root, which plays the stimulus and samples the outputs. Every
// boundary group is a topic published with the scope of the lowest common ancestor of its ends.
//
// Protocol (dataflow, no global barrier): in every cycle each leaf publishes each of its groups
// exactly once, as soon as the group's value is final, i.e. once every group it depends on
// combinationally has arrived for this cycle. Group ranks (design.hpp) make those dependencies
// acyclic, so this never deadlocks. A leaf clocks its flip-flops once it has received all its groups
// of the cycle; the io leaf samples the outputs then and starts the next cycle. An unchanged group is
// sent as its 8-byte cycle header only. Message order per publisher→subscriber pair is FIFO (SDK
// contract), so a leaf may run ahead of its readers and they queue its messages.
#pragma once

#include <banyan/eda_sim/run.hpp>
#include <banyan/sdk/sdk.hpp>

#include <memory>

namespace banyan::eda {

// What every component of one run shares (in-process) and what the io leaf reports back.
struct component_run {
  std::shared_ptr<const design> d;
  std::shared_ptr<const stimulus> stim;
  std::uint64_t cycles = 0;
  unsigned lanes = 1;
  unsigned trace_lanes = 0;
  // Written by the io leaf:
  trace samples;
  std::uint64_t signature = 0xcbf29ce484222325ull;  // same hash as run.hpp's
  std::uint64_t cycles_done = 0;
  double seconds = 0;
};

// The app: root composite named after the top module (it starts the run once every component is
// up), one composite per instance, one leaf per instance's own cells, the io leaf.
std::unique_ptr<banyan::app> make_app(const std::shared_ptr<component_run>& run);

}  // namespace banyan::eda
