// The compiled engine against the interpreter (the reference): random netlists with X, memories,
// async terms and constants, every value of every slot compared cycle by cycle; the repository's
// designs compared by their outputs; the fold, the cache and a failing compiler.
#include <banyan/eda_sim/compiled.hpp>
#include <banyan/eda_sim/run.hpp>
#include <banyan/eda_sim/simulator.hpp>
#include <banyan/eda_sim/stimulus.hpp>

#include "helpers.hpp"

#include <gtest/gtest.h>

#include <banyan/eda_sim/vcd.hpp>

#include <fstream>
#include <iterator>
#include <random>

namespace banyan::eda {
namespace {

// A design of one leaf of random cells and the io leaf: `inputs` top input bits, ops over anything
// defined before them (constants 0, 1 and X included), flip-flops (some with async terms), a
// memory with an offset (so some addresses are out of range) and a read and a write port, and some
// slots as outputs. Without `x`, nothing in it is X at the start (no X constant, known initial
// values), so a run with known inputs is X-free but for out-of-range memory reads.
design random_design(std::uint64_t seed, bool x = true, int inputs = 6, int ops = 120, int flops = 10) {
  std::mt19937_64 rng(seed);
  auto pick = [&](const std::vector<std::uint32_t>& from) {
    for (;;)
      if (auto s = from[rng() % from.size()]; x || s != 2) return s;
  };
  const unsigned values = x ? 3 : 2;
  design d;
  d.top = "random" + std::to_string(seed);
  d.clock = "clk";
  d.instances.push_back({"/" + d.top, d.top, -1, {}, 0});
  leaf cells, io;
  cells.path = "/" + d.top + "/cells";
  io.path = "/" + d.top + "/io";
  cells.instance = io.instance = 0;
  std::vector<std::uint32_t> defined{0, 1, 2}, cell_in, io_in;
  for (int i = 0; i < inputs; ++i) {
    cell_in.push_back(cells.slots++), io_in.push_back(io.slots++);
    defined.push_back(cell_in.back());
  }
  for (int i = 0; i < flops; ++i) {
    flip_flop f{};
    f.state = cells.slots++;
    f.init = static_cast<std::uint8_t>(rng() % values);
    defined.push_back(f.state);
    cells.flops.push_back(f);
  }
  memory m;
  m.name = "random memory";
  m.size = 5, m.width = 3, m.offset = 1;
  m.content = cells.slots++;
  for (std::uint32_t i = 0; i < m.size * m.width; ++i) m.init.push_back(static_cast<std::uint8_t>(rng() % values));
  constexpr opcode gates[] = {opcode::buf, opcode::not_, opcode::and_,   opcode::or_,   opcode::xor_, opcode::nand,
                              opcode::nor, opcode::xnor, opcode::andnot, opcode::ornot, opcode::mux,  opcode::nmux};
  for (int i = 0; i < ops; ++i) {
    if (i == ops / 2) {  // the read port, halfway: its address from what is defined so far
      memory::read_port rp;
      for (std::uint32_t b = 0; b < 3; ++b) rp.addr.push_back(pick(defined));
      for (std::uint32_t b = 0; b < m.width; ++b) {
        rp.data.push_back(cells.slots++);
        cells.program.push_back({opcode::memrd, 0, 0, b, rp.data.back()});
      }
      for (auto s : rp.data) defined.push_back(s);
      m.reads.push_back(rp);
    }
    const opcode c = gates[rng() % std::size(gates)];
    op o{c, pick(defined), pick(defined), 0, cells.slots++};
    if (c == opcode::mux || c == opcode::nmux) o.s = pick(defined);
    if (c == opcode::buf || c == opcode::not_) o.b = 0;
    cells.program.push_back(o);
    defined.push_back(o.y);
  }
  memory::write_port wp;
  for (std::uint32_t b = 0; b < 3; ++b) wp.addr.push_back(pick(defined));
  for (std::uint32_t b = 0; b < m.width; ++b) wp.data.push_back(pick(defined)), wp.en.push_back(pick(defined));
  m.writes.push_back(wp);
  cells.memories.push_back(m);
  for (auto& f : cells.flops) {
    f.d = pick(defined);
    if (rng() % 3 == 0) f.async.push_back({pick(defined), static_cast<std::uint32_t>(rng() % 2)});
  }
  std::vector<std::uint32_t> cell_out, io_out;
  for (int i = 0; i < 8; ++i) cell_out.push_back(pick(defined)), io_out.push_back(io.slots++);
  cells.in_groups = {0}, cells.out_groups = {1};
  io.in_groups = {1}, io.out_groups = {0};
  d.leaves = {cells, io};
  group in{"net/in", 1, 0, {0}, 0, io_in, {cell_in}, {}};
  group out{"net/out", 0, 1, {1}, 0, cell_out, {io_out}, {}};
  for (int i = 0; i < inputs; ++i) in.nets.push_back("in[" + std::to_string(i) + "]");
  for (std::size_t i = 0; i < cell_out.size(); ++i) out.nets.push_back("out[" + std::to_string(i) + "]");
  d.groups = {in, out};
  d.inputs.push_back({"in", port_dir::input, io_in});
  d.outputs.push_back({"out", port_dir::output, io_out});
  d.gates = static_cast<std::size_t>(ops);
  d.flops = static_cast<std::size_t>(flops);
  d.memories = 1;
  d.memory_bits = m.size * m.width;
  return d;
}

// Random lanes, X in about one lane of eight (none without `x`).
lanes random_lanes(std::mt19937_64& rng, bool x) {
  const std::uint64_t u = x ? rng() & rng() & rng() : 0, v = rng();
  return {v | u, ~v | u};
}

struct engine_case {
  schedule how;
  unsigned lanes;
  const char* name;
  std::size_t ops_per_function = 4000;
};

TEST(Compiled, MatchesTheInterpreterValueForValueOnRandomNetlists) {
  testing::temp_dir tmp;
  // Functions of 5 ops: values cross functions, and read ports' bits would straddle them.
  const engine_case cases[] = {{schedule::flat, 1, "flat, 1 lane (narrow)"},
                               {schedule::flat, 1, "flat, 1 lane (narrow), functions of 5 ops", 5},
                               {schedule::flat, 8, "flat, 8 lanes (narrow)"},
                               {schedule::flat, 64, "flat, 64 lanes (wide)"},
                               {schedule::leaves, 64, "leaves (wide)"}};
  std::uint64_t two_state = 0;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    const bool x = seed <= 5;  // the last seeds are X-free, so the 2-state program runs
    const design d = random_design(seed, x);
    for (const auto& c : cases) {
      SCOPED_TRACE("seed " + std::to_string(seed) + (x ? ", with X, " : ", X-free, ") + c.name);
      simulator interp(d, c.how, c.lanes), native(d, c.how, c.lanes);
      auto code = native.compile({.cache_dir = tmp.path("cache"), .ops_per_function = c.ops_per_function});
      ASSERT_TRUE(code) << code.error().message;
      ASSERT_TRUE(native.native());
      ASSERT_FALSE(interp.native());
      std::mt19937_64 rng(seed * 1000 + c.lanes);
      std::vector<lanes> in(d.inputs[0].slots.size());
      int differing = 0;
      for (int cycle = 0; cycle < 60 && !differing; ++cycle) {
        for (auto& v : in) v = random_lanes(rng, x);
        interp.set_inputs(in), native.set_inputs(in);
        interp.settle(), native.settle();
        for (int l = 0; l < 2; ++l)
          for (std::uint32_t s = 0; s < d.leaves[l].slots; ++s) {
            // Lanes past the used ones have no meaning (simulator.hpp): compare the used ones.
            const std::uint64_t used = c.lanes >= 64 ? ~0ull : (1ull << c.lanes) - 1;
            const lanes a = interp.value(l, s), b = native.value(l, s);
            if (((a.hi ^ b.hi) & used) == 0 && ((a.lo ^ b.lo) & used) == 0) continue;
            if (++differing == 1)
              ADD_FAILURE() << "cycle " << cycle << ", leaf " << l << " slot " << s << ": interpreter " << std::hex
                            << a.hi << "/" << a.lo << ", compiled " << b.hi << "/" << b.lo;
          }
        interp.clock_edge(), native.clock_edge();
      }
      EXPECT_EQ(interp.stats().two_state_passes, 0u);
      if (c.lanes > 1) {
        EXPECT_EQ(native.stats().two_state_passes, 0u) << "2-state is for one lane";
      }
      two_state += native.stats().two_state_passes;
    }
  }
  EXPECT_GT(two_state, 60u) << "the X-free seeds run the 2-state program in most cycles";
}

// Every op folded over 0, 1, X: constants and pass-throughs are not computed at run time.
TEST(Compiled, FoldsConstantsAndPassThroughs) {
  const std::vector<op> program = {
      {opcode::and_, 3, 1, 0, 4},   // x & 1 = x
      {opcode::or_, 4, 1, 0, 5},    // x | 1 = 1
      {opcode::mux, 3, 4, 0, 6},    // select 0: a
      {opcode::xor_, 6, 0, 0, 7},   // reads x through two folds: x ^ 0 = x
      {opcode::and_, 2, 0, 0, 8},   // X & 0 = 0
      {opcode::and_, 2, 1, 0, 9},   // X & 1 = X
      {opcode::nand, 3, 9, 0, 10},  // computed: x nand X
  };
  const std::uint32_t zero[] = {0}, one[] = {1}, x[] = {2};
  const program_source src[] = {{program, {zero, one, x}}};
  const std::string text = native_source(src, value_layout::wide);
  EXPECT_NE(text.find("v[4] = v[3];"), std::string::npos) << text;
  EXPECT_NE(text.find("v[5] = K1;"), std::string::npos) << text;
  EXPECT_NE(text.find("v[6] = v[3];"), std::string::npos) << text;
  EXPECT_NE(text.find("v[7] = v[3];"), std::string::npos) << text;
  EXPECT_NE(text.find("v[8] = K0;"), std::string::npos) << text;
  EXPECT_NE(text.find("v[9] = KX;"), std::string::npos) << text;
  EXPECT_NE(text.find("v[10] = g_not(g_and(v[3], KX));"), std::string::npos) << text;
}

// The repository's designs (memories, async resets, many leaves): the same samples and signature as
// the interpreter in 1 lane (mostly the 2-state program) and 64, and a second compile of the same
// program is a cache hit.
TEST(Compiled, GivesTheInterpretersOutputsOnTheDesigns) {
  testing::temp_dir tmp;
  std::uint64_t two_state = 0;
  for (const char* top : {"fifo", "cpu", "uart"}) {
    SCOPED_TRACE(top);
    auto d = testing::build(testing::design_files(top), top);
    ASSERT_TRUE(d) << d.error().message;
    auto stim = random_stimulus(*d, {5});
    ASSERT_TRUE(stim);
    for (unsigned lanes : {1u, 64u}) {
      SCOPED_TRACE(std::to_string(lanes) + " lanes, seed 5");
      sim_options so;
      so.cycles = 400;
      so.lanes = lanes;
      so.trace_lanes = lanes;
      simulator interp(*d, schedule::flat, lanes), native(*d, schedule::flat, lanes);
      auto code = native.compile({.cache_dir = tmp.path("cache")});
      ASSERT_TRUE(code) << code.error().message;
      EXPECT_FALSE((*code)->from_cache);
      // With one lane, the waveforms too: every named net, which the 2-state program may keep in
      // locals (the simulator then runs the 4-state program to read them).
      auto wa = vcd_writer::open(tmp.path("interp.vcd"), *d), wb = vcd_writer::open(tmp.path("native.vcd"), *d);
      ASSERT_TRUE(wa && wb);
      if (lanes == 1) so.vcd = wa->get();
      auto a = simulate(interp, **stim, so);
      if (lanes == 1) so.vcd = wb->get();
      auto b = simulate(native, **stim, so);
      so.vcd = nullptr;
      if (lanes == 1) {
        (*wa)->finish(so.cycles), (*wb)->finish(so.cycles);
        wa->reset(), wb->reset();
        auto text = [](const std::string& path) {
          std::ifstream in(path);
          return std::string(std::istreambuf_iterator<char>(in), {});
        };
        const std::string va = text(tmp.path("interp.vcd")), vb = text(tmp.path("native.vcd"));
        EXPECT_GT(va.size(), 1000u);
        EXPECT_TRUE(va == vb) << "the waveforms differ";
      }
      EXPECT_EQ(a.samples.samples, b.samples.samples);
      EXPECT_EQ(a.signature, b.signature);
      two_state += b.stats.two_state_passes;
      simulator again(*d, schedule::flat, lanes);
      auto cached = again.compile({.cache_dir = tmp.path("cache")});
      ASSERT_TRUE(cached) << cached.error().message;
      EXPECT_TRUE((*cached)->from_cache);
      EXPECT_EQ((*cached)->object, (*code)->object);
    }
  }
  EXPECT_GT(two_state, 400u) << "after reset, one lane runs the 2-state program";
}

TEST(Compiled, AMissingCompilerIsAnErrorForCompiledAndAFallbackForAuto) {
  const design d = random_design(3);
  simulator sim(d);
  const compile_options bad{.compiler = "/nonexistent/c++"};
  auto code = sim.compile(bad);
  ASSERT_FALSE(code);
  EXPECT_NE(code.error().message.find("/nonexistent/c++"), std::string::npos) << code.error().message;
  EXPECT_FALSE(sim.native());
  auto forced = use_engine(sim, engine_kind::compiled, 1'000'000'000, bad);
  EXPECT_FALSE(forced);
  auto fallback = use_engine(sim, engine_kind::automatic, 1'000'000'000, bad);
  ASSERT_TRUE(fallback) << fallback.error().message;
  EXPECT_EQ(fallback->code, nullptr);
  EXPECT_NE(fallback->note.find("interpreting"), std::string::npos) << fallback->note;
  auto short_run = use_engine(sim, engine_kind::automatic, 10, {});
  ASSERT_TRUE(short_run);
  EXPECT_EQ(short_run->code, nullptr) << "10 cycles do not repay a compile";
  EXPECT_FALSE(parse_engine("jit"));
}

}  // namespace
}  // namespace banyan::eda
