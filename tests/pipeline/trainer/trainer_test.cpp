// The pipeline trainer (trainer.hpp) against the whole model: a tiny GPT trained by stage leaves
// under the composite, for shipped schedules at p = 2 and 4, m = 4 and 8, gives the whole gpt's
// gradients after one step (on the m microbatches concatenated) and its losses over 20 AdamW steps;
// a valid reordering of independent actions changes nothing, and a dropped microbatch is detected.
#include "banyan/pipeline/trainer.hpp"
#include "banyan/nn/gpt.hpp"
#include "banyan/nn/rng.hpp"
#include "banyan/pipeline/csv.hpp"
#include "banyan/pipeline/dsl.hpp"
#include "banyan/pipeline/lower.hpp"
#include "banyan/pipeline/render.hpp"
#include "banyan/pipeline/search.hpp"
#include "banyan/pipeline/validate.hpp"

#include <banyan/sdk/app.hpp>
#include <banyan/sdk/component.hpp>
#include <banyan/sdk/context.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>  // header-only (Debian's nlohmann-json3-dev): parses the trace

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace banyan::pipeline {
namespace {

constexpr int B = 2, T = 8, steps = 20;
constexpr std::uint64_t seed = 1234;
constexpr double tolerance = 1e-5;

// 4 blocks, or one per stage when the schedule has more stages (p = 4, v = 2: 8).
nn::gpt_config model(int stages) {
  return {.vocab_size = 64, .max_seq_len = 8, .num_layers = std::max(4, stages), .num_heads = 2, .channels = 32};
}

// Step s's batch: m*B rows of tokens and targets; microbatch i is rows [i*B, (i+1)*B).
struct batch {
  std::vector<int> tokens, targets;
};
batch make_batch(std::uint64_t step, int m) {
  nn::rng r(seed * 7919 + step + 1);
  batch b;
  for (int i = 0; i < m * B * T; ++i) {
    b.tokens.push_back(static_cast<int>(r.below(64)));
    b.targets.push_back(static_cast<int>(r.below(64)));
  }
  return b;
}

using grad_map = std::map<std::string, std::vector<float>>;

struct outcome {
  grad_map grads;             // after step 0, tied parts summed
  std::vector<float> losses;  // per step
  int exit_code = -1;
  std::vector<std::uint64_t> rank_edge_bytes;  // per rank: bytes the broker counted on pp -> r<rank>
  std::vector<std::uint64_t> rank_memory;      // per rank: the memory its leaf reported
};

nn::adamw_config optimizer() {
  nn::adamw_config c;
  c.lr = 1e-3f;
  c.weight_decay = 0.1f;
  c.grad_clip = 1.0f;
  return c;
}

std::unique_ptr<nn::backend> cpu() {
  auto be = nn::make_backend({.name = "cpu", .threads = 1});
  EXPECT_TRUE(be);
  return std::move(be).value();
}

// The whole gpt on the concatenated batch, `steps` AdamW steps.
outcome whole_model(int stages, int m) {
  static std::map<std::pair<int, int>, outcome> cache;
  const nn::gpt_config cfg = model(stages);
  const auto key = std::make_pair(cfg.num_layers, m);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  auto be = cpu();
  auto g = nn::gpt::create(cfg, m * B, T, *be);
  EXPECT_TRUE(g);
  g->init(seed);
  nn::adamw opt(*be, g->params());
  outcome o;
  for (int s = 0; s < steps; ++s) {
    const batch data = make_batch(s, m);
    o.losses.push_back(g->forward(data.tokens.data(), data.targets.data(), m * B, T));
    g->zero_grad();
    g->backward();
    if (s == 0) {
      const std::vector<float> host = g->grads().to_host(*be);
      for (const auto& t : g->grads().tensors()) {
        o.grads[t.name].assign(host.begin() + static_cast<long>(t.offset),
                               host.begin() + static_cast<long>(t.offset + t.numel));
      }
    }
    opt.step(g->params().base(), g->grads().base(), optimizer());
  }
  o.exit_code = 0;
  cache[key] = o;
  return o;
}

// Runs the trainer over `t` in an app of its own. `data_m` is the microbatch count of the data
// (the table's own count unless a test dropped some).
outcome pipelined(const table& t, int data_m, nn::backend_options device = {.name = "cpu", .threads = 1},
                  int fail_at_step = -1, std::vector<int> cuts = {}, routing_mode mode = routing_mode::hier) {
  struct shared {
    std::mutex m;
    outcome o;
  };
  auto sh = std::make_shared<shared>();
  trainer_options opt;
  opt.model = model(t.stages);
  opt.batch = B;
  opt.seq_len = T;
  opt.schedule = t;
  opt.steps = steps;
  opt.seed = seed;
  opt.optimizer = optimizer();
  opt.device = device;
  opt.cuts = cuts;
  trainer_hooks hooks;
  hooks.data = [data_m, fail_at_step](std::int64_t step, int i, int* tokens, int* targets) {
    if (step == fail_at_step) throw std::runtime_error("no data for step " + std::to_string(step));
    const batch b = make_batch(static_cast<std::uint64_t>(step), data_m);
    std::copy_n(b.tokens.begin() + i * B * T, B * T, tokens);
    std::copy_n(b.targets.begin() + i * B * T, B * T, targets);
  };
  hooks.on_step = [sh](const step_report& r) {
    std::lock_guard lock(sh->m);
    sh->o.losses.push_back(r.loss);
  };
  hooks.on_gradients = [sh](std::int64_t step, int stage, const nn::gpt_stage& st) {
    if (step != 0) return;
    const std::vector<float> host = st.grads().to_host(st.device());
    std::lock_guard lock(sh->m);
    for (const auto& tensor : st.grads().tensors()) {
      // wte lives on both ends after the exchange: stage 0's copy stands for it.
      if (tensor.name == "wte" && stage != 0) continue;
      sh->o.grads[tensor.name].assign(host.begin() + static_cast<long>(tensor.offset),
                                      host.begin() + static_cast<long>(tensor.offset + tensor.numel));
    }
  };
  app a("test");
  auto added = add_trainer(a.root(), "pp", opt, hooks);
  EXPECT_TRUE(added) << added.error().what();
  if (!added) return {};
  run_options ro;
  ro.mode = mode;
  ro.threads = 2;
  ro.max_runtime = std::chrono::seconds(60);
  auto r = run(a, ro);
  std::lock_guard lock(sh->m);
  sh->o.exit_code = r.exit_code;
  for (int rank = 0; rank < t.num_ranks(); ++rank) {
    auto v = r.traffic.tree->find("/test/pp/r" + std::to_string(rank));
    EXPECT_TRUE(v);
    if (!v) continue;
    sh->o.rank_edge_bytes.push_back(r.traffic.edges[*v].bytes);
    sh->o.rank_memory.push_back(r.traffic.loads[*v].memory);
  }
  return sh->o;
}

// max|got - want| / max|want| over every parameter, and the worst loss difference.
struct comparison {
  double grad = 0, loss = 0;
  std::string worst;
  bool complete = true;
};
comparison compare(const outcome& got, const outcome& want) {
  comparison c;
  for (const auto& [name, w] : want.grads) {
    auto it = got.grads.find(name);
    if (it == got.grads.end() || it->second.size() != w.size()) {
      c.complete = false;
      c.worst = name + " missing";
      continue;
    }
    double diff = 0, ref = 0;
    for (std::size_t i = 0; i < w.size(); ++i) {
      diff = std::max(diff, static_cast<double>(std::fabs(it->second[i] - w[i])));
      ref = std::max(ref, static_cast<double>(std::fabs(w[i])));
    }
    const double rel = ref > 0 ? diff / ref : diff;
    if (rel > c.grad) {
      c.grad = rel;
      c.worst = name;
    }
  }
  if (got.losses.size() != want.losses.size()) c.complete = false;
  for (std::size_t i = 0; i < std::min(got.losses.size(), want.losses.size()); ++i) {
    c.loss = std::max(c.loss, static_cast<double>(std::fabs(got.losses[i] - want.losses[i])));
  }
  return c;
}

table schedule(const std::string& name, int p, int m, int v) {
  const builtin* b = find_builtin(name);
  EXPECT_NE(b, nullptr) << name;
  auto prog = parse_program(b->text, name);
  EXPECT_TRUE(prog) << prog.error().what();
  auto t = compile(*prog, {.p = p, .m = m, .v = v});
  EXPECT_TRUE(t) << name << " p=" << p << " m=" << m << ": " << t.error().what();
  return t ? *t : table{};
}

struct config {
  std::string name;
  int v;
};

void expect_matches(const table& t, const std::string& what) {
  const outcome want = whole_model(t.stages, t.microbatches);
  const outcome got = pipelined(t, t.microbatches);
  ASSERT_EQ(got.exit_code, 0) << what;
  const comparison c = compare(got, want);
  EXPECT_TRUE(c.complete) << what << ": " << c.worst;
  EXPECT_LE(c.grad, tolerance) << what << ": worst gradient " << c.worst << " (seed " << seed << ")";
  EXPECT_LE(c.loss, tolerance) << what << " (seed " << seed << ")";
}

TEST(PipelineTrainer, ShippedSchedulesMatchTheWholeModel) {
  const std::vector<config> configs = {{"gpipe", 1}, {"1f1b", 1}, {"zb-h1", 1}, {"zb-h2", 1}, {"interleaved-1f1b", 2},
                                       {"zb-v", 2}};
  for (const auto& c : configs) {
    for (int p : {2, 4}) {
      for (int m : {4, 8}) {
        const std::string what = c.name + " p=" + std::to_string(p) + " m=" + std::to_string(m);
        SCOPED_TRACE(what);
        const table t = schedule(c.name, p, m, c.v);
        ASSERT_GT(t.stages, 0);
        expect_matches(t, what);
      }
    }
  }
}

// A table lowered with SEND/RECV actions (what torch.distributed.pipelining runs) trains alike: the
// leaves derive the sends from F and B/I.
TEST(PipelineTrainer, ALoweredTableMatchesToo) {
  const table lowered = lower_comms(schedule("zb-h1", 4, 4, 1));
  ASSERT_TRUE(lowered.has_comms());
  expect_matches(lowered, "zb-h1 p=4 m=4 lowered");
}

// A search result is a table like any other: here a schedule searched for a heavy last stage.
TEST(PipelineTrainer, ASearchedScheduleMatchesToo) {
  costs c = uniform_costs(2, 1, 1, 1);
  c.units.back().t_f *= 1.6, c.units.back().t_i *= 1.6, c.units.back().t_w *= 1.6;
  search_options o;
  o.p = 2, o.m = 4, o.mem_cap = 4, o.seed = seed;
  o.generations = 3, o.population = 8, o.local_steps = 300, o.time_limit_s = 60;
  auto r = search(c, o);
  ASSERT_TRUE(r) << r.error().what();
  expect_matches(r->best.t, "searched p=2 m=4 (" + r->best.origin + ", v=" + std::to_string(r->best.v) + ")");
}

// Uneven cuts: stage 0 holds one block, stage 1 three.
TEST(PipelineTrainer, UnevenCutsMatchToo) {
  const table t = schedule("1f1b", 2, 4, 1);
  const outcome want = whole_model(t.stages, t.microbatches);
  const outcome got = pipelined(t, t.microbatches, {.name = "cpu", .threads = 1}, -1, {1});
  ASSERT_EQ(got.exit_code, 0);
  const comparison c = compare(got, want);
  EXPECT_TRUE(c.complete) << c.worst;
  EXPECT_LE(c.grad, tolerance) << "worst gradient " << c.worst << " (seed " << seed << ")";
  EXPECT_LE(c.loss, tolerance) << "(seed " << seed << ")";
}

// The flat baselines route the same messages another way (no hop through the composite): the
// training is the same.
TEST(PipelineTrainer, FlatRoutingModesTrainAlike) {
  const table t = schedule("zb-v", 2, 4, 2);
  const outcome want = whole_model(t.stages, t.microbatches);
  for (routing_mode mode : {routing_mode::flat_p2p, routing_mode::flat_node}) {
    const outcome got = pipelined(t, t.microbatches, {.name = "cpu", .threads = 1}, -1, {}, mode);
    ASSERT_EQ(got.exit_code, 0) << to_string(mode);
    const comparison c = compare(got, want);
    EXPECT_TRUE(c.complete) << to_string(mode) << ": " << c.worst;
    EXPECT_LE(c.grad, tolerance) << to_string(mode) << ": worst gradient " << c.worst << " (seed " << seed << ")";
    EXPECT_LE(c.loss, tolerance) << to_string(mode) << " (seed " << seed << ")";
  }
}

// A torch CSV carries no placement: read back, zb-v's V placement is inferred and trains alike.
TEST(PipelineTrainer, ATorchCsvTableMatchesToo) {
  const table original = schedule("zb-v", 2, 4, 2);
  auto t = read_csv(write_csv(original), "zb-v.csv");
  ASSERT_TRUE(t) << t.error().what();
  ASSERT_EQ(t->stage_rank, original.stage_rank);
  expect_matches(*t, "zb-v p=2 m=4 from csv");
}

// The in-process SDK hands a subscriber the publisher's buffer (what the trainer's tensor messages
// rely on): a view published by one leaf arrives at another leaf as the same bytes.
struct probe {
  std::mutex m;
  const std::byte* sent = nullptr;
  const std::byte* received = nullptr;
  bool shared_owner = false;
};
class receiver : public leaf {
 public:
  explicit receiver(std::shared_ptr<probe> p) : p_(std::move(p)) {}
  void on_start(context& ctx) override {
    (void)ctx.subscribe("act/+/+", [this, &ctx](const delivery& d) {
      std::lock_guard lock(p_->m);
      p_->received = d.bytes().data();
      p_->shared_owner = d.data().owner() != nullptr;
      ctx.quit(0);
    });
  }
  std::shared_ptr<probe> p_;
};
class sender : public leaf {
 public:
  explicit sender(std::shared_ptr<probe> p) : p_(std::move(p)) {}
  void on_start(context& ctx) override {
    auto owner = std::make_shared<const std::vector<float>>(B * T * 32, 1.0f);
    const auto* bytes = reinterpret_cast<const std::byte*>(owner->data());
    {
      std::lock_guard lock(p_->m);
      p_->sent = bytes;
    }
    (void)ctx.publish("act/1/0", payload::view_of(owner, bytes, owner->size() * sizeof(float)), scope::parent());
  }
  std::shared_ptr<probe> p_;
};

TEST(PipelineTrainer, TensorMessagesShareThePublishersBuffer) {
  auto p = std::make_shared<probe>();
  app a("test");
  auto& pp = a.root().add_composite("pp");
  pp.add_leaf<receiver>("r1", p);
  pp.add_leaf<sender>("r0", p);
  run_options ro;
  ro.threads = 2;
  ro.max_runtime = std::chrono::seconds(60);
  ASSERT_EQ(run(a, ro).exit_code, 0);
  std::lock_guard lock(p->m);
  ASSERT_NE(p->sent, nullptr);
  EXPECT_EQ(p->received, p->sent);
  EXPECT_TRUE(p->shared_owner);
}

// Swaps adjacent actions of a rank at random, keeping each swap the validator accepts: another valid
// order of the same work, which the leaves must run to the same result.
TEST(PipelineTrainer, AnotherValidOrderGivesTheSameResult) {
  for (const std::string name : {"1f1b", "zb-h1"}) {
    table t = schedule(name, 2, 4, 1);
    std::mt19937 gen(seed);
    int swapped = 0;
    for (int attempt = 0; attempt < 400; ++attempt) {
      auto& rank = t.ranks[gen() % t.ranks.size()];
      const std::size_t i = gen() % (rank.size() - 1);
      std::swap(rank[i], rank[i + 1]);
      if (validate(t).has_value()) {
        std::swap(rank[i], rank[i + 1]);
      } else {
        ++swapped;
      }
    }
    ASSERT_GT(swapped, 10) << name << " (seed " << seed << ")";
    ASSERT_NE(t, schedule(name, 2, 4, 1));
    expect_matches(t, name + " reordered (seed " + std::to_string(seed) + ")");
  }
}

// Microbatch 2 of 4 is taken out of the table (the others renumbered): a valid table for 3
// microbatches, which must not pass for the whole model's 4.
TEST(PipelineTrainer, DroppingAMicrobatchFailsTheComparison) {
  const int p = 2, m = 4, dropped = 2;
  table t = schedule("1f1b", p, m, 1);
  for (auto& rank : t.ranks) {
    std::vector<action> kept;
    for (auto a : rank) {
      if (a.microbatch == dropped) continue;
      if (a.microbatch > dropped) --a.microbatch;
      kept.push_back(a);
    }
    rank = kept;
  }
  t.microbatches = m - 1;
  ASSERT_FALSE(validate(t).has_value());
  const outcome got = pipelined(t, m);
  ASSERT_EQ(got.exit_code, 0);
  const comparison c = compare(got, whole_model(t.stages, m));
  EXPECT_GT(c.grad, 100 * tolerance) << "seed " << seed;
  EXPECT_GT(c.loss, 100 * tolerance) << "seed " << seed;
}

// Activations and gradients are broker messages in the trainer's subtree: the profile counts them on
// the edges between each rank's leaf and the composite, with the tied parts, plus a little control;
// each leaf's memory is in the loads.
TEST(PipelineTrainer, TensorsAreCountedOnTheTreeEdges) {
  const int p = 2, m = 4;
  const outcome got = pipelined(schedule("gpipe", p, m, 1), m);
  ASSERT_EQ(got.exit_code, 0);
  ASSERT_EQ(got.rank_edge_bytes.size(), 2u);
  const std::uint64_t tensor = B * T * 32 * sizeof(float), tied = 64 * 32 * sizeof(float);
  // Per step and rank: m activations one way, m gradients the other, a tied part up and one down.
  const std::uint64_t want = steps * (2 * m * tensor + 2 * tied);
  for (int r = 0; r < p; ++r) {
    EXPECT_GE(got.rank_edge_bytes[r], want) << "rank " << r;
    EXPECT_LT(got.rank_edge_bytes[r], want + steps * 256) << "rank " << r;  // control: under 256 bytes a step
    // The leaf's load: its stage's parameters, gradients and AdamW moments, and its m slots (gpipe).
    const std::uint64_t slots = m * nn::gpt_stage::slot_bytes(model(p), nn::cut_stages(4, {2})->at(r), B, T);
    EXPECT_GE(got.rank_memory[r], 4 * tied + slots) << "rank " << r;
    // At most: 4 copies (4 bytes each) of wte, wpe, 2 blocks (12C^2 + 13C), lnf and 16 floats of
    // alignment for each of 40 tensors.
    const std::uint64_t params = 64 * 32 + 8 * 32 + 2 * (12 * 32 * 32 + 13 * 32) + 2 * 32 + 16 * 40;
    EXPECT_LE(got.rank_memory[r], 4 * 4 * params + slots) << "rank " << r;
  }
}

// A leaf's failure (here its data source throws) fails the trainer, which gives up at once, and the
// run ends with an error instead of hanging on the step.
TEST(PipelineTrainer, ALeafFailureEndsTheRun) {
  const outcome got = pipelined(schedule("1f1b", 2, 4, 1), 4, {.name = "cpu", .threads = 1}, /*fail_at_step=*/1);
  EXPECT_NE(got.exit_code, 0);
}

// Stages on the GPU (one CUDA backend per leaf) against the CPU whole model; skipped without one.
TEST(PipelineTrainer, CudaStagesMatchTheCpuWholeModel) {
  if (!nn::make_backend({.name = "cuda"})) GTEST_SKIP() << "no CUDA backend or device";
  const table t = schedule("1f1b", 2, 4, 1);
  const outcome want = whole_model(t.stages, t.microbatches);
  const outcome got = pipelined(t, t.microbatches, {.name = "cuda"});
  ASSERT_EQ(got.exit_code, 0);
  const comparison c = compare(got, want);
  EXPECT_TRUE(c.complete) << c.worst;
  EXPECT_LE(c.grad, 1e-3) << "worst gradient " << c.worst << " (seed " << seed << ")";
  for (std::size_t i = 0; i < std::min(got.losses.size(), want.losses.size()); ++i) {
    EXPECT_NEAR(got.losses[i], want.losses[i], 1e-4 * std::fabs(want.losses[i])) << "step " << i;
  }
}

// The step reports of a run with record_timeline, for the trace tests.
std::vector<step_report> recorded(const table& t, int run_steps, bool record = true) {
  struct shared {
    std::mutex m;
    std::vector<step_report> reports;
  };
  auto sh = std::make_shared<shared>();
  trainer_options opt;
  opt.model = model(t.stages);
  opt.batch = B;
  opt.seq_len = T;
  opt.schedule = t;
  opt.steps = run_steps;
  opt.seed = seed;
  opt.optimizer = optimizer();
  opt.record_timeline = record;
  trainer_hooks hooks;
  const int m = t.microbatches;
  hooks.data = [m](std::int64_t step, int i, int* tokens, int* targets) {
    const batch b = make_batch(static_cast<std::uint64_t>(step), m);
    std::copy_n(b.tokens.begin() + i * B * T, B * T, tokens);
    std::copy_n(b.targets.begin() + i * B * T, B * T, targets);
  };
  hooks.on_step = [sh](const step_report& r) {
    std::lock_guard lock(sh->m);
    sh->reports.push_back(r);
  };
  app a("test");
  auto added = add_trainer(a.root(), "pp", opt, hooks);
  EXPECT_TRUE(added) << added.error().what();
  if (!added) return {};
  run_options ro;
  ro.threads = 2;
  ro.max_runtime = std::chrono::seconds(60);
  EXPECT_EQ(run(a, ro).exit_code, 0);
  std::lock_guard lock(sh->m);
  return sh->reports;
}

// Item 5: a 2-rank 1f1b run records one F and one B per (stage, microbatch) each step, each after
// its dependencies (F of s+1 after F of s, B of s after B of s+1, B after F of its stage), and its
// Chrome trace (render.hpp, unchanged) parses and names the same actions as the simulator's trace of
// the same table.
TEST(PipelineTrainer, RecordedTimelineFollowsTheDependenciesAndRendersLikeTheSimulator) {
  const int p = 2, m = 4;
  const table t = schedule("1f1b", p, m, 1);
  const std::vector<step_report> reports = recorded(t, 2);
  ASSERT_EQ(reports.size(), 2u);
  const std::uint64_t slot0 = nn::gpt_stage::slot_bytes(model(p), nn::cut_stages(4, {2})->at(0), B, T);
  for (const step_report& r : reports) {
    SCOPED_TRACE("step " + std::to_string(r.step));
    const sim_result& tl = r.timeline;
    std::map<std::tuple<int, int, int>, std::vector<sim_event>> by;  // (stage, microbatch, kind)
    for (const sim_event& e : tl.events) {
      EXPECT_LE(e.start, e.end);
      EXPECT_GE(e.start, 0.0);
      EXPECT_EQ(e.rank, t.stage_rank[e.a.stage]);
      by[{e.a.stage, e.a.microbatch, static_cast<int>(e.a.op)}].push_back(e);
    }
    ASSERT_EQ(tl.events.size(), static_cast<std::size_t>(2 * p * m));
    for (int s = 0; s < p; ++s) {
      for (int i = 0; i < m; ++i) {
        const auto& f = by[{s, i, static_cast<int>(kind::F)}];
        const auto& b = by[{s, i, static_cast<int>(kind::B)}];
        ASSERT_EQ(f.size(), 1u) << s << "F" << i;
        ASSERT_EQ(b.size(), 1u) << s << "B" << i;
        EXPECT_GE(b[0].start, f[0].end) << s << "B" << i;
        if (s > 0) {
          const double prev = by[{s - 1, i, static_cast<int>(kind::F)}][0].end;
          EXPECT_GE(f[0].start, prev) << s << "F" << i;
        }
        if (s < p - 1) {
          const double next = by[{s + 1, i, static_cast<int>(kind::B)}][0].end;
          EXPECT_GE(b[0].start, next) << s << "B" << i;
        }
      }
    }
    // Ranks run one action at a time: a rank's events do not overlap.
    for (std::size_t k = 1; k < tl.events.size(); ++k) {
      if (tl.events[k].rank == tl.events[k - 1].rank) {
        EXPECT_GE(tl.events[k].start, tl.events[k - 1].end);
      }
    }
    ASSERT_EQ(tl.busy.size(), 2u);
    EXPECT_GT(tl.makespan, 0.0);
    EXPECT_GE(r.bubble, 0.0);
    EXPECT_LT(r.bubble, 1.0);
    // 1f1b at p=2: stage 0 holds 2 microbatches at its peak, stage 1 one.
    EXPECT_EQ(r.peak_slots, (std::vector<int>{2, 1}));
    ASSERT_EQ(r.activation_bytes.size(), 2u);
    EXPECT_EQ(r.activation_bytes[0], 2 * slot0);

    auto names = [](const std::string& trace) {
      std::multiset<std::string> out;
      const auto doc = nlohmann::json::parse(trace);
      for (const auto& e : doc.at("traceEvents")) {
        if (e.at("ph") == "X" && e.at("cat") != "comm") out.insert(e.at("name").get<std::string>());
      }
      return out;
    };
    auto sim = simulate(t, std::vector<stage_cost>(p, stage_cost{}), {}, {.record_events = true});
    ASSERT_TRUE(sim) << sim.error().what();
    EXPECT_EQ(names(chrome_trace(r.timeline)), names(chrome_trace(*sim)));
    EXPECT_NE(svg_gantt(r.timeline, "measured").find("</svg>"), std::string::npos);
  }
}

// Without record_timeline the reports have no timeline, but still each stage's peak slots.
TEST(PipelineTrainer, WithoutRecordingTheTimelineIsEmpty) {
  const std::vector<step_report> reports = recorded(schedule("1f1b", 2, 4, 1), 1, /*record=*/false);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_TRUE(reports[0].timeline.events.empty());
  EXPECT_EQ(reports[0].timeline.makespan, 0.0);
  EXPECT_EQ(reports[0].peak_slots, (std::vector<int>{2, 1}));
}

TEST(PipelineTrainer, BadOptionsAreErrorsNamingTheValue) {
  trainer_options opt;
  opt.model = model(2);
  opt.batch = B;
  opt.seq_len = T;
  opt.schedule = schedule("1f1b", 8, 8, 1);  // 8 stages, 4 blocks
  trainer_hooks hooks;
  hooks.data = [](std::int64_t, int, int*, int*) {};
  app a("test");
  auto added = add_trainer(a.root(), "pp", opt, hooks);
  ASSERT_FALSE(added);
  EXPECT_NE(added.error().message.find("8 stages"), std::string::npos) << added.error().message;
  opt.schedule = schedule("1f1b", 2, 4, 1);
  opt.cuts = {1, 2};
  added = add_trainer(a.root(), "pp", opt, hooks);
  ASSERT_FALSE(added);
  EXPECT_NE(added.error().message.find("2 cuts for 2 stages"), std::string::npos) << added.error().message;
}

}  // namespace
}  // namespace banyan::pipeline
