// The per-core workers' error codes (banyan::result / banyan::error values, base/result.hpp). Every
// message names the input ("--workers 0: must be `per-core`, `per-pu` or a positive count").
#pragma once

#include "banyan/base/result.hpp"

namespace banyan::cpu {

enum class errc {
  invalid_argument,  // a worker request or option out of range
  topology,          // hwloc could not discover (or parse) the machine's topology
  unsupported,       // a valid request this machine or model cannot serve (CUDA replicas, no binding)
  worker,            // a worker could not build its replica
};

const char* to_string(errc code);

}  // namespace banyan::cpu

BANYAN_ERROR_ENUM(banyan::cpu::errc, "cpu");
