// Times one layer's forward or backward when profiling is on (private helper of the models).
#pragma once

#include "banyan/nn/arena.hpp"
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

// One layer's forward or backward: timed, with the layer hooks around it.
template <class F>
void layer_call(backend& be, bool profiling, double& slot, const layer_hooks& hooks, int layer, bool forward, F&& f) {
  if (forward && hooks.before_forward) hooks.before_forward(layer);
  timed_call(be, profiling, slot, std::forward<F>(f));
  if (!forward && hooks.after_backward) hooks.after_backward(layer);
}

}  // namespace banyan::nn::detail
