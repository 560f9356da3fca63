// The kinds of designs users bring: a CPU running a program from $readmemh, an AES-like
// round pipeline, a UART with an active-low asynchronous reset, a bus controller built with include
// files, defines and parameters. Each passes the check against Icarus over 5,000 cycles with
// stimulus that exercises it (the assertions on the outputs make sure the check is not trivially
// passing on a stuck design).
#include "helpers.hpp"

#include <banyan/eda_sim/reference.hpp>
#include <banyan/eda_sim/run.hpp>

#include <set>

namespace banyan::eda {
namespace {

using testing::temp_dir;

std::string design_path(const std::string& rel) { return std::string(EDA_DESIGNS_DIR) + "/" + rel; }

struct checked_run {
  design d;
  sim_result ours;
  comparison cmp;
};

// yosys → elaborate → seeded random stimulus → engine and Icarus → compare. Prints the seed on failure.
void run_and_check(const yosys_options& yo, const random_options& ro, std::uint64_t cycles, unsigned lanes,
                   checked_run& out) {
  SCOPED_TRACE("design " + yo.top + ", seed " + std::to_string(ro.seed));
  auto n = synthesize(yo);
  ASSERT_TRUE(n) << n.error().message;
  auto d = elaborate(*n);
  ASSERT_TRUE(d) << d.error().message;
  out.d = std::move(*d);
  auto stim = random_stimulus(out.d, ro);
  ASSERT_TRUE(stim) << stim.error().message;
  simulator sim(out.d);
  sim_options so;
  so.cycles = cycles;
  so.lanes = lanes;
  so.trace_lanes = lanes;
  out.ours = simulate(sim, **stim, so);
  reference_options ref{yo.files, yo.top, cycles, lanes};
  ref.sources = yo.sources;
  auto icarus = run_icarus(out.d, **stim, ref);
  ASSERT_TRUE(icarus) << icarus.error().message;
  out.cmp = compare(out.d, icarus->samples, out.ours.samples);
  ASSERT_TRUE(out.cmp.passed()) << "seed " << ro.seed << ": first mismatch at cycle " << out.cmp.first->cycle
                                << ", lane " << out.cmp.first->lane << ", " << out.cmp.first->signal << ": expected "
                                << out.cmp.first->expected << ", got " << out.cmp.first->got;
  EXPECT_GT(out.cmp.compared_bits, 50 * out.cmp.dont_care_bits);
}

// Output port `name` of lane `lane` at `cycle` as a number (X bits read as 0), and whether it had X.
std::uint64_t port_value(const design& d, const trace& t, std::uint64_t cycle, unsigned lane, const std::string& name,
                         bool* had_x = nullptr) {
  std::size_t from = 0;
  for (const auto& p : d.outputs) {
    if (p.name == name) {
      std::uint64_t v = 0;
      for (std::size_t i = 0; i < p.slots.size() && i < 64; ++i) {
        const int b = t.at(cycle, lane, from + i);
        if (b == 2 && had_x) *had_x = true;
        if (b == 1) v |= 1ull << i;
      }
      return v;
    }
    from += p.slots.size();
  }
  ADD_FAILURE() << "no output " << name;
  return 0;
}

std::set<std::uint64_t> distinct(const checked_run& r, const std::string& port, unsigned lanes) {
  std::set<std::uint64_t> s;
  for (std::uint64_t c = 0; c < r.ours.samples.samples.size() / (r.ours.samples.bits * r.ours.samples.lanes); ++c)
    for (unsigned l = 0; l < lanes; ++l) s.insert(port_value(r.d, r.ours.samples, c, l, port));
  return s;
}

TEST(RealDesigns, RiscvLikeCpuRunsItsProgramFromReadmemh) {
  // The program and data files are passed as parameters with absolute paths, so the test does not
  // depend on the folder it runs in.
  yosys_options yo{{design_path("rv_cpu/rv_soc.v")}, "rv_soc"};
  yo.sources.params = {{"PROGRAM", "\"" + design_path("rv_cpu/program.hex") + "\""},
                       {"DATA", "\"" + design_path("rv_cpu/data.hex") + "\""}};
  random_options ro;
  ro.seed = 17;
  checked_run r;
  run_and_check(yo, ro, 5000, 2, r);
  if (HasFatalFailure()) return;
  // The program runs: it visits most of its 33 instructions and writes a new value out on nearly
  // every pass of its loop (about 20 cycles each).
  EXPECT_GE(distinct(r, "pc_out", 1).size(), 30u);
  EXPECT_GT(distinct(r, "out_port", 1).size(), 200u);
  // Nothing after reset is X: the register file's `initial` values and the ROM arrived.
  bool had_x = false;
  for (std::uint64_t c = 2; c < 5000; ++c) port_value(r.d, r.ours.samples, c, 0, "out_port", &had_x);
  EXPECT_FALSE(had_x);
}

TEST(RealDesigns, AesLikePipelineMatchesIcarus) {
  yosys_options yo{{design_path("aes_round/aes_round.v")}, "aes_round"};
  random_options ro;
  ro.seed = 23;
  checked_run r;
  run_and_check(yo, ro, 5000, 2, r);
  if (HasFatalFailure()) return;
  EXPECT_GT(distinct(r, "data_out", 2).size(), 4000u);
  EXPECT_EQ(distinct(r, "out_valid", 2).size(), 2u);
}

TEST(RealDesigns, UartWithActiveLowAsyncResetMatchesIcarusInLoopback) {
  yosys_options yo{{design_path("uart/uart.v")}, "uart"};
  random_options ro;
  ro.seed = 29;
  // Loopback held on, a transmission requested whenever idle: every frame goes around.
  ro.holds = {{"loopback", "1"}, {"tx_start", "1"}};
  checked_run r;
  run_and_check(yo, ro, 5000, 2, r);
  if (HasFatalFailure()) return;
  // rst_n was found by name and is active low: the async reset held the receiver's count at 0.
  EXPECT_EQ(port_value(r.d, r.ours.samples, 0, 0, "rx_count"), 0u);
  // 40 clocks per frame: about 125 frames received, none with a framing error.
  const auto received = port_value(r.d, r.ours.samples, 4999, 0, "rx_count");
  EXPECT_GT(received, 100u);
  EXPECT_EQ(port_value(r.d, r.ours.samples, 4999, 0, "rx_error"), 0u);
  EXPECT_GT(distinct(r, "rx_data", 2).size(), 50u);
}

TEST(RealDesigns, UartWithRandomLineCountsFramingErrors) {
  yosys_options yo{{design_path("uart/uart.v")}, "uart"};
  random_options ro;
  ro.seed = 31;
  ro.holds = {{"loopback", "0"}};
  checked_run r;
  run_and_check(yo, ro, 5000, 2, r);
  if (HasFatalFailure()) return;
  EXPECT_EQ(port_value(r.d, r.ours.samples, 4999, 0, "rx_error"), 1u);
}

TEST(RealDesigns, BusControllerWithIncludeDirsDefinesAndParameters) {
  yosys_options yo{{design_path("bus_ctrl/bus_ctrl.v")}, "bus_ctrl"};
  yo.sources.include_dirs = {design_path("bus_ctrl/include")};
  yo.sources.defines = {"BUS_PARITY"};
  yo.sources.params = {{"COUNT_STEP", "3"}};
  random_options ro;
  ro.seed = 37;
  checked_run r;
  run_and_check(yo, ro, 5000, 2, r);
  if (HasFatalFailure()) return;
  // -D BUS_PARITY added the parity output; both masters were granted; errors and acks both occur.
  bool has_parity = false;
  for (const auto& p : r.d.outputs) has_parity = has_parity || p.name == "parity";
  EXPECT_TRUE(has_parity);
  EXPECT_EQ(distinct(r, "grant", 2).size(), 3u);
  EXPECT_EQ(distinct(r, "err", 2).size(), 2u);
  EXPECT_GT(distinct(r, "rdata", 2).size(), 500u);
}

TEST(RealDesigns, MissingIncludeDirIsYosysErrorNamingTheFile) {
  auto n = synthesize({{design_path("bus_ctrl/bus_ctrl.v")}, "bus_ctrl"});
  ASSERT_FALSE(n);
  EXPECT_NE(n.error().message.find("bus_defs.vh"), std::string::npos) << n.error().message;
  EXPECT_NE(n.error().message.find("-I"), std::string::npos) << n.error().message;
}

TEST(RealDesigns, UnknownParameterIsNamedAsAParamMistake) {
  yosys_options yo{{design_path("uart/uart.v")}, "uart"};
  yo.sources.params = {{"NO_SUCH", "3"}};
  auto n = synthesize(yo);
  ASSERT_FALSE(n);
  EXPECT_NE(n.error().message.find("NO_SUCH"), std::string::npos) << n.error().message;
  EXPECT_NE(n.error().message.find("--param"), std::string::npos) << n.error().message;
}

TEST(RealDesigns, MemoryFileIcarusCannotFindIsAnErrorNotX) {
  // yosys finds program.hex beside the source; Icarus, run in another folder, does not: the check
  // must say so instead of comparing against an all-X memory.
  temp_dir t, elsewhere;
  const auto src = t.file("rom.v",
                          "module rom(input clk, input [1:0] a, output reg [7:0] q);\n"
                          "  reg [7:0] m [0:3];\n  initial $readmemh(\"rom.hex\", m);\n"
                          "  always @(posedge clk) q <= m[a];\nendmodule\n");
  t.file("rom.hex", "12\n34\n56\n78\n");
  yosys_options yo{{src}, "rom"};
  yo.run_dir = elsewhere.path("");
  auto n = synthesize(yo);
  ASSERT_TRUE(n) << n.error().message;
  auto d = elaborate(*n);
  ASSERT_TRUE(d) << d.error().message;
  auto stim = random_stimulus(*d, {});
  ASSERT_TRUE(stim);
  reference_options ref{yo.files, "rom", 10, 1};
  ref.run_dir = elsewhere.path("");
  auto icarus = run_icarus(*d, **stim, ref);
  ASSERT_FALSE(icarus);
  EXPECT_NE(icarus.error().message.find("memory file"), std::string::npos) << icarus.error().message;
  EXPECT_NE(icarus.error().message.find("rom.hex"), std::string::npos) << icarus.error().message;
  // Run where the file is, Icarus finds it and the check passes.
  ref.run_dir = t.path("");
  auto ok = run_icarus(*d, **stim, ref);
  ASSERT_TRUE(ok) << ok.error().message;
  simulator sim(*d);
  sim_options so;
  so.cycles = 10;
  so.trace_lanes = 1;
  auto ours = simulate(sim, **stim, so);
  EXPECT_TRUE(compare(*d, ok->samples, ours.samples).passed());
}

}  // namespace
}  // namespace banyan::eda

namespace banyan::eda {
namespace {

// A 1,024 x 32 RAM with byte enables, initial contents from $readmemh, one synchronous and one
// asynchronous read port: kept as one memory (not 32,768 flip-flops), matching Icarus in 4 lanes
// whose addresses differ.
TEST(Memories, KeptWholeWithByteEnablesMatchIcarusInFourLanes) {
  temp_dir t;
  std::string hex;
  for (int i = 0; i < 1024; ++i) {
    char w[16];
    std::snprintf(w, sizeof w, "%08x\n", static_cast<unsigned>(i * 2654435761u));
    hex += w;
  }
  const auto mem = t.file("big.hex", hex);
  const auto src = t.file("big.v",
                          "module big #(parameter INIT = \"big.hex\") (input clk, input [9:0] a, input [9:0] b, input "
                          "we, input [31:0] wd,\n"
                          "  input [3:0] be, output reg [31:0] q, output [31:0] r);\n"
                          "  reg [31:0] mem [0:1023];\n  initial $readmemh(INIT, mem);\n  assign r = mem[b];\n"
                          "  always @(posedge clk) begin\n"
                          "    if (we) begin\n"
                          "      if (be[0]) mem[a][7:0] <= wd[7:0];\n      if (be[1]) mem[a][15:8] <= wd[15:8];\n"
                          "      if (be[2]) mem[a][23:16] <= wd[23:16];\n      if (be[3]) mem[a][31:24] <= wd[31:24];\n"
                          "    end\n    q <= mem[a];\n  end\nendmodule\n");
  yosys_options yo{{src}, "big"};
  yo.sources.params = {{"INIT", "\"" + mem + "\""}};
  random_options ro;
  ro.seed = 41;
  checked_run r;
  run_and_check(yo, ro, 2000, 4, r);
  if (HasFatalFailure()) return;
  EXPECT_EQ(r.d.memories, 1u);
  EXPECT_EQ(r.d.memory_bits, 32768u);
  EXPECT_LT(r.d.flops, 100u);
  // The initial contents are read (no X on the asynchronous port after reset-free start).
  bool had_x = false;
  for (std::uint64_t c = 0; c < 2000; ++c) port_value(r.d, r.ours.samples, c, 0, "r", &had_x);
  EXPECT_FALSE(had_x);
  EXPECT_GT(distinct(r, "r", 4).size(), 2000u);
}

TEST(Memories, MappedAndKeptMemoriesGiveTheSameOutputs) {
  const std::vector<std::string> files{design_path("cpu/cpu.v")};
  yosys_options kept{files, "cpu"}, mapped{files, "cpu"};
  mapped.map_memories = true;
  auto nk = synthesize(kept), nm = synthesize(mapped);
  ASSERT_TRUE(nk) << nk.error().message;
  ASSERT_TRUE(nm) << nm.error().message;
  auto dk = elaborate(*nk), dm = elaborate(*nm);
  ASSERT_TRUE(dk && dm);
  EXPECT_GT(dk->memories, 0u);
  EXPECT_EQ(dm->memories, 0u);
  EXPECT_GT(dm->flops, dk->flops);
  random_options ro;
  ro.seed = 43;
  auto sk = random_stimulus(*dk, ro), sm = random_stimulus(*dm, ro);
  ASSERT_TRUE(sk && sm);
  sim_options so;
  so.cycles = 1000;
  so.lanes = 8;
  so.trace_lanes = 8;
  simulator a(*dk), b(*dm);
  auto rk = simulate(a, **sk, so), rm = simulate(b, **sm, so);
  EXPECT_EQ(rk.samples.samples, rm.samples.samples) << "seed 43";
}

}  // namespace
}  // namespace banyan::eda
