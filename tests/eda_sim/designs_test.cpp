// Every design in samples/eda_sim/designs matches Icarus on the RTL for 1000 cycles, in 4 lanes with
// different random stimulus, and the component tree has the shape the issue asks for.
#include "helpers.hpp"

#include <banyan/eda_sim/reference.hpp>
#include <banyan/eda_sim/run.hpp>
#include <banyan/eda_sim/vcd.hpp>

#include <fstream>
#include <sstream>

namespace banyan::eda {
namespace {

using testing::build;
using testing::design_files;
using testing::temp_dir;

struct case_t {
  const char* top;
  std::uint64_t seed;
};

void PrintTo(const case_t& c, std::ostream* os) { *os << c.top << " seed " << c.seed; }

class Design : public ::testing::TestWithParam<case_t> {};

TEST_P(Design, MatchesIcarusForThousandCyclesInFourLanes) {
  const auto [top, seed] = GetParam();
  SCOPED_TRACE(std::string("design ") + top + ", seed " + std::to_string(seed));
  const auto files = design_files(top);
  auto d = build(files, top);
  ASSERT_TRUE(d) << d.error().message;
  auto stim = random_stimulus(*d, {seed});
  ASSERT_TRUE(stim) << stim.error().message;
  simulator sim(*d);
  sim_options ro;
  ro.cycles = 1000;
  ro.lanes = 4;
  ro.trace_lanes = 4;
  auto ours = simulate(sim, **stim, ro);
  auto ref = run_icarus(*d, **stim, {files, top, ro.cycles, 4});
  ASSERT_TRUE(ref) << ref.error().message;
  auto c = compare(*d, ref->samples, ours.samples);
  EXPECT_TRUE(c.passed()) << "first mismatch: cycle " << c.first->cycle << ", lane " << c.first->lane << ", "
                          << c.first->signal << ": expected " << c.first->expected << ", got " << c.first->got;
  // Nearly every output bit is defined after reset and therefore compared.
  EXPECT_GT(c.compared_bits, 20 * c.dont_care_bits);
  EXPECT_EQ(c.compared_bits + c.dont_care_bits, ref->samples.samples.size());
}

INSTANTIATE_TEST_SUITE_P(All, Design,
                         ::testing::Values(case_t{"adders", 1}, case_t{"multiplier", 2}, case_t{"lfsr_counter", 3},
                                           case_t{"alu_regfile", 4}, case_t{"fifo", 5}, case_t{"cpu", 6}),
                         [](const auto& info) { return std::string(info.param.top); });

TEST(Tree, InstancesAreCompositesAndTopicsAreScopedAtTheLowestCommonAncestor) {
  auto d = build(design_files("adders"), "adders");
  ASSERT_TRUE(d) << d.error().message;
  // /adders, ripple, 16 full adders, cla, 4 cla4 blocks.
  EXPECT_EQ(d->instances.size(), 23u);
  EXPECT_EQ(d->instances[0].path, "/adders");
  int checked = 0;
  for (const auto& g : d->groups) {
    // The scope is an ancestor of (or equal to) every endpoint's instance, and no child of the scope
    // contains all of them.
    std::vector<int> ends{d->leaves[g.driver].instance};
    for (int r : g.readers) ends.push_back(d->leaves[r].instance);
    auto is_ancestor = [&](int a, int x) {
      for (; x >= 0; x = d->instances[x].parent)
        if (x == a) return true;
      return false;
    };
    for (int e : ends) EXPECT_TRUE(is_ancestor(g.scope, e)) << g.topic;
    for (int ch : d->instances[g.scope].children) {
      bool all = true;
      for (int e : ends) all = all && is_ancestor(ch, e);
      EXPECT_FALSE(all) << g.topic << " could be scoped lower, at " << d->instances[ch].path;
    }
    ++checked;
  }
  EXPECT_GT(checked, 20);
  // A ripple carry between neighbouring full adders is scoped at the ripple adder, not the root.
  bool found = false;
  for (const auto& g : d->groups)
    if (d->instances[g.scope].path == "/adders/ripple" && g.nets.size() == 1) found = true;
  EXPECT_TRUE(found);
}

TEST(Lanes, LaneZeroIsTheSameWhateverTheLaneCount) {
  auto d = build(design_files("cpu"), "cpu");
  ASSERT_TRUE(d) << d.error().message;
  auto stim = random_stimulus(*d, {11});
  ASSERT_TRUE(stim);
  sim_options one;
  one.cycles = 300;
  one.lanes = 1;
  one.trace_lanes = 1;
  sim_options many = one;
  many.lanes = 64;
  simulator s1(*d), s64(*d);
  auto a = simulate(s1, **stim, one);
  auto b = simulate(s64, **stim, many);
  ASSERT_EQ(a.samples.bits, b.samples.bits);
  EXPECT_EQ(a.samples.samples, b.samples.samples);
  // And lanes really differ from each other.
  sim_options two = one;
  two.lanes = 2;
  two.trace_lanes = 2;
  simulator s2(*d);
  auto c = simulate(s2, **stim, two);
  bool differ = false;
  for (std::uint64_t cyc = 10; cyc < 300 && !differ; ++cyc)
    for (std::size_t bit = 0; bit < c.samples.bits; ++bit)
      differ = differ || c.samples.at(cyc, 0, bit) != c.samples.at(cyc, 1, bit);
  EXPECT_TRUE(differ);
}

TEST(Check, ReportsTheFirstMismatchWithCycleSignalAndValues) {
  // The reference is the same design with one output inverted from cycle 7's value on: compare must
  // name that cycle and signal.
  auto d = build(design_files("lfsr_counter"), "lfsr_counter");
  ASSERT_TRUE(d) << d.error().message;
  auto stim = random_stimulus(*d, {3});
  ASSERT_TRUE(stim);
  simulator sim(*d);
  sim_options ro;
  ro.cycles = 20;
  ro.trace_lanes = 1;
  auto ours = simulate(sim, **stim, ro);
  trace bad = ours.samples;
  // outputs: count[12], wrap, random[16], random8[8]; flip random[3] at cycle 7.
  const std::size_t bit = 12 + 1 + 3;
  auto& v = bad.samples[7 * bad.bits + bit];
  v = v == 1 ? 0 : 1;
  auto c = compare(*d, bad, ours.samples);
  ASSERT_FALSE(c.passed());
  EXPECT_EQ(c.mismatched_bits, 1u);
  EXPECT_EQ(c.first->cycle, 7u);
  EXPECT_EQ(c.first->signal, "random");
  EXPECT_NE(c.first->expected, c.first->got);
  EXPECT_EQ(c.first->expected.size(), 16u);
}

TEST(Vcd, WaveformHasScopesAndChangesPerCycle) {
  temp_dir t;
  auto d = build(design_files("fifo"), "fifo");
  ASSERT_TRUE(d) << d.error().message;
  auto stim = random_stimulus(*d, {5});
  ASSERT_TRUE(stim);
  auto w = vcd_writer::open(t.path("f.vcd"), *d);
  ASSERT_TRUE(w);
  simulator sim(*d);
  sim_options ro;
  ro.cycles = 50;
  ro.vcd = w->get();
  simulate(sim, **stim, ro);
  w->reset();
  std::ifstream in(t.path("f.vcd"));
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string vcd = ss.str();
  EXPECT_NE(vcd.find("$scope module fifo $end"), std::string::npos);
  EXPECT_NE(vcd.find("$scope module q $end"), std::string::npos);
  EXPECT_NE(vcd.find("$var wire 8"), std::string::npos);
  EXPECT_NE(vcd.find("#491"), std::string::npos);  // cycle 49's values at 10*49+1
  EXPECT_NE(vcd.find("$enddefinitions"), std::string::npos);
}

TEST(Check, StimulusFileRunsThroughBothSimulators) {
  temp_dir t;
  auto files = design_files("alu_regfile");
  auto d = build(files, "alu_regfile");
  ASSERT_TRUE(d) << d.error().message;
  // inputs: rst we use_imm op rd rs1 rs2 imm
  std::string text = "rst we use_imm op rd rs1 rs2 imm\n1 0 0 0 0 0 0 0\n";
  for (int i = 0; i < 40; ++i)
    text += "0 1 " + std::to_string(i % 2) + " " + std::to_string(i % 8) + " " + std::to_string((i * 3) % 8) + " " +
            std::to_string(i % 8) + " " + std::to_string((i + 5) % 8) + " 0x" + std::to_string(1000 + i * 37) + "\n";
  auto stim = file_stimulus(*d, t.file("alu.stim", text));
  ASSERT_TRUE(stim) << stim.error().message;
  simulator sim(*d);
  sim_options ro;
  ro.cycles = *(*stim)->length();
  ro.trace_lanes = 1;
  auto ours = simulate(sim, **stim, ro);
  auto ref = run_icarus(*d, **stim, {files, "alu_regfile", ro.cycles, 1});
  ASSERT_TRUE(ref) << ref.error().message;
  auto c = compare(*d, ref->samples, ours.samples);
  EXPECT_TRUE(c.passed()) << c.first->signal << " at cycle " << c.first->cycle;
  EXPECT_GT(c.compared_bits, 0u);
}

}  // namespace
}  // namespace banyan::eda

namespace banyan::eda {
namespace {

// The flat schedule (one global program) and the leaf-by-leaf exchange give the same outputs; the
// flat one settles in one pass.
TEST(Schedule, FlatAndLeafExchangeGiveIdenticalOutputs) {
  for (const char* top : {"multiplier", "cpu", "alu_regfile"}) {
    SCOPED_TRACE(top);
    auto d = testing::build(testing::design_files(top), top);
    ASSERT_TRUE(d) << d.error().message;
    auto stim = random_stimulus(*d, {13});
    ASSERT_TRUE(stim);
    sim_options so;
    so.cycles = 400;
    so.lanes = 16;
    so.trace_lanes = 16;
    simulator flat(*d, schedule::flat), leaves(*d, schedule::leaves);
    auto a = simulate(flat, **stim, so), b = simulate(leaves, **stim, so);
    EXPECT_EQ(a.samples.samples, b.samples.samples) << "seed 13";
    EXPECT_EQ(a.signature, b.signature);
    EXPECT_EQ(a.stats.rounds, so.cycles);
    EXPECT_GT(b.stats.rounds, so.cycles);
  }
}

// Up to 8 lanes the flat engine keeps a byte per plane: same outputs as the 64-bit values, on
// designs with memories (fifo's array, the cpu's data memory) and async resets.
TEST(Schedule, NarrowValuesGiveTheSameOutputsAsWide) {
  for (const char* top : {"fifo", "cpu", "uart"}) {
    SCOPED_TRACE(top);
    auto d = testing::build(testing::design_files(top), top);
    ASSERT_TRUE(d) << d.error().message;
    auto stim = random_stimulus(*d, {21});
    ASSERT_TRUE(stim);
    sim_options so;
    so.cycles = 600;
    so.lanes = 8;
    so.trace_lanes = 8;
    simulator narrow(*d, schedule::flat, 8), wide(*d, schedule::flat, 64);
    auto a = simulate(narrow, **stim, so), b = simulate(wide, **stim, so);
    EXPECT_EQ(a.samples.samples, b.samples.samples) << "seed 21";
    EXPECT_EQ(a.signature, b.signature) << "seed 21";
  }
}

}  // namespace
}  // namespace banyan::eda
