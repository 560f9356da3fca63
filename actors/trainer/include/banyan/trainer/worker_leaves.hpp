// The per-core workers as components of the app's tree:
//
//   /train_gpt/trainer              the node trainer (a composite): the node-level gradient server
//   /train_gpt/trainer/numa0        a composite per NUMA domain: its domain's gradient server
//   /train_gpt/trainer/numa0/w0     a worker leaf per core (or PU): its own thread, bound to its core
//
// Each worker leaf runs on a thread of its own (spec::own_thread), which it binds to its core and on
// which it builds its model replica (cpu::worker_group::attach), so the replica's memory is local to
// its NUMA domain and its kernels are single-threaded. The node trainer drives steps with two broker
// messages per run of steps: `work/steps` down to its workers, `work/done` back from each. Within a
// step the gradients stay in the group (cpu::worker_group): a worker publishes each layer's
// gradient the moment its backward ends, and the domain and node servers sum them in place, in a
// fixed order, on the thread of the worker that completes each sum, so no gradient byte is copied and
// no core is taken from compute. The composites are those servers' places in the tree: their
// supervisors, and what a deployment moves together.
//
// The worker leaves and their node trainer share one process: a deployment that puts a worker on
// another node than its trainer is refused at start with an error naming both.
#pragma once

#include <banyan/cpu/topology.hpp>
#include <banyan/cpu/worker_group.hpp>
#include <banyan/sdk/app.hpp>
#include <banyan/sdk/component.hpp>
#include <banyan/sdk/context.hpp>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace banyan::trainer {

inline constexpr const char* work_steps_topic = "work/steps";
inline constexpr const char* work_ready_topic = "work/ready";
inline constexpr const char* work_done_topic = "work/done";

// What a node trainer shares with its worker leaves in its process: the group, once it exists. One
// hub serves every incarnation of the trainer and its leaves (a restart builds them from the same
// spec), and an incarnation may end while the next one starts already.
class worker_hub {
 public:
  explicit worker_hub(int workers) : workers_(workers) {}
  int size() const { return workers_; }  // worker leaves in the tree
  void open(cpu::worker_group* group, std::string trainer_path);
  // The trainer's incarnation that opened `group` ends: no worker leaf starts using it any more, and
  // this returns once every use() of it has returned, so the group and what it uses may go. (A
  // worker leaf's thread outlives its trainer's object when an ancestor fails: it ends only with
  // its handler, a run of steps.) Blocks: cancel what a worker may wait for (the exchange) first.
  void close(cpu::worker_group* group);
  // The trainer failed at start, before it opened a group, and reported why: its worker leaves that
  // find no group end quietly instead of adding an error of their own. open() clears it.
  void give_up();
  // The group, or nullptr before the trainer opened it (or when the trainer runs on another node, or
  // gave up: *gave_up says which).
  cpu::worker_group* group(std::string* trainer_path = nullptr, bool* gave_up = nullptr) const;
  // On a worker leaf's thread: f(*group) if `group` is still open, and close(group) waits for it;
  // false, and nothing run, once its trainer has closed it.
  bool use(cpu::worker_group* group, const std::function<void(cpu::worker_group&)>& f);

 private:
  const int workers_;
  mutable std::mutex m_;
  std::condition_variable idle_;
  cpu::worker_group* group_ = nullptr;
  std::string trainer_path_;
  bool gave_up_ = false;
  std::multiset<const cpu::worker_group*> in_use_;  // one entry per use() in progress
};

class worker_leaf : public leaf {
 public:
  worker_leaf(std::shared_ptr<worker_hub> hub, int worker) : hub_(std::move(hub)), worker_(worker) {}
  void on_start(context& ctx) override;

 private:
  std::shared_ptr<worker_hub> hub_;
  int worker_;
};

// Adds to `trainer` a composite per NUMA domain of `where` (numa<d>) and in it a worker leaf per
// worker (w<i>, on its own thread), sharing `hub` (made with where.size() workers) with the trainer.
void add_worker_leaves(spec& trainer, const cpu::placement& where, const std::shared_ptr<worker_hub>& hub);

// The node trainer's side: counts its workers in (ready) and through each run of steps (done).
// Made in the trainer's on_start, after the group (started with external_threads) and before its
// children start; messages it does not expect are clear errors through `on_error`.
class worker_driver {
 public:
  worker_driver(context& ctx, std::shared_ptr<worker_hub> hub, cpu::worker_group& group, std::function<void()> on_ready,
                std::function<void(const error&)> on_error);
  // Closes the hub: waits for the workers' runs of steps on the group (worker_hub::close).
  ~worker_driver();
  // Runs steps [first, first + count) on every worker; `done` gets the losses (worker_group::end()).
  void run(std::int64_t first, int count, std::function<void(std::vector<float>)> done);

 private:
  void ready(const delivery& d);
  void finished(const delivery& d);

  context& ctx_;
  std::shared_ptr<worker_hub> hub_;
  cpu::worker_group& group_;
  std::function<void()> on_ready_;
  std::function<void(const error&)> on_error_;
  std::function<void(std::vector<float>)> done_;
  std::vector<bool> ready_, finished_;
  int ready_count_ = 0, finished_count_ = 0;
};

}  // namespace banyan::trainer
