#include <banyan/pipeline/cost.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace bp = banyan::pipeline;

namespace {

void expect_equal(const bp::costs& a, const bp::costs& b) {
  ASSERT_EQ(a.units.size(), b.units.size());
  EXPECT_EQ(a.per_layer, b.per_layer);
  EXPECT_EQ(a.latency, b.latency);
  EXPECT_EQ(a.bandwidth, b.bandwidth);
  for (std::size_t i = 0; i < a.units.size(); ++i) {
    SCOPED_TRACE("unit " + std::to_string(i));
    const auto &x = a.units[i], &y = b.units[i];
    EXPECT_EQ(x.t_f, y.t_f);
    EXPECT_EQ(x.t_b, y.t_b);
    EXPECT_EQ(x.t_i, y.t_i);
    EXPECT_EQ(x.t_w, y.t_w);
    EXPECT_EQ(x.mem, y.mem);
    EXPECT_EQ(x.comm_bytes, y.comm_bytes);
    EXPECT_EQ(x.static_mem, y.static_mem);
  }
}

}  // namespace

TEST(CostWriter, PerLayerCostsRoundTripExactly) {
  bp::costs c;
  c.per_layer = true;
  c.latency = 0.0123456789012345;
  c.bandwidth = 3.5e9;
  // Values with no short decimal form: the writer must keep every bit.
  for (int i = 0; i < 4; ++i) {
    const double t_i = 0.1 * (i + 1) / 3, t_w = 1.0 / 7 + i;
    c.units.push_back({1.0 / 3 + i, t_i + t_w, t_i, t_w, 1234567.0 + i, 65536.0 * (i < 3), 0.25 * i});
  }
  const std::string text = bp::write_costs(c, {"embedding", "h0", "h1", "head"});
  auto back = bp::parse_costs(text, "written.json");
  ASSERT_TRUE(back) << back.error().message << "\n" << text;
  expect_equal(c, *back);
  auto j = nlohmann::json::parse(text);
  ASSERT_TRUE(j.contains("layers"));
  EXPECT_FALSE(j.contains("stages"));
  EXPECT_EQ(j["layers"][0]["name"], "embedding");
  EXPECT_EQ(j["layers"][3]["name"], "head");
}

TEST(CostWriter, PerStageCostsWithoutNamesRoundTrip) {
  auto c = bp::uniform_costs(3, 2, 1.5, 0.5, 4);
  const std::string text = bp::write_costs(c);
  auto back = bp::parse_costs(text);
  ASSERT_TRUE(back) << back.error().message;
  expect_equal(c, *back);
  auto j = nlohmann::json::parse(text);
  EXPECT_TRUE(j.contains("stages"));
  EXPECT_FALSE(j["stages"][0].contains("name"));
}
