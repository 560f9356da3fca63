// 4-state logic for 64 independent stimulus lanes at once, bit-parallel.
//
// Each net holds two 64-bit planes: bit i of `hi` says "lane i may be 1", bit i of `lo` says
// "lane i may be 0". So 0 = (hi 0, lo 1), 1 = (1, 0), X = (1, 1). Z is read as X (a gate input cannot
// tell them apart); (0, 0) never occurs. With this encoding every gate is a few word operations and
// X propagates exactly as Verilog's gate primitives do (0 & X = 0, 1 | X = 1, X ? a : a = a).
#pragma once

#include <cstdint>

namespace banyan::eda {

struct lanes {
  std::uint64_t hi = ~0ull;  // default: X in every lane
  std::uint64_t lo = ~0ull;

  static constexpr lanes zero() { return {0, ~0ull}; }
  static constexpr lanes one() { return {~0ull, 0}; }
  static constexpr lanes x() { return {~0ull, ~0ull}; }
  friend constexpr bool operator==(const lanes&, const lanes&) = default;

  // Lanes whose value is X.
  constexpr std::uint64_t unknown() const { return hi & lo; }
  // 0, 1 or 2 (X) for one lane.
  constexpr int get(unsigned lane) const {
    const int h = (hi >> lane) & 1, l = (lo >> lane) & 1;
    return h && l ? 2 : h;
  }
  constexpr void set(unsigned lane, int v) {  // v: 0, 1, 2 = X
    const std::uint64_t m = 1ull << lane;
    hi = (v != 0) ? (hi | m) : (hi & ~m);
    lo = (v != 1) ? (lo | m) : (lo & ~m);
  }
};

constexpr lanes op_not(lanes a) { return {a.lo, a.hi}; }
constexpr lanes op_and(lanes a, lanes b) { return {a.hi & b.hi, a.lo | b.lo}; }
constexpr lanes op_or(lanes a, lanes b) { return {a.hi | b.hi, a.lo & b.lo}; }
constexpr lanes op_xor(lanes a, lanes b) { return {(a.hi & b.lo) | (a.lo & b.hi), (a.lo & b.lo) | (a.hi & b.hi)}; }
// Y = S ? B : A; an X select yields the inputs' common value where they agree.
constexpr lanes op_mux(lanes a, lanes b, lanes s) {
  return {(s.lo & a.hi) | (s.hi & b.hi), (s.lo & a.lo) | (s.hi & b.lo)};
}

}  // namespace banyan::eda
