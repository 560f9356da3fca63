#include "banyan/trainer/elastic.hpp"

#include "banyan/trainer/gpt_trainer.hpp"
#include "format.hpp"

#include <banyan/base/log.hpp>
#include <banyan/nn/error.hpp>
#include <banyan/nn/gpt.hpp>
#include <banyan/nn/rng.hpp>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <thread>

namespace banyan::trainer {

namespace {

constexpr std::uint32_t hello_magic = 0x4c484542;  // "BEHL" read as little-endian bytes
constexpr std::uint32_t work_magic = 0x4b574542;   // "BEWK"
constexpr std::uint32_t grad_magic = 0x52474542;   // "BEGR"

struct hello_header {
  std::uint32_t magic, threads;
};
struct work_header {
  std::uint32_t magic, pairs;
  std::int64_t step;
  std::uint64_t n;
};
struct grad_header {
  std::uint32_t magic, vw;
  std::int64_t step;
  float loss, ms;
  std::uint64_t n;
};
static_assert(sizeof(hello_header) == 8 && sizeof(work_header) == 24 && sizeof(grad_header) == 32);

payload bytes_payload(std::vector<std::byte>&& v) {
  auto bytes = std::make_shared<std::vector<std::byte>>(std::move(v));
  return payload::view_of(bytes, bytes->data(), bytes->size());
}

std::string what_of(const delivery& d) { return "`" + d.topic() + "` from `" + d.sender() + "`"; }

// The header of a message of topic `d`, checked: magic, and that `tail` bytes per unit follow it.
template <class H>
H read_header(const delivery& d, std::uint32_t magic, const char* kind) {
  auto b = d.bytes();
  if (b.size() < sizeof(H)) {
    throw std::runtime_error(what_of(d) + ": " + std::to_string(b.size()) + " bytes, shorter than the " +
                             std::to_string(sizeof(H)) + "-byte " + kind + " header");
  }
  H h;
  std::memcpy(&h, b.data(), sizeof h);
  if (h.magic != magic) throw std::runtime_error(what_of(d) + ": not an elastic " + std::string(kind) + " message");
  return h;
}

std::uint64_t stream_seed(std::uint64_t seed, std::int64_t step, int v) {
  // splitmix64 of (seed, step, v): independent streams per virtual worker and step.
  std::uint64_t z = seed * 0x9e3779b97f4a7c15ull + static_cast<std::uint64_t>(step) * 0xbf58476d1ce4e5b9ull +
                    static_cast<std::uint64_t>(v) * 0x94d049bb133111ebull + 1;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// "p0 v0-v3, p1 v4-v5": who runs which virtual workers.
std::string describe_assignment(const std::vector<int>& owner, const std::map<int, std::string>& names) {
  std::string out;
  for (const auto& [slot, name] : names) {
    std::string list;
    for (std::size_t v = 0; v < owner.size();) {
      if (owner[v] != slot) {
        ++v;
        continue;
      }
      std::size_t e = v;
      while (e + 1 < owner.size() && owner[e + 1] == slot) ++e;
      list += (list.empty() ? "v" : ",v") + std::to_string(v) + (e > v ? "-v" + std::to_string(e) : "");
      v = e + 1;
    }
    out += (out.empty() ? "" : ", ") + name + " " + (list.empty() ? "none" : list);
  }
  return out;
}

}  // namespace

result<double> throttle_of(const elastic_options& o, int slot) {
  double factor = 1.0;
  for (const auto& t : o.throttle) {
    const auto eq = t.find('=');
    const std::string name = t.substr(0, eq);
    double f = 0;
    try {
      std::size_t used = 0;
      if (eq == std::string::npos) throw std::invalid_argument("no =");
      f = std::stod(t.substr(eq + 1), &used);
      if (used != t.size() - eq - 1) throw std::invalid_argument("trailing text");
    } catch (const std::exception&) {
      return error{nn::errc::invalid_argument, "--throttle `" + t + "`: expected WORKER=FACTOR, e.g. p1=3"};
    }
    if (!(f >= 1.0) || !std::isfinite(f)) {
      return error{nn::errc::invalid_argument, "--throttle `" + t + "`: the factor must be a number >= 1"};
    }
    if (name.size() < 2 || name[0] != 'p' || name.find_first_not_of("0123456789", 1) != std::string::npos ||
        std::stoi(name.substr(1)) >= o.physical_workers) {
      return error{nn::errc::invalid_argument, "--throttle `" + t + "`: no physical worker `" + name + "` (p0..p" +
                                                   std::to_string(o.physical_workers - 1) + ")"};
    }
    if (std::stoi(name.substr(1)) == slot) factor = f;
  }
  return factor;
}

// --- data ------------------------------------------------------------------------------------------

result<virtual_shards> virtual_shards::make(const std::vector<int>& ids, std::size_t end, int V, int rows, int T,
                                            std::uint64_t seed) {
  virtual_shards s;
  s.seed_ = seed;
  for (int v = 0; v < V; ++v) {
    const std::size_t b = end * static_cast<std::size_t>(v) / V, e = end * static_cast<std::size_t>(v + 1) / V;
    if (e - b <= static_cast<std::size_t>(T) + 1) {
      return error{nn::errc::invalid_argument, "--virtual-workers " + std::to_string(V) +
                                                   ": each virtual worker's shard holds " + std::to_string(e - b) +
                                                   " characters, too few for --seq " + std::to_string(T)};
    }
    s.shards_.emplace_back(ids, b, e, rows, T);
  }
  return s;
}

void virtual_shards::batch(std::int64_t step, int v, std::vector<int>& tokens, std::vector<int>& targets) const {
  nn::rng r(stream_seed(seed_, step, v));
  shards_[static_cast<std::size_t>(v)].next(r, tokens, targets);
}

// --- assignment ------------------------------------------------------------------------------------

std::vector<int> balance_counts(const std::vector<worker_rate>& w, int V) {
  std::vector<int> n(w.size(), 0);
  if (w.empty()) return n;
  double sum = 0;
  int measured = 0;
  for (const auto& x : w)
    if (x.ms > 0) sum += x.ms, ++measured;
  const double fallback = measured ? sum / measured : 1.0;
  auto finish = [&](std::size_t k, int count) {
    const double ms = w[k].ms > 0 ? w[k].ms : fallback;
    const int t = std::max(1, w[k].threads);
    return std::ceil(static_cast<double>(count) / t) * ms;
  };
  for (int j = 0; j < V; ++j) {
    std::size_t best = 0;
    for (std::size_t k = 1; k < w.size(); ++k)
      if (finish(k, n[k] + 1) < finish(best, n[best] + 1)) best = k;
    ++n[best];
  }
  return n;
}

std::vector<int> even_counts(const std::vector<worker_rate>& w, int V) {
  std::vector<worker_rate> equal(w.size());
  for (std::size_t k = 0; k < w.size(); ++k) equal[k] = {w[k].threads, 1.0};
  return balance_counts(equal, V);
}

// --- the scheduler ---------------------------------------------------------------------------------

elastic_scheduler::elastic_scheduler(context& ctx, elastic_options o, on_failure fail)
    : ctx_(ctx), o_(std::move(o)), fail_(std::move(fail)) {
  if (o_.min_workers <= 0) o_.min_workers = o_.physical_workers;
}

result<void> elastic_scheduler::start() {
  if (auto ok = ctx_.subscribe(elastic_hello_topic, [this](const delivery& d) { hello(d); }); !ok) return ok.error();
  if (auto ok = ctx_.subscribe(elastic_grad_topic, [this](const delivery& d) { gradient(d); }); !ok) return ok.error();
  for (int k = 0; k < o_.physical_workers; ++k) {
    if (auto ok = ctx_.start_child("p" + std::to_string(k)); !ok) return ok.error();
  }
  log::info(ctx_.path(), format("elastic: %d virtual workers over up to %d physical workers (%s balance); "
                                "waiting for them to say hello",
                                o_.virtual_workers, o_.physical_workers, o_.balance.c_str()));
  return {};
}

int elastic_scheduler::slot_of(const std::string& path) const {
  const auto slash = path.rfind('/');
  const std::string name = path.substr(slash == std::string::npos ? 0 : slash + 1);
  if (name.size() < 2 || name[0] != 'p' || name.find_first_not_of("0123456789", 1) != std::string::npos) return -1;
  if (path.substr(0, slash) != ctx_.path()) return -1;
  const int slot = std::stoi(name.substr(1));
  return slot < o_.physical_workers ? slot : -1;
}

void elastic_scheduler::hello(const delivery& d) {
  const auto h = read_header<hello_header>(d, hello_magic, "hello");
  const int slot = slot_of(d.sender());
  if (slot < 0) throw std::runtime_error(what_of(d) + ": not a physical worker of `" + ctx_.path() + "`");
  if (h.threads == 0) throw std::runtime_error(what_of(d) + ": a worker of 0 threads");
  joining_[slot] = {"p" + std::to_string(slot), static_cast<int>(h.threads)};
  log::info(ctx_.path(), format("elastic: %s said hello (%u threads)", d.sender().c_str(), h.threads));
  if (!in_flight_) return;  // it takes work from the next step boundary
  if (!dispatched_) return begin_step();
  if (members_.empty()) {  // nobody was left: it takes the rest of this step now
    std::vector<int> missing;
    for (int v = next_fold_; v < o_.virtual_workers; ++v)
      if (!got_[static_cast<std::size_t>(v)]) missing.push_back(v);
    dispatch(missing, false);
  }
}

void elastic_scheduler::run(std::int64_t step, const float* params, std::size_t n, float* grads,
                            std::function<void(float)> done) {
  const int V = o_.virtual_workers;
  step_ = step;
  in_flight_ = true;
  dispatched_ = false;
  params_ = params;
  grads_ = grads;
  n_ = n;
  std::fill(grads, grads + n, 0.0f);
  got_.assign(static_cast<std::size_t>(V), std::nullopt);
  owner_.assign(static_cast<std::size_t>(V), -1);
  next_fold_ = 0;
  loss_sum_ = 0;
  done_ = std::move(done);
  begin_step();
}

void elastic_scheduler::begin_step() {
  // The first step waits for --min-workers hellos; later ones for one worker at least.
  const int present = static_cast<int>(members_.size() + joining_.size());
  if (present < (started_ ? 1 : o_.min_workers)) return wait_for_workers();
  started_ = true;
  dispatched_ = true;
  started_at_ = std::chrono::steady_clock::now();
  std::vector<int> all(static_cast<std::size_t>(o_.virtual_workers));
  std::iota(all.begin(), all.end(), 0);
  dispatch(all, true);
}

void elastic_scheduler::dispatch(const std::vector<int>& vws, bool whole_step) {
  for (auto& [slot, m] : joining_) {
    ++stats_.joins;
    log::info(ctx_.path(), format("elastic: %s joined at step %lld (%d threads)", m.name.c_str(),
                                  static_cast<long long>(step_), m.threads));
    members_[slot] = std::move(m);
  }
  joining_.clear();
  if (members_.empty()) return wait_for_workers();
  std::vector<worker_rate> rates;
  std::vector<int> slots;
  for (const auto& [slot, m] : members_) {
    rates.push_back({m.threads, m.ms});
    slots.push_back(slot);
  }
  const int count = static_cast<int>(vws.size());
  auto counts = o_.balance == "even" ? even_counts(rates, count) : balance_counts(rates, count);
  if (whole_step) {
    // A worker left idle is never measured again: every `probe_every` idle steps it gets one virtual
    // worker (from the busiest), so a worker that was slow only for a while is seen to be fast again.
    std::size_t k = 0;
    for (auto& [slot, m] : members_) {
      m.idle_steps = counts[k] == 0 ? m.idle_steps + 1 : 0;
      const auto busiest = static_cast<std::size_t>(std::max_element(counts.begin(), counts.end()) - counts.begin());
      if (m.idle_steps >= probe_every && counts[busiest] > 1) {
        --counts[busiest];
        ++counts[k];
        m.idle_steps = 0;
      }
      ++k;
    }
  }
  // Contiguous runs in slot order: the i-th of `vws` goes to the worker whose run holds i.
  std::vector<std::uint32_t> pairs;
  std::size_t next = 0;
  for (std::size_t k = 0; k < slots.size(); ++k) {
    for (int i = 0; i < counts[k]; ++i, ++next) {
      const int v = vws[next];
      owner_[static_cast<std::size_t>(v)] = slots[k];
      pairs.push_back(static_cast<std::uint32_t>(slots[k]));
      pairs.push_back(static_cast<std::uint32_t>(v));
    }
  }
  std::map<int, std::string> names;
  for (const auto& [slot, m] : members_) names[slot] = m.name;
  const std::string now = describe_assignment(owner_, names);
  if (!whole_step) {
    ++stats_.redone;
    log::info(ctx_.path(), format("elastic: step %lld: redoing %d virtual workers; assignment %s",
                                  static_cast<long long>(step_), count, now.c_str()));
  } else if (now != stats_.assignment) {
    ++stats_.reassignments;
    log::info(ctx_.path(), format("elastic: step %lld: assignment %s", static_cast<long long>(step_), now.c_str()));
  }
  stats_.assignment = now;
  // One message for every worker: the pairs, then the parameters (in a redo too, so a worker that
  // joined meanwhile has them).
  std::vector<std::byte> bytes(sizeof(work_header) + pairs.size() * 4 + n_ * sizeof(float));
  const work_header h{work_magic, static_cast<std::uint32_t>(pairs.size() / 2), step_, n_};
  std::memcpy(bytes.data(), &h, sizeof h);
  std::memcpy(bytes.data() + sizeof h, pairs.data(), pairs.size() * 4);
  std::memcpy(bytes.data() + sizeof h + pairs.size() * 4, params_, n_ * sizeof(float));
  if (auto sent = ctx_.publish(elastic_work_topic, bytes_payload(std::move(bytes)), scope::self()); !sent) {
    // A worker's node went just now: its end reaches worker_ended, which redoes its share.
    log::warning(ctx_.path(), "elastic: step " + std::to_string(step_) + ": " + sent.error().what());
  }
}

void elastic_scheduler::wait_for_workers() {
  const int want = started_ ? 1 : o_.min_workers;
  const std::string line =
      format("elastic: step %lld: %d physical workers present, %d needed; waiting up to %lld s for more",
             static_cast<long long>(step_), static_cast<int>(members_.size() + joining_.size()), want,
             static_cast<long long>(o_.wait_for_workers.count() / 1000));
  if (started_) log::warning(ctx_.path(), line);
  else log::info(ctx_.path(), line);  // the start: they are starting
  const std::uint64_t id = ++wait_;
  ctx_.after(o_.wait_for_workers, [this, id, want] {
    if (wait_ != id || !in_flight_ || (dispatched_ && !members_.empty())) return;
    fail_(format("elastic: fewer than %d physical workers for %lld s at step %lld", want,
                 static_cast<long long>(o_.wait_for_workers.count() / 1000), static_cast<long long>(step_)));
  });
}

void elastic_scheduler::gradient(const delivery& d) {
  const auto h = read_header<grad_header>(d, grad_magic, "gradient");
  const auto b = d.bytes();
  if (h.n != (b.size() - sizeof h) / sizeof(float) || sizeof h + h.n * sizeof(float) != b.size()) {
    throw std::runtime_error(what_of(d) + ": header says " + std::to_string(h.n) + " floats, but " +
                             std::to_string(b.size() - sizeof h) + " bytes follow it");
  }
  if (h.vw >= static_cast<std::uint32_t>(o_.virtual_workers)) {
    throw std::runtime_error(what_of(d) + ": virtual worker " + std::to_string(h.vw) + ", but there are " +
                             std::to_string(o_.virtual_workers));
  }
  const int slot = slot_of(d.sender());
  if (auto m = members_.find(slot); m != members_.end())
    m->second.ms = m->second.ms > 0 ? 0.5 * m->second.ms + 0.5 * h.ms : h.ms;
  quiet_ends_[slot] = 0;
  // A gradient of an earlier step, or one already folded (a redo raced a late original): same bits.
  if (!in_flight_ || h.step != step_ || static_cast<int>(h.vw) < next_fold_ || got_[h.vw]) return;
  if (h.n != n_) {
    throw std::runtime_error(what_of(d) + ": " + std::to_string(h.n) + " floats, but the model has " +
                             std::to_string(n_));
  }
  got_[h.vw] = d.data();
  // Fold what is contiguous from next_fold_: the sum is always in virtual-worker order.
  while (next_fold_ < o_.virtual_workers && got_[static_cast<std::size_t>(next_fold_)]) {
    auto& p = *got_[static_cast<std::size_t>(next_fold_)];
    grad_header g;
    std::memcpy(&g, p.bytes().data(), sizeof g);
    const auto* src = reinterpret_cast<const float*>(p.bytes().data() + sizeof g);
    for (std::size_t i = 0; i < n_; ++i) grads_[i] += src[i];
    loss_sum_ += g.loss;
    got_[static_cast<std::size_t>(next_fold_)].reset();
    ++next_fold_;
  }
  if (next_fold_ < o_.virtual_workers) return;
  const float inv = 1.0f / static_cast<float>(o_.virtual_workers);
  for (std::size_t i = 0; i < n_; ++i) grads_[i] *= inv;
  in_flight_ = false;
  ++stats_.steps;
  stats_.step_ms_total +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started_at_).count();
  auto done = std::move(done_);
  done(loss_sum_ * inv);
}

void elastic_scheduler::worker_ended(const std::string& path, const std::string& reason) {
  const int slot = slot_of(path);
  if (slot < 0) return;
  const std::string name = "p" + std::to_string(slot);
  joining_.erase(slot);
  if (members_.erase(slot)) ++stats_.leaves;
  log::warning(ctx_.path(), format("elastic: %s left at step %lld: %s", name.c_str(), static_cast<long long>(step_),
                                   reason.c_str()));
  // Ask for it again: the SDK starts it when its node is back. Not after 3 ends in a row without a
  // gradient (a worker that fails at start would fail forever).
  if (++quiet_ends_[slot] <= 3) {
    ctx_.post([this, name] {
      if (auto ok = ctx_.start_child(name); !ok)
        log::warning(ctx_.path(), "elastic: " + std::string(ok.error().what()));
    });
  } else {
    log::error(ctx_.path(), "elastic: " + name + " ended 3 times without a gradient; not asked for again");
  }
  if (!in_flight_) return;
  std::vector<int> missing;
  for (int v = next_fold_; v < o_.virtual_workers; ++v)
    if (owner_[static_cast<std::size_t>(v)] == slot && !got_[static_cast<std::size_t>(v)]) missing.push_back(v);
  if (!missing.empty()) dispatch(missing, false);
}

// --- a physical worker -----------------------------------------------------------------------------

struct elastic_worker::state {
  nn::char_corpus corpus;
  std::optional<virtual_shards> shards;
  nn::gpt_config cfg;
  int rows = 0;
  double throttle = 1.0;
  // Replica t runs on thread t (0: the component's own thread); each is built on its own thread.
  struct replica {
    std::unique_ptr<nn::backend> be;
    std::optional<nn::gpt> model;
  };
  std::vector<replica> replicas;
  std::vector<std::thread> threads;
  std::mutex mu;
  std::condition_variable cv, cv_done;
  std::uint64_t generation = 0;
  int remaining = 0;
  bool stopping = false;
  std::function<void(int)> job;

  // Runs job(t) on every thread t and waits for all.
  void run_all(std::function<void(int)> fn) {
    {
      std::lock_guard lock(mu);
      job = std::move(fn);
      remaining = static_cast<int>(replicas.size()) - 1;
      ++generation;
    }
    cv.notify_all();
    job(0);
    std::unique_lock lock(mu);
    cv_done.wait(lock, [&] { return remaining == 0; });
  }
  void loop(int t) {
    std::uint64_t seen = 0;
    for (;;) {
      std::function<void(int)> fn;
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return stopping || generation != seen; });
        if (stopping) return;
        seen = generation;
        fn = job;
      }
      fn(t);
      std::lock_guard lock(mu);
      if (--remaining == 0) cv_done.notify_all();
    }
  }
  std::optional<std::string> build(int t, const std::string& backend, int batch, int seq_len) {
    auto be = nn::make_backend({.name = backend, .threads = 1});  // one thread per virtual worker
    if (!be) return std::string(be.error().what());
    auto model = nn::gpt::create(cfg, batch, seq_len, **be);
    if (!model) return std::string(model.error().what());
    replicas[static_cast<std::size_t>(t)].be = std::move(be).value();
    replicas[static_cast<std::size_t>(t)].model.emplace(std::move(model).value());
    return std::nullopt;
  }
  ~state() {
    {
      std::lock_guard lock(mu);
      stopping = true;
    }
    cv.notify_all();
    for (auto& t : threads) t.join();
  }
};

elastic_worker::elastic_worker(std::shared_ptr<const gpt_options> opts, int slot)
    : opts_(std::move(opts)), slot_(slot) {}
elastic_worker::~elastic_worker() = default;

void elastic_worker::on_start(context& ctx) {
  const auto& o = *opts_;
  const auto& e = o.elastic;
  s_ = std::make_unique<state>();
  auto factor = throttle_of(e, slot_);
  if (!factor) throw std::runtime_error(factor.error().what());
  s_->throttle = *factor;
  auto corpus = nn::load_fortunes(o.data_dir);
  if (!corpus) throw std::runtime_error(corpus.error().what());
  s_->corpus = std::move(corpus).value();
  s_->rows = o.batch / e.virtual_workers;
  auto shards = virtual_shards::make(s_->corpus.ids, s_->corpus.ids.size() * 9 / 10, e.virtual_workers, s_->rows,
                                     o.seq_len, o.common.seed);
  if (!shards) throw std::runtime_error(shards.error().what());
  s_->shards.emplace(std::move(shards).value());
  s_->cfg = {.vocab_size = static_cast<int>(s_->corpus.vocab.size()),
             .max_seq_len = o.seq_len,
             .num_layers = o.layers,
             .num_heads = o.heads,
             .channels = o.channels};
  const int T = std::max(1, e.worker_threads);
  s_->replicas.resize(static_cast<std::size_t>(T));
  if (auto failed = s_->build(0, o.common.backend, s_->rows, o.seq_len)) throw std::runtime_error(*failed);
  // The other replicas are built on their own threads (OpenMP's setting is per thread).
  std::vector<std::optional<std::string>> built(static_cast<std::size_t>(T));
  for (int t = 1; t < T; ++t) {
    s_->threads.emplace_back([this, t] { s_->loop(t); });
  }
  s_->run_all([this, &o, &built](int t) {
    if (t > 0) built[static_cast<std::size_t>(t)] = s_->build(t, o.common.backend, s_->rows, o.seq_len);
  });
  for (auto& b : built)
    if (b) throw std::runtime_error(*b);
  if (auto ok = ctx.subscribe(elastic_work_topic, [this, &ctx](const delivery& d) { work(ctx, d); }); !ok)
    throw std::runtime_error(ok.error().what());
  std::vector<std::byte> bytes(sizeof(hello_header));
  const hello_header h{hello_magic, static_cast<std::uint32_t>(T)};
  std::memcpy(bytes.data(), &h, sizeof h);
  if (auto sent = ctx.publish(elastic_hello_topic, bytes_payload(std::move(bytes)), scope::parent()); !sent)
    throw std::runtime_error(sent.error().what());
}

void elastic_worker::work(context& ctx, const delivery& d) {
  const auto h = read_header<work_header>(d, work_magic, "work");
  const auto b = d.bytes();
  if (b.size() != sizeof h + h.pairs * 8ull + h.n * sizeof(float)) {
    throw std::runtime_error(what_of(d) + ": header says " + std::to_string(h.pairs) + " pairs and " +
                             std::to_string(h.n) + " floats, but " + std::to_string(b.size() - sizeof h) +
                             " bytes follow it");
  }
  std::vector<std::uint32_t> pairs(h.pairs * 2ull);
  std::memcpy(pairs.data(), b.data() + sizeof h, pairs.size() * 4);
  std::vector<int> mine;
  for (std::size_t i = 0; i < pairs.size(); i += 2)
    if (pairs[i] == static_cast<std::uint32_t>(slot_)) mine.push_back(static_cast<int>(pairs[i + 1]));
  if (mine.empty()) return;
  const int V = s_->shards->size();
  for (int v : mine)
    if (v < 0 || v >= V)
      throw std::runtime_error(what_of(d) + ": virtual worker " + std::to_string(v) + " of " + std::to_string(V));
  const auto* params = reinterpret_cast<const float*>(b.data() + sizeof h + pairs.size() * 4);
  const std::size_t want = s_->replicas[0].model->params().numel();
  if (h.n != want) {
    throw std::runtime_error(what_of(d) + ": " + std::to_string(h.n) + " parameters, but this worker's model has " +
                             std::to_string(want) + " (is every node running the same model options?)");
  }
  // Thread t runs mine[t], mine[t + T], ...; each result kept for publishing in order below.
  const int T = static_cast<int>(s_->replicas.size());
  struct out {
    std::vector<std::byte> bytes;
  };
  std::vector<out> outs(mine.size());
  const std::int64_t step = h.step;
  const int T_seq = opts_->seq_len;
  s_->run_all([&](int t) {
    auto& r = s_->replicas[static_cast<std::size_t>(t)];
    std::vector<int> tokens, targets;
    if (static_cast<std::size_t>(t) < mine.size()) r.be->upload(r.model->params().base(), params, want * sizeof(float));
    for (std::size_t i = static_cast<std::size_t>(t); i < mine.size(); i += static_cast<std::size_t>(T)) {
      const auto t0 = std::chrono::steady_clock::now();
      s_->shards->batch(step, mine[i], tokens, targets);
      const float loss = r.model->forward(tokens.data(), targets.data(), s_->rows, T_seq);
      r.model->zero_grad();
      r.model->backward();
      std::vector<std::byte> bytes(sizeof(grad_header) + want * sizeof(float));
      r.be->download(bytes.data() + sizeof(grad_header), r.model->grads().base(), want * sizeof(float));
      auto spent = std::chrono::steady_clock::now() - t0;
      if (s_->throttle > 1.0) {
        // The emulated slower device (--throttle): it takes `throttle` times as long.
        std::this_thread::sleep_for(std::chrono::duration_cast<std::chrono::nanoseconds>(spent * (s_->throttle - 1.0)));
        spent = std::chrono::steady_clock::now() - t0;
      }
      const grad_header g{grad_magic,
                          static_cast<std::uint32_t>(mine[i]),
                          step,
                          loss,
                          static_cast<float>(std::chrono::duration<double, std::milli>(spent).count()),
                          want};
      std::memcpy(bytes.data(), &g, sizeof g);
      outs[i].bytes = std::move(bytes);
    }
  });
  for (auto& o : outs) {
    if (auto sent = ctx.publish(elastic_grad_topic, bytes_payload(std::move(o.bytes)), scope::parent()); !sent)
      throw std::runtime_error(sent.error().what());
  }
}

}  // namespace banyan::trainer
