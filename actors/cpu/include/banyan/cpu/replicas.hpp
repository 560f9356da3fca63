// Worker replicas of nn's models for worker_group: a GPT and an MLP, each fed its slice of a global
// batch by a caller-supplied function (called on the worker's thread; it must be thread-safe and
// depend only on its arguments, so a run is deterministic).
#pragma once

#include "banyan/cpu/worker_group.hpp"

#include <banyan/nn/gpt.hpp>
#include <banyan/nn/mlp.hpp>

#include <cstdint>
#include <functional>
#include <vector>

namespace banyan::cpu {

// Fills tokens and targets (batch * seq ids each) for `worker` at global step `step`.
using text_slice =
    std::function<void(std::int64_t step, int worker, std::vector<int>& tokens, std::vector<int>& targets)>;
// Fills inputs (batch * inputs floats) and labels (batch) for `worker` at global step `step`.
using image_slice = std::function<void(std::int64_t step, int worker, std::vector<float>& x, std::vector<int>& labels)>;

// Factories for worker_group::start. batch is per worker. The replica's initial parameters do not
// matter: a worker copies (or shares) the master's before its first forward.
replica_factory gpt_replicas(const nn::gpt_config& cfg, int batch, int seq_len, text_slice data);
replica_factory mlp_replicas(const nn::mlp_config& cfg, int batch, image_slice data);

}  // namespace banyan::cpu
