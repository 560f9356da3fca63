// Times one layer's forward or backward when profiling is on (private helper of the models).
#pragma once

#include "banyan/nn/backend.hpp"

#include <chrono>

namespace banyan::nn::detail {

template <class F>
void timed_call(backend& be, bool on, double& slot, F&& f) {
  if (!on) {
    f();
    return;
  }
  be.synchronize();
  const auto start = std::chrono::steady_clock::now();
  f();
  be.synchronize();
  slot = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace banyan::nn::detail
