// Memory-managed training: the planner's policies and budgets, the executor's placement
// and copies, and exactness: with any plan the gradients and losses are bit-identical to the model
// without a budget on the cpu backend.
#include "banyan/nn/adamw.hpp"
#include "banyan/nn/copy_engine.hpp"
#include "banyan/nn/gpt.hpp"
#include "banyan/nn/memory_plan.hpp"
#include "banyan/nn/rng.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace banyan::nn {
namespace {

const gpt_config small{.vocab_size = 29, .max_seq_len = 16, .num_layers = 3, .num_heads = 2, .channels = 16};
constexpr int B = 2, T = 16;

std::unique_ptr<backend> cpu() {
  auto be = make_backend({.name = "cpu", .threads = 2});
  EXPECT_TRUE(be);
  return std::move(be).value();
}

// Bit patterns, so -0.0 vs 0.0 and NaN payloads count as differences.
std::vector<std::uint32_t> bits(const std::vector<float>& v) {
  std::vector<std::uint32_t> out(v.size());
  std::memcpy(out.data(), v.data(), v.size() * sizeof(float));
  return out;
}

struct trace {
  std::vector<std::uint32_t> first_grads;  // after step 1's backward
  std::vector<std::uint32_t> losses;       // steps 1..steps
  std::vector<std::uint32_t> params;       // after the last step
  memory_stats stats;                      // of the last step, with a budget
};

// `steps` AdamW steps on random batches from `seed`; `setup` may change the model's plan first.
trace train(backend& be, std::optional<memory_options> mem, std::uint64_t seed, int steps,
            const std::function<void(gpt&)>& setup = {}) {
  auto m = gpt::create(small, B, T, be, std::move(mem));
  EXPECT_TRUE(m) << (m ? "" : m.error().message);
  if (!m) return {};
  m->init(seed);
  if (setup) setup(*m);
  adamw opt(be, m->params());
  rng r(seed);
  trace out;
  std::vector<int> tok(B * T), tgt(B * T);
  std::vector<float> losses;
  for (int s = 0; s < steps; ++s) {
    if (m->memory() != nullptr) m->memory()->reset_stats();
    for (int i = 0; i < B * T; ++i) {
      tok[i] = static_cast<int>(r.below(small.vocab_size));
      tgt[i] = static_cast<int>(r.below(small.vocab_size));
    }
    losses.push_back(m->forward(tok.data(), tgt.data(), B, T));
    m->zero_grad();
    m->backward();
    if (s == 0) out.first_grads = bits(m->grads().to_host(be));
    opt.step(m->params().base(), m->grads().base(), {.lr = 1e-2f});
  }
  out.losses = bits(losses);
  out.params = bits(m->params().to_host(be));
  if (m->memory() != nullptr) out.stats = m->memory()->stats();
  return out;
}

memory_graph layout(backend& be) { return gpt::create(small, B, T, be)->memory_layout(); }

memory_costs unit_costs(const memory_graph& g) {
  memory_costs c;
  c.forward_ms.assign(g.ops.size(), 1.0);
  c.backward_ms.assign(g.ops.size(), 2.0);
  c.d2h_bytes_per_ms = c.h2d_bytes_per_ms = 4096;
  return c;
}

std::size_t arenas_bytes(backend& be) { return 2 * gpt::create(small, B, T, be)->activations().bytes(); }

TEST(MemoryPlan, GraphOfTheGptIsValid) {
  auto be = cpu();
  const memory_graph g = layout(*be);
  EXPECT_TRUE(g.validate());
  EXPECT_EQ(g.ops.size(), 1u + 6 * small.num_layers + 3);
  memory_graph bad = g;
  bad.ops[2].inputs.push_back(static_cast<int>(bad.tensors.size()) - 1);  // reads the losses, made last
  auto v = bad.validate();
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().message.find("op `h0.attn` reads `losses` before it is made"), std::string::npos)
      << v.error().message;
}

TEST(MemoryPlan, KeepNeedsLessThanTheTwoArenasBecauseForwardOnlyTensorsAndGradientsAreShortLived) {
  auto be = cpu();
  const memory_graph g = layout(*be);
  const auto keep = compile_plan(g, unit_costs(g), std::vector<memory_decision>(g.ops.size(), memory_decision::keep));
  EXPECT_LT(keep.peak_bytes, arenas_bytes(*be));
  EXPECT_DOUBLE_EQ(keep.predicted_ms, keep.compute_ms);  // nothing to recompute or copy
}

TEST(MemoryPlan, EveryPolicyFitsItsBudgetAndLeanerPlansNeedLess) {
  auto be = cpu();
  const memory_graph g = layout(*be);
  const memory_costs c = unit_costs(g);
  const std::size_t least = minimum_memory(g, c);
  const auto keep = plan_memory(g, c, 1ull << 40, memory_policy::keep);
  ASSERT_TRUE(keep);
  EXPECT_LT(least, keep->peak_bytes);
  for (auto policy : {memory_policy::recompute, memory_policy::swap}) {
    auto p = plan_memory(g, c, keep->peak_bytes, policy);
    ASSERT_TRUE(p) << p.error().message;
    EXPECT_LT(p->peak_bytes, keep->peak_bytes) << to_string(policy);
    EXPECT_GT(p->predicted_ms, p->compute_ms) << to_string(policy);
  }
  // Between the least and keep-all, the searching policies fit every budget.
  for (std::size_t budget = least; budget < keep->peak_bytes; budget += (keep->peak_bytes - least) / 7 + 1) {
    for (auto policy : {memory_policy::greedy, memory_policy::knapsack}) {
      auto p = plan_memory(g, c, budget, policy);
      ASSERT_TRUE(p) << to_string(policy) << " at " << budget << ": " << p.error().message;
      EXPECT_LE(p->peak_bytes, budget) << to_string(policy);
    }
  }
  // With room for everything the knapsack keeps everything.
  auto roomy = plan_memory(g, c, keep->peak_bytes, memory_policy::knapsack);
  ASSERT_TRUE(roomy);
  EXPECT_DOUBLE_EQ(roomy->predicted_ms, roomy->compute_ms);
}

// Chen et al.: segments end where the forward can restart from one layer's outputs (the residual
// stream), about sqrt(n) of them kept; the rest recomputed a segment at a time, so on a deep model
// the peak falls well below keep-all.
TEST(MemoryPlan, SqrtCheckpointsKeepOnlyResidualStreamSegmentEnds) {
  auto be = cpu();
  const gpt_config deep{.vocab_size = 29, .max_seq_len = 16, .num_layers = 12, .num_heads = 2, .channels = 16};
  const memory_graph g = gpt::create(deep, 1, 16, *be)->memory_layout();
  const memory_costs c = unit_costs(g);
  auto p = plan_memory(g, c, 1ull << 40, memory_policy::recompute);
  ASSERT_TRUE(p);
  int kept = 0;
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    bool saves = false;  // some backward reads one of its outputs
    for (const auto& op : g.ops) {
      for (int t : op.saved_reads) saves = saves || g.tensors[t].producer == static_cast<int>(i);
    }
    if (!saves || p->decisions[i] != memory_decision::keep) continue;
    ++kept;
    const std::string& name = g.ops[i].name;
    EXPECT_TRUE(name.find("residual") != std::string::npos || name == "embedding" || name == "ln_f") << name;
  }
  // 26 segment ends (embedding, 2 residuals per block, ln_f): every 5th kept.
  EXPECT_EQ(kept, 5);
  const auto keep = compile_plan(g, c, std::vector<memory_decision>(g.ops.size(), memory_decision::keep));
  EXPECT_LT(p->peak_bytes, keep.peak_bytes / 2) << format_plan(g, *p);
}

TEST(MemoryPlan, ABudgetBelowTheMinimumIsAnErrorNamingIt) {
  auto be = cpu();
  const memory_graph g = layout(*be);
  const memory_costs c = unit_costs(g);
  const std::size_t least = minimum_memory(g, c);
  for (auto policy : {memory_policy::keep, memory_policy::recompute, memory_policy::knapsack}) {
    auto p = plan_memory(g, c, least - 1, policy);
    ASSERT_FALSE(p) << to_string(policy);
    EXPECT_EQ(p.error().code, errc::invalid_argument);
    EXPECT_NE(p.error().message.find("below the minimum"), std::string::npos) << p.error().message;
    EXPECT_NE(p.error().message.find("(" + std::to_string(least) + " bytes)"), std::string::npos) << p.error().message;
  }
  // The model refuses it at creation, with the same message.
  auto m = gpt::create(small, B, T, *be, memory_options{.budget = 4096});
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("below the minimum"), std::string::npos) << m.error().message;
  // keep-all in a budget only leaner plans fit: an error naming what keep needs.
  const auto keep = compile_plan(g, c, std::vector<memory_decision>(g.ops.size(), memory_decision::keep));
  auto tight = plan_memory(g, c, keep.peak_bytes - 1, memory_policy::keep);
  ASSERT_FALSE(tight);
  EXPECT_NE(tight.error().message.find("the keep plan needs"), std::string::npos) << tight.error().message;
}

TEST(MemoryPlan, PolicyNamesParseAndAnUnknownOneIsNamed) {
  EXPECT_EQ(*parse_memory_policy("knapsack"), memory_policy::knapsack);
  auto bad = parse_memory_policy("lru");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("`lru`"), std::string::npos);
}

TEST(MemoryPlan, TableListsEverySavingLayerWithItsDecision) {
  auto be = cpu();
  const memory_graph g = layout(*be);
  auto p = plan_memory(g, unit_costs(g), 1ull << 40, memory_policy::recompute);
  ASSERT_TRUE(p);
  const std::string table = format_plan(g, *p);
  EXPECT_NE(table.find("h2.mlp"), std::string::npos) << table;
  EXPECT_NE(table.find("recompute"), std::string::npos) << table;
  EXPECT_NE(table.find("policy recompute: peak"), std::string::npos) << table;
}

// The cpu copy engine: both directions copy, wait() says whether the copy was still running (it is
// held on its thread until the waiter is stalled on it), and a drained copy is not late.
TEST(CopyEngine, WaitReportsLateCopiesAndBothDirectionsCopy) {
  threaded_copy_engine* self = nullptr;
  std::atomic<bool> hold{true};
  threaded_copy_engine engine([&](bool, copy_engine::ticket t, std::size_t) {
    if (hold.load()) self->await_stalled_on(t);
  });
  self = &engine;
  std::vector<float> dev(1000), host(1000, 0.0f), back(1000, 0.0f);
  for (std::size_t i = 0; i < dev.size(); ++i) dev[i] = static_cast<float>(i) * 0.5f;
  EXPECT_TRUE(engine.wait(engine.to_host(host.data(), dev.data(), dev.size() * sizeof(float))));
  EXPECT_EQ(host, dev);
  hold = false;
  const auto t = engine.to_device(back.data(), host.data(), host.size() * sizeof(float));
  engine.drain();
  EXPECT_FALSE(engine.wait(t));
  EXPECT_EQ(back, dev);
}

// Exactness: every policy, at a budget between its minimum and keep-all, trains bit-identically.
TEST(MemoryExecutor, EveryPolicyTrainsBitIdenticallyToTheUnmanagedModel) {
  auto be = cpu();
  const std::uint64_t seed = 20261201;
  SCOPED_TRACE("seed " + std::to_string(seed));
  const trace want = train(*be, std::nullopt, seed, 10);
  const memory_graph g = layout(*be);
  const memory_costs c = unit_costs(g);
  const std::size_t keep =
      compile_plan(g, c, std::vector<memory_decision>(g.ops.size(), memory_decision::keep)).peak_bytes;
  const std::size_t least = minimum_memory(g, c);
  for (auto policy : {memory_policy::keep, memory_policy::recompute, memory_policy::swap, memory_policy::greedy,
                      memory_policy::knapsack}) {
    const std::size_t budget = policy == memory_policy::keep ? keep : (least + keep) / 2;
    SCOPED_TRACE(std::string(to_string(policy)) + " in " + std::to_string(budget) + " bytes");
    const trace got = train(*be, memory_options{.budget = budget, .policy = policy, .poison = true}, seed, 10);
    EXPECT_EQ(got.first_grads, want.first_grads);
    EXPECT_EQ(got.losses, want.losses);
    EXPECT_EQ(got.params, want.params);
    EXPECT_LE(got.stats.peak_bytes, budget);
    // The plans did what their names say.
    const std::uint64_t recomputes = got.stats.recomputes, prefetches = got.stats.prefetches;
    switch (policy) {
      case memory_policy::keep: EXPECT_EQ(recomputes + prefetches, 0u); break;
      case memory_policy::recompute: EXPECT_GT(recomputes, 0u); break;
      case memory_policy::swap: EXPECT_GT(prefetches, 0u); break;
      case memory_policy::greedy:
      case memory_policy::knapsack: EXPECT_GT(recomputes + prefetches, 0u); break;
    }
  }
}

// Any plan at all: random keep/swap/recompute per layer, seeded.
TEST(MemoryExecutor, RandomPlansTrainBitIdentically) {
  auto be = cpu();
  const std::uint64_t seed = 7;
  const trace want = train(*be, std::nullopt, seed, 3);
  const memory_graph g = layout(*be);
  rng r(seed);
  for (int round = 0; round < 12; ++round) {
    std::vector<memory_decision> d(g.ops.size());
    for (auto& x : d) x = static_cast<memory_decision>(r.below(3));
    const memory_plan plan = compile_plan(g, unit_costs(g), d);
    SCOPED_TRACE("seed " + std::to_string(seed) + ", round " + std::to_string(round));
    const trace got = train(*be, memory_options{.budget = 1ull << 22, .poison = true, .replan = false}, seed, 3,
                            [&](gpt& m) { EXPECT_TRUE(m.memory()->set_plan(plan)); });
    EXPECT_EQ(got.first_grads, want.first_grads);
    EXPECT_EQ(got.losses, want.losses);
  }
}

TEST(MemoryExecutor, MeasuredPeakStaysInTheBudgetAndMatchesThePlan) {
  auto be = cpu();
  const memory_graph g = layout(*be);
  const memory_costs c = unit_costs(g);
  const std::size_t budget =
      (minimum_memory(g, c) +
       compile_plan(g, c, std::vector<memory_decision>(g.ops.size(), memory_decision::keep)).peak_bytes) /
      2;
  auto m = gpt::create(small, B, T, *be, memory_options{.budget = budget, .policy = memory_policy::knapsack});
  ASSERT_TRUE(m) << m.error().message;
  m->init(3);
  std::vector<int> tok(B * T, 1), tgt(B * T, 2);
  for (int s = 0; s < 3; ++s) {  // the first step plans again from measured times
    m->memory()->reset_stats();
    m->forward(tok.data(), tgt.data(), B, T);
    m->zero_grad();
    m->backward();
  }
  const memory_stats st = m->memory()->stats();
  EXPECT_LE(st.peak_bytes, budget);
  EXPECT_LE(st.peak_offset, budget);
  EXPECT_EQ(st.peak_offset, m->memory()->plan().peak_bytes);
  EXPECT_LE(st.peak_bytes, st.peak_offset);
  EXPECT_GT(st.peak_bytes, 0u);
}

// A prefetch that arrives late is waited for: the copy thread holds every copy to the device until
// the model is stalled on it (or a later one), the pool is poisoned with NaN on every placement, and
// the results are still bit-identical.
TEST(MemoryExecutor, LatePrefetchesAreWaitedForNeverReadStale) {
  auto be = cpu();
  const std::uint64_t seed = 11;
  const trace want = train(*be, std::nullopt, seed, 2);
  threaded_copy_engine* engine = nullptr;
  std::atomic<int> held{0};
  memory_options o{.budget = 1ull << 22, .policy = memory_policy::swap, .poison = true, .replan = false};
  o.make_copies = [&] {
    auto e = std::make_unique<threaded_copy_engine>([&](bool to_host, copy_engine::ticket t, std::size_t) {
      if (to_host || engine == nullptr) return;
      engine->await_stalled_on(t);
      ++held;
    });
    engine = e.get();
    return std::unique_ptr<copy_engine>(std::move(e));
  };
  memory_stats st;
  const trace got = train(*be, o, seed, 2, [&](gpt& m) {
    // Swap every layer that can be swapped, whatever the measured costs say.
    const memory_graph& g = m.memory()->graph();
    EXPECT_TRUE(m.memory()->set_plan(
        compile_plan(g, unit_costs(g), std::vector<memory_decision>(g.ops.size(), memory_decision::swap))));
  });
  EXPECT_GT(held.load(), 0);
  EXPECT_EQ(got.first_grads, want.first_grads);
  EXPECT_EQ(got.losses, want.losses);
  EXPECT_EQ(got.params, want.params);
}

TEST(MemoryExecutor, InferenceKeepsTheLogitsAndMatchesTheUnmanagedModel) {
  auto be = cpu();
  auto plain = gpt::create(small, B, T, *be);
  auto managed = gpt::create(small, B, T, *be, memory_options{.budget = 1ull << 24, .policy = memory_policy::swap});
  ASSERT_TRUE(managed) << managed.error().message;
  plain->init(5);
  managed->init(5);
  std::vector<int> tok(T);
  for (int i = 0; i < T; ++i) tok[i] = i % small.vocab_size;
  plain->forward(tok.data(), nullptr, 1, T - 3);
  managed->forward(tok.data(), nullptr, 1, T - 3);
  EXPECT_EQ(bits(managed->logits_row(0, T - 4)), bits(plain->logits_row(0, T - 4)));
  EXPECT_EQ(managed->memory()->stats().offloads, 0u);  // an inference pass saves nothing
}

TEST(MemoryExecutor, CudaSwapPlanMatchesTheCpu) {
  auto gpu = make_backend({.name = "cuda"});
  if (!gpu) GTEST_SKIP() << "no CUDA device here: " << gpu.error().message;
  auto be = cpu();
  const std::uint64_t seed = 5;
  auto m = gpt::create(small, B, T, **gpu, memory_options{.budget = 1ull << 24, .policy = memory_policy::swap});
  ASSERT_TRUE(m) << m.error().message;
  auto ref = gpt::create(small, B, T, *be);
  m->init(seed);
  ref->init(seed);
  std::vector<int> tok(B * T), tgt(B * T);
  rng r(seed);
  for (int i = 0; i < B * T; ++i) {
    tok[i] = static_cast<int>(r.below(small.vocab_size));
    tgt[i] = static_cast<int>(r.below(small.vocab_size));
  }
  for (int s = 0; s < 2; ++s) {  // the second step runs the plan made from measured times
    const float a = m->forward(tok.data(), tgt.data(), B, T), b = ref->forward(tok.data(), tgt.data(), B, T);
    EXPECT_NEAR(a, b, 1e-4f);
    m->zero_grad();
    ref->zero_grad();
    m->backward();
    ref->backward();
    const auto ga = m->grads().to_host(**gpu), gb = ref->grads().to_host(*be);
    ASSERT_EQ(ga.size(), gb.size());
    for (std::size_t i = 0; i < ga.size(); ++i) ASSERT_NEAR(ga[i], gb[i], 1e-4f + 1e-3f * std::abs(gb[i])) << i;
  }
  EXPECT_GT(m->memory()->stats().prefetches, 0u);
}

}  // namespace
}  // namespace banyan::nn
