// The GPT trainer's device-memory budget: --device-memory and --memory-policy into
// nn::memory_options, and the plan and the measured peak as text or JSON. Private to the trainer.
#pragma once

#include <banyan/nn/gpt.hpp>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace banyan::trainer {

// `size`: "" (no budget), bytes, or a number with a unit ("200MiB", "1.5GB": B, K/KB = 1000, Ki/KiB =
// 1024, likewise M, G, T, P, E; case-insensitive) that comes to a whole, positive number of bytes
// below 2^64. Errors name the flag and its value as given.
result<std::optional<nn::memory_options>> memory_budget(const std::string& size, const std::string& policy);

// {"budget", "policy", "peak_bytes" (measured), "plan_peak_bytes", "host_bytes", "predicted_ms",
// "compute_ms", "late_copies"}, and "host_budget" {"capacity", "taken" (by the host pool), "held" (by
// the checkpoint buffer)} when the host pool shares one with the checkpoints; with `plan`, also "plan": one row per
// layer that saves activations (layer, tensors, bytes, decision, extra_ms, and the estimates swap_ms (null: cannot
// overlap) and recompute_ms).
nlohmann::json memory_json(const nn::memory_executor& m, bool plan);

}  // namespace banyan::trainer
