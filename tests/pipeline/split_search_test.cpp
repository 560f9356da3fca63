// Search with stage splits as a dimension: the per-layer cost file, the balanced
// split DP against brute force, never worse than the best shipped program, determinism for a seed
// and a budget, and the lower bound under every evaluated makespan.
#include <banyan/pipeline/cost.hpp>
#include <banyan/pipeline/dsl.hpp>
#include <banyan/pipeline/search.hpp>
#include <banyan/pipeline/validate.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>

namespace bp = banyan::pipeline;

namespace {

bp::costs random_layers(std::mt19937_64& rng, int n) {
  std::uniform_real_distribution<double> t(0.2, 3.0), share(0.3, 0.7);
  bp::costs c;
  c.per_layer = true;
  for (int i = 0; i < n; ++i) {
    const double f = t(rng), b = 2 * t(rng), s = share(rng);
    c.units.push_back({f, b, b * s, b * (1 - s), 1, 0, 0});
  }
  return c;
}

// A GPT-like model: a light embedding, equal blocks, a head `head` times a block.
bp::costs lm_layers(int blocks, double head) {
  bp::costs c;
  c.per_layer = true;
  c.units.push_back({0.05, 0.1, 0.05, 0.05, 0.05, 0, 0});
  for (int i = 0; i < blocks; ++i) c.units.push_back({1, 2, 1, 1, 1, 0, 0});
  c.units.push_back({head, 2 * head, head, head, 1, 0, 0});
  return c;
}

bp::search_options budgeted(int p, int m, std::uint64_t seed, int budget) {
  bp::search_options o;
  o.p = p, o.m = m, o.seed = seed;
  o.generations = 1000, o.population = 12, o.local_steps = 1000000, o.time_limit_s = 3600;
  o.max_evaluations = budget, o.split_evaluations = budget / 3;
  return o;
}

}  // namespace

TEST(CostFile, ShippedLmHeadExampleParses) {
  std::ifstream in(std::string(BANYAN_SOURCE_DIR) + "/actors/pipeline/examples/gpt2_lm_head_layers.json");
  ASSERT_TRUE(in) << "example file missing";
  std::stringstream ss;
  ss << in.rdbuf();
  auto c = bp::parse_costs(ss.str(), "gpt2_lm_head_layers.json");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_TRUE(c->per_layer);
  ASSERT_EQ(c->units.size(), 14u);
  EXPECT_GT(c->units.back().t_f, 4 * c->units[1].t_f);  // the head outweighs a block
  EXPECT_GT(c->bandwidth, 0);
}

TEST(CostFile, BadLayerFieldIsNamedWithTheFile) {
  auto c = bp::parse_costs(R"({"layers": [{"t_f": 1, "t_b": 2}, {"t_f": "slow", "t_b": 2}]})", "measured.json");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("measured.json"), std::string::npos) << c.error().message;
  EXPECT_NE(c.error().message.find("layers[1].t_f"), std::string::npos) << c.error().message;
  auto d = bp::parse_costs(R"({"layers": [{"t_f": 1, "t_b": 2, "t_fw": 1}]})", "measured.json");
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("t_fw"), std::string::npos) << d.error().message;
}

TEST(Splits, BalancedDpEqualsBruteForce) {
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    const int n = std::uniform_int_distribution<int>(1, 9)(rng);
    const int S = std::uniform_int_distribution<int>(1, n)(rng);
    const auto c = random_layers(rng, n);
    auto cuts = bp::balanced_cuts(c, S);
    ASSERT_TRUE(cuts) << "seed " << seed;
    ASSERT_EQ(static_cast<int>(cuts->size()), S + 1) << "seed " << seed;
    // Every composition of n into S positive parts.
    double brute = INFINITY;
    std::vector<int> cur{0};
    std::function<void()> rec = [&] {
      if (static_cast<int>(cur.size()) == S) {
        cur.push_back(n);
        brute = std::min(brute, bp::slowest_stage(c, cur));
        cur.pop_back();
        return;
      }
      for (int k = cur.back() + 1; k <= n - (S - static_cast<int>(cur.size())); ++k) {
        cur.push_back(k);
        rec();
        cur.pop_back();
      }
    };
    rec();
    EXPECT_NEAR(bp::slowest_stage(c, *cuts), brute, 1e-9) << "seed " << seed << " n " << n << " S " << S;
  }
}

TEST(Splits, SearchIsNeverWorseThanTheBestShippedProgramOnTheBalancedSplit) {
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    std::mt19937_64 rng(seed);
    const auto c = random_layers(rng, 12);
    auto r = bp::search(c, budgeted(4, 8, seed, 1500));
    ASSERT_TRUE(r) << "seed " << seed << ": " << r.error().message;
    ASSERT_TRUE(r->best_predefined);
    EXPECT_LE(r->best.sim.makespan, r->best_predefined->sim.makespan + 1e-9) << "seed " << seed;
    EXPECT_LE(r->best.sim.makespan, r->best_predefined_any_split->sim.makespan + 1e-9) << "seed " << seed;
    EXPECT_FALSE(bp::validate(r->best.t));
    // The reported cuts reproduce the makespan.
    ASSERT_EQ(static_cast<int>(r->best.cuts.size()), r->best.t.stages + 1);
    auto s = bp::simulate(r->best.t, bp::stages_from_cuts(c, r->best.cuts), {c.latency, c.bandwidth});
    ASSERT_TRUE(s);
    EXPECT_DOUBLE_EQ(s->makespan, r->best.sim.makespan) << "seed " << seed;
  }
}

TEST(Splits, HeavyHeadBeatsGpipeAnd1f1bOnTheEvenSplit) {
  const auto c = lm_layers(12, 4.6);
  const int p = 4, m = 8, n = static_cast<int>(c.units.size());
  auto r = bp::search(c, budgeted(p, m, 1, 1500));
  ASSERT_TRUE(r) << r.error().message;
  std::vector<int> even;
  for (int j = 0; j <= p; ++j) even.push_back(j * n / p);
  for (const char* name : {"gpipe", "1f1b"}) {
    auto t = bp::compile(*bp::parse_program(bp::find_builtin(name)->text, name), {p, m, 1});
    ASSERT_TRUE(t);
    auto s = bp::simulate(*t, bp::stages_from_cuts(c, even), {});
    ASSERT_TRUE(s);
    EXPECT_GT(s->makespan / r->best.sim.makespan, 1.10) << name;
  }
  EXPECT_LE(bp::makespan_lower_bound(c, p, m), r->best.sim.makespan + 1e-9);
}

TEST(Splits, SameSeedAndBudgetSameResult) {
  std::mt19937_64 rng(5);
  const auto c = random_layers(rng, 10);
  auto a = bp::search(c, budgeted(4, 8, 5, 800));
  auto b = bp::search(c, budgeted(4, 8, 5, 800));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->best.sim.makespan, b->best.sim.makespan);
  EXPECT_EQ(a->best.cuts, b->best.cuts);
  EXPECT_EQ(a->best.t.ranks, b->best.t.ranks);
  EXPECT_EQ(a->evaluations, b->evaluations);
  EXPECT_FALSE(a->time_cut);
}

TEST(Splits, LowerBoundIsBelowEveryEvaluatedMakespan) {
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    std::mt19937_64 rng(100 + seed);
    const int p = std::uniform_int_distribution<int>(2, 4)(rng), m = std::uniform_int_distribution<int>(1, 10)(rng);
    const auto c = random_layers(rng, std::uniform_int_distribution<int>(2 * p, 3 * p)(rng));
    const double bound = bp::makespan_lower_bound(c, p, m);
    auto o = budgeted(p, m, seed, 600);
    double lowest = INFINITY;
    o.progress = [&](const bp::search_progress& pr) {
      if (pr.best_makespan > 0) lowest = std::min(lowest, pr.best_makespan);
    };
    auto r = bp::search(c, o);
    ASSERT_TRUE(r) << "seed " << seed << ": " << r.error().message;
    EXPECT_LE(bound, r->best.sim.makespan + 1e-9) << "seed " << seed << " p " << p << " m " << m;
    EXPECT_LE(bound, lowest + 1e-9) << "seed " << seed;
  }
}

// The search is never worse than a shipped program on the even split (stage j from layer j*n/S):
// on these jagged layers, with the cap at what the best such program needs (zb-v, v=2, 2 layers per
// stage), the search used to return zb-h1 on a split its hill climb found, 13% slower, because only
// the balanced split and the climb's splits were seeds. Every shipped program at every v, placement
// and reference split is checked, with a small budget so the seeds, not luck, carry the guarantee.
TEST(Splits, NeverWorseThanAShippedProgramOnTheEvenSplit) {
  const char* file = R"({"layers": [
    {"t_f": 1.91, "t_i": 1.05, "t_w": 1.29, "mem": 1.53}, {"t_f": 1.74, "t_i": 1.23, "t_w": 1.18, "mem": 3.30},
    {"t_f": 1.96, "t_i": 1.47, "t_w": 0.90, "mem": 3.20}, {"t_f": 2.81, "t_i": 3.01, "t_w": 3.69, "mem": 1.72},
    {"t_f": 2.54, "t_i": 1.35, "t_w": 1.72, "mem": 1.69}, {"t_f": 2.16, "t_i": 1.91, "t_w": 0.94, "mem": 2.41},
    {"t_f": 0.50, "t_i": 0.33, "t_w": 0.69, "mem": 3.88}, {"t_f": 1.11, "t_i": 0.85, "t_w": 1.57, "mem": 0.62},
    {"t_f": 1.57, "t_i": 2.92, "t_w": 1.29, "mem": 1.05}, {"t_f": 3.18, "t_i": 2.10, "t_w": 4.32, "mem": 2.18},
    {"t_f": 2.08, "t_i": 1.04, "t_w": 1.60, "mem": 2.37}, {"t_f": 2.97, "t_i": 3.17, "t_w": 1.98, "mem": 3.13},
    {"t_f": 2.13, "t_i": 2.36, "t_w": 2.20, "mem": 2.99}, {"t_f": 1.43, "t_i": 1.47, "t_w": 2.30, "mem": 2.41},
    {"t_f": 2.16, "t_i": 2.94, "t_w": 1.73, "mem": 0.63}, {"t_f": 2.85, "t_i": 4.69, "t_w": 2.89, "mem": 2.74}]})";
  auto c = bp::parse_costs(file, "jagged.json");
  ASSERT_TRUE(c) << c.error().message;
  const int p = 4, m = 8, n = static_cast<int>(c->units.size());
  // Every shipped program on every v's even split, and the best of them.
  struct run {
    std::string what;
    double makespan, peak;
  };
  std::vector<run> shipped;
  for (const auto& b : bp::builtin_programs()) {
    auto prog = bp::parse_program(b.text, b.name);
    ASSERT_TRUE(prog) << prog.error().message;
    for (int v : {1, 2}) {
      auto vc = bp::chunks_of(*prog, {p, m, v});
      if (!vc || *vc != v) continue;
      auto t = bp::compile(*prog, {p, m, v});
      if (!t) continue;
      std::vector<int> even;
      for (int j = 0; j <= p * v; ++j) even.push_back(j * n / (p * v));
      auto s = bp::simulate(*t, bp::stages_from_cuts(*c, even), {});
      ASSERT_TRUE(s) << s.error().message;
      shipped.push_back({b.name + " v=" + std::to_string(v), s->makespan, s->max_peak_memory()});
    }
  }
  const auto best = *std::min_element(shipped.begin(), shipped.end(),
                                      [](const run& a, const run& b) { return a.makespan < b.makespan; });
  EXPECT_EQ(best.what, "zb-v v=2");
  auto o = budgeted(p, m, 1, 300);
  o.mem_cap = best.peak + 1e-6;
  auto r = bp::search(*c, o);
  ASSERT_TRUE(r) << r.error().message;
  for (const auto& s : shipped)
    if (s.peak <= o.mem_cap) {
      EXPECT_LE(r->best.sim.makespan, s.makespan + 1e-9)
          << s.what << " on the even split; search gave " << r->best.origin;
    }
  ASSERT_TRUE(r->best_predefined);
  EXPECT_LE(r->best_predefined->sim.makespan, best.makespan + 1e-9) << r->best_predefined->origin;
}
