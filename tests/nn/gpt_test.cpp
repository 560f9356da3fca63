// GPT model behaviour: whole-model gradients by finite differences, arena and layer accounting,
// deterministic initialisation, config validation, training on a fixed batch.
#include "banyan/nn/gpt.hpp"
#include "banyan/nn/adamw.hpp"
#include "banyan/nn/rng.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace banyan::nn {
namespace {

const gpt_config tiny{.vocab_size = 13, .max_seq_len = 8, .num_layers = 2, .num_heads = 2, .channels = 8};

std::unique_ptr<backend> cpu() {
  auto be = make_backend({.name = "cpu", .threads = 1});
  EXPECT_TRUE(be);
  return std::move(be).value();
}

TEST(Gpt, ConfigValidationNamesTheField) {
  auto be = cpu();
  gpt_config bad = tiny;
  bad.channels = 9;
  auto m = gpt::create(bad, 1, 4, *be);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, errc::invalid_argument);
  EXPECT_NE(m.error().message.find("channels = 9"), std::string::npos) << m.error().message;
  auto m2 = gpt::create(tiny, 1, 9, *be);
  ASSERT_FALSE(m2);
  EXPECT_NE(m2.error().message.find("seq_len = 9"), std::string::npos) << m2.error().message;
}

TEST(Gpt, InitialisationIsDeterministicInTheSeed) {
  auto be = cpu();
  auto a = gpt::create(tiny, 1, 4, *be), b = gpt::create(tiny, 1, 4, *be);
  a->init(7);
  b->init(7);
  EXPECT_EQ(a->params().to_host(*be), b->params().to_host(*be));
  b->init(8);
  EXPECT_NE(a->params().to_host(*be), b->params().to_host(*be));
}

TEST(Gpt, LayerBytesSumToTheArenas) {
  auto be = cpu();
  auto m = gpt::create(tiny, 2, 8, *be);
  std::size_t params = 0, acts = 0, packed_params = 0, packed_acts = 0;
  for (const auto& l : m->layers()) {
    params += l.param_bytes;
    acts += l.activation_bytes;
  }
  for (const auto& t : m->params().tensors()) packed_params += t.numel * sizeof(float);
  for (const auto& t : m->activations().tensors()) packed_acts += t.numel * sizeof(float);
  EXPECT_EQ(params, packed_params);
  EXPECT_EQ(acts, packed_acts);
  // GPT-2 parameter count: V*C + maxT*C + L*(12*C*C + 13*C) + 2*C.
  const std::size_t C = tiny.channels, L = tiny.num_layers;
  EXPECT_EQ(packed_params / sizeof(float),
            tiny.vocab_size * C + tiny.max_seq_len * C + L * (12 * C * C + 13 * C) + 2 * C);
  EXPECT_EQ(m->layers().size(), 1u + 6 * L + 3);
}

TEST(Gpt, NumParamsCountsParametersNotTheArenaPadding) {
  auto be = cpu();
  // 20 channels: the (20) layernorm and bias tensors are no multiple of 16 floats, so the arena pads
  // after each of them (each tensor starts at a multiple of 16 floats).
  const gpt_config cfg{.vocab_size = 61, .max_seq_len = 16, .num_layers = 2, .num_heads = 4, .channels = 20};
  auto m = gpt::create(cfg, 1, 4, *be);
  ASSERT_TRUE(m);
  const std::size_t C = 20, L = 2;
  EXPECT_EQ(m->num_params(), 61 * C + 16 * C + L * (12 * C * C + 13 * C) + 2 * C);
  EXPECT_EQ(m->num_params(), 11700u);
  // Padding to the next multiple of 16 after each tensor: wte 1220 -> +12, wpe 320 -> 0; per block
  // 20 -> +12 (ln1_w, ln1_b, proj_b, ln2_w, ln2_b, fcproj_b), qkv_b 60 -> +4, fc_b 80 and the weights
  // (multiples of 400) -> 0; lnf_w +12, lnf_b none (nothing follows it).
  EXPECT_EQ(m->params().numel(), m->num_params() + 12 + L * (6 * 12 + 4) + 12);
  EXPECT_EQ(m->params().numel(), 11876u);
  for (const auto& t : m->params().tensors()) EXPECT_EQ(t.offset % 16, 0u) << t.name;
}

TEST(Gpt, ProfilingRecordsPerLayerTimes) {
  auto be = cpu();
  auto m = gpt::create(tiny, 2, 8, *be);
  m->init(1);
  std::vector<int> tok(16, 3), tgt(16, 4);
  m->set_profiling(true);
  m->forward(tok.data(), tgt.data(), 2, 8);
  m->zero_grad();
  m->backward();
  double fwd = 0, bwd = 0;
  for (const auto& l : m->layers()) {
    EXPECT_GE(l.forward_ms, 0.0) << l.name;
    fwd += l.forward_ms;
    bwd += l.backward_ms;
  }
  EXPECT_GT(fwd, 0.0);
  EXPECT_GT(bwd, 0.0);
}

TEST(Gpt, WholeModelGradientMatchesFiniteDifferences) {
  const std::uint64_t seed = 99;
  SCOPED_TRACE("seed " + std::to_string(seed));
  auto be = cpu();
  const int B = 2, T = 6;
  auto m = gpt::create(tiny, B, T, *be);
  m->init(seed);
  rng r(seed);
  std::vector<int> tok(B * T), tgt(B * T);
  for (auto& x : tok) x = static_cast<int>(r.below(tiny.vocab_size));
  for (auto& x : tgt) x = static_cast<int>(r.below(tiny.vocab_size));
  // Scale weights up so gradients are far from zero everywhere.
  auto p = m->params().to_host(*be);
  for (auto& x : p) x *= 10.0f;
  for (const auto& t : m->params().tensors()) {
    if (t.name.ends_with("ln1_w") || t.name.ends_with("ln2_w") || t.name == "lnf_w") {
      for (std::size_t i = 0; i < t.numel; ++i) p[t.offset + i] = 1.0f + 0.1f * r.normal();
    }
  }
  m->params().from_host(*be, p);
  m->forward(tok.data(), tgt.data(), B, T);
  m->zero_grad();
  m->backward();
  const auto g = m->grads().to_host(*be);
  // Central differences in fp32 at a few coordinates of every tensor.
  for (const auto& t : m->params().tensors()) {
    double scale = 0.0;
    for (std::size_t i = 0; i < t.numel; ++i) scale = std::max(scale, static_cast<double>(std::fabs(g[t.offset + i])));
    for (int s = 0; s < 3; ++s) {
      const std::size_t i = t.offset + r.below(static_cast<std::uint32_t>(t.numel));
      const float orig = p[i], h = 1e-2f;
      p[i] = orig + h;
      m->params().from_host(*be, p);
      const double up = m->forward(tok.data(), tgt.data(), B, T);
      p[i] = orig - h;
      m->params().from_host(*be, p);
      const double down = m->forward(tok.data(), tgt.data(), B, T);
      p[i] = orig;
      const double numeric = (up - down) / (2 * h);
      EXPECT_NEAR(g[i], numeric, 3e-2 * scale + 2e-4) << t.name << " at " << i - t.offset;
    }
  }
  m->params().from_host(*be, p);
}

TEST(Gpt, OverfitsAFixedBatch) {
  const std::uint64_t seed = 5;
  SCOPED_TRACE("seed " + std::to_string(seed));
  auto be = cpu();
  const int B = 2, T = 8;
  auto m = gpt::create(tiny, B, T, *be);
  m->init(seed);
  rng r(seed);
  std::vector<int> tok(B * T), tgt(B * T);
  for (auto& x : tok) x = static_cast<int>(r.below(tiny.vocab_size));
  for (auto& x : tgt) x = static_cast<int>(r.below(tiny.vocab_size));
  adamw opt(*be, m->params());
  const adamw_config cfg{.lr = 1e-2f};
  float first = 0, last = 0;
  for (int s = 0; s < 150; ++s) {
    last = m->forward(tok.data(), tgt.data(), B, T);
    if (s == 0) first = last;
    m->zero_grad();
    m->backward();
    opt.step(m->params().base(), m->grads().base(), cfg);
  }
  EXPECT_NEAR(first, std::log(static_cast<float>(tiny.vocab_size)), 0.2f);
  EXPECT_LT(last, 0.1f * first) << "first " << first << " last " << last;
}

TEST(Gpt, ShorterSequencesUseThePrefixOfTheArenas) {
  // A forward at T=3 must give the same logits for those positions as one at T=8 (causality).
  auto be = cpu();
  auto m = gpt::create(tiny, 1, 8, *be);
  m->init(3);
  std::vector<int> tok{1, 2, 3, 4, 5, 6, 7, 8};
  m->forward(tok.data(), nullptr, 1, 8);
  const auto full = m->logits_row(0, 2);
  m->forward(tok.data(), nullptr, 1, 3);
  const auto part = m->logits_row(0, 2);
  for (std::size_t i = 0; i < full.size(); ++i) EXPECT_NEAR(full[i], part[i], 1e-5f) << i;
}

TEST(Adamw, ClipsToTheGlobalNorm) {
  auto be = cpu();
  std::vector<float> p{1, 1}, g{3, 4};
  arena params, grads;
  for (arena* a : {&params, &grads}) {
    a->add("p", {2}, 0);
    a->allocate(*be);
  }
  params.from_host(*be, p);
  grads.from_host(*be, g);
  adamw opt(*be, params);
  const float norm = opt.step(params.base(), grads.base(), {.lr = 0.1f, .grad_clip = 1.0f});
  EXPECT_NEAR(norm, 5.0f, 1e-6f);
  g = grads.to_host(*be);
  EXPECT_NEAR(g[0], 0.6f, 1e-5f);
  EXPECT_NEAR(g[1], 0.8f, 1e-5f);
  // First Adam step moves each coordinate by ~lr against the gradient's sign.
  p = params.to_host(*be);
  EXPECT_NEAR(p[0], 0.9f, 1e-4f);
  EXPECT_NEAR(p[1], 0.9f, 1e-4f);
  EXPECT_EQ(opt.steps(), 1);
}

TEST(Adamw, RejectsBadSettings) {
  auto s = adamw_config{.lr = -1.0f}.validate();
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("lr"), std::string::npos);
  EXPECT_FALSE((adamw_config{.beta2 = 1.0f}.validate()));
}

TEST(Backend, UnknownNameIsAnError) {
  auto be = make_backend({.name = "tpu"});
  ASSERT_FALSE(be);
  EXPECT_EQ(be.error().code, errc::invalid_argument);
  EXPECT_NE(be.error().message.find("tpu"), std::string::npos);
}

}  // namespace
}  // namespace banyan::nn
