// Elastic scheduling of heterogeneous devices with virtual workers, on sdk components.
//
//   /train_gpt/trainer         the GPT trainer with --elastic: the scheduler. It keeps the master
//                              parameters and the optimizer, validates, saves checkpoints and reports.
//   /train_gpt/trainer/p0 ..   physical workers (elastic_worker): dynamic children, never restarted by
//                              supervision, each on a thread of its own with --worker-threads threads;
//                              a deployment places them on nodes, and nodes may come and go.
//
// The mathematics is fixed by the virtual workers, never by the devices: the global batch of B rows is
// V virtual workers of B/V rows. Virtual worker v owns shard v of the training text (a contiguous
// V-th of it) and its own random stream (seed, step, v): its rows at a step are the same whoever runs
// it. Each step the scheduler hands every physical worker the parameters and a set of virtual workers;
// a physical worker runs its set on its threads, one whole virtual worker per thread at a time (each
// single-threaded, so its gradient's bits do not depend on the thread or the machine), and sends one
// gradient per virtual worker up. The scheduler sums them in virtual-worker order (0, 1, ..., V-1,
// whatever order they arrive in), divides by V and steps AdamW. So the loss trajectory is
// bit-identical with 1, 2 or 3 physical workers and any assignment, and equals one instance trained on
// the whole batch up to float rounding (tests/integration/elastic_test.cpp).
//
// Assignment: in proportion to measured speed. Every gradient carries the time its virtual worker
// took; the scheduler keeps a moving average per physical worker and, at each step boundary, gives
// out the V virtual workers so that the predicted step time max_k ceil(n_k / threads_k) x ms_k is
// smallest (balance_counts); a worker given none for 10 steps gets one, to be measured again.
// --balance even splits by thread count alone (the static baseline).
//
// Membership: a physical worker says hello when it starts; it receives work from the next step
// boundary on. One that ends (its node lost to kill -9, or a failure) loses its virtual workers: the
// ones of the step in flight whose gradients have not arrived are handed to the survivors and redone
// (the others are kept: same parameters, same bits). The scheduler asks for the worker again
// (ctx.start_child), which the SDK holds until its node is back (`banyan launch --join`). Every
// join, leave and new assignment is logged.
//
// Wire format (native byte order; every node of a deployment runs on one kind of machine):
//   elastic/hello  worker -> parent   {u32 magic 'BEHL', u32 threads}
//   elastic/work   scheduler -> subtree {u32 magic 'BEWK', u32 pairs, i64 step, u64 n}
//                                     pairs x {u32 slot, u32 virtual worker}, then n floats of parameters
//   elastic/grad   worker -> parent   {u32 magic 'BEGR', u32 virtual worker, i64 step, f32 loss,
//                                     f32 ms, u64 n}, then n floats of gradient
// A message of any other shape is a clear error naming the topic and the sender.
#pragma once

#include <banyan/nn/data.hpp>
#include <banyan/sdk/component.hpp>
#include <banyan/sdk/context.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace banyan::trainer {

struct gpt_options;

inline constexpr const char* elastic_hello_topic = "elastic/hello";
inline constexpr const char* elastic_work_topic = "elastic/work";
inline constexpr const char* elastic_grad_topic = "elastic/grad";

struct elastic_options {
  int virtual_workers = 0;   // V; 0: not elastic
  int physical_workers = 1;  // slots p0 .. p<P-1> in the tree (a deployment places them)
  int worker_threads = 1;    // threads per physical worker
  int min_workers = 0;       // the first step waits for this many hellos (0: all physical workers)
  // "p1=3": p1 takes 3x as long as it would (it waits 2x its compute time after each virtual worker);
  // emulates a slower device for the heterogeneity benchmark.
  std::vector<std::string> throttle;
  std::string balance = "measured";                   // or "even": by thread count only (the static baseline)
  std::chrono::milliseconds wait_for_workers{60000};  // none left: how long to wait for one to join
};

// The throttle factor `o` gives physical worker `slot` (1: none); an error names a malformed entry.
result<double> throttle_of(const elastic_options& o, int slot);

// The V virtual workers' data: shard v of ids[0, end) and stream (seed, step, v).
class virtual_shards {
 public:
  // Errors when a shard is too short for rows of T tokens (naming V and T).
  static result<virtual_shards> make(const std::vector<int>& ids, std::size_t end, int virtual_workers, int rows,
                                     int seq_len, std::uint64_t seed);
  // Virtual worker v's rows at `step`: rows * seq_len tokens and targets. Thread-safe.
  void batch(std::int64_t step, int v, std::vector<int>& tokens, std::vector<int>& targets) const;
  int size() const { return static_cast<int>(shards_.size()); }

 private:
  std::vector<nn::text_batcher> shards_;
  std::uint64_t seed_ = 0;
};

// A physical worker as the scheduler sees it: threads, and measured ms per virtual worker (<= 0:
// not measured yet).
struct worker_rate {
  int threads = 1;
  double ms = 0;
};
// How many of `virtual_workers` each worker runs, minimising the predicted step time
// max_k ceil(n_k / threads_k) x ms_k: the V smallest of all workers' finishing times (optimal, since
// each worker's is non-decreasing in its count); ties go to the lower index. Unmeasured workers count
// as the mean of the measured ones.
std::vector<int> balance_counts(const std::vector<worker_rate>& workers, int virtual_workers);
// The static baseline: in proportion to threads only.
std::vector<int> even_counts(const std::vector<worker_rate>& workers, int virtual_workers);

// The scheduler's side, owned by the trainer (a composite whose children are the physical workers).
class elastic_scheduler {
 public:
  using on_failure = std::function<void(const std::string&)>;
  elastic_scheduler(context& ctx, elastic_options o, on_failure fail);
  // Subscribes and asks for every physical worker.
  result<void> start();
  // Step `step` with these parameters (n floats, kept by the caller until done): the virtual workers' gradients, summed
  // in virtual-worker order and divided by V, land in `grads`; then done(loss), their mean loss.
  void run(std::int64_t step, const float* params, std::size_t n, float* grads, std::function<void(float)> done);
  // A physical worker ended (the trainer's on_child_failure): its virtual workers go to the others.
  void worker_ended(const std::string& path, const std::string& reason);

  struct report {
    int steps = 0;
    double step_ms_total = 0;  // dispatch to the last gradient, summed over steps
    int joins = 0, leaves = 0, redone = 0, reassignments = 0;
    std::string assignment;  // the last one, as logged
  };
  const report& stats() const { return stats_; }

 private:
  struct member {
    std::string name;  // p<k>
    int threads = 1;
    double ms = 0;       // moving average per virtual worker
    int idle_steps = 0;  // steps in a row without a virtual worker
  };
  static constexpr int probe_every = 10;
  void hello(const delivery& d);
  void gradient(const delivery& d);
  // Hands `vws` out among the members (admitting those that said hello) and publishes the work.
  void dispatch(const std::vector<int>& vws, bool whole_step);
  // Hands the whole step out once enough workers are present (else waits for them).
  void begin_step();
  // Fails the run unless a worker says hello within o_.wait_for_workers.
  void wait_for_workers();
  int slot_of(const std::string& path) const;

  context& ctx_;
  elastic_options o_;
  on_failure fail_;
  std::map<int, member> members_, joining_;  // by slot
  std::map<int, int> quiet_ends_;            // slot -> ends since its last gradient
  // The step in flight.
  std::int64_t step_ = -1;
  bool in_flight_ = false;         // run() called, done() not yet
  bool dispatched_ = false;        // the step has been handed out
  bool started_ = false;           // the first step has been handed out
  const float* params_ = nullptr;  // run()'s, valid until its done() (a redo sends them again)
  float* grads_ = nullptr;
  std::size_t n_ = 0;
  std::vector<std::optional<payload>> got_;  // per virtual worker, until folded
  std::vector<int> owner_;                   // per virtual worker: its slot this step
  int next_fold_ = 0;
  float loss_sum_ = 0;
  std::function<void(float)> done_;
  std::chrono::steady_clock::time_point started_at_;
  std::uint64_t wait_ = 0;  // the latest wait for workers (its id)
  report stats_;
};

// A physical worker: a leaf on a thread of its own with --worker-threads replicas.
class elastic_worker : public leaf {
 public:
  elastic_worker(std::shared_ptr<const gpt_options> opts, int slot);
  ~elastic_worker() override;
  void on_start(context& ctx) override;

 private:
  struct state;
  void work(context& ctx, const delivery& d);
  std::shared_ptr<const gpt_options> opts_;
  int slot_;
  std::unique_ptr<state> s_;
};

}  // namespace banyan::trainer
