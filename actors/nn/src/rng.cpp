#include "banyan/nn/rng.hpp"

#include <cmath>

namespace banyan::nn {

std::uint64_t rng::next_u64() {
  s_ ^= s_ >> 12;
  s_ ^= s_ << 25;
  s_ ^= s_ >> 27;
  return s_ * 0x2545f4914f6cdd1dull;
}

float rng::uniform() { return static_cast<float>(next_u64() >> 40) / 16777216.0f; }

float rng::normal() {
  float u1 = uniform();
  while (u1 <= 0.0f) u1 = uniform();
  const float u2 = uniform();
  return std::sqrt(-2.0f * std::log(u1)) * std::cos(6.283185307179586f * u2);
}

std::uint32_t rng::below(std::uint32_t n) { return static_cast<std::uint32_t>((next_u64() >> 32) % n); }

}  // namespace banyan::nn
