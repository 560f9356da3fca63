// Data-parallel training on per-core workers (ParaX): one worker thread per slot of a placement, bound
// to its core, with its own model replica and single-threaded kernels, and a two-level fixed-order
// gradient reduction that overlaps backward.
//
// The reduction tree is the placement's: a gradient server per NUMA domain and one node-level server.
// A worker publishes a layer's gradient the moment that layer's backward ends (nn::layer_hooks); the
// last worker of a domain to publish a layer runs that domain's server for the layer (sums its
// workers' gradients, in worker order), and the last domain runs the node server (sums the domains in
// domain order, scales by 1/N, and updates the master parameters of that layer with AdamW). Servers
// run on the worker thread that completes them, so no thread idles and no core is taken from compute;
// the sum order never depends on who arrives last, so results are bit-identical run to run.
// Gradients are read in place from the workers' arenas (no copy); a domain with one worker passes
// its worker's buffer up as is. With global-norm clipping (adamw_config::grad_clip > 0) the update
// needs every layer's sum, so it runs once the last layer is summed (summing still overlaps
// backward), in chunks shared by every worker that is waiting for its next forward.
//
// The next step's forward of layer l waits only for layer l's update: then a replica copies that
// layer's updated parameters from the master (or, with share_params, reads the one copy of its NUMA
// domain, which the node server writes, and copies nothing).
//
// Thread-safety: a worker_group is driven from one thread (run(), memory()). While run() is in
// progress the master parameters and the optimizer belong to the group; read them between runs.
#pragma once

#include "banyan/cpu/topology.hpp"

#include <banyan/nn/adamw.hpp>
#include <banyan/nn/arena.hpp>
#include <banyan/nn/backend.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace banyan::cpu {

// One worker's model, built on the worker's own thread (so its memory is local to its NUMA domain).
class replica {
 public:
  virtual ~replica() = default;
  virtual nn::arena& params() = 0;
  virtual nn::arena& grads() = 0;
  virtual void set_layer_hooks(nn::layer_hooks hooks) = 0;
  // Forward with loss on this worker's slice of global step `step`'s batch; returns its mean loss.
  virtual float forward(std::int64_t step) = 0;
  virtual void zero_grad() = 0;
  virtual void backward() = 0;
  virtual std::size_t activation_bytes() const = 0;
};

// Builds worker `worker`'s replica on `be` (a single-threaded cpu backend owned by the worker).
using replica_factory = std::function<result<std::unique_ptr<replica>>(nn::backend& be, int worker)>;

// The level above the node server, for data parallelism across nodes: called once
// per step, on the thread that completed the node's sum of the last layer, with this node's mean
// gradient (`n` floats, the master's layout), its worker count, the global step and the node's mean
// loss of the step; it must write the cluster's mean gradient over every node's workers into the
// same buffer, and the cluster's mean loss into `loss`, before returning (blocking until the other
// nodes' sums are in), the same bits on every node. The optimizer then updates the whole step, and
// run() returns the cluster's losses. (actors/trainer's data_parallel.hpp does it over sdk components.)
using cluster_exchange =
    std::function<void(float* node_mean, std::size_t n, int workers, std::int64_t step, float& loss)>;

// The cluster level's arithmetic, for every implementation of cluster_exchange: the nodes' mean
// gradients `means[k]` (n floats each), weighted by their worker counts, summed in the order given
// (never arrival order) and scaled by 1 / (sum of the counts), into `out`.
void weighted_mean(std::span<const float* const> means, std::span<const int> workers, std::size_t n, float* out);

struct group_options {
  placement where;
  std::optional<topology> topo;  // where `where` came from; workers are bound only on this machine's
  nn::adamw_config optimizer;
  bool share_params = false;  // one read-only parameter copy per NUMA domain instead of one per worker
  bool overlap = true;        // false: publish every layer only after the whole backward (to measure)
  bool bind = true;           // bind workers to their PUs (needs topo; never on a synthetic topology)
  cluster_exchange exchange;  // empty: this node is the whole cluster
  // The workers' threads belong to the caller (sdk components on threads of their own,
  // actors/trainer's worker leaves): start() starts none; see attach(), begin(), work() and end().
  bool external_threads = false;
};

struct memory_report {
  std::size_t param_bytes = 0;       // one copy of the parameters (arena, padding included)
  std::size_t parameter_copies = 0;  // master + per-worker replicas, or master + per-domain copies
  std::size_t gradient_bytes = 0;    // workers' gradients + server sums
  std::size_t activation_bytes = 0;  // all workers' activations (and their gradients)
  std::size_t optimizer_bytes = 0;   // AdamW moments (one set, on the node server)
  std::size_t total() const {
    return param_bytes * parameter_copies + gradient_bytes + activation_bytes + optimizer_bytes;
  }
};

struct run_stats {
  double wait_ms = 0.0;       // summed over workers: forward blocked on a layer's update (helping with it included)
  double aggregate_ms = 0.0;  // summed over workers: running domain and node servers
  double tail_ms = 0.0;       // summed over workers: from a worker's backward end to its last server's end
};

class worker_group {
 public:
  // Starts one thread per placement slot and builds the replicas there. `master` is the parameter
  // arena the node server updates (and the layout of every replica), `opt` its optimizer; both must
  // outlive the group. Fails when a replica cannot be built (the first worker's error) or, with
  // options.bind on a real topology, when a thread cannot be bound.
  static result<std::unique_ptr<worker_group>> start(const group_options& options, nn::arena& master, nn::adamw& opt,
                                                     replica_factory factory);
  ~worker_group();  // stops and joins the threads
  worker_group(const worker_group&) = delete;
  worker_group& operator=(const worker_group&) = delete;

  // Runs global steps [first, first + count) on every worker and returns each step's loss: the mean of
  // the workers' losses, in worker order (with an exchange: the cluster's). The master parameters
  // hold the result when it returns. Not with external_threads.
  std::vector<float> run(std::int64_t first, int count);

  // With external_threads, run() in the caller's hands. Once, on worker w's own thread: attach(w)
  // names and binds the thread (options.bind) and builds the replica there; the group is ready() once
  // every worker has attached without error. Then per run: begin(first, count) on the driving
  // thread; work(w) on every worker's thread, all at the same time (the servers wait for each
  // other's layers), each returning when its worker has done the steps; then end(), once every
  // work() has returned, gives what run() would have.
  result<void> attach(int worker);
  bool ready() const;
  void begin(std::int64_t first, int count);
  void work(int worker);
  std::vector<float> end();

  // The averaged gradient of the last step, as the optimizer received it (after clipping when it
  // clips): the master's layout. For checks against a single instance.
  std::vector<float> last_gradients() const;

  int size() const;
  memory_report memory() const;
  const run_stats& stats() const;  // since start
  // omp_get_max_threads() seen on each worker's thread (1: single-threaded kernels).
  std::vector<int> worker_threads() const;

  struct impl;

 private:
  explicit worker_group(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace banyan::cpu
