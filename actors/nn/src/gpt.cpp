#include "banyan/nn/gpt.hpp"

#include "banyan/nn/rng.hpp"
#include "gpt_layout.hpp"
#include "layer_clock.hpp"

#include <cassert>
#include <cmath>
#include <limits>
#include <string>

namespace banyan::nn {

namespace {

using namespace detail;  // the tensor layout (gpt_layout.hpp)
// Parameter tensors, in arena order: wte, wpe, then per block the 12 block_param ones, then ln_f w
// and b. Activation tensors: encoded, then per block the 16 block_act ones, then the 6 final_act ones.
// Layers: embedding, per block the 6 below, then ln_f, lm_head, loss.
enum block_layer { L_LN1, L_ATTN, L_RES1, L_LN2, L_MLP, L_RES2, NBL };

constexpr int p_wte = 0, p_wpe = 1;
int p_blk(int l, int k) { return 2 + l * NBP + k; }
int p_lnfw(int L) { return 2 + L * NBP; }
int p_lnfb(int L) { return 3 + L * NBP; }
constexpr int a_enc = 0;
int a_blk(int l, int k) { return 1 + l * NBA + k; }
int a_fin(int L, int k) { return 1 + L * NBA + k; }
int layer_blk(int l, int k) { return 1 + l * NBL + k; }
int layer_lnf(int L) { return 1 + L * NBL; }
int layer_head(int L) { return 2 + L * NBL; }
int layer_loss(int L) { return 3 + L * NBL; }

}  // namespace

result<void> gpt_config::validate() const {
  auto bad = [](const std::string& field, int v, const std::string& rule) {
    return error{errc::invalid_argument, "gpt config: " + field + " = " + std::to_string(v) + " " + rule};
  };
  if (vocab_size <= 0) return bad("vocab_size", vocab_size, "must be positive");
  if (max_seq_len <= 0) return bad("max_seq_len", max_seq_len, "must be positive");
  if (num_layers <= 0) return bad("num_layers", num_layers, "must be positive");
  if (num_heads <= 0) return bad("num_heads", num_heads, "must be positive");
  if (channels <= 0) return bad("channels", channels, "must be positive");
  if (channels % num_heads != 0) {
    return bad("channels", channels, "must be divisible by num_heads (" + std::to_string(num_heads) + ")");
  }
  return {};
}

std::vector<std::int64_t> gpt_config::to_vector() const {
  return {vocab_size, max_seq_len, num_layers, num_heads, channels};
}

std::vector<std::string> gpt_config::field_names() {
  return {"vocab_size", "max_seq_len", "num_layers", "num_heads", "channels"};
}

result<gpt> gpt::create(const gpt_config& cfg, int batch, int seq_len, backend& be,
                        std::optional<memory_options> memory) {
  if (auto s = cfg.validate(); !s) return s.error();
  if (batch <= 0) {
    return error{errc::invalid_argument, "gpt: batch = " + std::to_string(batch) + " must be positive"};
  }
  if (seq_len <= 0 || seq_len > cfg.max_seq_len) {
    return error{errc::invalid_argument, "gpt: seq_len = " + std::to_string(seq_len) +
                                             " must be in [1, max_seq_len = " + std::to_string(cfg.max_seq_len) + "]"};
  }
  if (!memory) return gpt(cfg, batch, seq_len, be, true);
  if (memory->budget == 0) return error{errc::invalid_argument, "gpt: memory budget 0 bytes: must be positive"};
  gpt m(cfg, batch, seq_len, be, false);
  memory_graph g = m.memory_layout();
  // Estimated costs until the first step is measured: time in proportion to the bytes a layer
  // writes; the planner needs only their ratios to the copies (checked against the budget now).
  memory_costs est;
  for (const auto& op : g.ops) {
    double bytes = 0;
    for (int t : op.outputs) bytes += static_cast<double>(g.tensors[t].bytes);
    est.forward_ms.push_back(bytes / 1e6);
    est.backward_ms.push_back(2 * bytes / 1e6);
  }
  // The budget is checked before the pool is allocated, so a budget too small fails here.
  auto plan = plan_memory(g, est, memory->budget, memory->policy, memory->planner);
  if (!plan) return std::move(plan).error();
  const memory_policy policy = memory->policy;
  m.mem_ = std::make_unique<memory_executor>(be, std::move(g), std::move(*memory));
  est.d2h_bytes_per_ms = m.mem_->d2h_bytes_per_ms();
  est.h2d_bytes_per_ms = m.mem_->h2d_bytes_per_ms();
  est.copy_latency_ms = m.mem_->copy_latency_ms();
  auto measured_bw = plan_memory(m.mem_->graph(), est, m.mem_->options().budget, policy, m.mem_->options().planner);
  // With a shared host budget this waits for a checkpoint store to flush the host pool's bytes.
  if (auto set = m.mem_->set_plan(measured_bw ? std::move(measured_bw).value() : std::move(plan).value()); !set) {
    return std::move(set).error();
  }
  m.measuring_ = m.mem_->options().replan;
  return m;
}

gpt::gpt(const gpt_config& cfg, int batch, int seq_len, backend& be, bool allocate_activations)
    : cfg_(cfg), batch_(batch), seq_len_(seq_len), be_(&be) {
  const int V = cfg.vocab_size, maxT = cfg.max_seq_len, L = cfg.num_layers, NH = cfg.num_heads, C = cfg.channels,
            B = batch, T = seq_len;
  layer_names_.push_back("embedding");
  for (int l = 0; l < L; ++l) {
    const std::string h = "h" + std::to_string(l) + ".";
    for (const char* n : {"ln1", "attn", "residual1", "ln2", "mlp", "residual2"}) layer_names_.push_back(h + n);
  }
  layer_names_.push_back("ln_f");
  layer_names_.push_back("lm_head");
  layer_names_.push_back("loss");
  fwd_ms_.assign(layer_names_.size(), 0.0);
  bwd_ms_.assign(layer_names_.size(), 0.0);

  // Parameters and their gradients share one layout.
  for (arena* a : {&params_, &grads_}) {
    a->add("wte", {V, C}, 0);
    a->add("wpe", {maxT, C}, 0);
    for (int l = 0; l < L; ++l) {
      const std::string h = "h" + std::to_string(l) + ".";
      a->add(h + "ln1_w", {C}, layer_blk(l, L_LN1));
      a->add(h + "ln1_b", {C}, layer_blk(l, L_LN1));
      a->add(h + "qkv_w", {3 * C, C}, layer_blk(l, L_ATTN));
      a->add(h + "qkv_b", {3 * C}, layer_blk(l, L_ATTN));
      a->add(h + "proj_w", {C, C}, layer_blk(l, L_ATTN));
      a->add(h + "proj_b", {C}, layer_blk(l, L_ATTN));
      a->add(h + "ln2_w", {C}, layer_blk(l, L_LN2));
      a->add(h + "ln2_b", {C}, layer_blk(l, L_LN2));
      a->add(h + "fc_w", {4 * C, C}, layer_blk(l, L_MLP));
      a->add(h + "fc_b", {4 * C}, layer_blk(l, L_MLP));
      a->add(h + "fcproj_w", {C, 4 * C}, layer_blk(l, L_MLP));
      a->add(h + "fcproj_b", {C}, layer_blk(l, L_MLP));
    }
    a->add("lnf_w", {C}, layer_lnf(L));
    a->add("lnf_b", {C}, layer_lnf(L));
    a->allocate(be);
  }
  for (arena* a : {&acts_, &dacts_}) {
    a->add("encoded", {B, T, C}, 0);
    for (int l = 0; l < L; ++l) {
      const std::string h = "h" + std::to_string(l) + ".";
      a->add(h + "ln1", {B, T, C}, layer_blk(l, L_LN1));
      a->add(h + "ln1_mean", {B, T}, layer_blk(l, L_LN1));
      a->add(h + "ln1_rstd", {B, T}, layer_blk(l, L_LN1));
      a->add(h + "qkv", {B, T, 3 * C}, layer_blk(l, L_ATTN));
      a->add(h + "preatt", {B, NH, T, T}, layer_blk(l, L_ATTN));
      a->add(h + "att", {B, NH, T, T}, layer_blk(l, L_ATTN));
      a->add(h + "atty", {B, T, C}, layer_blk(l, L_ATTN));
      a->add(h + "attproj", {B, T, C}, layer_blk(l, L_ATTN));
      a->add(h + "res2", {B, T, C}, layer_blk(l, L_RES1));
      a->add(h + "ln2", {B, T, C}, layer_blk(l, L_LN2));
      a->add(h + "ln2_mean", {B, T}, layer_blk(l, L_LN2));
      a->add(h + "ln2_rstd", {B, T}, layer_blk(l, L_LN2));
      a->add(h + "fch", {B, T, 4 * C}, layer_blk(l, L_MLP));
      a->add(h + "fch_gelu", {B, T, 4 * C}, layer_blk(l, L_MLP));
      a->add(h + "fcproj", {B, T, C}, layer_blk(l, L_MLP));
      a->add(h + "res3", {B, T, C}, layer_blk(l, L_RES2));
    }
    a->add("lnf", {B, T, C}, layer_lnf(L));
    a->add("lnf_mean", {B, T}, layer_lnf(L));
    a->add("lnf_rstd", {B, T}, layer_lnf(L));
    a->add("logits", {B, T, V}, layer_head(L));
    a->add("probs", {B, T, V}, layer_loss(L));
    a->add("losses", {B, T}, layer_loss(L));
    if (allocate_activations) a->allocate(be);
  }
  tokens_ = buffer(be, sizeof(int) * static_cast<std::size_t>(B) * T);
  targets_ = buffer(be, sizeof(int) * static_cast<std::size_t>(B) * T);
}

void gpt::init(std::uint64_t seed) {
  rng r(seed);
  std::vector<float> host(params_.numel(), 0.0f);
  for (const auto& t : params_.tensors()) {
    float* p = host.data() + t.offset;
    const init_rule rule = init_rule_for(t.name, cfg_.num_layers);
    if (rule.kind == init_rule::ones) {
      for (std::size_t i = 0; i < t.numel; ++i) p[i] = 1.0f;
    } else if (rule.kind == init_rule::normal) {
      for (std::size_t i = 0; i < t.numel; ++i) p[i] = rule.std * r.normal();
    }
  }
  params_.from_host(*be_, host);
}

template <class F>
void gpt::timed(int layer, bool forward, F&& f) {
  detail::layer_call(*be_, profiling_ || measuring_, forward ? fwd_ms_[layer] : bwd_ms_[layer], hooks_, layer, forward,
                     std::forward<F>(f));
}

float gpt::forward(const int* tokens, const int* targets, int B, int T) {
  assert(B > 0 && B <= batch_ && T > 0 && T <= seq_len_);
  B_ = B;
  T_ = T;
  has_targets_ = targets != nullptr;
  const int L = cfg_.num_layers, N = B * T, loss = layer_loss(L);
  backend& be = *be_;
  be.upload(tokens_.get(), tokens, sizeof(int) * N);
  if (has_targets_) be.upload(targets_.get(), targets, sizeof(int) * N);
  if (mem_) {
    mem_->run_forward([&](int layer) { forward_layer(layer, false); }, has_targets_ ? -1 : loss);
  } else {
    for (int layer = 0; layer <= loss; ++layer) {
      if (layer != loss || has_targets_) forward_layer(layer, false);
    }
  }
  if (!has_targets_) {
    be.synchronize();
    return std::numeric_limits<float>::quiet_NaN();
  }
  std::vector<float> losses(N);
  be.download(losses.data(), act(a_fin(L, LOSSES)), sizeof(float) * N);
  double sum = 0.0;
  for (float x : losses) sum += x;
  return static_cast<float>(sum / N);
}

void gpt::forward_layer(int layer, bool again) {
  const int B = B_, T = T_, V = cfg_.vocab_size, L = cfg_.num_layers, NH = cfg_.num_heads, C = cfg_.channels;
  const int N = B * T;
  const std::size_t NC = static_cast<std::size_t>(N) * C;
  backend& be = *be_;
  auto P = [&](int id) { return params_.data(id); };
  auto A = [&](int id) { return act(id); };
  auto run = [&](auto&& f) {
    if (again) detail::timed_call(be, profiling_ || measuring_, fwd_ms_[layer], f);
    else timed(layer, true, f);
  };
  if (layer == 0) {
    run([&] { be.encoder_forward(A(a_enc), tokens_.i32(), P(p_wte), P(p_wpe), B, T, C); });
    return;
  }
  if (layer == layer_lnf(L)) {
    const int last = L > 0 ? a_blk(L - 1, RES3) : a_enc;
    run([&] {
      be.layernorm_forward(A(a_fin(L, LNF)), A(a_fin(L, LNF_MEAN)), A(a_fin(L, LNF_RSTD)), A(last), P(p_lnfw(L)),
                           P(p_lnfb(L)), N, C);
    });
    return;
  }
  if (layer == layer_head(L)) {
    run([&] { be.matmul_forward(A(a_fin(L, LOGITS)), A(a_fin(L, LNF)), P(p_wte), nullptr, N, C, V); });
    return;
  }
  if (layer == layer_loss(L)) {
    run([&] {
      be.softmax_crossentropy_forward(A(a_fin(L, LOSSES)), A(a_fin(L, PROBS)), A(a_fin(L, LOGITS)), targets_.i32(), N,
                                      V);
    });
    return;
  }
  const int l = (layer - 1) / NBL;
  const int in = l == 0 ? a_enc : a_blk(l - 1, RES3);
  auto pa = [&](int k) { return P(p_blk(l, k)); };
  auto aa = [&](int k) { return A(a_blk(l, k)); };
  switch ((layer - 1) % NBL) {
    case L_LN1:
      run([&] { be.layernorm_forward(aa(LN1), aa(LN1_MEAN), aa(LN1_RSTD), A(in), pa(LN1W), pa(LN1B), N, C); });
      break;
    case L_ATTN:
      run([&] {
        be.matmul_forward(aa(QKV), aa(LN1), pa(QKVW), pa(QKVB), N, C, 3 * C);
        be.attention_forward(aa(ATTY), aa(PREATT), aa(ATT), aa(QKV), B, T, C, NH);
        be.matmul_forward(aa(ATTPROJ), aa(ATTY), pa(PROJW), pa(PROJB), N, C, C);
      });
      break;
    case L_RES1: run([&] { be.residual_forward(aa(RES2), A(in), aa(ATTPROJ), NC); }); break;
    case L_LN2:
      run([&] { be.layernorm_forward(aa(LN2), aa(LN2_MEAN), aa(LN2_RSTD), aa(RES2), pa(LN2W), pa(LN2B), N, C); });
      break;
    case L_MLP:
      run([&] {
        be.matmul_forward(aa(FCH), aa(LN2), pa(FCW), pa(FCB), N, C, 4 * C);
        be.gelu_forward(aa(FCH_GELU), aa(FCH), NC * 4);
        be.matmul_forward(aa(FCPROJ), aa(FCH_GELU), pa(FCPROJW), pa(FCPROJB), N, 4 * C, C);
      });
      break;
    case L_RES2: run([&] { be.residual_forward(aa(RES3), aa(RES2), aa(FCPROJ), NC); }); break;
  }
}

void gpt::zero_grad() {
  grads_.zero(*be_);
  if (!mem_) dacts_.zero(*be_);  // with a budget each activation gradient is zeroed when placed
}

void gpt::backward() {
  assert(has_targets_ && "gpt::backward needs a forward with targets");
  const int n = static_cast<int>(layer_names_.size());
  if (mem_) {
    mem_->run_backward([&](int layer) { forward_layer(layer, true); }, [&](int layer) { backward_layer(layer); });
    if (measuring_) {
      measuring_ = false;
      (void)replan_memory(mem_->plan().policy);  // keeps the estimated plan if the measured one fails
    }
    return;
  }
  for (int layer = n - 1; layer >= 0; --layer) backward_layer(layer);
}

void gpt::backward_layer(int layer) {
  const int B = B_, T = T_, V = cfg_.vocab_size, L = cfg_.num_layers, NH = cfg_.num_heads, C = cfg_.channels;
  const int N = B * T;
  const std::size_t NC = static_cast<std::size_t>(N) * C;
  backend& be = *be_;
  auto P = [&](int id) { return params_.data(id); };
  auto G = [&](int id) { return grads_.data(id); };
  auto A = [&](int id) { return act(id); };
  auto D = [&](int id) { return dact(id); };
  auto run = [&](auto&& f) { timed(layer, false, f); };
  if (layer == layer_loss(L)) {
    run([&] {
      be.softmax_crossentropy_backward(D(a_fin(L, LOGITS)), A(a_fin(L, PROBS)), targets_.i32(),
                                       1.0f / static_cast<float>(N), N, V);
    });
    return;
  }
  if (layer == layer_head(L)) {
    run([&] {
      be.matmul_backward(D(a_fin(L, LNF)), G(p_wte), nullptr, D(a_fin(L, LOGITS)), A(a_fin(L, LNF)), P(p_wte), N, C, V);
    });
    return;
  }
  if (layer == layer_lnf(L)) {
    const int last = L > 0 ? a_blk(L - 1, RES3) : a_enc;
    run([&] {
      be.layernorm_backward(D(last), G(p_lnfw(L)), G(p_lnfb(L)), D(a_fin(L, LNF)), A(last), P(p_lnfw(L)),
                            A(a_fin(L, LNF_MEAN)), A(a_fin(L, LNF_RSTD)), N, C);
    });
    return;
  }
  if (layer == 0) {
    run([&] { be.encoder_backward(G(p_wte), G(p_wpe), D(a_enc), tokens_.i32(), B, T, C); });
    return;
  }
  const int l = (layer - 1) / NBL;
  const int in = l == 0 ? a_enc : a_blk(l - 1, RES3);
  auto pa = [&](int k) { return P(p_blk(l, k)); };
  auto ga = [&](int k) { return G(p_blk(l, k)); };
  auto aa = [&](int k) { return A(a_blk(l, k)); };
  auto da = [&](int k) { return D(a_blk(l, k)); };
  switch ((layer - 1) % NBL) {
    case L_RES2: run([&] { be.residual_backward(da(RES2), da(FCPROJ), da(RES3), NC); }); break;
    case L_MLP:
      run([&] {
        be.matmul_backward(da(FCH_GELU), ga(FCPROJW), ga(FCPROJB), da(FCPROJ), aa(FCH_GELU), pa(FCPROJW), N, 4 * C, C);
        be.gelu_backward(da(FCH), aa(FCH), da(FCH_GELU), NC * 4);
        be.matmul_backward(da(LN2), ga(FCW), ga(FCB), da(FCH), aa(LN2), pa(FCW), N, C, 4 * C);
      });
      break;
    case L_LN2:
      run([&] {
        be.layernorm_backward(da(RES2), ga(LN2W), ga(LN2B), da(LN2), aa(RES2), pa(LN2W), aa(LN2_MEAN), aa(LN2_RSTD), N,
                              C);
      });
      break;
    case L_RES1: run([&] { be.residual_backward(D(in), da(ATTPROJ), da(RES2), NC); }); break;
    case L_ATTN:
      run([&] {
        be.matmul_backward(da(ATTY), ga(PROJW), ga(PROJB), da(ATTPROJ), aa(ATTY), pa(PROJW), N, C, C);
        be.attention_backward(da(QKV), da(PREATT), da(ATT), da(ATTY), aa(QKV), aa(ATT), B, T, C, NH);
        be.matmul_backward(da(LN1), ga(QKVW), ga(QKVB), da(QKV), aa(LN1), pa(QKVW), N, C, 3 * C);
      });
      break;
    case L_LN1:
      run([&] {
        be.layernorm_backward(D(in), ga(LN1W), ga(LN1B), da(LN1), A(in), pa(LN1W), aa(LN1_MEAN), aa(LN1_RSTD), N, C);
      });
      break;
  }
}

memory_graph gpt::memory_layout() const {
  const int L = cfg_.num_layers;
  memory_graph g;
  for (const auto& t : acts_.tensors()) g.tensors.push_back({t.name, t.numel * sizeof(float), t.layer, false});
  g.tensors[a_fin(L, LOSSES)].result = true;
  g.ops.resize(layer_names_.size());
  for (std::size_t i = 0; i < layer_names_.size(); ++i) g.ops[i].name = layer_names_[i];
  for (std::size_t t = 0; t < g.tensors.size(); ++t)
    g.ops[g.tensors[t].producer].outputs.push_back(static_cast<int>(t));
  auto set = [&](int layer, std::vector<int> in, std::vector<int> saved, std::vector<int> grads) {
    g.ops[layer].inputs = std::move(in);
    g.ops[layer].saved_reads = std::move(saved);
    g.ops[layer].grads = std::move(grads);
  };
  // What each layer's forward reads, and its backward reads (activations, gradients): as in
  // forward_layer and backward_layer.
  set(0, {}, {}, {a_enc});
  for (int l = 0; l < L; ++l) {
    const int in = l == 0 ? a_enc : a_blk(l - 1, RES3);
    auto a = [&](int k) { return a_blk(l, k); };
    set(layer_blk(l, L_LN1), {in}, {in, a(LN1_MEAN), a(LN1_RSTD)}, {a(LN1), in});
    set(layer_blk(l, L_ATTN), {a(LN1)}, {a(ATTY), a(QKV), a(ATT), a(LN1)},
        {a(ATTPROJ), a(ATTY), a(QKV), a(PREATT), a(ATT), a(LN1)});
    set(layer_blk(l, L_RES1), {in, a(ATTPROJ)}, {}, {a(RES2), in, a(ATTPROJ)});
    set(layer_blk(l, L_LN2), {a(RES2)}, {a(RES2), a(LN2_MEAN), a(LN2_RSTD)}, {a(LN2), a(RES2)});
    set(layer_blk(l, L_MLP), {a(LN2)}, {a(FCH_GELU), a(FCH), a(LN2)}, {a(FCPROJ), a(FCH_GELU), a(FCH), a(LN2)});
    set(layer_blk(l, L_RES2), {a(RES2), a(FCPROJ)}, {}, {a(RES3), a(RES2), a(FCPROJ)});
  }
  const int last = L > 0 ? a_blk(L - 1, RES3) : a_enc;
  set(layer_lnf(L), {last}, {last, a_fin(L, LNF_MEAN), a_fin(L, LNF_RSTD)}, {a_fin(L, LNF), last});
  set(layer_head(L), {a_fin(L, LNF)}, {a_fin(L, LNF)}, {a_fin(L, LOGITS), a_fin(L, LNF)});
  set(layer_loss(L), {a_fin(L, LOGITS)}, {a_fin(L, PROBS)}, {a_fin(L, LOGITS)});
  return g;
}

memory_costs gpt::measured_costs() const {
  memory_costs c;
  c.forward_ms = fwd_ms_;
  c.backward_ms = bwd_ms_;
  if (mem_) {
    c.d2h_bytes_per_ms = mem_->d2h_bytes_per_ms();
    c.h2d_bytes_per_ms = mem_->h2d_bytes_per_ms();
    c.copy_latency_ms = mem_->copy_latency_ms();
  }
  return c;
}

result<void> gpt::replan_memory(memory_policy policy) {
  if (!mem_) return error{errc::invalid_argument, "gpt: replan_memory without a memory budget"};
  auto plan = plan_memory(mem_->graph(), measured_costs(), mem_->options().budget, policy, mem_->options().planner);
  if (!plan) return std::move(plan).error();
  return mem_->set_plan(std::move(plan).value());
}

std::vector<float> gpt::logits_host() const {
  const std::size_t n = static_cast<std::size_t>(B_) * T_ * cfg_.vocab_size;
  std::vector<float> out(n);
  be_->download(out.data(), act(a_fin(cfg_.num_layers, LOGITS)), n * sizeof(float));
  return out;
}

std::vector<float> gpt::logits_row(int b, int t) const {
  assert(b < B_ && t < T_);
  const int V = cfg_.vocab_size;
  std::vector<float> out(V);
  const float* src = act(a_fin(cfg_.num_layers, LOGITS)) + (static_cast<std::size_t>(b) * T_ + t) * V;
  be_->download(out.data(), src, V * sizeof(float));
  return out;
}

std::vector<layer_info> gpt::layers() const {
  std::vector<layer_info> out;
  for (std::size_t i = 0; i < layer_names_.size(); ++i) {
    const int id = static_cast<int>(i);
    out.push_back(layer_info{layer_names_[i], params_.layer_bytes(id), acts_.layer_bytes(id), fwd_ms_[i], bwd_ms_[i]});
  }
  return out;
}

}  // namespace banyan::nn
