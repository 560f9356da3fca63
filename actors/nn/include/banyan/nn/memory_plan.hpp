// Memory planning for training under a device-memory budget (after DELTA): per layer's
// saved activations, keep them, swap them (offload to host memory after the forward, prefetch
// before the backward) or drop and recompute them (rerun the layer's forward from its inputs).
//
// A plan is a value: the decisions, and the program they compile to, a straight list of
// instructions (allocate at an offset, run a layer forward or backward, recompute, offload, wait,
// prefetch, free) that the executor (memory_executor.hpp) runs as written. Offsets are fixed at
// compile time by first fit in one pool, so the peak a plan needs, fragmentation included, is known
// before it runs, and the executor places every tensor where the plan says.
//
// Pure functions, no device: planning and compiling cost O(ops + tensors) per compile (the knapsack
// O(items x pages) per round, a few rounds); thread-safe (no shared state).
#pragma once

#include "banyan/nn/error.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace banyan::nn {

// What a model tells the planner. Tensor ids index `tensors`; an activation gradient has its
// activation's id (and size). Ops are the model's layers, in forward order; their backwards run in
// reverse order.
struct memory_tensor {
  std::string name;
  std::size_t bytes = 0;
  int producer = -1;    // the op whose forward writes it
  bool result = false;  // read on the host after the forward (the losses): lives until the backward
};
struct memory_op {
  std::string name;
  std::vector<int> inputs;       // activations its forward reads
  std::vector<int> outputs;      // activations its forward writes (all of them, every time)
  std::vector<int> saved_reads;  // activations its backward reads
  std::vector<int> grads;        // activation gradients its backward reads or writes
};
struct memory_graph {
  std::vector<memory_tensor> tensors;
  std::vector<memory_op> ops;
  // Every id in range, every tensor the output of exactly its producer, inputs made by earlier ops.
  result<void> validate() const;
};

// Measured costs: per op, forward and backward milliseconds; the copy bandwidths, and the fixed
// time a copy takes besides its bytes (issuing it, waking the copy thread or stream).
struct memory_costs {
  std::vector<double> forward_ms, backward_ms;
  double d2h_bytes_per_ms = 1e6, h2d_bytes_per_ms = 1e6;
  double copy_latency_ms = 0.0;
};

enum class memory_policy {
  keep,       // keep every saved activation (the baseline)
  recompute,  // sqrt(n) checkpointing (Chen et al. 2016): keep every k-th layer's, recompute the rest
  swap,       // swap every saved activation
  greedy,     // Capuchin-style: evict the most bytes per predicted ms until the plan fits
  knapsack,   // DELTA: 0/1 knapsack over the kept set, exact DP on pages, minimising predicted time
};
enum class memory_decision { keep, swap, recompute };
const char* to_string(memory_policy p);
const char* to_string(memory_decision d);
// "keep", "recompute", "swap", "greedy", "knapsack"; names the input when it is none of them.
result<memory_policy> parse_memory_policy(const std::string& name);

struct memory_instr {
  enum class kind {
    alloc,       // activation `id` gets the pool bytes at `offset`
    alloc_grad,  // activation gradient `id`, zeroed
    free,        // activation `id`
    free_grad,
    forward,        // op `id`'s forward
    recompute,      // op `id`'s forward again, during the backward
    backward,       // op `id`'s backward
    offload,        // start copying `id` to its host slot (device bytes stay until offload_wait)
    offload_wait,   // wait for that copy; the device bytes are free after it
    prefetch,       // `id` gets the pool bytes at `offset`; start copying its host slot there
    prefetch_wait,  // wait for that copy before `id` is read
  };
  kind what;
  int id = -1;
  std::size_t offset = 0;
  friend bool operator==(const memory_instr&, const memory_instr&) = default;
};

struct memory_plan {
  memory_policy policy = memory_policy::keep;
  std::size_t budget = 0;
  // Per op: what happens to its saved outputs (keep for an op that saves none). A swap whose
  // prefetch would start before its offload ends is compiled as a keep, and says so here.
  std::vector<memory_decision> decisions;
  std::vector<double> extra_ms;  // per op: the decision's predicted extra time (the planner's estimate)
  // Per op, the planner's estimates of both alternatives: the transfer time a swap cannot hide
  // (infinite when a swap cannot overlap at all) and a recompute's forward time.
  std::vector<double> swap_ms, recompute_ms;
  std::vector<memory_instr> program;
  std::size_t backward_begin = 0;        // program index of the first backward instruction
  std::size_t peak_bytes = 0;            // pool bytes the program needs (highest offset + size)
  std::vector<std::size_t> host_offset;  // per tensor: its host slot (swapped ones)
  std::size_t host_bytes = 0;
  double compute_ms = 0.0;    // forward + backward of every op once
  double predicted_ms = 0.0;  // the program's simulated time: + recomputes + copies not hidden
  friend bool operator==(const memory_plan&, const memory_plan&) = default;
};

struct planner_options {
  // Copies overlap this many ops: an offload must end before the op `offload_lag` after the one
  // that made the tensor (and after its last forward reader); a prefetch starts this many backward
  // ops before its reader.
  int offload_lag = 1;
  int prefetch_lead = 2;
  std::size_t alignment = 256;  // pool offsets and sizes (CUDA's allocation granularity)
};

// Decides per op under `budget` pool bytes with `policy`, compiles and simulates. Fails with
// errc::invalid_argument when no plan fits, naming the budget and the least any plan needs; a
// keep, swap or recompute plan that does not fit fails the same way.
result<memory_plan> plan_memory(const memory_graph& g, const memory_costs& c, std::size_t budget, memory_policy policy,
                                const planner_options& o = {});

// The least pool bytes any policy's plan needs (what a budget below it is told).
std::size_t minimum_memory(const memory_graph& g, const memory_costs& c, const planner_options& o = {});

// Compiles fixed decisions (one per op) and simulates them: the building block of the policies,
// public for tests and benchmarks.
memory_plan compile_plan(const memory_graph& g, const memory_costs& c, std::vector<memory_decision> decisions,
                         const planner_options& o = {});

// The plan as a table: per op that saves activations, its tensors, bytes, decision and predicted
// extra ms; then peak, budget and predicted step time.
std::string format_plan(const memory_graph& g, const memory_plan& p);

// "200.0 MiB"
std::string format_bytes(std::size_t bytes);

}  // namespace banyan::nn
