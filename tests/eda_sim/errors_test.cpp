// Bad input gets a clear error that names the input and where it is wrong; never a crash.
#include "helpers.hpp"

#include <banyan/eda_sim/stimulus.hpp>

#include <unistd.h>

namespace banyan::eda {
namespace {

using testing::build;
using testing::temp_dir;

TEST(YosysJson, NotJsonNamesTheSource) {
  auto n = read_yosys_json("{ nope", "in.json");
  ASSERT_FALSE(n);
  EXPECT_EQ(n.error().code, errc::bad_netlist);
  EXPECT_NE(n.error().message.find("in.json"), std::string::npos);
}

TEST(YosysJson, BadBitNamesModuleAndPort) {
  auto n = read_yosys_json(
      R"({"modules":{"m":{"attributes":{"top":1},"ports":{"a":{"direction":"input","bits":["q"]}}}}})", "x.json");
  ASSERT_FALSE(n);
  EXPECT_NE(n.error().message.find("module m, port a"), std::string::npos) << n.error().message;
}

TEST(YosysJson, MissingTopIsReported) {
  auto n = read_yosys_json(R"({"modules":{"m":{}}})", "x.json");
  ASSERT_FALSE(n);
  EXPECT_NE(n.error().message.find("top"), std::string::npos);
}

TEST(Flow, SyntaxErrorCarriesYosysMessage) {
  temp_dir t;
  auto f = t.file("bad.v", "module x(input a, output b);\n  assign b = a +;\nendmodule\n");
  auto d = build({f}, "x");
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code, errc::yosys_failed);
  EXPECT_NE(d.error().message.find("bad.v:2: ERROR: syntax error"), std::string::npos) << d.error().message;
}

TEST(Flow, UnknownTopIsYosysError) {
  temp_dir t;
  auto f = t.file("a.v", "module a(input x, output y); assign y = x; endmodule\n");
  auto d = build({f}, "nosuch");
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("nosuch"), std::string::npos) << d.error().message;
}

TEST(Flow, MissingFileIsNamed) {
  auto d = build({"/nonexistent/file.v"}, "x");
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("/nonexistent/file.v"), std::string::npos);
}

TEST(Elaborate, LatchNamesCellAndModule) {
  temp_dir t;
  auto f = t.file("l.v",
                  "module lat(input en, input d, output reg q);\n  always @* if (en) q = d;\nendmodule\n"
                  "module top(input en, input d, output q); lat u(.en(en), .d(d), .q(q)); endmodule\n");
  auto d = build({f}, "top");
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code, errc::unsupported);
  EXPECT_NE(d.error().message.find("module lat"), std::string::npos) << d.error().message;
  EXPECT_NE(d.error().message.find("$_DLATCH_P_"), std::string::npos) << d.error().message;
  EXPECT_NE(d.error().message.find("latch"), std::string::npos) << d.error().message;
}

TEST(Elaborate, SecondClockNamesCellAndBothClocks) {
  temp_dir t;
  auto f = t.file("c.v",
                  "module top(input clk, input clk2, input d, output reg q1, output reg q2);\n"
                  "  always @(posedge clk) q1 <= d;\n  always @(posedge clk2) q2 <= d;\nendmodule\n");
  auto d = build({f}, "top");
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code, errc::unsupported);
  EXPECT_NE(d.error().message.find("second clock"), std::string::npos) << d.error().message;
  EXPECT_NE(d.error().message.find("clk2"), std::string::npos) << d.error().message;
  EXPECT_NE(d.error().message.find("module top, cell"), std::string::npos) << d.error().message;
}

TEST(Elaborate, NegedgeFlipFlopIsNamed) {
  temp_dir t;
  auto f = t.file("n.v", "module top(input clk, input d, output reg q); always @(negedge clk) q <= d; endmodule\n");
  auto d = build({f}, "top");
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("$_DFF_N_"), std::string::npos) << d.error().message;
  EXPECT_NE(d.error().message.find("posedge"), std::string::npos) << d.error().message;
}

TEST(Elaborate, ClockUsedAsDataIsRejected) {
  temp_dir t;
  auto f = t.file("k.v",
                  "module top(input clk, input d, output reg q, output y);\n"
                  "  always @(posedge clk) q <= d;\n  assign y = d & clk;\nendmodule\n");
  auto d = build({f}, "top");
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("clock clk is also used as data"), std::string::npos) << d.error().message;
}

TEST(Elaborate, CombinationalLoopAcrossInstancesIsFound) {
  // yosys keeps a loop through two instances (it cannot see through the hierarchy).
  temp_dir t;
  auto f = t.file("loop.v",
                  "module inv(input a, output y); assign y = ~a; endmodule\n"
                  "module buf_(input a, input e, output y); assign y = a & e; endmodule\n"
                  "module top(input e, output y); wire w;\n"
                  "  inv i0(.a(y), .y(w)); buf_ b0(.a(w), .e(e), .y(y));\nendmodule\n");
  auto d = build({f}, "top");
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code, errc::combinational_loop) << d.error().message;
  // The loop's nets as the source names them, with their lines, not abc's cells.
  EXPECT_NE(d.error().message.find("through nets w (declared at "), std::string::npos) << d.error().message;
  EXPECT_NE(d.error().message.find("loop.v:3) -> y (declared at "), std::string::npos) << d.error().message;
  EXPECT_EQ(d.error().message.find("$abc"), std::string::npos) << d.error().message;
}

class StimulusFile : public ::testing::Test {
 protected:
  void SetUp() override {
    auto f = t.file("s.v",
                    "module top(input clk, input rst, input [3:0] a, output reg [3:0] q);\n"
                    "  always @(posedge clk) q <= rst ? 4'd0 : a; endmodule\n");
    auto r = build({f}, "top");
    ASSERT_TRUE(r) << r.error().message;
    d = std::move(*r);
  }
  temp_dir t;
  design d;
};

TEST_F(StimulusFile, BadValueNamesFileLineAndColumn) {
  auto s = file_stimulus(d, t.file("st.txt", "# comment\nrst a\n1 0x0\n0 0x1g\n"));
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("st.txt:4, column 2 (a)"), std::string::npos) << s.error().message;
}

TEST_F(StimulusFile, TooWideValueIsRejected) {
  auto s = file_stimulus(d, t.file("st.txt", "rst a\n0 17\n"));
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("does not fit in 4 bits"), std::string::npos) << s.error().message;
}

TEST_F(StimulusFile, HeaderMustNameEveryInput) {
  auto s = file_stimulus(d, t.file("st.txt", "a\n1\n"));
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("lacks input 'rst'"), std::string::npos) << s.error().message;
  auto s2 = file_stimulus(d, t.file("st2.txt", "rst a b\n"));
  ASSERT_FALSE(s2);
  EXPECT_NE(s2.error().message.find("st2.txt:1: header names 'b'"), std::string::npos) << s2.error().message;
}

TEST_F(StimulusFile, ValuesReachEveryLane) {
  auto s = file_stimulus(d, t.file("st.txt", "a rst\n0b1x01 1\n5 0\n"));
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(*(*s)->length(), 2u);
  std::vector<lanes> v(input_bits(d));
  (*s)->fill(0, v);
  // inputs order: rst, a[0..3]
  EXPECT_EQ(v[0], lanes::one());
  EXPECT_EQ(v[1], lanes::one());
  EXPECT_EQ(v[2], lanes::zero());
  EXPECT_EQ(v[3], lanes::x());
  EXPECT_EQ(v[4], lanes::one());
}

TEST_F(StimulusFile, RandomResetIsAssertedThenReleasedAndLanesDoNotDependOnLaneCount) {
  random_options ro;
  ro.seed = 42;
  ro.reset_cycles = 3;
  auto s = random_stimulus(d, ro);
  ASSERT_TRUE(s);
  std::vector<lanes> v(input_bits(d));
  for (std::uint64_t c = 0; c < 6; ++c) {
    (*s)->fill(c, v);
    EXPECT_EQ(v[0], c < 3 ? lanes::one() : lanes::zero()) << "cycle " << c;
  }
  random_options named;
  named.resets = {{"nosuch", std::nullopt}};
  auto bad = random_stimulus(d, named);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("--reset nosuch"), std::string::npos);
}

}  // namespace
}  // namespace banyan::eda
