// The gate functions on either lane type the engines use, private to eda_sim: `lanes` (64 lanes,
// logic.hpp) and `narrow` (lanes 0-7, two bytes per value), the encoding both share, and one op's
// function by opcode. The compiled engine (compiled.cpp) emits the same formulas as C++ text; its
// tests check the two against each other.
#pragma once

#include <banyan/eda_sim/design.hpp>
#include <banyan/eda_sim/logic.hpp>

#include <bit>
#include <cstdint>

namespace banyan::eda::detail {

// Lanes 0-7 only, for runs of at most 8 lanes (a single stimulus stream most often): the same
// encoding as `lanes` in a byte per plane, so the flat engine's values are 2 bytes instead of 16
// and a design's values stay in the first-level cache.
struct narrow {
  std::uint8_t hi = 0xff, lo = 0xff;
  static constexpr narrow x() { return {0xff, 0xff}; }
  constexpr std::uint8_t unknown() const { return hi & lo; }
  friend constexpr bool operator==(const narrow&, const narrow&) = default;
};
template <class L>
inline constexpr std::uint64_t all_lanes = ~0ull;
template <>
inline constexpr std::uint64_t all_lanes<narrow> = 0xff;
template <class L>
constexpr L from_lanes(lanes x);
template <>
constexpr lanes from_lanes<lanes>(lanes x) {
  return x;
}
template <>
constexpr narrow from_lanes<narrow>(lanes x) {
  return {static_cast<std::uint8_t>(x.hi), static_cast<std::uint8_t>(x.lo)};
}
inline lanes to_lanes(lanes x) { return x; }
inline lanes to_lanes(narrow x) { return {x.hi, x.lo | ~0xffull}; }  // lanes 8-63 read as 0

// The gate functions of logic.hpp for either lane type.
template <class L>
constexpr L make(std::uint64_t hi, std::uint64_t lo) {
  using P = decltype(L::hi);
  return {static_cast<P>(hi), static_cast<P>(lo)};
}
template <class L>
constexpr L g_not(L a) {
  return {a.lo, a.hi};
}
template <class L>
constexpr L g_and(L a, L b) {
  return make<L>(a.hi & b.hi, a.lo | b.lo);
}
template <class L>
constexpr L g_or(L a, L b) {
  return make<L>(a.hi | b.hi, a.lo & b.lo);
}
template <class L>
constexpr L g_xor(L a, L b) {
  return make<L>((a.hi & b.lo) | (a.lo & b.hi), (a.lo & b.lo) | (a.hi & b.hi));
}
template <class L>
constexpr L g_mux(L a, L b, L s) {
  return make<L>((s.lo & a.hi) | (s.hi & b.hi), (s.lo & a.lo) | (s.hi & b.lo));
}

// narrow's gates on both planes as one 16-bit word: one load per input and one store per output
// (two byte stores followed by a 16-bit load of the same value stall store-to-load forwarding).
constexpr std::uint32_t nhi = std::bit_cast<std::uint16_t>(narrow{0xff, 0});  // hi's byte in the word
constexpr std::uint32_t nlo = 0xffff ^ nhi;
constexpr std::uint32_t word(narrow x) { return std::bit_cast<std::uint16_t>(x); }
constexpr narrow from_word(std::uint32_t w) { return std::bit_cast<narrow>(static_cast<std::uint16_t>(w)); }
constexpr std::uint32_t swap_planes(std::uint32_t w) { return ((w >> 8) | (w << 8)) & 0xffff; }
template <>
constexpr narrow g_not(narrow a) {
  return from_word(swap_planes(word(a)));
}
template <>
constexpr narrow g_and(narrow a, narrow b) {
  const std::uint32_t x = word(a), y = word(b);
  return from_word((x & y & nhi) | ((x | y) & nlo));
}
template <>
constexpr narrow g_or(narrow a, narrow b) {
  const std::uint32_t x = word(a), y = word(b);
  return from_word(((x | y) & nhi) | (x & y & nlo));
}
template <>
constexpr narrow g_xor(narrow a, narrow b) {
  const std::uint32_t x = word(a), y = word(b);
  const std::uint32_t t1 = x & swap_planes(y), t2 = x & y;  // hi & other lo / lo & other hi; same planes
  return from_word(((t1 | swap_planes(t1)) & nhi) | ((t2 | swap_planes(t2)) & nlo));
}
template <>
constexpr narrow g_mux(narrow a, narrow b, narrow s) {
  const std::uint32_t w = word(s);
  const std::uint32_t s_lo = (w & nlo) | swap_planes(w & nlo), s_hi = (w & nhi) | swap_planes(w & nhi);
  return from_word((s_lo & word(a)) | (s_hi & word(b)));
}
// The formulas against logic.hpp's on every pair of 2-lane values (0, 1, X in each lane).
constexpr bool narrow_gates_agree() {
  const lanes vals[] = {lanes::zero(), lanes::one(), lanes::x(), {1, 2}, {2, 1}, {3, 1}, {1, 3}, {2, 3}, {3, 2}};
  for (lanes a : vals)
    for (lanes b : vals)
      for (lanes c : vals) {
        const narrow x = from_lanes<narrow>(a), y = from_lanes<narrow>(b), z = from_lanes<narrow>(c);
        if (!(g_not(x) == from_lanes<narrow>(op_not(a))) || !(g_and(x, y) == from_lanes<narrow>(op_and(a, b))) ||
            !(g_or(x, y) == from_lanes<narrow>(op_or(a, b))) || !(g_xor(x, y) == from_lanes<narrow>(op_xor(a, b))) ||
            !(g_mux(x, y, z) == from_lanes<narrow>(op_mux(a, b, c))))
          return false;
      }
  return true;
}
static_assert(narrow_gates_agree());

template <opcode C, class L>
inline L gate(L a, L b, L s) {
  if constexpr (C == opcode::buf) return a;
  else if constexpr (C == opcode::not_) return g_not(a);
  else if constexpr (C == opcode::and_) return g_and(a, b);
  else if constexpr (C == opcode::or_) return g_or(a, b);
  else if constexpr (C == opcode::xor_) return g_xor(a, b);
  else if constexpr (C == opcode::nand) return g_not(g_and(a, b));
  else if constexpr (C == opcode::nor) return g_not(g_or(a, b));
  else if constexpr (C == opcode::xnor) return g_not(g_xor(a, b));
  else if constexpr (C == opcode::andnot) return g_and(a, g_not(b));
  else if constexpr (C == opcode::ornot) return g_or(a, g_not(b));
  else if constexpr (C == opcode::mux) return g_mux(a, b, s);
  else if constexpr (C == opcode::nmux) return g_not(g_mux(a, b, s));
  else return L::x();
}

// gate<C> by a run-time opcode (memrd: X; the engines read memories apart).
template <class L>
L gate_of(opcode c, L a, L b, L s) {
  switch (c) {
    case opcode::buf: return gate<opcode::buf>(a, b, s);
    case opcode::not_: return gate<opcode::not_>(a, b, s);
    case opcode::and_: return gate<opcode::and_>(a, b, s);
    case opcode::or_: return gate<opcode::or_>(a, b, s);
    case opcode::xor_: return gate<opcode::xor_>(a, b, s);
    case opcode::nand: return gate<opcode::nand>(a, b, s);
    case opcode::nor: return gate<opcode::nor>(a, b, s);
    case opcode::xnor: return gate<opcode::xnor>(a, b, s);
    case opcode::andnot: return gate<opcode::andnot>(a, b, s);
    case opcode::ornot: return gate<opcode::ornot>(a, b, s);
    case opcode::mux: return gate<opcode::mux>(a, b, s);
    case opcode::nmux: return gate<opcode::nmux>(a, b, s);
    case opcode::memrd: break;
  }
  return L::x();
}

}  // namespace banyan::eda::detail
