#include <banyan/pipeline/cost.hpp>
#include <banyan/pipeline/dsl.hpp>
#include <banyan/pipeline/render.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace bp = banyan::pipeline;

TEST(Costs, BackwardSplitsFollowTheGivenFields) {
  auto c = bp::parse_costs(
      R"({"stages": [{"t_f": 1, "t_b": 2}, {"t_f": 1, "t_i": 1.5, "t_w": 0.5}, {"t_f": 1, "t_b": 3, "t_w": 1, "mem": 4}],
                               "latency": 0.5, "bandwidth": 100})");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_DOUBLE_EQ(c->units[0].t_i, 1);
  EXPECT_DOUBLE_EQ(c->units[1].t_b, 2);
  EXPECT_DOUBLE_EQ(c->units[2].t_i, 2);
  EXPECT_DOUBLE_EQ(c->units[2].mem, 4);
  EXPECT_DOUBLE_EQ(c->latency, 0.5);
  EXPECT_DOUBLE_EQ(c->bandwidth, 100);
}

TEST(Costs, ErrorsNameTheEntryAndKey) {
  auto e = [](const char* text) {
    auto c = bp::parse_costs(text, "c.json");
    return c ? std::string("no error") : c.error().message;
  };
  EXPECT_EQ(e(R"({"stages": [{"t_f": 1, "t_b": 2}, {"t_f": -1, "t_b": 2}]})"),
            "c.json: stages[1].t_f: must be a finite number >= 0");
  EXPECT_EQ(e(R"({"stages": [{"t_f": 1}]})"), "c.json: stages[0]: give t_b, or t_i and t_w");
  EXPECT_EQ(e(R"({"stages": [{"t_f": 1, "t_b": 2, "tf": 3}]})"),
            "c.json: stages[0]: unknown key `tf` (known: t_f, t_b, t_i, t_w, mem, comm_bytes, static_mem, name)");
  EXPECT_EQ(bp::parse_costs(R"({"stages": []})", "c.json").error().code, bp::errc::invalid);
  EXPECT_EQ(bp::parse_costs("{", "c.json").error().code, bp::errc::parse);
  EXPECT_EQ(e(R"({"layers": []})"), "c.json: \"layers\" must be a non-empty array");
  EXPECT_NE(e("{").find("c.json: not valid JSON"), std::string::npos);
}

TEST(Costs, LayersArePartitionedToBalanceTheSlowestStage) {
  bp::costs c;
  c.per_layer = true;
  for (double t : {1.0, 1.0, 1.0, 1.0, 4.0, 1.0, 1.0}) c.units.push_back({t, 2 * t, t, t, 1, 0, 0});
  auto s = bp::stage_costs(c, 3);
  ASSERT_TRUE(s) << s.error().message;
  ASSERT_EQ(s->size(), 3u);
  // Best cut: [1 1 1 1] [4] [1 1] -> forward times 4, 4, 2.
  EXPECT_DOUBLE_EQ((*s)[0].t_f, 4);
  EXPECT_DOUBLE_EQ((*s)[1].t_f, 4);
  EXPECT_DOUBLE_EQ((*s)[2].t_f, 2);
  EXPECT_DOUBLE_EQ((*s)[0].mem, 4);
  EXPECT_FALSE(bp::stage_costs(c, 8));
}

TEST(Costs, StagesSplitEvenlyIntoChunks) {
  auto c = bp::uniform_costs(2, 2, 1, 1, 3);
  auto s = bp::stage_costs(c, 4);
  ASSERT_TRUE(s);
  EXPECT_DOUBLE_EQ((*s)[3].t_f, 1);
  EXPECT_DOUBLE_EQ((*s)[3].mem, 1.5);
  auto bad = bp::stage_costs(c, 3);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("multiple of 2"), std::string::npos);
}

TEST(Render, TraceHasOneEventPerComputeActionAndSvgOneBar) {
  auto prog = bp::parse_program(bp::find_builtin("zb-h1")->text, "zb-h1");
  auto t = bp::compile(*prog, {3, 4, 1});
  ASSERT_TRUE(t);
  bp::sim_options so;
  so.record_events = true;
  auto s = bp::simulate(*t, *bp::stage_costs(bp::uniform_costs(3, 1, 1, 1), 3), {0.5, 0}, so);
  ASSERT_TRUE(s) << s.error().message;
  auto doc = nlohmann::json::parse(bp::chrome_trace(*s));
  int compute = 0, waits = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X") continue;
    (e["cat"] == "comm" ? waits : compute)++;
    EXPECT_GE(e["dur"].get<double>(), 0);
  }
  EXPECT_EQ(compute, 3 * 4 * 3);  // F, I, W per stage and microbatch
  EXPECT_GT(waits, 0);            // latency 0.5 makes receivers wait
  const std::string svg = bp::svg_gantt(*s, "zb-h1 <p=3>");
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("zb-h1 &lt;p=3&gt;"), std::string::npos);
  std::size_t bars = 0;
  for (std::size_t pos = 0; (pos = svg.find("<title>", pos)) != std::string::npos; ++pos) ++bars;
  EXPECT_EQ(bars, 36u);
}
