// What a user sets on the command line: resets, held inputs, initial values, the X
// policy and --check-from, parameters, a waveform that a strict VCD reader accepts, and the
// reference built (and its errors shown) before the simulation runs.
#include "helpers.hpp"
#include "tool.hpp"

#include <banyan/base/process.hpp>
#include <banyan/eda_sim/reference.hpp>
#include <banyan/eda_sim/run.hpp>
#include <banyan/eda_sim/vcd.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace banyan::eda {
namespace {

using testing::build;
using testing::temp_dir;

struct cli_result {
  int code = -1;
  std::string out, err;
};

cli_result eda_sim(const std::vector<std::string>& args) {
  std::vector<std::string> argv{EDA_SIM_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  // Every run synthesizes: no netlist from a cache outside the test (Cache.* test the cache).
  if (std::find(args.begin(), args.end(), "--help") == args.end()) argv.push_back("--no-cache");
  auto r = run_process(argv);
  if (!r) return {-1, "", r.error().message};
  return {r->status.shell_code(), r->out, r->err};
}

// ---- resets and held inputs ----

TEST(Resets, NamesThatLookLikeResetsAndTheirPolarity) {
  struct case_t {
    const char* name;
    bool is_reset, low;
  } cases[] = {{"rst", true, false},        {"reset", true, false},     {"rst_n", true, true},
               {"rstn", true, true},        {"wb_rst_i", true, false},  {"arst_i", true, false},
               {"rst_ni", true, true},      {"nreset", true, true},     {"resetb", true, true},
               {"sys_reset_l", true, true}, {"first_in", false, false}, {"burst", false, false},
               {"restart", false, false},   {"data", false, false}};
  for (const auto& c : cases) {
    bool low = false;
    EXPECT_EQ(reset_like(c.name, low), c.is_reset) << c.name;
    if (c.is_reset) {
      EXPECT_EQ(low, c.low) << c.name;
    }
  }
}

TEST(Resets, ParseNameAndPolarity) {
  auto r = parse_reset("arst_i:low");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->name, "arst_i");
  EXPECT_EQ(r->active_low, true);
  EXPECT_FALSE(parse_reset("x:sideways"));
  EXPECT_FALSE(parse_hold("en"));
  EXPECT_FALSE(parse_param("8"));
  EXPECT_FALSE(parse_param("W=8 9"));
  EXPECT_FALSE(parse_param("2W=8"));
  auto p = parse_param("MEM=\"prog.hex\"");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->second, "\"prog.hex\"");
}

// An i2c-like top: a Wishbone clock and reset, an asynchronous reset, a core instance that gets the
// clock under another name, and a function whose locals yosys names after the source file.
constexpr const char* wb_design =
    "module core(input clk, input arst, input srst, input [7:0] d, output reg [7:0] q);\n"
    "  function [7:0] f; input [7:0] x; reg [7:0] t; begin t = x ^ 8'h5a; f = {t[6:0], t[7]}; end endfunction\n"
    "  reg [7:0] c;\n"
    "  always @(*) c = f(d);\n"
    "  always @(posedge clk or posedge arst)\n"
    "    if (arst) q <= 8'd0; else if (srst) q <= 8'd1; else q <= q + c;\n"
    "endmodule\n"
    "module wbtop(input wb_clk_i, input wb_rst_i, input arst_i, input [7:0] dat_i, output [7:0] dat_o);\n"
    "  core u(.clk(wb_clk_i), .arst(!arst_i), .srst(wb_rst_i), .d(dat_i), .q(dat_o));\n"
    "endmodule\n";

TEST(Resets, ResetLikeInputsAreHeldNotRandomisedAndWarnedAbout) {
  temp_dir t;
  auto d = build({t.file("wb.v", wb_design)}, "wbtop");
  ASSERT_TRUE(d) << d.error().message;
  random_options ro;
  ro.seed = 5;
  ro.reset_cycles = 3;
  auto s = random_stimulus(*d, ro);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ((*s)->warnings().size(), 2u);  // wb_rst_i and arst_i, neither a plain rst
  std::vector<lanes> v(input_bits(*d));
  // inputs: wb_rst_i, arst_i, dat_i. Both are taken as active-high (from their names) and held.
  for (std::uint64_t c = 0; c < 40; ++c) {
    (*s)->fill(c, v);
    const lanes want = c < 3 ? lanes::one() : lanes::zero();
    EXPECT_EQ(v[0], want) << "wb_rst_i, cycle " << c;
    EXPECT_EQ(v[1], want) << "arst_i, cycle " << c;
  }
  // Named with polarity: arst_i active low; wb_rst_i then is reset-like but unnamed: random, warned.
  random_options named = ro;
  named.resets = {{"arst_i", true}};
  auto s2 = random_stimulus(*d, named);
  ASSERT_TRUE(s2);
  ASSERT_EQ((*s2)->warnings().size(), 1u);
  EXPECT_NE((*s2)->warnings()[0].find("wb_rst_i"), std::string::npos);
  (*s2)->fill(0, v);
  EXPECT_EQ(v[1], lanes::zero());
  (*s2)->fill(10, v);
  EXPECT_EQ(v[1], lanes::one());
  // Several named resets, and a held input.
  random_options both = ro;
  both.resets = {{"arst_i", true}, {"wb_rst_i", std::nullopt}};
  both.holds = {{"dat_i", "0x3c"}};
  auto s3 = random_stimulus(*d, both);
  ASSERT_TRUE(s3) << s3.error().message;
  EXPECT_TRUE((*s3)->warnings().empty());
  (*s3)->fill(7, v);
  for (int b = 0; b < 8; ++b) EXPECT_EQ(v[2 + b], ((0x3c >> b) & 1) ? lanes::one() : lanes::zero()) << b;
  both.holds = {{"nosuch", "1"}};
  auto bad = random_stimulus(*d, both);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("--hold nosuch"), std::string::npos) << bad.error().message;
}

// A reset's polarity comes from what it does, not only from its name: wbtop's arst_i is active-low
// (it drives core's arst through an inverter) though named like an active-high reset; wb_rst_i is
// active-high as its name says. Named with a polarity, a reset is not probed.
TEST(Resets, PolarityIsSettledByWhatTheResetDoes) {
  temp_dir t;
  auto d = build({t.file("wb.v", wb_design)}, "wbtop");
  ASSERT_TRUE(d) << d.error().message;
  random_options ro;
  auto lines = settle_reset_polarities(*d, ro);
  ASSERT_EQ(ro.resets.size(), 2u);
  std::map<std::string, bool> low;
  for (const auto& r : ro.resets) low[r.name] = r.active_low.value();
  EXPECT_TRUE(low["arst_i"]);
  EXPECT_FALSE(low["wb_rst_i"]);
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  EXPECT_NE(all.find("reset arst_i: active-low, not active-high as its name suggests"), std::string::npos) << all;
  random_options named;
  named.resets = {{"arst_i", false}, {"wb_rst_i", std::nullopt}};
  settle_reset_polarities(*d, named);
  EXPECT_FALSE(named.resets[0].active_low.value()) << "a polarity the user named is kept";
  EXPECT_FALSE(named.resets[1].active_low.value());
}

// `rst` used active-low, named like an active-high reset: eda_sim finds it active-low and says so.
// Told it is active-high, the design sits in reset the whole run and the check passes on constant
// outputs: it says that too, also under --json.
TEST(Resets, ACheckOfOutputsThatNeverChangeSaysSo) {
  temp_dir t;
  const auto f = t.file("held.v",
                        "module held(input clk, input rst, input [3:0] a, output reg [3:0] q);\n"
                        "  always @(posedge clk) if (!rst) q <= 0; else q <= a;\nendmodule\n");
  auto found = eda_sim({f, "--top", "held", "--cycles", "200", "--check", "--json"});
  ASSERT_EQ(found.code, 0) << found.err;
  auto j = nlohmann::json::parse(found.out);
  EXPECT_EQ(j["check"]["outputs_change"], true) << found.out;
  EXPECT_NE(j["warnings"].dump().find("reset rst: active-low, not active-high as its name suggests"), std::string::npos)
      << found.out;
  EXPECT_EQ(found.err.find("no output changed"), std::string::npos) << found.err;
  for (const bool json : {false, true}) {
    std::vector<std::string> args{f, "--top", "held", "--cycles", "200", "--check", "--reset", "rst:high"};
    if (json) args.push_back("--json");
    auto r = eda_sim(args);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("no output changed in cycles 3..199"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("reset rst (active high)"), std::string::npos) << r.err;
    if (json) {
      EXPECT_EQ(nlohmann::json::parse(r.out)["check"]["outputs_change"], false) << r.out;
    }
  }
}

TEST(Resets, TwoResetsOfBothPolaritiesMatchIcarus) {
  temp_dir t;
  const auto f = t.file("wb.v", wb_design);
  auto d = build({f}, "wbtop");
  ASSERT_TRUE(d) << d.error().message;
  random_options ro;
  ro.seed = 9;
  ro.resets = {{"arst_i", true}, {"wb_rst_i", false}};
  auto s = random_stimulus(*d, ro);
  ASSERT_TRUE(s);
  simulator sim(*d);
  sim_options so;
  so.cycles = 300;
  so.lanes = 4;
  so.trace_lanes = 4;
  auto ours = simulate(sim, **s, so);
  auto ref = run_icarus(*d, **s, {{f}, "wbtop", 300, 4});
  ASSERT_TRUE(ref) << ref.error().message;
  auto c = compare(*d, ref->samples, ours.samples, {0, x_policy::strict});
  EXPECT_TRUE(c.passed()) << "seed 9: cycle " << c.first->cycle << ": " << c.first->expected << " vs " << c.first->got;
  EXPECT_EQ(c.dont_care_bits, 0u);
}

// ---- initial values ----

TEST(Init, InitialValuesAreTheStateBeforeTheFirstEdge) {
  temp_dir t;
  const auto f = t.file("c.v",
                        "module cnt(input clk, input en, output [3:0] q, output [3:0] u);\n"
                        "  reg [3:0] c = 4'd5;\n  reg [3:0] n;  // no initial value: X\n"
                        "  initial n = 4'bx;\n"
                        "  always @(posedge clk) begin if (en) c <= c + 4'd1; n <= c; end\n"
                        "  assign q = c;\n  assign u = n;\nendmodule\n");
  auto d = build({f}, "cnt");
  ASSERT_TRUE(d) << d.error().message;
  auto s = random_stimulus(*d, {});
  ASSERT_TRUE(s);
  simulator sim(*d);
  sim_options so;
  so.cycles = 200;
  so.trace_lanes = 1;
  auto ours = simulate(sim, **s, so);
  // q at cycle 0 is 5, not X; u is X until the first edge.
  for (int b = 0; b < 4; ++b) {
    EXPECT_EQ(ours.samples.at(0, 0, b), (5 >> b) & 1) << "q bit " << b;
    EXPECT_EQ(ours.samples.at(0, 0, 4 + b), 2) << "u bit " << b;
  }
  auto ref = run_icarus(*d, **s, {{f}, "cnt", 200, 1});
  ASSERT_TRUE(ref) << ref.error().message;
  auto c = compare(*d, ref->samples, ours.samples, {0, x_policy::strict});
  EXPECT_TRUE(c.passed()) << c.first->signal << " at cycle " << c.first->cycle;
}

// ---- X policy ----

// `s` has no reset: RTL `if (s[0])` on X takes the else branch (q = 2), gates keep X in the bits
// where the two branches differ, until a defined value has shifted into s[0].
constexpr const char* x_design =
    "module xo(input clk, input a, output reg [3:0] q);\n"
    "  reg [3:0] s;\n"
    "  always @(posedge clk) begin\n"
    "    if (s[3]) q <= 4'd1; else q <= 4'd2;\n"
    "    s <= {s[2:0], a};\n"
    "  end\nendmodule\n";

TEST(XPolicy, XAgainstValueIsNamedAndCheckFromOrTwoStateAcceptIt) {
  temp_dir t;
  const auto f = t.file("xo.v", x_design);
  auto d = build({f}, "xo");
  ASSERT_TRUE(d) << d.error().message;
  auto s = random_stimulus(*d, {3});
  ASSERT_TRUE(s);
  simulator sim(*d);
  sim_options so;
  so.cycles = 100;
  so.trace_lanes = 1;
  auto ours = simulate(sim, **s, so);
  auto ref = run_icarus(*d, **s, {{f}, "xo", 100, 1});
  ASSERT_TRUE(ref) << ref.error().message;
  auto strict_default = compare(*d, ref->samples, ours.samples);
  ASSERT_FALSE(strict_default.passed());
  EXPECT_EQ(strict_default.first->cycle, 1u);
  EXPECT_TRUE(strict_default.first->x_vs_value);
  EXPECT_NE(strict_default.first->hint.find("--check-from"), std::string::npos);
  EXPECT_NE(strict_default.first->got.find('x'), std::string::npos);
  // From cycle 5 on, s is defined: everything matches, strictly.
  EXPECT_TRUE(compare(*d, ref->samples, ours.samples, {5, x_policy::strict}).passed());
  EXPECT_FALSE(compare(*d, ref->samples, ours.samples, {4, x_policy::strict}).passed());
  // 2-state: our X against Icarus's value is tolerated, and counted.
  auto two = compare(*d, ref->samples, ours.samples, {0, x_policy::two_state});
  EXPECT_TRUE(two.passed());
  EXPECT_GT(two.x_vs_value_bits, 0u);
  // A value against a different value is still a mismatch under 2-state.
  trace bad = ours.samples;
  bad.samples[50 * bad.bits] ^= 1;
  EXPECT_FALSE(compare(*d, ref->samples, bad, {0, x_policy::two_state}).passed());
}

TEST(XPolicy, CliReportsTheCauseAndCheckFromResetPasses) {
  temp_dir t;
  const auto f = t.file("xo.v", x_design);
  auto fail = eda_sim({f, "--top", "xo", "--cycles", "200", "--check", "--json"});
  EXPECT_EQ(fail.code, 1) << fail.err;
  auto j = nlohmann::json::parse(fail.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << fail.out;
  EXPECT_TRUE(j["check"]["first_mismatch"]["x_vs_value"].get<bool>());
  EXPECT_NE(j["check"]["first_mismatch"]["hint"].get<std::string>().find("un-reset"), std::string::npos);
  auto ok = eda_sim({f, "--top", "xo", "--cycles", "200", "--check", "--check-from", "5", "--x", "strict"});
  EXPECT_EQ(ok.code, 0) << ok.err;
  auto bad = eda_sim({f, "--top", "xo", "--check-from", "soon"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--check-from soon"), std::string::npos) << bad.err;
}

// ---- sources: the reference is built first and its messages are passed through ----

TEST(Sources, IcarusErrorsComeBeforeTheSimulationAndKeepTheirCause) {
  // yosys defines SYNTHESIS, Icarus does not: only Icarus needs timescale.v, which is missing.
  temp_dir t;
  const auto f = t.file("so.v",
                        "`ifndef SYNTHESIS\n`include \"timescale.v\"\n`endif\n"
                        "module so(input clk, input a, output reg q); always @(posedge clk) q <= a; endmodule\n");
  auto r = eda_sim({f, "--top", "so", "--cycles", "1000000000", "--check"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("Include file timescale.v not found"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("cycles/s"), std::string::npos) << "the simulation ran before the reference was built:\n"
                                                       << r.err;
  // With -I pointing at a folder that has it, both build and the check passes.
  temp_dir inc;
  inc.file("timescale.v", "`timescale 1ns/1ps\n");
  auto ok = eda_sim({f, "--top", "so", "--cycles", "100", "--check", "-I", inc.path("")});
  EXPECT_EQ(ok.code, 0) << ok.err;
}

// yosys names a missing include but not who asked for it: eda_sim names the file and line, also
// inside an included file, and the -I folders it looked in.
TEST(Sources, AMissingIncludeNamesItsIncluderAndLine) {
  temp_dir t, inc;
  inc.file("mid.vh", "// the middle\n`include \"deeper.vh\"\n");
  const auto f = t.file("top.v", "module m(input clk, output y);\n`include \"mid.vh\"\n  assign y = clk;\nendmodule\n");
  auto r = eda_sim({f, "--top", "m", "-I", inc.path(""), "--cycles", "10"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find(inc.path("mid.vh") +
                       ":2: `include \"deeper.vh\" is found neither beside that file nor in the -I "
                       "folders (" +
                       inc.path("") + ")"),
            std::string::npos)
      << r.err;
}

// A tool that runs long (yosys on a large source) is said to be alive now and then, with the time
// so far; its result is the same as without (a stand-in tool that takes half a second).
TEST(Sources, ALongToolRunSaysItIsStillRunning) {
  std::vector<double> said;
  auto r = detail::run_tool(
      {"sh", "-c", "sleep 0.5; echo done"}, "", [&](double s) { said.push_back(s); }, std::chrono::milliseconds(100));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->status.success());
  EXPECT_EQ(r->out, "done\n");
  ASSERT_GE(said.size(), 3u);
  EXPECT_TRUE(std::is_sorted(said.begin(), said.end()));
  EXPECT_LT(said.front(), said.back());
}

TEST(Sources, DefinesAndParametersReachYosysAndIcarus) {
  temp_dir t;
  const auto f =
      t.file("p.v",
             "module p #(parameter W = 4, parameter [7:0] K = 8'd1)(input clk, input [W-1:0] a,\n"
             "  output reg [W-1:0] q, output [7:0] k);\n"
             "`ifdef INVERT\n  always @(posedge clk) q <= ~a;\n`else\n  always @(posedge clk) q <= a;\n`endif\n"
             "  assign k = K;\nendmodule\n");
  auto r = eda_sim(
      {f, "--top", "p", "--cycles", "50", "--check", "-P", "W=6", "-P", "K=8'h3c", "-D", "INVERT", "--json", "--tree"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto run =
      eda_sim({f, "--top", "p", "--cycles", "50", "--check", "-P", "W=6", "-P", "K=8'h3c", "-D", "INVERT", "--json"});
  ASSERT_EQ(run.code, 0) << run.err;
  auto j = nlohmann::json::parse(run.out);
  // q is 6 bits and k 8: 14 bits per cycle, none X after the first.
  EXPECT_EQ(j["check"]["compared_bits"].get<int>() + j["check"]["dont_care_bits"].get<int>(), 50 * 14);
  // Placed before the file list, each of -P, -D and -I takes one value, not the files too.
  temp_dir inc;
  auto first = eda_sim({"-P", "W=6", "-D", "INVERT", "-P", "K=8'h3c", "-I", inc.path(""), f, "--top", "p", "--cycles",
                        "50", "--check", "--json"});
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_EQ(nlohmann::json::parse(first.out)["check"]["compared_bits"], j["check"]["compared_bits"]) << first.out;
  auto bad = eda_sim({f, "--top", "p", "-P", "W 6"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--param W 6"), std::string::npos) << bad.err;
  auto badreset = eda_sim({f, "--top", "p", "--reset", "a:sideways"});
  EXPECT_EQ(badreset.code, 2);
}

// ---- VCD, read back by a strict reader ----

struct vcd_file {
  std::map<std::string, int> width;                                  // id -> bits
  std::map<std::string, std::map<std::string, std::string>> scopes;  // scope path -> name -> id
  std::map<std::string, std::set<std::string>> values;               // id -> values seen
  std::string error;
};

// Reads a VCD and rejects anything loose: unknown sections, a name twice in a scope, an id
// redeclared with another width, an undeclared id, a value of the wrong width or with characters
// other than 0 1 x z, time going backwards.
vcd_file read_vcd_strict(const std::string& text) {
  vcd_file v;
  std::istringstream in(text);
  std::vector<std::string> tok;
  for (std::string t; in >> t;) tok.push_back(t);
  std::vector<std::string> scope;
  std::size_t i = 0;
  auto fail = [&](const std::string& why) {
    v.error = why + " (token " + std::to_string(i) + ")";
    return v;
  };
  auto path = [&] {
    std::string p;
    for (const auto& s : scope) p += "/" + s;
    return p;
  };
  bool defs_done = false;
  long long last_time = -1;
  auto is_value = [](const std::string& s) { return s.find_first_not_of("01xz") == std::string::npos && !s.empty(); };
  while (i < tok.size()) {
    const std::string& t = tok[i];
    if (!defs_done) {
      if (t == "$version" || t == "$timescale" || t == "$date" || t == "$comment") {
        while (i < tok.size() && tok[i] != "$end") ++i;
        if (i == tok.size()) return fail("unterminated " + t);
        ++i;
      } else if (t == "$scope") {
        if (i + 3 >= tok.size() || tok[i + 1] != "module" || tok[i + 3] != "$end") return fail("bad $scope");
        scope.push_back(tok[i + 2]);
        if (v.scopes.count(path())) return fail("scope " + path() + " twice");
        v.scopes[path()];
        i += 4;
      } else if (t == "$upscope") {
        if (i + 1 >= tok.size() || tok[i + 1] != "$end" || scope.empty()) return fail("bad $upscope");
        scope.pop_back();
        i += 2;
      } else if (t == "$var") {
        if (i + 5 >= tok.size() || tok[i + 1] != "wire") return fail("bad $var");
        const int w = std::stoi(tok[i + 2]);
        const std::string& id = tok[i + 3];
        const std::string& name = tok[i + 4];
        std::size_t end = i + 5;
        if (tok[end] != "$end") {
          if (tok[end] != "[" + std::to_string(w - 1) + ":0]") return fail("bad range " + tok[end] + " for " + name);
          ++end;
        }
        if (end >= tok.size() || tok[end] != "$end") return fail("$var " + name + " not ended");
        if (scope.empty()) return fail("$var outside a scope");
        if (name.find('/') != std::string::npos) return fail("name with a path: " + name);
        if (!v.scopes[path()].emplace(name, id).second) return fail("name " + name + " twice in " + path());
        auto [it, fresh] = v.width.emplace(id, w);
        if (!fresh && it->second != w) return fail("id " + id + " redeclared with another width");
        i = end + 1;
      } else if (t == "$enddefinitions") {
        if (i + 1 >= tok.size() || tok[i + 1] != "$end" || !scope.empty()) return fail("bad $enddefinitions");
        defs_done = true;
        i += 2;
      } else {
        return fail("unexpected " + t + " in the header");
      }
      continue;
    }
    if (t[0] == '#') {
      const long long now = std::stoll(t.substr(1));
      if (now <= last_time) return fail("time goes back at " + t);
      last_time = now;
      ++i;
    } else if (t[0] == 'b') {
      if (i + 1 >= tok.size()) return fail("vector without id");
      const std::string val = t.substr(1), id = tok[i + 1];
      auto w = v.width.find(id);
      if (w == v.width.end()) return fail("undeclared id " + id);
      if (!is_value(val) || static_cast<int>(val.size()) != w->second) return fail("bad vector value " + t);
      v.values[id].insert(val);
      i += 2;
    } else {
      const std::string val = t.substr(0, 1), id = t.substr(1);
      auto w = v.width.find(id);
      if (w == v.width.end()) return fail("undeclared id in " + t);
      if (!is_value(val) || w->second != 1) return fail("bad scalar change " + t);
      v.values[id].insert(val);
      ++i;
    }
  }
  if (!defs_done) return fail("no $enddefinitions");
  return v;
}

TEST(Vcd, StrictReaderAcceptsItClockOnceAndAliveInInstancesNoSourcePaths) {
  temp_dir t;
  auto d = build({t.file("wb.v", wb_design)}, "wbtop");
  ASSERT_TRUE(d) << d.error().message;
  auto s = random_stimulus(*d, {4});
  ASSERT_TRUE(s);
  auto w = vcd_writer::open(t.path("w.vcd"), *d);
  ASSERT_TRUE(w) << w.error().message;
  simulator sim(*d);
  sim_options so;
  so.cycles = 30;
  so.vcd = w->get();
  simulate(sim, **s, so);
  w->reset();
  std::ifstream in(t.path("w.vcd"));
  std::stringstream ss;
  ss << in.rdbuf();
  auto v = read_vcd_strict(ss.str());
  ASSERT_TRUE(v.error.empty()) << v.error;
  ASSERT_TRUE(v.scopes.count("/wbtop"));
  ASSERT_TRUE(v.scopes.count("/wbtop/u"));
  const auto& top = v.scopes["/wbtop"];
  ASSERT_TRUE(top.count("wb_clk_i"));
  const std::string clock_id = top.at("wb_clk_i");
  // The instance's clk is the same variable as the top's clock, and it toggles.
  ASSERT_TRUE(v.scopes["/wbtop/u"].count("clk"));
  EXPECT_EQ(v.scopes["/wbtop/u"].at("clk"), clock_id);
  EXPECT_EQ(v.values[clock_id], (std::set<std::string>{"0", "1"}));
  // The function's locals are there, without the folder the source was in.
  bool func_local = false;
  for (const auto& [name, id] : v.scopes["/wbtop/u"]) {
    func_local = func_local || name.find("$func$wb.v:") != std::string::npos;
    EXPECT_EQ(name.find(t.path("")), std::string::npos) << name;
  }
  EXPECT_TRUE(func_local);
}

TEST(Vcd, StrictReaderRejectsADuplicateName) {
  // The reader itself must be able to fail.
  auto v = read_vcd_strict(
      "$scope module m $end\n$var wire 1 ! a $end\n$var wire 1 \" a $end\n$upscope $end\n"
      "$enddefinitions $end\n#0\n0!\n");
  EXPECT_NE(v.error.find("twice"), std::string::npos) << v.error;
  auto v2 = read_vcd_strict(
      "$scope module m $end\n$var wire 2 ! a [1:0] $end\n$upscope $end\n$enddefinitions $end\n"
      "#0\nb1 !\n");
  EXPECT_NE(v2.error.find("bad vector"), std::string::npos) << v2.error;
}

}  // namespace
}  // namespace banyan::eda

namespace banyan::eda {
namespace {

// ---- the netlist cache ----

TEST(Cache, SecondRunReadsTheNetlistAndAnIncludeChangeMissesIt) {
  testing::temp_dir t, inc, cache;
  inc.file("w.vh", "`define W 4\n");
  const auto f = t.file("c.v",
                        "`include \"w.vh\"\nmodule c(input clk, input [`W-1:0] a, output reg [`W-1:0] q);\n"
                        "  always @(posedge clk) q <= a + 1;\nendmodule\n");
  yosys_options yo{{f}, "c"};
  yo.sources.include_dirs = {inc.path("")};
  yo.cache_dir = cache.path("");
  auto first = synthesize(yo);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_FALSE(first->from_cache);
  auto second = synthesize(yo);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_TRUE(second->from_cache);
  EXPECT_EQ(second->modules.at("c").ports.at(1).bits.size(), 4u);
  // Another width in the include file: the key changes, yosys runs again and sees it.
  inc.file("w.vh", "`define W 6\n");
  auto third = synthesize(yo);
  ASSERT_TRUE(third) << third.error().message;
  EXPECT_FALSE(third->from_cache);
  EXPECT_EQ(third->modules.at("c").ports.at(1).bits.size(), 6u);
  // A parameter is part of the key too.
  yo.sources.defines = {"UNUSED"};
  auto fourth = synthesize(yo);
  ASSERT_TRUE(fourth);
  EXPECT_FALSE(fourth->from_cache);
}

TEST(Cache, ConcurrentRunsShareOneNetlist) {
  // The nodes of a launch start together: all succeed and agree.
  testing::temp_dir t, cache;
  const auto f = t.file("c.v",
                        "module c(input clk, input [3:0] a, output reg [3:0] q); always @(posedge clk) q <= a ^ 4'd5;"
                        " endmodule\n");
  std::vector<process> runs;
  for (int i = 0; i < 3; ++i) {
    auto p =
        process::spawn({EDA_SIM_BINARY, f, "--top", "c", "--cycles", "20", "--json", "--cache-dir", cache.path("")},
                       {.out = output_mode::capture, .err = output_mode::capture});
    ASSERT_TRUE(p) << p.error().message;
    runs.push_back(std::move(*p));
  }
  int from_cache = 0;
  std::set<std::uint64_t> signatures;
  for (auto& p : runs) {
    auto st = p.wait();
    ASSERT_TRUE(st && st->success()) << p.output(process::stream::err);
    auto j = nlohmann::json::parse(p.output());
    from_cache += j["netlist_from_cache"].get<bool>();
    signatures.insert(j["signature"].get<std::uint64_t>());
  }
  EXPECT_EQ(from_cache, 2);
  EXPECT_EQ(signatures.size(), 1u);
}

}  // namespace
}  // namespace banyan::eda

namespace banyan::eda {
namespace {

// ---- stimulus recorded by a testbench ----

TEST(StimulusVcd, ATestbenchDumpReplaysTheSameRun) {
  // The testbench sends 20 frames through the UART in loopback, changing inputs at the falling
  // edge; its VCD replayed by eda_sim must receive the same 20 frames and match Icarus.
  testing::temp_dir t;
  const std::string uart = std::string(EDA_DESIGNS_DIR) + "/uart/uart.v";
  const auto tb = t.file(
      "tb.v",
      "`timescale 1ns/1ps\nmodule tb;\n"
      "  reg clk = 0, rst_n = 0, tx_start = 0, rx = 1, loopback = 1;\n  reg [7:0] tx_data = 0;\n"
      "  wire tx, tx_busy, rx_valid, rx_error; wire [7:0] rx_data, rx_count;\n"
      "  uart dut(.clk(clk), .rst_n(rst_n), .tx_start(tx_start), .tx_data(tx_data), .rx(rx), .loopback(loopback),\n"
      "           .tx(tx), .tx_busy(tx_busy), .rx_data(rx_data), .rx_valid(rx_valid), .rx_error(rx_error),\n"
      "           .rx_count(rx_count));\n"
      "  always #5 clk = ~clk;\n  integer i;\n"
      "  initial begin\n    $dumpfile(\"" +
          t.path("tb.vcd") +
          "\"); $dumpvars(0, tb);\n    #12 rst_n = 1;\n"
          "    for (i = 0; i < 20; i = i + 1) begin\n"
          "      @(negedge clk); tx_start = 1; tx_data = i * 37 + 5;\n      @(negedge clk); tx_start = 0;\n"
          "      wait (!tx_busy);\n    end\n    #200 $finish;\n  end\nendmodule\n");
  auto built = run_process({"iverilog", "-g2012", "-o", t.path("tb.vvp"), tb, uart});
  ASSERT_TRUE(built && built->status.success()) << (built ? built->out + built->err : built.error().message);
  auto ran = run_process({"vvp", "-n", t.path("tb.vvp")});
  ASSERT_TRUE(ran && ran->status.success());
  auto d = build({uart}, "uart");
  ASSERT_TRUE(d) << d.error().message;
  auto s = vcd_stimulus(*d, t.path("tb.vcd"), "tb.dut");
  ASSERT_TRUE(s) << s.error().message;
  const std::uint64_t cycles = *(*s)->length();
  EXPECT_GT(cycles, 20u * 40u);  // 20 frames of 10 bits x 4 clocks
  simulator sim(*d);
  sim_options so;
  so.cycles = cycles;
  so.trace_lanes = 1;
  auto ours = simulate(sim, **s, so);
  // rx_count is the last output: bits [bits-8, bits).
  int count = 0;
  for (int b = 0; b < 8; ++b) count |= (ours.samples.at(cycles - 1, 0, ours.samples.bits - 8 + b) == 1) << b;
  EXPECT_EQ(count, 20);
  auto ref = run_icarus(*d, **s, {{uart}, "uart", cycles, 1});
  ASSERT_TRUE(ref) << ref.error().message;
  auto c = compare(*d, ref->samples, ours.samples, {0, x_policy::strict});
  EXPECT_TRUE(c.passed()) << c.first->signal << " at cycle " << c.first->cycle;
  // A scope that lacks an input is named in the error.
  auto bad = vcd_stimulus(*d, t.file("bad.vcd",
                                     "$scope module tb $end\n$var wire 1 ! clk $end\n$upscope $end\n"
                                     "$enddefinitions $end\n#0\n0!\n#5\n1!\n"));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("lacks input 'rst_n'"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("bad.vcd"), std::string::npos) << bad.error().message;
}

}  // namespace
}  // namespace banyan::eda
