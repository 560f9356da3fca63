// Deterministic random numbers that do not depend on the standard library's distributions (which
// differ between implementations): a seed gives the same weights and batches everywhere.
#pragma once

#include <cstdint>

namespace banyan::nn {

class rng {
 public:
  explicit rng(std::uint64_t seed) : s_(seed ? seed : 0x9e3779b97f4a7c15ull) {}
  std::uint64_t next_u64();              // xorshift64*
  float uniform();                       // [0,1)
  float normal();                        // N(0,1), Box-Muller
  std::uint32_t below(std::uint32_t n);  // [0,n)

 private:
  std::uint64_t s_;
};

}  // namespace banyan::nn
