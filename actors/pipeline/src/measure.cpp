#include <banyan/pipeline/measure.hpp>

#include <banyan/nn/gpt_stage.hpp>
#include <banyan/nn/rng.hpp>
#include <banyan/pipeline/error.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace banyan::pipeline {

namespace {

error bad(const std::string& m) { return error{errc::invalid, m}; }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The file layer an engine sub-layer belongs to: 0 the embedding, 1 + l block l, L + 1 the head.
int file_layer(const std::string& name, int L) {
  if (name == "embedding") return 0;
  if (name == "ln_f" || name == "lm_head" || name == "loss") return L + 1;
  // "h<l>.<part>"
  return 1 + std::stoi(name.substr(1, name.find('.') - 1));
}

struct pass_times {
  double f = 0, i = 0, w = 0;  // ms, medians
};

// forward, backward_input and backward_weight of one gpt_stage holding `slice`, medians over opt.steps
// rounds after opt.warmup. A round is opt.in_flight forwards, then their backwards in the same order
// (each I then its W), so that the activations of in_flight microbatches are live, as in a pipeline.
result<pass_times> time_stage(const measure_options& opt, const nn::stage_slice& slice, nn::backend& be,
                              const std::vector<int>& tokens, const std::vector<float>& acts,
                              const std::vector<float>& grad, const std::function<void()>& tick) {
  const int k_in = opt.in_flight;
  auto st = nn::gpt_stage::create(opt.model, slice, {.batch = opt.rows, .seq_len = opt.seq_len, .slots = k_in}, be);
  if (!st) return st.error();
  st->init(opt.seed);
  nn::stage_input in;
  if (slice.has_embedding) in.tokens = tokens.data();
  else in.activations = acts.data();
  if (slice.has_head) in.targets = tokens.data();
  const float* out_grad = slice.has_head ? nullptr : grad.data();
  std::vector<double> f, i, w;
  auto clock = std::chrono::steady_clock::now;
  for (int round = 0; round < opt.warmup + opt.steps; ++round) {
    const bool keep = round >= opt.warmup;
    for (int slot = 0; slot < k_in; ++slot) {
      const auto t0 = clock();
      if (auto r = st->forward(slot, in); !r) return r.error();
      if (keep) f.push_back(ms_since(t0));
    }
    for (int slot = 0; slot < k_in; ++slot) {
      auto t0 = clock();
      if (auto r = st->backward_input(slot, out_grad); !r) return r.error();
      if (keep) i.push_back(ms_since(t0));
      t0 = clock();
      if (auto r = st->backward_weight(slot); !r) return r.error();
      if (keep) w.push_back(ms_since(t0));
    }
    if (tick) tick();
  }
  return pass_times{median(f), median(i), median(w)};
}

result<void> check(const measure_options& opt) {
  if (auto v = opt.model.validate(); !v) return v.error();
  if (opt.rows < 1) return bad("measure: rows = " + std::to_string(opt.rows) + ": must be positive");
  if (opt.seq_len < 1 || opt.seq_len > opt.model.max_seq_len) {
    return bad("measure: seq_len = " + std::to_string(opt.seq_len) +
               ": must be in [1, max_seq_len = " + std::to_string(opt.model.max_seq_len) + "]");
  }
  if (opt.warmup < 0) return bad("measure: warmup = " + std::to_string(opt.warmup) + ": must be >= 0");
  if (opt.steps < 1) return bad("measure: steps = " + std::to_string(opt.steps) + ": must be positive");
  if (opt.in_flight < 1) return bad("measure: in_flight = " + std::to_string(opt.in_flight) + ": must be positive");
  return {};
}

// Seeded random tokens, targets, input activations and output gradients of one microbatch.
struct inputs {
  std::vector<int> tokens, targets;
  std::vector<float> acts, grad;
};
inputs make_inputs(const measure_options& opt) {
  const int N = opt.rows * opt.seq_len, C = opt.model.channels;
  const auto V = static_cast<std::uint32_t>(opt.model.vocab_size);
  nn::rng r(opt.seed);
  inputs in{std::vector<int>(N), std::vector<int>(N), std::vector<float>(static_cast<std::size_t>(N) * C),
            std::vector<float>(static_cast<std::size_t>(N) * C)};
  for (int& t : in.tokens) t = static_cast<int>(r.below(V));
  for (int& t : in.targets) t = static_cast<int>(r.below(V));
  for (float& x : in.acts) x = r.normal();
  for (float& x : in.grad) x = 1e-3f * r.normal();
  return in;
}

}  // namespace

result<measured_costs> measure_costs(const measure_options& opt, const std::function<void(int, int)>& progress) {
  if (auto v = check(opt); !v) return v.error();
  const nn::gpt_config& m = opt.model;
  auto be = nn::make_backend(opt.device);
  if (!be) return be.error();

  const int L = m.num_layers, n = L + 2, N = opt.rows * opt.seq_len, C = m.channels;
  const bool on_stages = opt.source == timing_source::stage;
  const int per_pass = opt.warmup + opt.steps, total = (on_stages ? n : 1 + 3) * per_pass;
  int done = 0;
  auto tick = [&] {
    if (progress) progress(++done, total);
  };

  const inputs in = make_inputs(opt);
  const auto& tokens = in.tokens;
  const auto& targets = in.targets;
  const auto& acts = in.acts;
  const auto& grad = in.grad;

  // mem (and, from the engine, t_f and t_b) from the whole model, per step and file layer.
  std::vector<std::vector<double>> fwd(n), bwd(n);
  std::vector<double> mem(n, 0);
  {
    auto model = nn::gpt::create(m, opt.rows, opt.seq_len, **be);
    if (!model) return model.error();
    for (const auto& li : model->layers()) mem[file_layer(li.name, L)] += static_cast<double>(li.activation_bytes);
    if (!on_stages) {
      model->init(opt.seed);
      model->set_profiling(true);
      for (int i = 0; i < per_pass; ++i) {
        model->forward(tokens.data(), targets.data(), opt.rows, opt.seq_len);
        model->zero_grad();
        model->backward();
        if (i >= opt.warmup) {
          std::vector<double> f(n, 0), b(n, 0);
          for (const auto& li : model->layers()) {
            const int k = file_layer(li.name, L);
            f[k] += li.forward_ms, b[k] += li.backward_ms;
          }
          for (int k = 0; k < n; ++k) fwd[k].push_back(f[k]), bwd[k].push_back(b[k]);
        }
        tick();
      }
    }
  }

  auto slice_of = [&](int k) {
    return k == 0       ? nn::stage_slice{0, 0, true, false}
           : k == n - 1 ? nn::stage_slice{L, L, false, true}
                        : nn::stage_slice{k - 1, k, false, false};
  };
  auto timed = [&](int k) { return time_stage(opt, slice_of(k), **be, tokens, acts, grad, tick); };
  std::vector<pass_times> stage(n);
  if (on_stages) {
    for (int k = 0; k < n; ++k) {
      auto t = timed(k);
      if (!t) return t.error();
      stage[k] = *t;
    }
  } else {
    for (int k : {0, 1, n - 1}) {
      auto t = timed(k);
      if (!t) return t.error();
      stage[k] = *t;
    }
    for (int k = 2; k < n - 1; ++k) stage[k] = stage[1];
  }
  auto fraction = [](const pass_times& t) { return t.i + t.w > 0 ? t.i / (t.i + t.w) : 0.5; };

  measured_costs out;
  out.input_fraction_embedding = fraction(stage[0]);
  out.input_fraction_block = fraction(stage[1]);
  out.input_fraction_head = fraction(stage[n - 1]);
  out.c.per_layer = true;
  const double out_bytes = static_cast<double>(N) * C * sizeof(float);
  for (int k = 0; k < n; ++k) {
    stage_cost u;
    if (on_stages) {
      u.t_f = stage[k].f, u.t_i = stage[k].i, u.t_w = stage[k].w;
      u.t_b = u.t_i + u.t_w;
    } else {
      u.t_f = median(fwd[k]);
      u.t_b = median(bwd[k]);
      u.t_i = u.t_b * fraction(stage[k]);
      u.t_w = u.t_b - u.t_i;
    }
    u.mem = mem[k];
    u.comm_bytes = k == n - 1 ? 0 : out_bytes;
    u.static_mem = 0;
    out.c.units.push_back(u);
    out.names.push_back(k == 0 ? "embedding" : k == n - 1 ? "head" : "h" + std::to_string(k - 1));
  }
  return out;
}

result<measured_costs> measure_stage_costs(const measure_options& opt, const std::vector<nn::stage_slice>& stages,
                                           const std::function<void(int, int)>& progress) {
  if (auto v = check(opt); !v) return v.error();
  if (stages.empty()) return bad("measure: no stages to time");
  auto be = nn::make_backend(opt.device);
  if (!be) return be.error();
  const nn::gpt_config& m = opt.model;
  const int L = m.num_layers, N = opt.rows * opt.seq_len, C = m.channels;
  const int total = static_cast<int>(stages.size()) * (opt.warmup + opt.steps);
  int done = 0;
  auto tick = [&] {
    if (progress) progress(++done, total);
  };
  const inputs in = make_inputs(opt);
  std::vector<double> mem(L + 2, 0);
  {
    auto model = nn::gpt::create(m, opt.rows, opt.seq_len, **be);
    if (!model) return model.error();
    for (const auto& li : model->layers()) mem[file_layer(li.name, L)] += static_cast<double>(li.activation_bytes);
  }
  measured_costs out;
  out.c.per_layer = false;
  for (std::size_t k = 0; k < stages.size(); ++k) {
    const auto& sl = stages[k];
    auto t = time_stage(opt, sl, **be, in.tokens, in.acts, in.grad, tick);
    if (!t) return t.error();
    stage_cost u;
    u.t_f = t->f, u.t_i = t->i, u.t_w = t->w, u.t_b = t->i + t->w;
    u.mem = 0;
    if (sl.has_embedding) u.mem += mem[0];
    for (int l = sl.first_block; l < sl.last_block; ++l) u.mem += mem[1 + l];
    if (sl.has_head) u.mem += mem[L + 1];
    u.comm_bytes = sl.has_head ? 0 : static_cast<double>(N) * C * sizeof(float);
    u.static_mem = 0;
    out.c.units.push_back(u);
    out.names.push_back("stage" + std::to_string(k));
  }
  return out;
}

}  // namespace banyan::pipeline
