// How the trainers' output reads (private): printf into a std::string, so the trainers' lines keep
// their printf formats, and the parts of their JSON summaries they share.
#pragma once

#include <banyan/nn/checkpoint_store.hpp>

#include <nlohmann/json.hpp>

#include <string>

namespace banyan::trainer {

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// What checkpointing cost the run: saves, bytes, the step loop's stall per save (median, max), the
// buffer's waits for room, the wait for durability at the end, and the last durable step.
nlohmann::json checkpoint_json(const nn::checkpoint_store& store, bool synchronous);

}  // namespace banyan::trainer
