#include "banyan/cpu/worker_group.hpp"

#include <omp.h>
#include <pthread.h>

#include <atomic>
#include <cassert>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace banyan::cpu {

namespace {

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

// out[i] = (in[0][i] + in[1][i] + ...) * scale for i in [b, e), summed left to right: the fixed order
// that makes the reduction bit-identical run to run.
void sum_into(float* out, const std::vector<const float*>& in, std::size_t b, std::size_t e, float scale) {
  const std::size_t k = in.size();
  for (std::size_t i = b; i < e; ++i) {
    float s = in[0][i];
    for (std::size_t j = 1; j < k; ++j) s += in[j][i];
    out[i] = s * scale;
  }
}

struct layer_range {
  std::size_t begin = 0, end = 0;
};

}  // namespace

struct worker_group::impl {
  struct worker {
    int index = 0, domain = 0;
    std::thread thread;
    std::unique_ptr<nn::backend> be;
    std::unique_ptr<replica> rep;
    std::vector<std::int64_t> have;  // per layer: the version of its parameters this replica holds
    std::int64_t step = 0;           // steps this worker has done since start
    int omp_threads = 0;
    double wait_ms = 0, aggregate_ms = 0, tail_ms = 0;
  };

  group_options options;
  nn::arena* master = nullptr;
  nn::adamw* opt = nullptr;
  replica_factory factory;
  int t0 = 0;  // optimizer steps before the group's first step

  std::vector<std::optional<layer_range>> ranges;  // by layer id; empty: the layer owns no parameters
  std::vector<int> backward_order;                 // layers with parameters, last layer first
  std::vector<std::unique_ptr<worker>> workers;

  // Servers. domain_out[d]: where domain d's sum is (its own buffer, its single worker's gradients, or
  // the node buffer when there is one domain).
  std::vector<std::vector<float>> domain_sum;
  std::vector<const float*> domain_out;
  std::vector<float> node_sum;
  std::vector<nn::arena*> domain_params;                 // share_params: the copy domain d reads (domain 0: master)
  std::unique_ptr<std::atomic<int>[]> domain_count;      // [layer * D + d]
  std::unique_ptr<std::atomic<int>[]> node_count;        // [layer]
  std::unique_ptr<std::atomic<std::int64_t>[]> version;  // [layer]: updates applied to its parameters
  std::atomic<int> layers_done{0};
  // The whole-step update (clipping or a cluster level): AdamW in chunks that every worker waiting for
  // its next forward takes a share of, so it is not one thread's serial tail. Elementwise, so the
  // bits do not depend on who updates which chunk. The last chunk done publishes every layer.
  static constexpr std::size_t update_chunk = 1 << 14;
  std::size_t update_chunks = 0;
  int update_t = 0;
  std::atomic<std::int64_t> update_step{-1};  // the step whose update is open; -1: none
  std::atomic<std::size_t> update_next{0}, update_done{0};
  // Bumped on every publish and every opened update: what a waiting forward sleeps on.
  std::atomic<std::uint64_t> events{0};

  // Commands from the driving thread.
  std::mutex mu;
  std::condition_variable cv_work, cv_done;
  std::uint64_t generation = 0;
  bool stopping = false;
  std::int64_t cmd_first = 0;
  int cmd_count = 0;
  int pending = 0;
  int built = 0;
  std::optional<error> build_error;
  std::vector<std::vector<float>> losses;  // [step - first][worker]
  std::vector<float> cluster_losses;       // [step - first], from the exchange
  std::int64_t steps_before_run = 0;       // the group's steps before the current run()
  run_stats stats;

  int N() const { return static_cast<int>(workers.size()); }
  int D() const { return static_cast<int>(options.where.domains.size()); }

  void compute_ranges() {
    int layers = 0;
    for (const auto& t : master->tensors()) layers = std::max(layers, t.layer + 1);
    ranges.assign(static_cast<std::size_t>(layers), std::nullopt);
    for (const auto& t : master->tensors()) {
      auto& r = ranges[static_cast<std::size_t>(t.layer)];
      if (!r) r = layer_range{t.offset, t.offset + t.numel};
      r->begin = std::min(r->begin, t.offset);
      r->end = std::max(r->end, t.offset + t.numel);
    }
    // Each layer's tensors must be one contiguous run (the models declare them so): a server updates
    // one range per layer.
    for (const auto& t : master->tensors()) {
      for (std::size_t l = 0; l < ranges.size(); ++l) {
        if (static_cast<int>(l) != t.layer && ranges[l]) {
          assert(!(t.offset >= ranges[l]->begin && t.offset < ranges[l]->end) && "a layer's parameters interleave");
        }
      }
    }
    for (int l = layers - 1; l >= 0; --l) {
      if (ranges[static_cast<std::size_t>(l)]) backward_order.push_back(l);
    }
  }

  bool has_params(int layer) const {
    return layer >= 0 && layer < static_cast<int>(ranges.size()) && ranges[static_cast<std::size_t>(layer)].has_value();
  }

  // Layer l's parameters were updated for step j (0-based since start): make them visible.
  void publish(int l, std::int64_t j) {
    const auto r = *ranges[static_cast<std::size_t>(l)];
    if (options.share_params) {
      for (std::size_t d = 1; d < domain_params.size(); ++d) {
        std::memcpy(domain_params[d]->base() + r.begin, master->base() + r.begin, (r.end - r.begin) * sizeof(float));
      }
    }
    version[l].store(j + 1, std::memory_order_release);
    wake();
  }

  void wake() {
    events.fetch_add(1, std::memory_order_acq_rel);
    events.notify_all();
  }

  // Takes chunks of the open whole-step update until none is left.
  void help_update() {
    const std::int64_t j = update_step.load(std::memory_order_acquire);
    if (j < 0) return;
    for (;;) {
      const std::size_t c = update_next.fetch_add(1);
      if (c >= update_chunks) return;
      const std::size_t b = c * update_chunk, e = std::min(node_sum.size(), b + update_chunk);
      opt->update_range(master->base(), node_sum.data(), b, e, options.optimizer, update_t);
      if (update_done.fetch_add(1) + 1 == update_chunks) {
        update_step.store(-1);
        opt->set_steps(update_t);
        for (int layer : backward_order) publish(layer, j);
        return;
      }
    }
  }

  // The node server for layer l of step j (runs on the thread of the last domain to finish it).
  void node_server(int l, std::int64_t j) {
    const auto r = *ranges[static_cast<std::size_t>(l)];
    const float inv = 1.0f / static_cast<float>(N());
    if (D() > 1) sum_into(node_sum.data(), domain_out, r.begin, r.end, inv);
    // Clipping and a cluster level both need the whole step's sum before any update.
    const bool whole_step = options.optimizer.grad_clip > 0.0f || static_cast<bool>(options.exchange);
    if (!whole_step) {
      opt->update_range(master->base(), node_sum.data(), r.begin, r.end, options.optimizer,
                        t0 + static_cast<int>(j) + 1);
      publish(l, j);
    }
    if (layers_done.fetch_add(1, std::memory_order_acq_rel) + 1 < static_cast<int>(backward_order.size())) return;
    layers_done.store(0, std::memory_order_relaxed);
    if (whole_step) {
      if (options.exchange) {
        // Every worker stored its loss before its backward began, so the node's mean is complete.
        const auto k = static_cast<std::size_t>(j - steps_before_run);
        double s = 0.0;
        for (float l : losses[k]) s += l;
        float loss = static_cast<float>(s / N());
        options.exchange(node_sum.data(), node_sum.size(), N(), cmd_first + static_cast<std::int64_t>(k), loss);
        cluster_losses[k] = loss;
      }
      // Clipping as adamw::step does it (torch's clip_grad_norm_), then the update, shared out.
      nn::backend& be = *workers.front()->be;  // cpu kernels on this thread (one OpenMP thread)
      if (options.optimizer.grad_clip > 0.0f) {
        const double norm = std::sqrt(be.sum_squares(node_sum.data(), node_sum.size()));
        const double coef = options.optimizer.grad_clip / (norm + 1e-6);
        if (coef < 1.0) be.scale(node_sum.data(), static_cast<float>(coef), node_sum.size());
      }
      update_t = t0 + static_cast<int>(j) + 1;
      update_done.store(0);
      update_next.store(0);
      update_step.store(j);
      wake();
      help_update();
    } else {
      opt->set_steps(t0 + static_cast<int>(j) + 1);
    }
  }

  // Worker w's gradient of layer l is final: the servers above it run if it was the last.
  void arrive(worker& w, int l) {
    const auto t_start = clock_type::now();
    const int d = w.domain;
    const auto& members = options.where.domains[static_cast<std::size_t>(d)];
    auto& dc = domain_count[static_cast<std::size_t>(l) * D() + d];
    if (dc.fetch_add(1, std::memory_order_acq_rel) + 1 < static_cast<int>(members.size())) return;
    dc.store(0, std::memory_order_relaxed);
    const auto r = *ranges[static_cast<std::size_t>(l)];
    if (D() == 1 || members.size() > 1) {
      std::vector<const float*> in;
      for (int m : members) in.push_back(workers[static_cast<std::size_t>(m)]->rep->grads().base());
      float* out = D() == 1 ? node_sum.data() : domain_sum[static_cast<std::size_t>(d)].data();
      sum_into(out, in, r.begin, r.end, D() == 1 ? 1.0f / static_cast<float>(N()) : 1.0f);
    }
    auto& nc = node_count[l];
    if (nc.fetch_add(1, std::memory_order_acq_rel) + 1 == D()) {
      nc.store(0, std::memory_order_relaxed);
      node_server(l, w.step);
    }
    w.aggregate_ms += ms_since(t_start);
  }

  // Before layer l's forward in worker w's step: wait for the layer's update of the previous step.
  void await(worker& w, int l) {
    std::int64_t v = version[l].load(std::memory_order_acquire);
    if (v < w.step) {
      const auto t_start = clock_type::now();
      for (;;) {
        const auto e = events.load(std::memory_order_acquire);
        help_update();
        v = version[l].load(std::memory_order_acquire);
        if (v >= w.step) break;
        events.wait(e, std::memory_order_acquire);
      }
      w.wait_ms += ms_since(t_start);
    }
    if (!options.share_params && w.have[static_cast<std::size_t>(l)] < v) {
      const auto r = *ranges[static_cast<std::size_t>(l)];
      std::memcpy(w.rep->params().base() + r.begin, master->base() + r.begin, (r.end - r.begin) * sizeof(float));
      w.have[static_cast<std::size_t>(l)] = v;
    }
  }

  // On worker w's own thread, once: names and binds it, builds its replica there. Counts it built;
  // the last one to be built finishes the group's start (buffers that need every replica).
  std::optional<error> setup(worker& w) {
    const auto& slot = options.where.workers[static_cast<std::size_t>(w.index)];
    const std::string name = "banyan-w" + std::to_string(w.index);  // for top -H and debuggers (15 chars max)
    pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
    std::optional<error> failed;
    if (options.bind && options.topo && options.topo->this_system()) {
      // Before the replica is built, so its memory is first touched on its own core's NUMA domain.
      if (auto bound = options.topo->bind_current_thread(slot.pus); !bound) failed = bound.error();
    }
    // threads = 1: omp_set_num_threads(1) sets this thread's OpenMP setting only, so every kernel of
    // this replica runs without a parallel team whatever the process-wide setting (OpenBLAS is
    // single-threaded in the cpu backend in any case: kernels.hpp).
    auto be = nn::make_backend({.name = "cpu", .threads = 1});
    if (!failed && !be) failed = be.error();
    if (!failed) {
      w.be = std::move(be).value();
      w.omp_threads = omp_get_max_threads();
      auto rep = factory(*w.be, w.index);
      if (!rep) {
        failed = std::move(rep).error();
      } else {
        w.rep = std::move(rep).value();
        w.have.assign(ranges.size(), -1);
        if (options.overlap) {
          w.rep->set_layer_hooks({.before_forward =
                                      [this, &w](int l) {
                                        if (has_params(l)) await(w, l);
                                      },
                                  .after_backward =
                                      [this, &w](int l) {
                                        if (has_params(l)) arrive(w, l);
                                      }});
        } else {
          w.rep->set_layer_hooks({.before_forward =
                                      [this, &w](int l) {
                                        if (has_params(l)) await(w, l);
                                      },
                                  .after_backward = {}});
        }
      }
    }
    std::unique_lock lock(mu);
    if (failed && !build_error) build_error = failed;
    if (++built == N() && !build_error) finish_start();
    cv_done.notify_all();
    return failed;
  }

  // The current run's steps on worker w's thread.
  void steps(worker& w, std::int64_t first, int count) {
    for (int k = 0; k < count; ++k) {
      const float loss = w.rep->forward(first + k);
      // Stored before the backward: the cluster exchange reads every worker's loss of this step.
      losses[static_cast<std::size_t>(k)][static_cast<std::size_t>(w.index)] = loss;
      w.rep->zero_grad();
      w.rep->backward();
      const auto t_end = clock_type::now();
      if (!options.overlap) {
        for (int l : backward_order) arrive(w, l);
      }
      w.tail_ms += ms_since(t_end);
      ++w.step;
    }
  }

  // Called once every replica is built (under mu).
  void finish_start() {
    const int D = this->D();
    // Server buffers and, with share_params, the per-domain copies: domain 0 reads the master, domain
    // d > 0 reads its first worker's parameters, which the node server keeps equal to the master.
    domain_sum.resize(static_cast<std::size_t>(D));
    domain_out.resize(static_cast<std::size_t>(D));
    for (int d = 0; d < D; ++d) {
      const auto& members = options.where.domains[static_cast<std::size_t>(d)];
      if (D == 1) {
        domain_out[d] = node_sum.data();
      } else if (members.size() == 1) {
        domain_out[d] = workers[static_cast<std::size_t>(members[0])]->rep->grads().base();
      } else {
        domain_sum[d].assign(master->numel(), 0.0f);
        domain_out[d] = domain_sum[d].data();
      }
      if (options.share_params) {
        nn::arena* copy = d == 0 ? master : &workers[static_cast<std::size_t>(members[0])]->rep->params();
        domain_params.push_back(copy);
        for (std::size_t i = d == 0 ? 0 : 1; i < members.size(); ++i) {
          workers[static_cast<std::size_t>(members[i])]->rep->params().share(*copy);
        }
      }
    }
  }

  // A thread the group owns: set up, then one command (a run's steps) per generation.
  void thread_main(worker& w) {
    setup(w);
    std::uint64_t seen = 0;
    for (;;) {
      std::int64_t first = 0;
      int count = 0;
      {
        std::unique_lock lock(mu);
        cv_work.wait(lock, [&] { return stopping || generation != seen; });
        if (stopping) return;
        seen = generation;
        first = cmd_first;
        count = cmd_count;
      }
      steps(w, first, count);
      std::unique_lock lock(mu);
      if (--pending == 0) cv_done.notify_all();
    }
  }
};

worker_group::worker_group(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

result<std::unique_ptr<worker_group>> worker_group::start(const group_options& options, nn::arena& master,
                                                          nn::adamw& opt, replica_factory factory) {
  if (options.where.workers.empty()) return error{errc::invalid_argument, "worker group: no workers placed"};
  auto p = std::make_unique<impl>();
  p->options = options;
  p->master = &master;
  p->opt = &opt;
  p->factory = std::move(factory);
  p->t0 = opt.steps();
  p->compute_ranges();
  const int D = static_cast<int>(options.where.domains.size());
  const std::size_t L = p->ranges.size();
  p->domain_count = std::make_unique<std::atomic<int>[]>(L * static_cast<std::size_t>(D));
  p->node_count = std::make_unique<std::atomic<int>[]>(L);
  p->version = std::make_unique<std::atomic<std::int64_t>[]>(L);
  for (std::size_t i = 0; i < L * static_cast<std::size_t>(D); ++i) p->domain_count[i].store(0);
  for (std::size_t i = 0; i < L; ++i) {
    p->node_count[i].store(0);
    p->version[i].store(0);
  }
  p->node_sum.assign(master.numel(), 0.0f);
  p->update_chunks = (master.numel() + impl::update_chunk - 1) / impl::update_chunk;
  for (const auto& slot : options.where.workers) {
    auto w = std::make_unique<impl::worker>();
    w->index = slot.worker;
    w->domain = slot.numa;
    p->workers.push_back(std::move(w));
  }
  impl* raw = p.get();
  std::unique_ptr<worker_group> group(new worker_group(std::move(p)));
  if (options.external_threads) return group;  // each worker's own thread calls attach()
  for (auto& w : raw->workers) {
    impl::worker* wp = w.get();
    w->thread = std::thread([raw, wp] { raw->thread_main(*wp); });
  }
  {
    std::unique_lock lock(raw->mu);
    raw->cv_done.wait(lock, [&] { return raw->built == raw->N(); });
    if (raw->build_error) return *raw->build_error;  // the destructor joins the threads
  }
  return group;
}

worker_group::~worker_group() {
  {
    std::unique_lock lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv_work.notify_all();
  for (auto& w : impl_->workers) {
    if (w->thread.joinable()) w->thread.join();
  }
}

std::vector<float> worker_group::run(std::int64_t first, int count) {
  impl& p = *impl_;
  assert(!p.options.external_threads && "external threads: begin(), work() on each, end()");
  if (count <= 0) return {};
  begin(first, count);
  {
    std::unique_lock lock(p.mu);
    p.pending = p.N();
    ++p.generation;
  }
  p.cv_work.notify_all();
  {
    std::unique_lock lock(p.mu);
    p.cv_done.wait(lock, [&] { return p.pending == 0; });
  }
  return end();
}

result<void> worker_group::attach(int worker) {
  impl& p = *impl_;
  assert(p.options.external_threads && worker >= 0 && worker < p.N());
  if (auto failed = p.setup(*p.workers[static_cast<std::size_t>(worker)])) return *failed;
  return {};
}

bool worker_group::ready() const {
  std::unique_lock lock(impl_->mu);
  return impl_->built == impl_->N() && !impl_->build_error;
}

void worker_group::begin(std::int64_t first, int count) {
  impl& p = *impl_;
  if (p.options.share_params) {
    for (std::size_t d = 1; d < p.domain_params.size(); ++d) {
      std::memcpy(p.domain_params[d]->base(), p.master->base(), p.master->bytes());
    }
  }
  p.losses.assign(static_cast<std::size_t>(count), std::vector<float>(static_cast<std::size_t>(p.N()), 0.0f));
  p.cluster_losses.assign(static_cast<std::size_t>(count), 0.0f);
  std::unique_lock lock(p.mu);
  for (auto& w : p.workers) std::fill(w->have.begin(), w->have.end(), -1);  // the master may have changed
  p.cmd_first = first;
  p.cmd_count = count;
}

void worker_group::work(int worker) {
  impl& p = *impl_;
  std::int64_t first = 0;
  int count = 0;
  {
    std::unique_lock lock(p.mu);
    first = p.cmd_first;
    count = p.cmd_count;
  }
  p.steps(*p.workers[static_cast<std::size_t>(worker)], first, count);
}

std::vector<float> worker_group::end() {
  impl& p = *impl_;
  const int count = p.cmd_count;
  // The last step's whole-step update ran on the thread that opened it (no worker waits for a next
  // forward to help), and it publishes before that worker finishes the step.
  assert(p.update_step.load() < 0);
  p.steps_before_run += count;
  std::vector<float> out = p.cluster_losses;
  if (!p.options.exchange) {
    out.clear();
    for (const auto& per_worker : p.losses) {
      double s = 0.0;
      for (float l : per_worker) s += l;
      out.push_back(static_cast<float>(s / p.N()));
    }
  }
  p.stats = {};
  for (const auto& w : p.workers) {
    p.stats.wait_ms += w->wait_ms;
    p.stats.aggregate_ms += w->aggregate_ms;
    p.stats.tail_ms += w->tail_ms;
  }
  return out;
}

std::vector<float> worker_group::last_gradients() const { return impl_->node_sum; }

int worker_group::size() const { return impl_->N(); }

const run_stats& worker_group::stats() const { return impl_->stats; }

std::vector<int> worker_group::worker_threads() const {
  std::vector<int> out;
  for (const auto& w : impl_->workers) out.push_back(w->omp_threads);
  return out;
}

memory_report worker_group::memory() const {
  const impl& p = *impl_;
  memory_report m;
  m.param_bytes = p.master->bytes();
  m.parameter_copies =
      1 + (p.options.share_params ? static_cast<std::size_t>(p.D() - 1) : static_cast<std::size_t>(p.N()));
  m.gradient_bytes = p.node_sum.size() * sizeof(float);
  for (const auto& d : p.domain_sum) m.gradient_bytes += d.size() * sizeof(float);
  for (const auto& w : p.workers) {
    m.gradient_bytes += w->rep->grads().bytes();
    m.activation_bytes += w->rep->activation_bytes();
  }
  m.optimizer_bytes = 2 * p.master->bytes();
  return m;
}

void weighted_mean(std::span<const float* const> means, std::span<const int> workers, std::size_t n, float* out) {
  int total = 0;
  for (int w : workers) total += w;
  const float inv = 1.0f / static_cast<float>(total);
  for (std::size_t i = 0; i < n; ++i) {
    float s = 0.0f;
    for (std::size_t k = 0; k < means.size(); ++k) s += means[k][i] * static_cast<float>(workers[k]);
    out[i] = s * inv;
  }
}

}  // namespace banyan::cpu
