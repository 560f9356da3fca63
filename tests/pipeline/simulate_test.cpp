// The simulator against the closed forms of the literature on balanced stages with free
// communication. Bubble conventions (simulate.hpp): "Global" = sum_r (makespan - busy_r) / sum_r busy_r,
// "Span" = idle time inside each rank's first-to-last-action span over busy time.
#include <banyan/pipeline/csv.hpp>
#include <banyan/pipeline/dsl.hpp>
#include <banyan/pipeline/lower.hpp>
#include <banyan/pipeline/simulate.hpp>

#include <gtest/gtest.h>

#include <random>

namespace bp = banyan::pipeline;

namespace {

bp::table builtin_table(const std::string& name, int p, int m, int v = 1) {
  const auto* b = bp::find_builtin(name);
  EXPECT_NE(b, nullptr) << name;
  auto prog = bp::parse_program(b->text, name);
  EXPECT_TRUE(prog) << prog.error().message;
  auto t = bp::compile(*prog, {p, m, v});
  EXPECT_TRUE(t) << t.error().message;
  return *t;
}

bp::sim_result run(const bp::table& t, int p, double tf, double ti, double tw, double mem = 1) {
  auto stages = bp::stage_costs(bp::uniform_costs(p, tf, ti, tw, mem), t.stages);
  EXPECT_TRUE(stages) << stages.error().message;
  auto r = bp::simulate(t, *stages);
  EXPECT_TRUE(r) << r.error().message;
  return *r;
}

struct case_ {
  int p, m;
  double tf, ti, tw;
};
const case_ balanced[] = {{4, 8, 1, 1, 1},  {4, 16, 1, 1.5, 0.5}, {8, 16, 2, 2, 2},
                          {8, 32, 1, 2, 1}, {2, 5, 1, 1, 1},      {6, 12, 3, 2, 1}};

std::string label(const case_& c) {
  return "p=" + std::to_string(c.p) + " m=" + std::to_string(c.m) + " tf=" + std::to_string(c.tf) +
         " ti=" + std::to_string(c.ti) + " tw=" + std::to_string(c.tw);
}

}  // namespace

TEST(Simulate, GPipeGlobalBubbleIsPMinusOneOverM) {
  for (const auto& c : balanced) {
    SCOPED_TRACE(label(c));
    auto r = run(builtin_table("gpipe", c.p, c.m), c.p, c.tf, c.ti, c.tw);
    EXPECT_NEAR(r.bubble_ratio, double(c.p - 1) / c.m, 1e-9);
    EXPECT_NEAR(r.makespan, (c.m + c.p - 1) * (c.tf + c.ti + c.tw), 1e-9);
  }
}

TEST(Simulate, OneFOneBGlobalBubbleIsPMinusOneOverM) {
  for (const auto& c : balanced) {
    SCOPED_TRACE(label(c));
    auto r = run(builtin_table("1f1b", c.p, c.m), c.p, c.tf, c.ti, c.tw);
    EXPECT_NEAR(r.bubble_ratio, double(c.p - 1) / c.m, 1e-9);
  }
}

TEST(Simulate, InterleavedGlobalBubbleIsPMinusOneOverVM) {
  for (int v : {2, 3, 4})
    for (const auto& c : balanced) {
      if (c.m % c.p) continue;  // Megatron's schedule needs whole groups of p microbatches
      SCOPED_TRACE(label(c) + " v=" + std::to_string(v));
      auto r = run(builtin_table("interleaved-1f1b", c.p, c.m, v), c.p, c.tf, c.ti, c.tw);
      EXPECT_NEAR(r.bubble_ratio, double(c.p - 1) / (v * c.m), 1e-9);
    }
}

TEST(Simulate, ZbH1IdlePerRankIsPMinusOneTimesTfPlusTiMinusTw) {
  // The zero-bubble paper writes (p-1)(T_F + T_B - T_W) with T_B the backward-input time, our T_I.
  for (const auto& c : balanced) {
    SCOPED_TRACE(label(c));
    auto r = run(builtin_table("zb-h1", c.p, c.m), c.p, c.tf, c.ti, c.tw);
    const double idle = (c.p - 1) * (c.tf + c.ti - c.tw);
    EXPECT_NEAR(r.makespan, c.m * (c.tf + c.ti + c.tw) + idle, 1e-9);
    EXPECT_NEAR(r.bubble_ratio, idle / (c.m * (c.tf + c.ti + c.tw)), 1e-9);
  }
}

TEST(Simulate, ZbH2SpanBubbleIsZeroAtEqualTimes) {
  for (const auto& c : balanced) {
    if (c.m < 2 * c.p - 1) continue;  // needs enough microbatches to fill the warm-up
    SCOPED_TRACE(label(c));
    auto r = run(builtin_table("zb-h2", c.p, c.m), c.p, 1, 1, 1);
    EXPECT_NEAR(r.span_bubble_ratio, 0, 1e-9);
    // Globally only the unavoidable ramp remains: rank r starts at r*T_F, so (p-1)/(3m).
    EXPECT_NEAR(r.bubble_ratio, double(c.p - 1) / (3 * c.m), 1e-9);
  }
}

TEST(Simulate, PeakMemoryMatchesClosedForms) {
  for (const auto& c : balanced) {
    if (c.m < 2 * c.p) continue;
    SCOPED_TRACE(label(c));
    const double mb = 2.5;  // M_B, activation memory of one microbatch on one stage
    auto peak = [&](const char* name) {
      return run(builtin_table(name, c.p, c.m), c.p, c.tf, c.ti, c.tw, mb).max_peak_memory();
    };
    EXPECT_DOUBLE_EQ(peak("gpipe"), c.m * mb);
    EXPECT_DOUBLE_EQ(peak("1f1b"), c.p * mb);
    EXPECT_DOUBLE_EQ(peak("zb-h1"), c.p * mb);
    EXPECT_DOUBLE_EQ(peak("zb-h2"), (2 * c.p - 1) * mb);
    // ZB-V keeps 1F1B's memory: 2p half-size chunk activations.
    auto zbv = run(builtin_table("zb-v", c.p, c.m), c.p, c.tf, c.ti, c.tw, mb);
    EXPECT_DOUBLE_EQ(zbv.max_peak_memory(), c.p * mb);
  }
}

TEST(Simulate, ZbVBeatsZbH1AtTheSameMemory) {
  for (const auto& c : balanced) {
    if (c.m < 2 * c.p) continue;
    SCOPED_TRACE(label(c));
    auto h1 = run(builtin_table("zb-h1", c.p, c.m), c.p, 1, 1, 1);
    auto v = run(builtin_table("zb-v", c.p, c.m), c.p, 1, 1, 1);
    EXPECT_LT(v.makespan, h1.makespan);
  }
}

TEST(Simulate, CommunicationDelaysEveryHop) {
  // GPipe with latency L: the first forward reaches the last stage (p-1) hops late and the
  // last backward returns (p-1) hops late.
  const int p = 4, m = 4;
  const double L = 0.25;
  auto stages = *bp::stage_costs(bp::uniform_costs(p, 1, 1, 1), p);
  auto r = bp::simulate(builtin_table("gpipe", p, m), stages, {L, 0});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_NEAR(r->makespan, (m + p - 1) * 3 + 2 * (p - 1) * L, 1e-9);
  // Bandwidth: bytes / bandwidth adds to the latency.
  for (auto& s : stages) s.comm_bytes = 100;
  auto rb = bp::simulate(builtin_table("gpipe", p, m), stages, {L, 400});
  ASSERT_TRUE(rb);
  EXPECT_NEAR(rb->makespan, (m + p - 1) * 3 + 2 * (p - 1) * (L + 0.25), 1e-9);
}

TEST(Simulate, LoweredAndComputeOnlyTablesPredictTheSame) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> cost(0.2, 3.0);
  for (const auto& b : bp::builtin_programs()) {
    SCOPED_TRACE(b.name);
    const int p = 4, m = 8;
    bp::table t = builtin_table(b.name, p, m, 2);
    std::vector<bp::stage_cost> stages;
    for (int s = 0; s < t.stages; ++s) {
      const double ti = cost(rng), tw = cost(rng);
      stages.push_back({cost(rng), ti + tw, ti, tw, cost(rng), cost(rng), 0});
    }
    const bp::link_model link{0.1, 2.0};
    auto a = bp::simulate(t, stages, link);
    auto l = bp::simulate(bp::lower_comms(t), stages, link);
    ASSERT_TRUE(a && l);
    EXPECT_DOUBLE_EQ(a->makespan, l->makespan);
    EXPECT_EQ(a->peak_memory, l->peak_memory);
  }
}

TEST(Simulate, InvalidTableIsAnErrorNotACrash) {
  auto t = bp::read_csv("0F0,0B0\n1B0,1F0\n");
  ASSERT_TRUE(t);
  auto r = bp::simulate(*t, *bp::stage_costs(bp::uniform_costs(2, 1, 1, 1), 2));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("rank 1 step 0"), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().code, bp::errc::invalid);
  auto wrong = bp::simulate(*t, *bp::stage_costs(bp::uniform_costs(3, 1, 1, 1), 3));
  EXPECT_FALSE(wrong);
}
