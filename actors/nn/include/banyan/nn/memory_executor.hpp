// Runs a memory plan (memory_plan.hpp) on a backend: the model's activations and activation
// gradients live in one device pool, at the offsets the plan gives, of the plan's peak bytes (never
// more than the budget: a plan that needs more is refused by the planner and asserted here); swapped
// activations go to a host pool through the backend's copy engine, offloads overlapped with the
// forward and prefetches with the backward (two directions at once); recomputes rerun the model's
// forward of a layer during the backward.
//
// The host pool (the plan's host_bytes, allocated by set_plan) can draw from a budget of host bytes
// shared with the checkpoint store's write buffer (memory_options::host_budget, store/memory.hpp):
// set_plan take()s the bytes before allocating, which waits until the store has flushed enough
// ("flush, never drop": buffered checkpoints are written, not discarded), and the executor give()s
// them back in its destructor. The bandwidth probe's host buffer (at most 16 MiB, freed before the
// constructor returns) is not counted.
//
// Guarantees: a tensor is read only after the copy or kernel that makes it (every prefetch is waited
// for before its reader runs: a late copy stalls, it is never read stale), and device bytes are
// reused only after the offload reading them is done. The peak it reports is measured while it runs
// (the live bytes at their highest), not taken from the plan.
//
// A resource (owns the pools and the copy threads); used from the model's thread. The model calls
// run_forward, then optionally run_backward; a run_forward without a backward after it (validation,
// sampling) is fine: the next run_forward starts clean.
#pragma once

#include "banyan/nn/backend.hpp"
#include "banyan/nn/copy_engine.hpp"
#include "banyan/nn/error.hpp"
#include "banyan/nn/memory_plan.hpp"
#include "banyan/store/memory.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace banyan::nn {

// How long set_plan waits for the shared host budget (memory_options::host_budget_wait) by default:
// long enough for a checkpoint store to write a large buffer to a slow disk.
inline constexpr std::chrono::milliseconds default_host_budget_wait{60'000};

// A model's device-memory budget, per model instance (gpt::create). A pipeline stage (gpt_stage) takes
// none: its slots are kept whole.
struct memory_options {
  std::size_t budget = 0;  // bytes of the device pool for activations and their gradients
  memory_policy policy = memory_policy::knapsack;
  planner_options planner;
  // Tests: a copy engine instead of the backend's (a slow one), and poison: on the cpu backend every
  // allocation is filled with NaN bytes first, so reading bytes nothing wrote spoils the result.
  std::function<std::unique_ptr<copy_engine>()> make_copies;
  bool poison = false;
  // The model plans again from measured layer times after its first step with a backward; tests
  // that set their own plan turn this off.
  bool replan = true;
  // Host bytes shared with other users of host memory, typically a checkpoint blob_store's write
  // buffer (store::options::budget). Null: the host pool is allocated without asking anyone. Set:
  // the host pool's bytes are take()n from it first, waiting at most host_budget_wait for the
  // store to flush (the executor shares ownership: the budget lives as long as it does).
  std::shared_ptr<store::memory_budget> host_budget;
  std::chrono::milliseconds host_budget_wait = default_host_budget_wait;
};

struct memory_stats {
  std::size_t peak_bytes = 0;         // live pool bytes at their highest, measured
  std::size_t peak_offset = 0;        // highest end of a live allocation in the pool
  std::size_t held_for_backward = 0;  // live bytes when the backward starts (what a forward leaves)
  std::uint64_t offloads = 0, prefetches = 0, recomputes = 0;
  std::uint64_t late_copies = 0;  // waits that found their copy unfinished
};

class memory_executor {
 public:
  // Measures the copy bandwidth each way; set_plan allocates the pool.
  memory_executor(backend& be, memory_graph g, memory_options o);
  ~memory_executor();

  // The plan to run from the next step (its peak must fit the budget: asserted). Allocates the pool
  // and the host pool, or grows them; neither ever shrinks. With a host_budget, the host bytes the
  // plan needs beyond the current host pool are take()n first, which may block up to
  // host_budget_wait while a checkpoint store flushes. Errors (the old plan and pools stay as they
  // were, nothing is taken): invalid_argument when the host pool needs more than the budget's whole
  // capacity; timeout when the bytes did not come free in time (the message names the bytes and
  // says that the checkpoint write buffer did not flush).
  result<void> set_plan(memory_plan p);
  const memory_plan& plan() const { return plan_; }
  const memory_graph& graph() const { return g_; }
  const memory_options& options() const { return o_; }
  // Bytes per millisecond each way, measured at construction on min(budget, 16 MiB).
  double d2h_bytes_per_ms() const { return d2h_; }
  double h2d_bytes_per_ms() const { return h2d_; }
  // Milliseconds of a 4 KiB copy issued and waited for (the fixed cost of a copy), measured too.
  double copy_latency_ms() const { return latency_; }

  // The forward half of the plan; `forward(op)` runs op's kernels on act()/grad() pointers.
  // With skip_op >= 0 (an inference pass that stops before that op, e.g. the loss without targets)
  // nothing is offloaded and what that op would have read stays resident afterwards.
  void run_forward(const std::function<void(int op)>& forward, int skip_op = -1);
  // The backward half; `again(op)` reruns op's forward for a recompute. After a full run_forward.
  void run_backward(const std::function<void(int op)>& again, const std::function<void(int op)>& backward);

  // Device pointer of activation t (or its gradient); asserts it is resident.
  float* act(int t) const;
  float* grad(int t) const;
  bool resident(int t) const { return act_[t] != nullptr; }

  memory_stats stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }

 private:
  void run(std::size_t begin, std::size_t end, const std::function<void(int)>& forward,
           const std::function<void(int)>& again, const std::function<void(int)>& backward, int skip_op);
  void place(float*& slot, int t, std::size_t offset, bool zero);
  void release(float*& slot, int t);
  void settle();                              // waits for every copy in flight and forgets every placement
  result<void> take_host(std::size_t bytes);  // from o_.host_budget, when there is one

  backend* be_;
  memory_graph g_;
  memory_options o_;
  memory_plan plan_;
  buffer pool_;
  void* host_ = nullptr;
  std::size_t host_bytes_ = 0;  // with a host_budget, also the bytes taken from it
  std::unique_ptr<copy_engine> copies_;
  std::vector<float*> act_, grad_;
  std::vector<copy_engine::ticket> ticket_;
  std::vector<bool> in_flight_;
  std::size_t live_ = 0;
  bool forward_done_ = false;
  double d2h_ = 0.0, h2d_ = 0.0, latency_ = 0.0;
  memory_stats stats_;
};

}  // namespace banyan::nn
