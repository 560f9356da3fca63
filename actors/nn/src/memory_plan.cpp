#include "banyan/nn/memory_plan.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <string>

namespace banyan::nn {

const char* to_string(memory_policy p) {
  switch (p) {
    case memory_policy::keep: return "keep";
    case memory_policy::recompute: return "recompute";
    case memory_policy::swap: return "swap";
    case memory_policy::greedy: return "greedy";
    case memory_policy::knapsack: return "knapsack";
  }
  return "?";
}

const char* to_string(memory_decision d) {
  switch (d) {
    case memory_decision::keep: return "keep";
    case memory_decision::swap: return "swap";
    case memory_decision::recompute: return "recompute";
  }
  return "?";
}

result<memory_policy> parse_memory_policy(const std::string& name) {
  for (auto p : {memory_policy::keep, memory_policy::recompute, memory_policy::swap, memory_policy::greedy,
                 memory_policy::knapsack}) {
    if (name == to_string(p)) return p;
  }
  return error{errc::invalid_argument,
               "memory policy `" + name + "`: unknown (expected keep, recompute, swap, greedy or knapsack)"};
}

std::string format_bytes(std::size_t bytes) {
  char buf[32];
  const double b = static_cast<double>(bytes);
  if (bytes >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1ull << 30));
  else if (bytes >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1ull << 20));
  else if (bytes >= (1ull << 10)) std::snprintf(buf, sizeof buf, "%.1f KiB", b / (1ull << 10));
  else std::snprintf(buf, sizeof buf, "%zu B", bytes);
  return buf;
}

result<void> memory_graph::validate() const {
  const int T = static_cast<int>(tensors.size()), n = static_cast<int>(ops.size());
  auto bad = [](const std::string& what) { return error{errc::invalid_argument, "memory graph: " + what}; };
  for (int t = 0; t < T; ++t) {
    const int p = tensors[t].producer;
    if (p < 0 || p >= n) return bad("tensor `" + tensors[t].name + "` has producer " + std::to_string(p));
    const auto& outs = ops[p].outputs;
    if (std::find(outs.begin(), outs.end(), t) == outs.end()) {
      return bad("tensor `" + tensors[t].name + "` is not an output of its producer `" + ops[p].name + "`");
    }
  }
  for (int i = 0; i < n; ++i) {
    for (const auto* list : {&ops[i].inputs, &ops[i].outputs, &ops[i].saved_reads, &ops[i].grads}) {
      for (int t : *list) {
        if (t < 0 || t >= T) return bad("op `" + ops[i].name + "` names tensor " + std::to_string(t));
      }
    }
    for (int t : ops[i].outputs) {
      if (tensors[t].producer != i)
        return bad("op `" + ops[i].name + "` writes `" + tensors[t].name + "` of another op");
    }
    for (int t : ops[i].inputs) {
      if (tensors[t].producer >= i)
        return bad("op `" + ops[i].name + "` reads `" + tensors[t].name + "` before it is made");
    }
  }
  return {};
}

namespace {

constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
constexpr double infinite = std::numeric_limits<double>::infinity();

std::size_t round_up(std::size_t x, std::size_t a) { return (x + a - 1) / a * a; }

// First fit in one pool: the lowest offset where `size` bytes fit between live blocks.
class first_fit {
 public:
  std::size_t take(std::size_t size) {
    std::size_t at = 0;
    for (const auto& [off, sz] : live_) {
      if (off >= at + size) break;
      at = off + sz;
    }
    live_.emplace(at, size);
    peak_ = std::max(peak_, at + size);
    return at;
  }
  void give(std::size_t offset) { live_.erase(offset); }
  std::size_t peak() const { return peak_; }

 private:
  std::map<std::size_t, std::size_t> live_;  // offset -> size
  std::size_t peak_ = 0;
};

// What the compiler and the estimates read about the graph, once.
struct facts {
  int n = 0, T = 0;
  std::vector<int> last_fwd;                    // per tensor: op index of its last forward reader (or producer)
  std::vector<bool> saved;                      // read by some backward
  std::vector<int> bwd_first, bwd_last;         // positions of its first and last backward reader
  std::vector<int> grad_first, grad_last;       // positions of the first and last backward touching its gradient
  std::vector<std::vector<int>> saved_outputs;  // per op
  std::vector<std::size_t> size;                // aligned bytes

  facts(const memory_graph& g, std::size_t alignment) {
    n = static_cast<int>(g.ops.size());
    T = static_cast<int>(g.tensors.size());
    last_fwd.resize(T);
    saved.assign(T, false);
    bwd_first.assign(T, std::numeric_limits<int>::max());
    bwd_last.assign(T, -1);
    grad_first = bwd_first;
    grad_last = bwd_last;
    saved_outputs.resize(n);
    size.resize(T);
    for (int t = 0; t < T; ++t) {
      last_fwd[t] = g.tensors[t].producer;
      size[t] = round_up(std::max<std::size_t>(g.tensors[t].bytes, 1), alignment);
    }
    for (int i = 0; i < n; ++i) {
      for (int t : g.ops[i].inputs) last_fwd[t] = std::max(last_fwd[t], i);
      const int q = pos_bwd(i);
      for (int t : g.ops[i].saved_reads) {
        saved[t] = true;
        bwd_first[t] = std::min(bwd_first[t], q);
        bwd_last[t] = std::max(bwd_last[t], q);
      }
      for (int t : g.ops[i].grads) {
        grad_first[t] = std::min(grad_first[t], q);
        grad_last[t] = std::max(grad_last[t], q);
      }
    }
    for (int i = 0; i < n; ++i) {
      for (int t : g.ops[i].outputs) {
        if (saved[t]) saved_outputs[i].push_back(t);
      }
    }
  }
  int pos_bwd(int op) const { return 2 * n - 1 - op; }
  // A swapped tensor's device bytes are free before this position; its prefetch starts at
  // prefetch_pos. A swap is worth compiling only when the first comes before the second.
  int offload_due(int t, const planner_options& o, int producer) const {
    return std::max(last_fwd[t] + 1, producer + 1 + o.offload_lag);
  }
  int prefetch_pos(int t, const planner_options& o) const { return bwd_first[t] - o.prefetch_lead; }
  bool swappable(int op, const planner_options& o) const {
    if (saved_outputs[op].empty()) return false;
    for (int t : saved_outputs[op]) {
      if (prefetch_pos(t, o) <= offload_due(t, o, op)) return false;
    }
    return true;
  }
  std::size_t saved_bytes(int op) const {
    std::size_t b = 0;
    for (int t : saved_outputs[op]) b += size[t];
    return b;
  }
};

class compiler {
 public:
  compiler(const memory_graph& g, const facts& f, const planner_options& o, std::vector<memory_decision> d)
      : g_(g), f_(f), o_(o), dec_(std::move(d)) {
    off_.assign(f.T, none);
    goff_.assign(f.T, none);
    pending_prefetch_.assign(f.T, false);
    on_host_.assign(f.T, false);
    due_.assign(f.T, -1);
    for (int i = 0; i < f.n; ++i) {
      if (dec_[i] == memory_decision::swap && !f.swappable(i, o)) dec_[i] = memory_decision::keep;
      if (f.saved_outputs[i].empty()) dec_[i] = memory_decision::keep;
    }
  }

  memory_plan run() {
    const int n = f_.n;
    for (int i = 0; i < n; ++i) {
      due_waits(i);
      for (int t : g_.ops[i].outputs) alloc(t);
      emit(memory_instr::kind::forward, i);
      if (dec_[i] == memory_decision::swap) {
        for (int t : f_.saved_outputs[i]) {
          emit(memory_instr::kind::offload, t);
          on_host_[t] = true;
          due_[t] = f_.offload_due(t, o_, i);
        }
      }
      auto done_with = [&](int t) {
        if (f_.last_fwd[t] != i || off_[t] == none || g_.tensors[t].result) return;
        if (!f_.saved[t] || dec_[g_.tensors[t].producer] == memory_decision::recompute) free(t);
      };
      for (int t : g_.ops[i].inputs) done_with(t);
      for (int t : g_.ops[i].outputs) done_with(t);
    }
    memory_plan p;
    p.backward_begin = prog_.size();
    for (int t = 0; t < f_.T; ++t) {
      if (g_.tensors[t].result && off_[t] != none) free(t);
    }
    for (int k = 0; k < n; ++k) {
      const int j = n - 1 - k, q = n + k;
      due_waits(q);
      for (int t = 0; t < f_.T; ++t) {
        if (on_host_[t] && off_[t] == none && f_.prefetch_pos(t, o_) <= q && f_.bwd_last[t] >= q) prefetch(t);
      }
      for (int t : g_.ops[j].saved_reads) ensure(t, q);
      for (int t : g_.ops[j].grads) {
        if (goff_[t] == none) {
          goff_[t] = pool_.take(f_.size[t]);
          emit(memory_instr::kind::alloc_grad, t, goff_[t]);
        }
      }
      emit(memory_instr::kind::backward, j);
      for (int t : g_.ops[j].saved_reads) {
        if (f_.bwd_last[t] == q && off_[t] != none) free(t);
      }
      for (int t : g_.ops[j].grads) {
        if (f_.grad_last[t] == q && goff_[t] != none) {
          pool_.give(goff_[t]);
          goff_[t] = none;
          emit(memory_instr::kind::free_grad, t);
        }
      }
    }
    for (int t = 0; t < f_.T; ++t) {
      assert(off_[t] == none && goff_[t] == none && "memory plan: a tensor outlives the step");
    }
    p.decisions = dec_;
    p.program = std::move(prog_);
    p.peak_bytes = pool_.peak();
    p.host_offset.assign(f_.T, none);
    for (int i = 0; i < n; ++i) {
      if (dec_[i] != memory_decision::swap) continue;
      for (int t : f_.saved_outputs[i]) {
        p.host_offset[t] = p.host_bytes;
        p.host_bytes += f_.size[t];
      }
    }
    return p;
  }

 private:
  void emit(memory_instr::kind k, int id, std::size_t offset = 0) { prog_.push_back({k, id, offset}); }
  void alloc(int t) {
    assert(off_[t] == none);
    off_[t] = pool_.take(f_.size[t]);
    emit(memory_instr::kind::alloc, t, off_[t]);
  }
  void free(int t) {
    pool_.give(off_[t]);
    off_[t] = none;
    emit(memory_instr::kind::free, t);
  }
  void prefetch(int t) {
    off_[t] = pool_.take(f_.size[t]);
    pending_prefetch_[t] = true;
    emit(memory_instr::kind::prefetch, t, off_[t]);
  }
  void due_waits(int pos) {
    for (int t = 0; t < f_.T; ++t) {
      if (due_[t] != -1 && due_[t] <= pos) {
        emit(memory_instr::kind::offload_wait, t);
        due_[t] = -1;
        free(t);
      }
    }
  }
  // Makes activation t resident before a backward (or a recompute) at position q reads it.
  void ensure(int t, int q) {
    if (off_[t] != none) {
      if (pending_prefetch_[t]) {
        emit(memory_instr::kind::prefetch_wait, t);
        pending_prefetch_[t] = false;
      }
      return;
    }
    if (on_host_[t]) {
      prefetch(t);
      emit(memory_instr::kind::prefetch_wait, t);
      pending_prefetch_[t] = false;
      return;
    }
    rematerialise(g_.tensors[t].producer, t, q);
  }
  bool dead_after(int t, int q) const { return !f_.saved[t] || f_.bwd_last[t] < q; }
  // Reruns op p's forward for `want`; its other outputs stay while a later backward reads them.
  void rematerialise(int p, int want, int q) {
    const auto& op = g_.ops[p];
    for (int u : op.inputs) ensure(u, q);
    for (int o : op.outputs) {
      if (off_[o] == none) {
        alloc(o);
        continue;
      }
      if (pending_prefetch_[o]) {  // about to be overwritten: the copy must land first
        emit(memory_instr::kind::prefetch_wait, o);
        pending_prefetch_[o] = false;
      }
      if (due_[o] != -1) {  // still being offloaded: keep the bytes, they are needed now
        emit(memory_instr::kind::offload_wait, o);
        due_[o] = -1;
      }
    }
    emit(memory_instr::kind::recompute, p);
    for (int u : op.inputs) {
      if (off_[u] != none && dead_after(u, q)) free(u);
    }
    for (int o : op.outputs) {
      if (o != want && off_[o] != none && dead_after(o, q)) free(o);
    }
  }

  const memory_graph& g_;
  const facts& f_;
  const planner_options& o_;
  std::vector<memory_decision> dec_;
  std::vector<std::size_t> off_, goff_;
  std::vector<bool> pending_prefetch_, on_host_;
  std::vector<int> due_;
  std::vector<memory_instr> prog_;
  first_fit pool_;
};

double simulate(const memory_graph& g, const memory_costs& c, const memory_plan& p) {
  double now = 0.0, d2h_free = 0.0, h2d_free = 0.0;
  std::vector<double> done(g.tensors.size(), 0.0);
  for (const auto& in : p.program) {
    const double bytes =
        static_cast<double>(in.id >= 0 && in.id < static_cast<int>(g.tensors.size()) ? g.tensors[in.id].bytes : 0);
    switch (in.what) {
      case memory_instr::kind::forward:
      case memory_instr::kind::recompute: now += c.forward_ms[in.id]; break;
      case memory_instr::kind::backward: now += c.backward_ms[in.id]; break;
      case memory_instr::kind::offload:
        d2h_free = std::max(now, d2h_free) + c.copy_latency_ms + bytes / c.d2h_bytes_per_ms;
        done[in.id] = d2h_free;
        break;
      case memory_instr::kind::prefetch:
        h2d_free = std::max(now, h2d_free) + c.copy_latency_ms + bytes / c.h2d_bytes_per_ms;
        done[in.id] = h2d_free;
        break;
      case memory_instr::kind::offload_wait:
      case memory_instr::kind::prefetch_wait: now = std::max(now, done[in.id]); break;
      case memory_instr::kind::alloc:
      case memory_instr::kind::alloc_grad:
      case memory_instr::kind::free:
      case memory_instr::kind::free_grad: break;
    }
  }
  return now;
}

// The planner's per-op estimates of a decision's extra time (the knapsack's values).
struct estimates {
  std::vector<double> recompute_ms, swap_ms;

  estimates(const memory_graph& g, const memory_costs& c, const facts& f, const planner_options& o) {
    recompute_ms.assign(f.n, infinite);
    swap_ms.assign(f.n, infinite);
    for (int i = 0; i < f.n; ++i) {
      if (f.saved_outputs[i].empty()) continue;
      recompute_ms[i] = rerun_ms(g, c, f, i);
      if (!f.swappable(i, o)) continue;
      // Transfers hide behind the compute between their start and the wait.
      double exposed = 0.0;
      for (int t : f.saved_outputs[i]) {
        const double out = c.copy_latency_ms + static_cast<double>(g.tensors[t].bytes) / c.d2h_bytes_per_ms;
        const double in = c.copy_latency_ms + static_cast<double>(g.tensors[t].bytes) / c.h2d_bytes_per_ms;
        double fwd_window = 0.0, bwd_window = 0.0;
        for (int k = i + 1; k < std::min(f.offload_due(t, o, i), f.n); ++k) fwd_window += c.forward_ms[k];
        for (int pos = f.prefetch_pos(t, o); pos < f.bwd_first[t]; ++pos) {
          if (pos >= f.n) bwd_window += c.backward_ms[2 * f.n - 1 - pos];
          else bwd_window += c.forward_ms[pos];
        }
        exposed += std::max(0.0, out - fwd_window) + std::max(0.0, in - bwd_window);
      }
      swap_ms[i] = exposed;
    }
  }
  // op's forward, plus the forwards that remake inputs no backward keeps (a residual's branch).
  static double rerun_ms(const memory_graph& g, const memory_costs& c, const facts& f, int op) {
    double ms = c.forward_ms[op];
    for (int u : g.ops[op].inputs) {
      if (!f.saved[u]) ms += rerun_ms(g, c, f, g.tensors[u].producer);
    }
    return ms;
  }
  memory_decision cheaper(int op) const {
    return swap_ms[op] < recompute_ms[op] ? memory_decision::swap : memory_decision::recompute;
  }
  double cost(int op) const { return std::min(swap_ms[op], recompute_ms[op]); }
};

memory_plan finish(const memory_graph& g, const memory_costs& c, const facts& f, const estimates& e, memory_plan p,
                   memory_policy policy, std::size_t budget) {
  p.policy = policy;
  p.budget = budget;
  p.extra_ms.assign(f.n, 0.0);
  p.swap_ms = e.swap_ms;
  p.recompute_ms = e.recompute_ms;
  for (int i = 0; i < f.n; ++i) {
    if (p.decisions[i] == memory_decision::swap) p.extra_ms[i] = e.swap_ms[i];
    if (p.decisions[i] == memory_decision::recompute) p.extra_ms[i] = e.recompute_ms[i];
  }
  for (int i = 0; i < f.n; ++i) p.compute_ms += c.forward_ms[i] + c.backward_ms[i];
  p.predicted_ms = simulate(g, c, p);
  return p;
}

// Ops after which the forward can restart from this op's saved outputs alone: every tensor made up
// to here and read after it is a saved output of this op (a residual stream's sum, not a layernorm
// whose input a later residual still reads). Only such ops end a recompute segment.
std::vector<int> cut_ops(const memory_graph& g, const facts& f) {
  std::vector<int> cuts;
  for (int i = 0; i < f.n; ++i) {
    if (f.saved_outputs[i].empty()) continue;
    bool cut = true;
    for (int t = 0; t < f.T && cut; ++t) {
      const int p = g.tensors[t].producer;
      if (p <= i && f.last_fwd[t] > i && (p != i || !f.saved[t])) cut = false;
    }
    if (cut) cuts.push_back(i);
  }
  return cuts;
}

// Chen et al.'s sqrt(n) checkpointing: of the m ops that can end a segment, keep every
// round(sqrt(m))-th; recompute every other saved activation, a segment at a time.
std::vector<memory_decision> sqrt_checkpoints(const memory_graph& g, const facts& f) {
  const std::vector<int> items = cut_ops(g, f);
  const int m = static_cast<int>(items.size());
  const int k = std::max(1, static_cast<int>(std::lround(std::sqrt(static_cast<double>(m)))));
  std::vector<memory_decision> d(f.n, memory_decision::keep);
  for (int i = 0; i < f.n; ++i) {
    if (!f.saved_outputs[i].empty()) d[i] = memory_decision::recompute;
  }
  for (int idx = k - 1; idx < m; idx += k) d[items[idx]] = memory_decision::keep;
  return d;
}

// Exact 0/1 knapsack: the kept set of most value (predicted ms saved) within `pages`.
std::vector<memory_decision> knapsack(const facts& f, const estimates& e, std::size_t page, long pages) {
  std::vector<int> items;
  for (int i = 0; i < f.n; ++i) {
    if (!f.saved_outputs[i].empty()) items.push_back(i);
  }
  std::vector<memory_decision> d(f.n, memory_decision::keep);
  for (int i : items) d[i] = e.cheaper(i);
  if (pages < 0) return d;
  const std::size_t K = static_cast<std::size_t>(pages), m = items.size();
  // Value: the predicted ms a keep saves, plus a tie-break per byte, so room left over keeps layers
  // whose copies would hide anyway (fewer copies on the bus).
  const double per_byte = 1e-12;
  std::vector<double> best(K + 1, 0.0);
  std::vector<std::vector<bool>> took(m, std::vector<bool>(K + 1, false));
  for (std::size_t a = 0; a < m; ++a) {
    const int i = items[a];
    const std::size_t w = (f.saved_bytes(i) + page - 1) / page;
    const double v = (std::isfinite(e.cost(i)) ? e.cost(i) : 1e12) + per_byte * static_cast<double>(f.saved_bytes(i));
    for (std::size_t k = K + 1; k-- > w;) {
      if (best[k - w] + v > best[k]) {
        best[k] = best[k - w] + v;
        took[a][k] = true;
      }
    }
  }
  std::size_t k = K;
  for (std::size_t a = m; a-- > 0;) {
    if (took[a][k]) {
      d[items[a]] = memory_decision::keep;
      k -= (f.saved_bytes(items[a]) + page - 1) / page;
    }
  }
  return d;
}

error too_small(std::size_t budget, std::size_t needed, memory_policy policy, std::size_t least) {
  return error{errc::invalid_argument, "memory budget " + format_bytes(budget) + " (" + std::to_string(budget) +
                                           " bytes): below the " + format_bytes(needed) + " (" +
                                           std::to_string(needed) + " bytes) the " + to_string(policy) +
                                           " plan needs; a leaner policy fits (the "
                                           "least any plan needs is " +
                                           format_bytes(least) + ")"};
}

}  // namespace

memory_plan compile_plan(const memory_graph& g, const memory_costs& c, std::vector<memory_decision> decisions,
                         const planner_options& o) {
  assert(decisions.size() == g.ops.size());
  const facts f(g, o.alignment);
  const estimates e(g, c, f, o);
  return finish(g, c, f, e, compiler(g, f, o, std::move(decisions)).run(), memory_policy::keep, 0);
}

std::size_t minimum_memory(const memory_graph& g, const memory_costs& c, const planner_options& o) {
  const facts f(g, o.alignment);
  const estimates e(g, c, f, o);
  std::size_t least = none;
  auto consider = [&](std::vector<memory_decision> d) {
    least = std::min(least, compiler(g, f, o, std::move(d)).run().peak_bytes);
  };
  consider(sqrt_checkpoints(g, f));
  consider(std::vector<memory_decision>(f.n, memory_decision::swap));
  consider(knapsack(f, e, 1, -1));
  return least;
}

result<memory_plan> plan_memory(const memory_graph& g, const memory_costs& c, std::size_t budget, memory_policy policy,
                                const planner_options& o) {
  if (auto v = g.validate(); !v) return v.error();
  if (c.forward_ms.size() != g.ops.size() || c.backward_ms.size() != g.ops.size()) {
    return error{errc::invalid_argument, "memory costs: " + std::to_string(c.forward_ms.size()) + " forward and " +
                                             std::to_string(c.backward_ms.size()) + " backward times for " +
                                             std::to_string(g.ops.size()) + " ops"};
  }
  if (!(c.d2h_bytes_per_ms > 0) || !(c.h2d_bytes_per_ms > 0)) {
    return error{errc::invalid_argument, "memory costs: copy bandwidths must be positive"};
  }
  const facts f(g, o.alignment);
  const estimates e(g, c, f, o);
  auto compile = [&](std::vector<memory_decision> d) { return compiler(g, f, o, std::move(d)).run(); };
  auto fits = [&](const memory_plan& p) -> result<memory_plan> {
    if (p.peak_bytes > budget) {
      const std::size_t least = minimum_memory(g, c, o);
      if (budget < least) {
        return error{errc::invalid_argument, "memory budget " + format_bytes(budget) + " (" + std::to_string(budget) +
                                                 " bytes): below the minimum " + format_bytes(least) + " (" +
                                                 std::to_string(least) +
                                                 " bytes) that the leanest plan (full recompute or swap) needs"};
      }
      return too_small(budget, p.peak_bytes, policy, least);
    }
    return finish(g, c, f, e, p, policy, budget);
  };
  switch (policy) {
    case memory_policy::keep: return fits(compile(std::vector<memory_decision>(f.n, memory_decision::keep)));
    case memory_policy::swap: return fits(compile(std::vector<memory_decision>(f.n, memory_decision::swap)));
    case memory_policy::recompute: return fits(compile(sqrt_checkpoints(g, f)));
    case memory_policy::greedy: {
      std::vector<memory_decision> d(f.n, memory_decision::keep);
      for (;;) {
        memory_plan p = compile(d);
        if (p.peak_bytes <= budget) return fits(std::move(p));
        int pick = -1;
        double best = -1.0;
        for (int i = 0; i < f.n; ++i) {
          if (p.decisions[i] != memory_decision::keep || f.saved_outputs[i].empty() || !std::isfinite(e.cost(i)))
            continue;
          if (d[i] != memory_decision::keep) continue;
          const double ratio = static_cast<double>(f.saved_bytes(i)) / (e.cost(i) + 1e-9);
          if (ratio > best) {
            best = ratio;
            pick = i;
          }
        }
        if (pick < 0) return fits(std::move(p));
        d[pick] = e.cheaper(pick);
      }
    }
    case memory_policy::knapsack: {
      // Pages: at most ~4096 per budget, so the DP stays small whatever the budget.
      const std::size_t page = std::max(o.alignment, round_up((budget + 4095) / 4096, o.alignment));
      long pages = static_cast<long>(budget / page);
      memory_plan p = compile(knapsack(f, e, page, pages));
      // The kept bytes are not the peak (gradients, rematerialised layers, in-flight copies): shrink
      // the knapsack by what the compiled program overshoots until it fits.
      for (int round = 0; round < 64 && p.peak_bytes > budget && pages >= 0; ++round) {
        pages -= static_cast<long>(std::max<std::size_t>(1, (p.peak_bytes - budget + page - 1) / page));
        p = compile(knapsack(f, e, page, pages));
      }
      return fits(std::move(p));
    }
  }
  return error{errc::invalid_argument, "memory policy: unknown"};
}

std::string format_plan(const memory_graph& g, const memory_plan& p) {
  const facts f(g, 1);
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-14s %-44s %12s  %-9s %10s %10s %10s\n", "layer", "saved tensors", "bytes",
                "decision", "extra ms", "swap ms", "recomp ms");
  out += line;
  for (int i = 0; i < f.n; ++i) {
    if (f.saved_outputs[i].empty()) continue;
    std::string names;
    for (int t : f.saved_outputs[i]) names += (names.empty() ? "" : ",") + g.tensors[t].name;
    if (names.size() > 44) names = names.substr(0, 41) + "...";
    std::size_t bytes = 0;
    for (int t : f.saved_outputs[i]) bytes += g.tensors[t].bytes;
    char swap[32] = "-";
    if (std::isfinite(p.swap_ms[i])) std::snprintf(swap, sizeof swap, "%.3f", p.swap_ms[i]);
    std::snprintf(line, sizeof line, "%-14s %-44s %12zu  %-9s %10.3f %10s %10.3f\n", g.ops[i].name.c_str(),
                  names.c_str(), bytes, to_string(p.decisions[i]), p.extra_ms[i], swap, p.recompute_ms[i]);
    out += line;
  }
  std::snprintf(line, sizeof line,
                "policy %s: peak %s of budget %s, host %s; predicted step %.3f ms (compute %.3f ms, +%.1f%%)\n",
                to_string(p.policy), format_bytes(p.peak_bytes).c_str(), format_bytes(p.budget).c_str(),
                format_bytes(p.host_bytes).c_str(), p.predicted_ms, p.compute_ms,
                p.compute_ms > 0 ? 100.0 * (p.predicted_ms / p.compute_ms - 1.0) : 0.0);
  out += line;
  return out;
}

}  // namespace banyan::nn
