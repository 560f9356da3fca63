#include "banyan/nn/gpt_stage.hpp"

#include "banyan/nn/rng.hpp"
#include "gpt_layout.hpp"

#include <cassert>
#include <limits>
#include <utility>

namespace banyan::nn {

using namespace detail;

namespace {

error bad(std::string what) { return error{errc::invalid_argument, std::move(what)}; }
std::string str(int v) { return std::to_string(v); }

}  // namespace

result<std::vector<stage_slice>> cut_stages(int num_layers, const std::vector<int>& cuts) {
  if (num_layers <= 0) return bad("cut_stages: num_layers = " + str(num_layers) + " must be positive");
  std::vector<stage_slice> out;
  int prev = 0;
  for (std::size_t i = 0; i < cuts.size(); ++i) {
    const int c = cuts[i];
    if (c <= 0 || c >= num_layers) {
      return bad("cut_stages: cut " + str(static_cast<int>(i)) + " = " + str(c) + " must be in [1, " +
                 str(num_layers - 1) + "] (num_layers = " + str(num_layers) + "): a stage would have no block");
    }
    if (c <= prev) {
      return bad("cut_stages: cut " + str(static_cast<int>(i)) + " = " + str(c) + " must be above the cut before it (" +
                 str(prev) + "): stage " + str(static_cast<int>(i)) + " would have no block");
    }
    out.push_back({prev, c, i == 0, false});
    prev = c;
  }
  out.push_back({prev, num_layers, cuts.empty(), true});
  return out;
}

result<gpt_stage> gpt_stage::create(const gpt_config& cfg, const stage_slice& slice, const stage_options& opt,
                                    backend& be) {
  if (auto s = cfg.validate(); !s) return s.error();
  const int L = cfg.num_layers;
  if (slice.first_block < 0 || slice.first_block > L) {
    return bad("gpt_stage: first_block = " + str(slice.first_block) + " must be in [0, num_layers = " + str(L) + "]");
  }
  if (slice.last_block < slice.first_block || slice.last_block > L) {
    return bad("gpt_stage: last_block = " + str(slice.last_block) +
               " must be in [first_block = " + str(slice.first_block) + ", num_layers = " + str(L) + "]");
  }
  if (slice.first_block == slice.last_block && !slice.has_embedding && !slice.has_head) {
    return bad("gpt_stage: blocks [" + str(slice.first_block) + ", " + str(slice.last_block) +
               ") are empty and the stage has neither the embedding nor the head: it would run nothing");
  }
  if (slice.has_embedding && slice.first_block != 0) {
    return bad("gpt_stage: first_block = " + str(slice.first_block) + " with the embedding: must be 0");
  }
  if (slice.has_head && slice.last_block != L) {
    return bad("gpt_stage: last_block = " + str(slice.last_block) + " with the head: must be num_layers = " + str(L));
  }
  if (opt.batch <= 0) return bad("gpt_stage: batch = " + str(opt.batch) + " must be positive");
  if (opt.seq_len <= 0 || opt.seq_len > cfg.max_seq_len) {
    return bad("gpt_stage: seq_len = " + str(opt.seq_len) + " must be in [1, max_seq_len = " + str(cfg.max_seq_len) +
               "]");
  }
  if (opt.slots <= 0) return bad("gpt_stage: slots = " + str(opt.slots) + " must be positive");
  if (opt.microbatches <= 0) return bad("gpt_stage: microbatches = " + str(opt.microbatches) + " must be positive");
  return gpt_stage(cfg, slice, opt, be);
}

namespace {

// One slot's activations (or their gradients), in the order the passes use them. Layers as the
// parameters': 0 the input, 1 + (l - first_block) per block, then the head.
void add_slot_tensors(arena& a, const gpt_config& cfg, const stage_slice& slice, int B, int T) {
  const int V = cfg.vocab_size, NH = cfg.num_heads, C = cfg.channels;
  const int head_layer = 1 + slice.last_block - slice.first_block;
  a.add(slice.has_embedding ? "encoded" : "input", {B, T, C}, 0);
  for (int l = slice.first_block; l < slice.last_block; ++l) {
    const std::string h = "h" + str(l) + ".";
    const int layer = 1 + l - slice.first_block;
    a.add(h + "ln1", {B, T, C}, layer);
    a.add(h + "ln1_mean", {B, T}, layer);
    a.add(h + "ln1_rstd", {B, T}, layer);
    a.add(h + "qkv", {B, T, 3 * C}, layer);
    a.add(h + "preatt", {B, NH, T, T}, layer);
    a.add(h + "att", {B, NH, T, T}, layer);
    a.add(h + "atty", {B, T, C}, layer);
    a.add(h + "attproj", {B, T, C}, layer);
    a.add(h + "res2", {B, T, C}, layer);
    a.add(h + "ln2", {B, T, C}, layer);
    a.add(h + "ln2_mean", {B, T}, layer);
    a.add(h + "ln2_rstd", {B, T}, layer);
    a.add(h + "fch", {B, T, 4 * C}, layer);
    a.add(h + "fch_gelu", {B, T, 4 * C}, layer);
    a.add(h + "fcproj", {B, T, C}, layer);
    a.add(h + "res3", {B, T, C}, layer);
  }
  if (slice.has_head) {
    a.add("lnf", {B, T, C}, head_layer);
    a.add("lnf_mean", {B, T}, head_layer);
    a.add("lnf_rstd", {B, T}, head_layer);
    a.add("logits", {B, T, V}, head_layer);
    a.add("probs", {B, T, V}, head_layer);
    a.add("losses", {B, T}, head_layer);
  }
}

struct param_ids {
  int wte = -1, wpe = -1, blocks = 0, lnfw = -1, lnfb = -1;
};

// The slice's parameters (and, alike, their gradients): layers 0 embedding, 1 + (l - first) per
// block, then the head, for arena::layer_bytes.
param_ids add_param_tensors(arena& a, const gpt_config& cfg, const stage_slice& slice) {
  const int V = cfg.vocab_size, maxT = cfg.max_seq_len, C = cfg.channels;
  const int head_layer = 1 + slice.last_block - slice.first_block;
  param_ids ids;
  if (slice.has_embedding) {
    ids.wte = a.add("wte", {V, C}, 0);
    ids.wpe = a.add("wpe", {maxT, C}, 0);
  }
  for (int l = slice.first_block; l < slice.last_block; ++l) {
    const int layer = 1 + l - slice.first_block;
    // As gpt's: block_param order.
    const std::vector<int> shapes[NBP] = {{C}, {C}, {3 * C, C}, {3 * C}, {C, C},     {C},
                                          {C}, {C}, {4 * C, C}, {4 * C}, {C, 4 * C}, {C}};
    for (int k = 0; k < NBP; ++k) {
      const int id = a.add(block_param_name(l, k), shapes[k], layer);
      if (l == slice.first_block && k == 0) ids.blocks = id;
    }
  }
  if (slice.has_head) {
    ids.lnfw = a.add("lnf_w", {C}, head_layer);
    ids.lnfb = a.add("lnf_b", {C}, head_layer);
    if (!slice.has_embedding) ids.wte = a.add("wte", {V, C}, head_layer);  // the head's copy
  }
  return ids;
}

}  // namespace

std::size_t gpt_stage::param_floats(const gpt_config& cfg, const stage_slice& slice) {
  arena layout;  // laid out, not allocated
  add_param_tensors(layout, cfg, slice);
  return layout.numel();
}

std::uint64_t gpt_stage::slot_bytes(const gpt_config& cfg, const stage_slice& slice, int batch, int seq_len) {
  arena layout;  // laid out, not allocated
  add_slot_tensors(layout, cfg, slice, batch, seq_len);
  return 2 * layout.bytes();  // the activations and their gradients
}

gpt_stage::gpt_stage(const gpt_config& cfg, const stage_slice& slice, const stage_options& opt, backend& be)
    : cfg_(cfg), slice_(slice), opt_(opt), be_(&be) {
  const int B = opt.batch, T = opt.seq_len;
  for (arena* a : {&params_, &grads_}) {
    const param_ids ids = add_param_tensors(*a, cfg, slice);
    p_wte_ = ids.wte;
    p_wpe_ = ids.wpe;
    p_blocks_ = ids.blocks;
    p_lnfw_ = ids.lnfw;
    p_lnfb_ = ids.lnfb;
    a->allocate(be);
  }
  slots_.resize(opt.slots);
  for (slot_data& s : slots_) {
    for (arena* a : {&s.acts, &s.dacts}) {
      add_slot_tensors(*a, cfg, slice, B, T);
      a->allocate(be);
    }
    if (slice.has_embedding) s.tokens = buffer(be, sizeof(int) * static_cast<std::size_t>(B) * T);
    if (slice.has_head) s.targets = buffer(be, sizeof(int) * static_cast<std::size_t>(B) * T);
  }
}

namespace {
// Activation ids inside a slot's arenas (the layout of the constructor).
constexpr int a_in = 0;
int a_blk(const stage_slice& s, int l, int k) { return 1 + (l - s.first_block) * NBA + k; }
int a_fin(const stage_slice& s, int k) { return 1 + (s.last_block - s.first_block) * NBA + k; }
}  // namespace

int gpt_stage::a_out() const {
  return slice_.last_block > slice_.first_block ? a_blk(slice_, slice_.last_block - 1, RES3) : a_in;
}

std::string gpt_stage::where() const {
  std::string s = "gpt_stage ";
  if (slice_.has_embedding) s += "embedding + ";
  s += "blocks [" + str(slice_.first_block) + ", " + str(slice_.last_block) + ")";
  if (slice_.has_head) s += " + head";
  return s;
}

void gpt_stage::init(std::uint64_t seed) {
  // Replays gpt::init's draws over the whole model's tensors in its arena order (wte, wpe, blocks,
  // lnf), keeping the values of this stage's tensors.
  rng r(seed);
  const int V = cfg_.vocab_size, C = cfg_.channels, L = cfg_.num_layers;
  std::vector<float> host(params_.numel(), 0.0f);
  auto fill = [&](const std::string& name, std::size_t numel) {
    const init_rule rule = init_rule_for(name, L);
    const int id = params_.find(name);
    float* p = id >= 0 ? host.data() + params_.tensors()[id].offset : nullptr;
    assert(id < 0 || params_.tensors()[id].numel == numel);
    if (rule.kind == init_rule::ones && p != nullptr) {
      for (std::size_t i = 0; i < numel; ++i) p[i] = 1.0f;
    } else if (rule.kind == init_rule::normal) {
      for (std::size_t i = 0; i < numel; ++i) {
        const float x = rule.std * r.normal();
        if (p != nullptr) p[i] = x;
      }
    }
  };
  const std::size_t c = static_cast<std::size_t>(C);
  fill("wte", static_cast<std::size_t>(V) * c);
  fill("wpe", static_cast<std::size_t>(cfg_.max_seq_len) * c);
  for (int l = 0; l < L; ++l) {
    const std::size_t sizes[NBP] = {c, c, 3 * c * c, 3 * c, c * c, c, c, c, 4 * c * c, 4 * c, 4 * c * c, c};
    for (int k = 0; k < NBP; ++k) fill(block_param_name(l, k), sizes[k]);
  }
  fill("lnf_w", c);
  fill("lnf_b", c);
  params_.from_host(*be_, host);
}

result<void> gpt_stage::check_slot(int slot, const char* pass) const {
  if (slot < 0 || slot >= static_cast<int>(slots_.size())) {
    return bad(where() + ": " + pass + " on slot " + str(slot) + ", out of range [0, " +
               str(static_cast<int>(slots_.size())) + ")");
  }
  return {};
}

result<float> gpt_stage::forward(int slot, const stage_input& in) {
  if (auto c = check_slot(slot, "forward"); !c) return c.error();
  slot_data& s = slots_[slot];
  if (s.state == slot_state::forwarded || s.state == slot_state::input_done) {
    return bad(where() + ": forward on slot " + str(slot) + ", which still holds a microbatch whose " +
               (s.state == slot_state::forwarded ? "backward" : "backward_weight") +
               " has not run (release() drops it)");
  }
  if (slice_.has_embedding && in.tokens == nullptr)
    return bad(where() + ": forward on slot " + str(slot) + " without tokens");
  if (!slice_.has_embedding && in.activations == nullptr) {
    return bad(where() + ": forward on slot " + str(slot) + " without input activations");
  }
  const int B = opt_.batch, T = opt_.seq_len, C = cfg_.channels, V = cfg_.vocab_size, N = B * T;
  backend& be = *be_;
  auto P = [&](int id) { return params_.data(id); };
  auto A = [&](int id) { return s.acts.data(id); };
  if (slice_.has_embedding) {
    be.upload(s.tokens.get(), in.tokens, sizeof(int) * N);
    // out: (B,T,C)
    be.encoder_forward(A(a_in), s.tokens.i32(), P(p_wte_), P(p_wpe_), B, T, C);
  } else {
    be.upload(A(a_in), in.activations, sizeof(float) * static_cast<std::size_t>(N) * C);
  }
  for (int l = slice_.first_block; l < slice_.last_block; ++l) block_forward(s, l);
  s.has_targets = false;
  float loss = std::numeric_limits<float>::quiet_NaN();
  if (slice_.has_head) {
    const int last = a_out();
    be.layernorm_forward(A(a_fin(slice_, LNF)), A(a_fin(slice_, LNF_MEAN)), A(a_fin(slice_, LNF_RSTD)), A(last),
                         P(p_lnfw_), P(p_lnfb_), N, C);
    be.matmul_forward(A(a_fin(slice_, LOGITS)), A(a_fin(slice_, LNF)), P(p_wte_), nullptr, N, C, V);
    if (in.targets != nullptr) {
      s.has_targets = true;
      be.upload(s.targets.get(), in.targets, sizeof(int) * N);
      be.softmax_crossentropy_forward(A(a_fin(slice_, LOSSES)), A(a_fin(slice_, PROBS)), A(a_fin(slice_, LOGITS)),
                                      s.targets.i32(), N, V);
      std::vector<float> losses(N);
      be.download(losses.data(), A(a_fin(slice_, LOSSES)), sizeof(float) * N);
      double sum = 0.0;
      for (float x : losses) sum += x;
      loss = static_cast<float>(sum / N);
    }
  }
  be.synchronize();
  s.state = slot_state::forwarded;
  return loss;
}

void gpt_stage::block_forward(slot_data& s, int l) {
  const int B = opt_.batch, T = opt_.seq_len, NH = cfg_.num_heads, C = cfg_.channels, N = B * T;
  const std::size_t NC = static_cast<std::size_t>(N) * C;
  backend& be = *be_;
  const int in = l == slice_.first_block ? a_in : a_blk(slice_, l - 1, RES3);
  auto pa = [&](int k) { return params_.data(p_blocks_ + (l - slice_.first_block) * NBP + k); };
  auto aa = [&](int k) { return s.acts.data(a_blk(slice_, l, k)); };
  float* x = s.acts.data(in);
  // As gpt::forward_layer, one block: x (B,T,C) -> res3 (B,T,C).
  be.layernorm_forward(aa(LN1), aa(LN1_MEAN), aa(LN1_RSTD), x, pa(LN1W), pa(LN1B), N, C);
  be.matmul_forward(aa(QKV), aa(LN1), pa(QKVW), pa(QKVB), N, C, 3 * C);
  be.attention_forward(aa(ATTY), aa(PREATT), aa(ATT), aa(QKV), B, T, C, NH);
  be.matmul_forward(aa(ATTPROJ), aa(ATTY), pa(PROJW), pa(PROJB), N, C, C);
  be.residual_forward(aa(RES2), x, aa(ATTPROJ), NC);
  be.layernorm_forward(aa(LN2), aa(LN2_MEAN), aa(LN2_RSTD), aa(RES2), pa(LN2W), pa(LN2B), N, C);
  be.matmul_forward(aa(FCH), aa(LN2), pa(FCW), pa(FCB), N, C, 4 * C);
  be.gelu_forward(aa(FCH_GELU), aa(FCH), NC * 4);
  be.matmul_forward(aa(FCPROJ), aa(FCH_GELU), pa(FCPROJW), pa(FCPROJB), N, 4 * C, C);
  be.residual_forward(aa(RES3), aa(RES2), aa(FCPROJ), NC);
}

result<void> gpt_stage::backward_input(int slot, const float* output_grad) {
  if (auto c = check_slot(slot, "backward_input"); !c) return c.error();
  slot_data& s = slots_[slot];
  if (s.state != slot_state::forwarded) {
    const char* why = s.state == slot_state::input_done ? "(its backward_input already ran)"
                      : s.state == slot_state::done     ? "(its backward already ran)"
                                                        : "(run forward first)";
    return bad(where() + ": backward_input on slot " + str(slot) + ", which holds no forward pass " + why);
  }
  if (slice_.has_head && !s.has_targets) {
    return bad(where() + ": backward_input on slot " + str(slot) + ": its forward had no targets, so no loss");
  }
  if (slice_.has_head && output_grad != nullptr) {
    return bad(where() + ": backward_input on slot " + str(slot) +
               " with an output gradient: the last stage starts from its loss (pass null)");
  }
  if (!slice_.has_head && output_grad == nullptr) {
    return bad(where() + ": backward_input on slot " + str(slot) + " without the gradient of its output");
  }
  const int B = opt_.batch, T = opt_.seq_len, C = cfg_.channels, V = cfg_.vocab_size, N = B * T;
  backend& be = *be_;
  auto P = [&](int id) { return params_.data(id); };
  auto A = [&](int id) { return s.acts.data(id); };
  auto D = [&](int id) { return s.dacts.data(id); };
  s.dacts.zero(be);  // the kernels accumulate
  const int last = a_out();
  if (slice_.has_head) {
    // Gradient of the step's mean loss over microbatches x B x T rows (the header).
    const float dloss = 1.0f / static_cast<float>(static_cast<long long>(N) * opt_.microbatches);
    be.softmax_crossentropy_backward(D(a_fin(slice_, LOGITS)), A(a_fin(slice_, PROBS)), s.targets.i32(), dloss, N, V);
    be.matmul_backward(D(a_fin(slice_, LNF)), nullptr, nullptr, D(a_fin(slice_, LOGITS)), A(a_fin(slice_, LNF)),
                       P(p_wte_), N, C, V);
    be.layernorm_backward(D(last), nullptr, nullptr, D(a_fin(slice_, LNF)), A(last), P(p_lnfw_),
                          A(a_fin(slice_, LNF_MEAN)), A(a_fin(slice_, LNF_RSTD)), N, C);
  } else {
    be.upload(D(last), output_grad, sizeof(float) * static_cast<std::size_t>(N) * C);
  }
  for (int l = slice_.last_block - 1; l >= slice_.first_block; --l) block_backward_input(s, l);
  be.synchronize();
  s.state = slot_state::input_done;
  return {};
}

void gpt_stage::block_backward_input(slot_data& s, int l) {
  const int B = opt_.batch, T = opt_.seq_len, NH = cfg_.num_heads, C = cfg_.channels, N = B * T;
  const std::size_t NC = static_cast<std::size_t>(N) * C;
  backend& be = *be_;
  const int in = l == slice_.first_block ? a_in : a_blk(slice_, l - 1, RES3);
  auto pa = [&](int k) { return params_.data(p_blocks_ + (l - slice_.first_block) * NBP + k); };
  auto aa = [&](int k) { return s.acts.data(a_blk(slice_, l, k)); };
  auto da = [&](int k) { return s.dacts.data(a_blk(slice_, l, k)); };
  float* x = s.acts.data(in);
  float* dx = s.dacts.data(in);
  // As gpt::backward_layer with the weight gradients left out (backward_weight adds them).
  be.residual_backward(da(RES2), da(FCPROJ), da(RES3), NC);
  be.matmul_backward(da(FCH_GELU), nullptr, nullptr, da(FCPROJ), aa(FCH_GELU), pa(FCPROJW), N, 4 * C, C);
  be.gelu_backward(da(FCH), aa(FCH), da(FCH_GELU), NC * 4);
  be.matmul_backward(da(LN2), nullptr, nullptr, da(FCH), aa(LN2), pa(FCW), N, C, 4 * C);
  be.layernorm_backward(da(RES2), nullptr, nullptr, da(LN2), aa(RES2), pa(LN2W), aa(LN2_MEAN), aa(LN2_RSTD), N, C);
  be.residual_backward(dx, da(ATTPROJ), da(RES2), NC);
  be.matmul_backward(da(ATTY), nullptr, nullptr, da(ATTPROJ), aa(ATTY), pa(PROJW), N, C, C);
  be.attention_backward(da(QKV), da(PREATT), da(ATT), da(ATTY), aa(QKV), aa(ATT), B, T, C, NH);
  be.matmul_backward(da(LN1), nullptr, nullptr, da(QKV), aa(LN1), pa(QKVW), N, C, 3 * C);
  be.layernorm_backward(dx, nullptr, nullptr, da(LN1), x, pa(LN1W), aa(LN1_MEAN), aa(LN1_RSTD), N, C);
}

result<void> gpt_stage::backward_weight(int slot) {
  if (auto c = check_slot(slot, "backward_weight"); !c) return c.error();
  slot_data& s = slots_[slot];
  if (s.state != slot_state::input_done) {
    return bad(where() + ": backward_weight on slot " + str(slot) + " before its backward_input" +
               (s.state == slot_state::done ? " (its backward_weight already ran)" : ""));
  }
  const int B = opt_.batch, T = opt_.seq_len, C = cfg_.channels, V = cfg_.vocab_size, N = B * T;
  backend& be = *be_;
  auto P = [&](int id) { return params_.data(id); };
  auto G = [&](int id) { return grads_.data(id); };
  auto A = [&](int id) { return s.acts.data(id); };
  auto D = [&](int id) { return s.dacts.data(id); };
  if (slice_.has_head) {
    const int last = a_out();
    be.matmul_backward(nullptr, G(p_wte_), nullptr, D(a_fin(slice_, LOGITS)), A(a_fin(slice_, LNF)), P(p_wte_), N, C,
                       V);
    be.layernorm_backward(nullptr, G(p_lnfw_), G(p_lnfb_), D(a_fin(slice_, LNF)), A(last), P(p_lnfw_),
                          A(a_fin(slice_, LNF_MEAN)), A(a_fin(slice_, LNF_RSTD)), N, C);
  }
  for (int l = slice_.last_block - 1; l >= slice_.first_block; --l) block_backward_weight(s, l);
  if (slice_.has_embedding) be.encoder_backward(G(p_wte_), G(p_wpe_), D(a_in), s.tokens.i32(), B, T, C);
  be.synchronize();
  s.state = slot_state::done;
  return {};
}

void gpt_stage::block_backward_weight(slot_data& s, int l) {
  const int N = opt_.batch * opt_.seq_len, C = cfg_.channels;
  backend& be = *be_;
  const int in = l == slice_.first_block ? a_in : a_blk(slice_, l - 1, RES3);
  const int p0 = p_blocks_ + (l - slice_.first_block) * NBP;
  auto pa = [&](int k) { return params_.data(p0 + k); };
  auto ga = [&](int k) { return grads_.data(p0 + k); };
  auto aa = [&](int k) { return s.acts.data(a_blk(slice_, l, k)); };
  auto da = [&](int k) { return s.dacts.data(a_blk(slice_, l, k)); };
  // Reads the activation gradients backward_input left in the slot.
  be.matmul_backward(nullptr, ga(FCPROJW), ga(FCPROJB), da(FCPROJ), aa(FCH_GELU), pa(FCPROJW), N, 4 * C, C);
  be.matmul_backward(nullptr, ga(FCW), ga(FCB), da(FCH), aa(LN2), pa(FCW), N, C, 4 * C);
  be.layernorm_backward(nullptr, ga(LN2W), ga(LN2B), da(LN2), aa(RES2), pa(LN2W), aa(LN2_MEAN), aa(LN2_RSTD), N, C);
  be.matmul_backward(nullptr, ga(PROJW), ga(PROJB), da(ATTPROJ), aa(ATTY), pa(PROJW), N, C, C);
  be.matmul_backward(nullptr, ga(QKVW), ga(QKVB), da(QKV), aa(LN1), pa(QKVW), N, C, 3 * C);
  be.layernorm_backward(nullptr, ga(LN1W), ga(LN1B), da(LN1), s.acts.data(in), pa(LN1W), aa(LN1_MEAN), aa(LN1_RSTD), N,
                        C);
}

result<void> gpt_stage::backward(int slot, const float* output_grad) {
  if (auto r = backward_input(slot, output_grad); !r) return r;
  return backward_weight(slot);
}

result<void> gpt_stage::release(int slot) {
  if (auto c = check_slot(slot, "release"); !c) return c.error();
  slots_[slot].state = slot_state::free;
  return {};
}

void gpt_stage::zero_grad() { grads_.zero(*be_); }

result<std::vector<float>> gpt_stage::output_host(int slot) const {
  if (auto c = check_slot(slot, "output_host"); !c) return c.error();
  const slot_data& s = slots_[slot];
  if (s.state == slot_state::free) {
    return bad(where() + ": output_host on slot " + str(slot) + ", which holds no forward pass");
  }
  const int id = slice_.has_head ? a_fin(slice_, LOGITS) : a_out();
  std::vector<float> out(s.acts.tensors()[id].numel);
  be_->download(out.data(), s.acts.data(id), out.size() * sizeof(float));
  return out;
}

result<std::vector<float>> gpt_stage::input_grad_host(int slot) const {
  if (auto c = check_slot(slot, "input_grad_host"); !c) return c.error();
  if (slice_.has_embedding)
    return bad(where() + ": input_grad_host: the first stage's input is tokens, with no gradient");
  const slot_data& s = slots_[slot];
  if (s.state != slot_state::input_done && s.state != slot_state::done) {
    return bad(where() + ": input_grad_host on slot " + str(slot) + " before its backward_input");
  }
  std::vector<float> out(s.dacts.tensors()[a_in].numel);
  be_->download(out.data(), s.dacts.data(a_in), out.size() * sizeof(float));
  return out;
}

result<std::vector<float>> gpt_stage::tied_embedding_grad_host() const {
  if (p_wte_ < 0) return bad(where() + ": tied_embedding_grad_host: the stage has neither the embedding nor the head");
  std::vector<float> out(grads_.tensors()[p_wte_].numel);
  be_->download(out.data(), grads_.data(p_wte_), out.size() * sizeof(float));
  return out;
}

result<void> gpt_stage::add_tied_embedding_grad(std::span<const float> other_part) {
  if (p_wte_ < 0) return bad(where() + ": add_tied_embedding_grad: the stage has neither the embedding nor the head");
  if (slice_.has_embedding && slice_.has_head) {
    return bad(where() + ": add_tied_embedding_grad: the stage has both ends; its gradient already sums both parts");
  }
  const std::size_t n = grads_.tensors()[p_wte_].numel;
  if (other_part.size() != n) {
    return bad(where() + ": add_tied_embedding_grad: " + std::to_string(other_part.size()) +
               " floats, expected vocab_size x channels = " + std::to_string(n));
  }
  if (scratch_.bytes() == 0) scratch_ = buffer(*be_, n * sizeof(float));
  be_->upload(scratch_.get(), other_part.data(), n * sizeof(float));
  be_->residual_forward(grads_.data(p_wte_), grads_.data(p_wte_), scratch_.f32(), n);  // elementwise, in place
  be_->synchronize();
  return {};
}

}  // namespace banyan::nn
