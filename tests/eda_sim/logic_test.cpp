// The 64-lane gate functions against a scalar 4-state truth table, every input combination in
// different lanes at once.
#include <banyan/eda_sim/logic.hpp>

#include <gtest/gtest.h>

namespace banyan::eda {
namespace {

// Scalar references, Verilog gate semantics: 2 = X.
int ref_not(int a) { return a == 2 ? 2 : !a; }
int ref_and(int a, int b) { return (a == 0 || b == 0) ? 0 : (a == 1 && b == 1) ? 1 : 2; }
int ref_or(int a, int b) { return (a == 1 || b == 1) ? 1 : (a == 0 && b == 0) ? 0 : 2; }
int ref_xor(int a, int b) { return (a == 2 || b == 2) ? 2 : a ^ b; }
int ref_mux(int a, int b, int s) { return s == 0 ? a : s == 1 ? b : (a == b && a != 2) ? a : 2; }

// Lane i carries input combination i (base 3 digits).
void spread(lanes& a, lanes& b, lanes& s) {
  for (unsigned i = 0; i < 27; ++i) {
    a.set(i, i % 3);
    b.set(i, (i / 3) % 3);
    s.set(i, (i / 9) % 3);
  }
}

TEST(Logic, EncodingRoundTripsZeroOneX) {
  lanes v = lanes::zero();
  v.set(3, 1);
  v.set(5, 2);
  EXPECT_EQ(v.get(0), 0);
  EXPECT_EQ(v.get(3), 1);
  EXPECT_EQ(v.get(5), 2);
  EXPECT_EQ(v.unknown(), 1ull << 5);
}

TEST(Logic, GatesMatchScalarTruthTablesInEveryLane) {
  lanes a, b, s;
  spread(a, b, s);
  const lanes n = op_not(a), an = op_and(a, b), o = op_or(a, b), x = op_xor(a, b), m = op_mux(a, b, s);
  for (unsigned i = 0; i < 27; ++i) {
    const int va = i % 3, vb = (i / 3) % 3, vs = (i / 9) % 3;
    SCOPED_TRACE("a=" + std::to_string(va) + " b=" + std::to_string(vb) + " s=" + std::to_string(vs));
    EXPECT_EQ(n.get(i), ref_not(va));
    EXPECT_EQ(an.get(i), ref_and(va, vb));
    EXPECT_EQ(o.get(i), ref_or(va, vb));
    EXPECT_EQ(x.get(i), ref_xor(va, vb));
    EXPECT_EQ(m.get(i), ref_mux(va, vb, vs));
  }
}

TEST(Logic, MuxWithUnknownSelectKeepsAgreeingInputs) {
  EXPECT_EQ(op_mux(lanes::one(), lanes::one(), lanes::x()), lanes::one());
  EXPECT_EQ(op_mux(lanes::zero(), lanes::one(), lanes::x()), lanes::x());
}

}  // namespace
}  // namespace banyan::eda
