#include <banyan/pipeline/measure.hpp>

#include <gtest/gtest.h>

namespace bp = banyan::pipeline;

namespace {

bp::measure_options tiny() {
  bp::measure_options o;
  o.model = {.vocab_size = 32, .max_seq_len = 16, .num_layers = 3, .num_heads = 2, .channels = 16};
  o.rows = 2;
  o.seq_len = 8;
  o.warmup = 1;
  o.steps = 3;
  return o;
}

}  // namespace

class MeasureCostsFrom : public ::testing::TestWithParam<bp::timing_source> {};

TEST_P(MeasureCostsFrom, GivesEmbeddingBlocksAndHeadWithPositiveTimes) {
  auto o = tiny();
  o.source = GetParam();
  int last = 0, total = 0;
  auto m = bp::measure_costs(o, [&](int done, int of) { last = done, total = of; });
  ASSERT_TRUE(m) << m.error().message;
  const auto& c = m->c;
  EXPECT_TRUE(c.per_layer);
  ASSERT_EQ(c.units.size(), 5u);  // L + 2
  ASSERT_EQ(m->names, (std::vector<std::string>{"embedding", "h0", "h1", "h2", "head"}));
  EXPECT_EQ(last, total);
  EXPECT_GT(total, 0);
  const double out_bytes = 2.0 * 8 * 16 * sizeof(float);  // rows * T * C floats
  for (std::size_t k = 0; k < c.units.size(); ++k) {
    SCOPED_TRACE(m->names[k]);
    const auto& u = c.units[k];
    EXPECT_GT(u.t_f, 0);
    EXPECT_GT(u.t_b, 0);
    EXPECT_GE(u.t_i, 0);
    EXPECT_GT(u.t_w, 0);
    EXPECT_NEAR(u.t_i + u.t_w, u.t_b, 1e-12 * u.t_b);
    EXPECT_GT(u.mem, 0);
    EXPECT_EQ(u.comm_bytes, k + 1 == c.units.size() ? 0 : out_bytes);
  }
  // A block's input gradient is real work (attention, the matmuls' dX); the head's holds the logits'.
  EXPECT_GT(m->input_fraction_block, 0.05);
  EXPECT_LT(m->input_fraction_block, 0.95);
  EXPECT_GT(m->input_fraction_head, 0.05);
  // The written file is one the simulator reads back.
  auto back = bp::parse_costs(bp::write_costs(c, m->names), "measured.json");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->units.size(), 5u);
}

INSTANTIATE_TEST_SUITE_P(Sources, MeasureCostsFrom,
                         ::testing::Values(bp::timing_source::stage, bp::timing_source::engine),
                         [](const auto& info) { return info.param == bp::timing_source::stage ? "stage" : "engine"; });

TEST(MeasureCosts, BadShapesNameTheValue) {
  auto o = tiny();
  o.seq_len = 17;
  auto m = bp::measure_costs(o);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().message, "measure: seq_len = 17: must be in [1, max_seq_len = 16]");
  o = tiny();
  o.rows = 0;
  m = bp::measure_costs(o);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().message, "measure: rows = 0: must be positive");
  o = tiny();
  o.steps = 0;
  m = bp::measure_costs(o);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().message, "measure: steps = 0: must be positive");
}

TEST(MeasureStageCosts, TimesEachStageWholeWithItsMemoryAndOutput) {
  const auto o = tiny();
  auto slices = banyan::nn::cut_stages(3, {2});  // blocks [0, 2) + embedding, [2, 3) + head
  ASSERT_TRUE(slices) << slices.error().message;
  auto s = bp::measure_stage_costs(o, *slices);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_FALSE(s->c.per_layer);
  ASSERT_EQ(s->c.units.size(), 2u);
  EXPECT_EQ(s->names, (std::vector<std::string>{"stage0", "stage1"}));
  auto layers = bp::measure_costs(o);
  ASSERT_TRUE(layers) << layers.error().message;
  const auto& l = layers->c.units;
  // mem sums the stage's layers: embedding + h0 + h1, then h2 + head.
  EXPECT_EQ(s->c.units[0].mem, l[0].mem + l[1].mem + l[2].mem);
  EXPECT_EQ(s->c.units[1].mem, l[3].mem + l[4].mem);
  EXPECT_EQ(s->c.units[0].comm_bytes, 2.0 * 8 * 16 * sizeof(float));
  EXPECT_EQ(s->c.units[1].comm_bytes, 0);
  for (const auto& u : s->c.units) {
    EXPECT_GT(u.t_f, 0);
    EXPECT_GT(u.t_i, 0);
    EXPECT_GT(u.t_w, 0);
    EXPECT_DOUBLE_EQ(u.t_b, u.t_i + u.t_w);
  }
  EXPECT_FALSE(bp::measure_stage_costs(o, {}));
}
