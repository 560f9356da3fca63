// The component version (every instance a composite, every leaf an actor, groups as topics) gives
// outputs identical to the engine's, in every routing mode; hier never uses more edge messages than
// flat-p2p.
#ifdef EDA_SIM_HAVE_SDK
#include "helpers.hpp"

#include <banyan/eda_sim/components.hpp>

namespace banyan::eda {
namespace {

using testing::build;
using testing::design_files;

struct outcome {
  std::uint64_t signature;
  std::vector<std::uint8_t> samples;
  std::uint64_t edge_messages = 0;
};

outcome run_components(const design& d, const std::shared_ptr<const stimulus>& stim, std::uint64_t cycles,
                       unsigned lanes, routing_mode mode) {
  auto cr = std::make_shared<component_run>();
  cr->d = std::make_shared<const design>(d);
  cr->stim = stim;
  cr->cycles = cycles;
  cr->lanes = lanes;
  cr->trace_lanes = lanes;
  auto app = make_app(cr);
  banyan::run_options o;
  o.mode = mode;
  o.threads = 2;
  auto r = banyan::run(*app, o);
  EXPECT_EQ(r.exit_code, 0) << r.error;
  EXPECT_EQ(cr->cycles_done, cycles);
  outcome out{cr->signature, cr->samples.samples};
  for (const auto& e : r.traffic.edges) out.edge_messages += e.messages;
  return out;
}

class Components : public ::testing::TestWithParam<const char*> {};

TEST_P(Components, OutputsAreIdenticalToTheEngineInHierAndFlatModes) {
  const std::string top = GetParam();
  const std::uint64_t seed = 7;
  SCOPED_TRACE("design " + top + ", seed " + std::to_string(seed));
  auto d = build(design_files(top), top);
  ASSERT_TRUE(d) << d.error().message;
  auto s = random_stimulus(*d, {seed});
  ASSERT_TRUE(s);
  std::shared_ptr<const stimulus> stim(std::move(*s));
  simulator sim(*d);
  sim_options ro;
  ro.cycles = 150;
  ro.lanes = 8;
  ro.trace_lanes = 8;
  auto engine = simulate(sim, *stim, ro);
  auto hier = run_components(*d, stim, ro.cycles, ro.lanes, routing_mode::hier);
  auto flat = run_components(*d, stim, ro.cycles, ro.lanes, routing_mode::flat_p2p);
  EXPECT_EQ(hier.signature, engine.signature);
  EXPECT_EQ(hier.samples, engine.samples.samples);
  EXPECT_EQ(flat.signature, engine.signature);
  EXPECT_LE(hier.edge_messages, flat.edge_messages);
  EXPECT_GT(hier.edge_messages, 0u);
}

INSTANTIATE_TEST_SUITE_P(All, Components,
                         ::testing::Values("adders", "multiplier", "lfsr_counter", "alu_regfile", "fifo", "cpu"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace banyan::eda
#endif
