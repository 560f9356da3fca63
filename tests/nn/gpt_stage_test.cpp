// Pipeline-stage slices of a GPT (gpt_stage.hpp): S stages run over m microbatches, in GPipe order,
// with the backward split into I and W (W delayed), and 1F1B-like with slots reused, give the whole
// model's loss and gradients on the concatenated batch; bad cuts and passes out of order are errors.
#include "banyan/nn/gpt_stage.hpp"
#include "banyan/nn/gpt.hpp"
#include "banyan/nn/rng.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace banyan::nn {
namespace {

const gpt_config cfg{.vocab_size = 64, .max_seq_len = 8, .num_layers = 4, .num_heads = 2, .channels = 32};
constexpr int B = 2, T = 8;

std::unique_ptr<backend> cpu() {
  auto be = make_backend({.name = "cpu", .threads = 1});
  EXPECT_TRUE(be);
  return std::move(be).value();
}

using grad_map = std::map<std::string, std::vector<float>>;

grad_map by_name(const arena& a, backend& be) {
  const std::vector<float> host = a.to_host(be);
  grad_map out;
  for (const auto& t : a.tensors()) {
    out[t.name] = std::vector<float>(host.begin() + static_cast<long>(t.offset),
                                     host.begin() + static_cast<long>(t.offset + t.numel));
  }
  return out;
}

struct batch {
  std::vector<int> tokens, targets;  // m*B*T: microbatch i is rows [i*B, (i+1)*B)
};

batch make_batch(std::uint64_t seed, int m) {
  rng r(seed);
  batch b;
  for (int i = 0; i < m * B * T; ++i) {
    b.tokens.push_back(static_cast<int>(r.below(cfg.vocab_size)));
    b.targets.push_back(static_cast<int>(r.below(cfg.vocab_size)));
  }
  return b;
}

struct outcome {
  double loss = 0;
  grad_map grads;
};

// The whole model on the m microbatches concatenated along the batch.
outcome whole_model(backend& be, std::uint64_t seed, const batch& data, int m) {
  auto g = gpt::create(cfg, m * B, T, be);
  EXPECT_TRUE(g);
  g->init(seed);
  outcome o;
  o.loss = g->forward(data.tokens.data(), data.targets.data(), m * B, T);
  g->zero_grad();
  g->backward();
  o.grads = by_name(g->grads(), be);
  return o;
}

enum class order {
  gpipe,         // F for all microbatches, then full B for all
  split_w_last,  // F for all, then I for all, then W for all (stages and microbatches ascending)
  one_f_one_b,   // per microbatch F then I; W one microbatch late; 2 slots, reused
};

const char* name(order o) {
  switch (o) {
    case order::gpipe: return "gpipe";
    case order::split_w_last: return "split_w_last";
    case order::one_f_one_b: return "one_f_one_b";
  }
  return "?";
}

// Runs the stages cut at `cuts` over m microbatches in `ord`, skipping the backward of microbatch
// `drop` (-1: none). Returns the mean loss and the gradients by name, with the tied embedding's two
// parts exchanged and summed as a trainer would.
outcome pipelined(backend& be, std::uint64_t seed, const batch& data, int m, const std::vector<stage_slice>& slices,
                  order ord, int drop = -1) {
  outcome o;
  const int S = static_cast<int>(slices.size());
  const int slots = ord == order::one_f_one_b ? std::min(2, m) : m;
  std::vector<gpt_stage> st;
  for (const auto& sl : slices) {
    auto s = gpt_stage::create(cfg, sl, {.batch = B, .seq_len = T, .slots = slots, .microbatches = m}, be);
    EXPECT_TRUE(s) << s.error().message;
    st.push_back(std::move(s).value());
    st.back().init(seed);
    st.back().zero_grad();
  }
  const int n = B * T;
  // outs[s][i]: stage s's output for microbatch i; dins[s][i]: the gradient of stage s's input.
  std::vector<std::vector<std::vector<float>>> outs(S, std::vector<std::vector<float>>(m)), dins = outs;
  auto slot_of = [&](int i) { return i % slots; };
  auto F = [&](int s, int i) {
    stage_input in;
    if (s == 0) in.tokens = data.tokens.data() + i * n;
    else in.activations = outs[s - 1][i].data();
    if (s == S - 1) in.targets = data.targets.data() + i * n;
    auto loss = st[s].forward(slot_of(i), in);
    ASSERT_TRUE(loss) << loss.error().message;
    if (s == S - 1) o.loss += *loss / m;
    else outs[s][i] = *st[s].output_host(slot_of(i));
  };
  auto I = [&](int s, int i) {
    auto r = st[s].backward_input(slot_of(i), s == S - 1 ? nullptr : dins[s + 1][i].data());
    ASSERT_TRUE(r) << r.error().message;
    if (s > 0) dins[s][i] = *st[s].input_grad_host(slot_of(i));
  };
  auto W = [&](int s, int i) {
    auto r = st[s].backward_weight(slot_of(i));
    ASSERT_TRUE(r) << r.error().message;
  };
  switch (ord) {
    case order::gpipe:
    case order::split_w_last:
      for (int i = 0; i < m; ++i) {
        for (int s = 0; s < S; ++s) F(s, i);
      }
      for (int i = 0; i < m; ++i) {
        if (i == drop) continue;
        for (int s = S - 1; s >= 0; --s) {
          if (ord == order::split_w_last) {
            I(s, i);
          } else {
            auto r = st[s].backward(slot_of(i), s == S - 1 ? nullptr : dins[s + 1][i].data());
            EXPECT_TRUE(r) << r.error().message;
            if (s > 0) dins[s][i] = *st[s].input_grad_host(slot_of(i));
          }
        }
      }
      if (ord == order::split_w_last) {
        for (int s = 0; s < S; ++s) {
          for (int i = 0; i < m; ++i) {
            if (i != drop) W(s, i);
          }
        }
      }
      break;
    case order::one_f_one_b:
      for (int i = 0; i < m; ++i) {
        for (int s = 0; s < S; ++s) F(s, i);
        if (i == drop) {
          for (int s = 0; s < S; ++s) EXPECT_TRUE(st[s].release(slot_of(i)));
        } else {
          for (int s = S - 1; s >= 0; --s) I(s, i);
        }
        if (i > 0 && i - 1 != drop) {
          for (int s = S - 1; s >= 0; --s) W(s, i - 1);
        }
      }
      if (m - 1 != drop) {
        for (int s = S - 1; s >= 0; --s) W(s, m - 1);
      }
      break;
  }
  // The tied embedding: the two ends exchange their parts.
  if (S > 1) {
    auto first = st.front().tied_embedding_grad_host(), last = st.back().tied_embedding_grad_host();
    EXPECT_TRUE(first && last);
    EXPECT_TRUE(st.front().add_tied_embedding_grad(*last));
    EXPECT_TRUE(st.back().add_tied_embedding_grad(*first));
    EXPECT_EQ(*st.front().tied_embedding_grad_host(), *st.back().tied_embedding_grad_host())
        << "both copies of wte must get the same gradient";
  }
  for (auto& s : st) {
    for (auto& [k, v] : by_name(s.grads(), be)) {
      if (k == "wte" && o.grads.count(k) != 0) {
        EXPECT_EQ(o.grads[k], v);
        continue;
      }
      EXPECT_EQ(o.grads.count(k), 0u) << k << " is on two stages";
      o.grads[k] = std::move(v);
    }
  }
  return o;
}

outcome pipelined(backend& be, std::uint64_t seed, const batch& data, int m, const std::vector<int>& cuts, order ord,
                  int drop = -1) {
  auto slices = cut_stages(cfg.num_layers, cuts);
  EXPECT_TRUE(slices) << slices.error().message;
  return pipelined(be, seed, data, m, slices ? *slices : std::vector<stage_slice>{}, ord, drop);
}

// The largest max|diff| / max|ref| over the tensors, and its tensor's name.
std::pair<double, std::string> worst_gradient(const grad_map& ref, const grad_map& got) {
  std::pair<double, std::string> worst{0.0, ""};
  for (const auto& [k, r] : ref) {
    auto it = got.find(k);
    if (it == got.end() || it->second.size() != r.size()) return {INFINITY, k + " (missing)"};
    double d = 0, s = 0;
    for (std::size_t i = 0; i < r.size(); ++i) {
      d = std::max(d, static_cast<double>(std::fabs(r[i] - it->second[i])));
      s = std::max(s, static_cast<double>(std::fabs(r[i])));
    }
    const double rel = s > 0 ? d / s : d;
    if (rel > worst.first) worst = {rel, k};
  }
  if (got.size() != ref.size()) return {INFINITY, "extra tensors"};
  return worst;
}

TEST(GptStage, InitGivesTheWholeModelsWeights) {
  auto be = cpu();
  const std::uint64_t seed = 11;
  SCOPED_TRACE("seed " + std::to_string(seed));
  auto g = gpt::create(cfg, B, T, *be);
  ASSERT_TRUE(g);
  g->init(seed);
  const grad_map ref = by_name(g->params(), *be);
  auto slices = cut_stages(cfg.num_layers, {1, 3});
  ASSERT_TRUE(slices);
  std::size_t seen = 0;
  for (const auto& sl : *slices) {
    auto s = gpt_stage::create(cfg, sl, {.batch = B, .seq_len = T}, *be);
    ASSERT_TRUE(s) << s.error().message;
    s->init(seed);
    for (const auto& [k, v] : by_name(s->params(), *be)) {
      EXPECT_EQ(v, ref.at(k)) << k;
      ++seen;
    }
  }
  EXPECT_EQ(seen, ref.size() + 1);  // wte twice: the embedding and the head's copy
}

TEST(GptStage, StagesMatchTheWholeModelOnTheConcatenatedBatch) {
  auto be = cpu();
  const std::vector<std::vector<int>> cut_sets = {{3}, {1, 3}, {1, 2, 3}, {}};  // S = 2, 3 (uneven), 4, 1
  for (int m : {1, 4}) {
    const std::uint64_t seed = 1000 + static_cast<std::uint64_t>(m);
    const batch data = make_batch(seed, m);
    const outcome ref = whole_model(*be, seed, data, m);
    for (const auto& cuts : cut_sets) {
      for (order ord : {order::gpipe, order::split_w_last, order::one_f_one_b}) {
        SCOPED_TRACE("seed " + std::to_string(seed) + " m " + std::to_string(m) + " S " +
                     std::to_string(cuts.size() + 1) + " order " + name(ord));
        const outcome got = pipelined(*be, seed, data, m, cuts, ord);
        EXPECT_NEAR(got.loss, ref.loss, 1e-6 * std::fabs(ref.loss));
        const auto [rel, tensor] = worst_gradient(ref.grads, got.grads);
        EXPECT_LE(rel, 1e-5) << "worst tensor " << tensor;
      }
    }
  }
}

// cut_stages never makes a stage without a block, but a slice may be the embedding alone or the
// head alone (an lm-head stage): those match too.
TEST(GptStage, EmbeddingAloneAndHeadAloneStagesMatch) {
  auto be = cpu();
  const std::uint64_t seed = 5;
  const int m = 4;
  const batch data = make_batch(seed, m);
  const outcome ref = whole_model(*be, seed, data, m);
  const std::vector<stage_slice> slices = {{0, 0, true, false}, {0, 4, false, false}, {4, 4, false, true}};
  for (order ord : {order::gpipe, order::split_w_last, order::one_f_one_b}) {
    SCOPED_TRACE("seed " + std::to_string(seed) + " order " + name(ord));
    const outcome got = pipelined(*be, seed, data, m, slices, ord);
    EXPECT_NEAR(got.loss, ref.loss, 1e-6 * std::fabs(ref.loss));
    const auto [rel, tensor] = worst_gradient(ref.grads, got.grads);
    EXPECT_LE(rel, 1e-5) << "worst tensor " << tensor;
  }
}

// The stages call only backend kernels, so they run on CUDA as they are: checked against the CPU
// whole model at the CUDA kernels' tolerance. Skips without CUDA or a GPU.
TEST(GptStage, CudaStagesMatchTheCpuWholeModel) {
  auto gpu = make_backend({.name = "cuda"});
  if (!gpu) GTEST_SKIP() << gpu.error().message;
  auto be = cpu();
  const std::uint64_t seed = 31;
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int m = 4;
  const batch data = make_batch(seed, m);
  const outcome ref = whole_model(*be, seed, data, m);
  const outcome got = pipelined(**gpu, seed, data, m, {1, 3}, order::split_w_last);
  EXPECT_NEAR(got.loss, ref.loss, 1e-5 * std::fabs(ref.loss));
  const auto [rel, tensor] = worst_gradient(ref.grads, got.grads);
  EXPECT_LE(rel, 1e-3) << "worst tensor " << tensor;
}

TEST(GptStage, DroppingOneMicrobatchBackwardIsDetected) {
  auto be = cpu();
  const std::uint64_t seed = 77;
  SCOPED_TRACE("seed " + std::to_string(seed));
  const int m = 4;
  const batch data = make_batch(seed, m);
  const outcome ref = whole_model(*be, seed, data, m);
  for (order ord : {order::gpipe, order::split_w_last, order::one_f_one_b}) {
    SCOPED_TRACE(name(ord));
    const outcome got = pipelined(*be, seed, data, m, {1, 3}, ord, /*drop=*/2);
    EXPECT_NEAR(got.loss, ref.loss, 1e-6 * std::fabs(ref.loss));  // the forward still ran
    EXPECT_GT(worst_gradient(ref.grads, got.grads).first, 1e-2);
  }
}

TEST(GptStage, BadCutsAreErrorsNamingTheValue) {
  auto expect_error = [](const result<std::vector<stage_slice>>& r, const std::string& part) {
    ASSERT_FALSE(r) << "expected an error naming `" << part << "`";
    EXPECT_EQ(r.error().code, errc::invalid_argument);
    EXPECT_NE(r.error().message.find(part), std::string::npos) << r.error().message;
  };
  expect_error(cut_stages(4, {0}), "cut 0 = 0");     // an empty first stage
  expect_error(cut_stages(4, {2, 2}), "cut 1 = 2");  // an empty middle stage
  expect_error(cut_stages(4, {1, 4}), "cut 1 = 4");  // an empty last stage
  expect_error(cut_stages(4, {6}), "cut 0 = 6");     // beyond num_layers
  expect_error(cut_stages(4, {3, 1}), "cut 1 = 1");  // not increasing
  auto ok = cut_stages(4, {1, 3});
  ASSERT_TRUE(ok);
  EXPECT_EQ(*ok, (std::vector<stage_slice>{{0, 1, true, false}, {1, 3, false, false}, {3, 4, false, true}}));

  auto be = cpu();
  auto make = [&](stage_slice sl) { return gpt_stage::create(cfg, sl, {.batch = B, .seq_len = T}, *be); };
  auto beyond = make({2, 5, false, false});
  ASSERT_FALSE(beyond);
  EXPECT_NE(beyond.error().message.find("last_block = 5"), std::string::npos) << beyond.error().message;
  auto empty = make({2, 2, false, false});
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message.find("blocks [2, 2) are empty"), std::string::npos) << empty.error().message;
  auto head_early = make({2, 3, false, true});
  ASSERT_FALSE(head_early);
  EXPECT_NE(head_early.error().message.find("last_block = 3 with the head"), std::string::npos)
      << head_early.error().message;
  auto no_slots = gpt_stage::create(cfg, {0, 4, true, true}, {.batch = B, .seq_len = T, .slots = 0}, *be);
  ASSERT_FALSE(no_slots);
  EXPECT_NE(no_slots.error().message.find("slots = 0"), std::string::npos) << no_slots.error().message;
}

TEST(GptStage, PassesOutOfOrderOnASlotAreErrors) {
  auto be = cpu();
  auto st = gpt_stage::create(cfg, {1, 3, false, false}, {.batch = B, .seq_len = T, .slots = 2}, *be);
  ASSERT_TRUE(st) << st.error().message;
  st->init(3);
  auto expect_error = [](const result<void>& r, const std::string& part) {
    ASSERT_FALSE(r) << "expected an error naming `" << part << "`";
    EXPECT_NE(r.error().message.find(part), std::string::npos) << r.error().message;
  };
  const std::vector<float> x(static_cast<std::size_t>(B) * T * cfg.channels, 0.5f), dy = x;
  expect_error(st->backward_input(0, dy.data()), "slot 0, which holds no forward pass (run forward first)");
  expect_error(st->backward_weight(1), "backward_weight on slot 1 before its backward_input");
  expect_error(st->backward_input(2, dy.data()), "slot 2, out of range [0, 2)");
  EXPECT_FALSE(st->input_grad_host(0));
  EXPECT_FALSE(st->output_host(0));
  auto no_input = st->forward(0, {});
  ASSERT_FALSE(no_input);
  EXPECT_NE(no_input.error().message.find("without input activations"), std::string::npos);

  ASSERT_TRUE(st->forward(0, {.activations = x.data()}));
  auto again = st->forward(0, {.activations = x.data()});
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message.find("forward on slot 0, which still holds a microbatch"), std::string::npos)
      << again.error().message;
  expect_error(st->backward_input(0, nullptr), "without the gradient of its output");
  ASSERT_TRUE(st->backward_input(0, dy.data()));
  expect_error(st->backward_input(0, dy.data()), "its backward_input already ran");
  ASSERT_TRUE(st->backward_weight(0));
  expect_error(st->backward_weight(0), "its backward_weight already ran");
  EXPECT_TRUE(st->input_grad_host(0));                     // still readable until the slot's next forward
  ASSERT_TRUE(st->forward(0, {.activations = x.data()}));  // a done slot takes the next microbatch
  ASSERT_TRUE(st->release(0));
  ASSERT_TRUE(st->forward(0, {.activations = x.data()}));

  // The last stage needs targets for a backward and starts from its loss.
  auto last = gpt_stage::create(cfg, {3, 4, false, true}, {.batch = B, .seq_len = T}, *be);
  ASSERT_TRUE(last);
  ASSERT_TRUE(last->forward(0, {.activations = x.data()}));
  expect_error(last->backward(0, nullptr), "its forward had no targets");
  // The tied-embedding exchange checks its size, and a middle stage has no tied embedding.
  expect_error(last->add_tied_embedding_grad(std::vector<float>(3)), "3 floats, expected vocab_size x channels = 2048");
  EXPECT_FALSE(st->tied_embedding_grad_host());
}

}  // namespace
}  // namespace banyan::nn
