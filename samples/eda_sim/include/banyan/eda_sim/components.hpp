// The component version: the elaborated design as a banyan app. Every module instance is a
// composite; an instance's own cells are one leaf (a leaf_engine inside a banyan::leaf); the top
// ports are the `io` leaf under the root, which plays the stimulus and samples the outputs. Every
// boundary group is a topic published with the scope of the lowest common ancestor of its ends.
//
// Protocol (dataflow, no global barrier): in every cycle each publisher publishes each of its
// groups exactly once, as soon as the group's value is final, i.e. once every group it depends on
// combinationally has arrived for this cycle. Group ranks (design.hpp) make those dependencies
// acyclic, so this never deadlocks. A publisher clocks its flip-flops once it has received all its
// groups of the cycle; the io leaf samples the outputs then and starts the next cycle. An unchanged
// group is sent as its 8-byte cycle header only. Message order per publisher→subscriber pair is FIFO
// (SDK contract), so a leaf may run ahead of its readers and they queue its messages.
//
// Grain: who evaluates.
//  - leaf: every leaf evaluates its own cells; every boundary group is a message every cycle (the
//    per-edge traffic of the whole tree, what a profile for the partitioner needs).
//  - node (default): the leaves one process hosts are merged (cluster.hpp) and evaluated by one of
//    them (the one with the lowest index, the head); groups between them are direct reads of one
//    value, and only groups crossing to another node are messages. Such a group is still published by
//    its driver leaf (the head hands it the payload) and received by every reader leaf subscribed to
//    it (one of them, the lowest, hands it to the head), so routes, scopes and the node links' traffic
//    are those of the leaf grain. In one process nothing is sent.
#pragma once

#include <banyan/eda_sim/compiled.hpp>
#include <banyan/eda_sim/run.hpp>
#include <banyan/sdk/sdk.hpp>

#include <atomic>
#include <memory>

namespace banyan::eda {

enum class grain { leaf, node };

struct local_leaves;  // the leaves started in this process (components.cpp)

// What every component of one run shares (in-process) and what the io leaf reports back.
struct component_run {
  std::shared_ptr<const design> d;
  std::shared_ptr<const stimulus> stim;
  std::uint64_t cycles = 0;
  unsigned lanes = 1;
  unsigned trace_lanes = 0;
  grain how = grain::node;
  // Who evaluates the cells (compiled.hpp). Leaf grain: every process compiles (or loads from the
  // cache) one object with every leaf's program, so all processes of a launch share it; node grain:
  // each process its merged program. A compile that fails is logged and the leaves interpret.
  engine_kind engine = engine_kind::interp;
  compile_options compile;
  // Every leaf keeps its state (keep_state) at each multiple of this many cycles, with what it sent
  // since the one before, so that a failover resumes it from there (0: never; --grain leaf only).
  std::uint64_t checkpoint_every = 0;
  std::shared_ptr<local_leaves> local;  // made by make_app
  // Written by the io leaf:
  trace samples;
  std::uint64_t signature = 0xcbf29ce484222325ull;  // same hash as run.hpp's
  std::uint64_t cycles_done = 0;
  double seconds = 0;
  bool ended_here = false;  // the io leaf ended the run in this process (it may have moved or failed over)
  // Failover (every leaf): group messages sent again for leaves that resumed from a checkpoint.
  std::atomic<std::uint64_t> resent{0};
};

// The app: root composite named after the top module (it starts the run once every component is
// up), one composite per instance, one leaf per instance's own cells, the io leaf.
std::unique_ptr<banyan::app> make_app(const std::shared_ptr<component_run>& run);

}  // namespace banyan::eda
