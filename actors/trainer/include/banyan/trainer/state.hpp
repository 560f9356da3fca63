// A trainer's state on disk and its way out on failure.
//
// State = a model's parameters plus the AdamW moments and step count, stored as one nn checkpoint
// (banyan/nn/checkpoint.hpp: atomic replace, checksummed), tagged with the model's kind ("gpt") and
// config so that a resume into another model is a clear error rather than garbage.
#pragma once

#include <banyan/nn/adamw.hpp>
#include <banyan/nn/arena.hpp>
#include <banyan/nn/backend.hpp>
#include <banyan/sdk/context.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace banyan::trainer {

// Saves `params` (on `be`) and `opt` to `file` as model `kind` with `config`. Errors (nn::errc::io):
// the file cannot be written; the previous file, if any, is then left as it was.
result<void> save_state(const std::filesystem::path& file, const std::string& kind,
                        std::vector<std::int64_t> config, const nn::arena& params, nn::backend& be,
                        const nn::adamw& opt);

// Loads `file` into `params` and `opt` and returns the step count it was saved at. Errors (nn::errc):
// io (missing, unreadable), corrupt, unsupported (another format version), mismatch (saved for another
// kind, config or parameter count); `params` and `opt` are untouched on error.
result<int> restore_state(const std::filesystem::path& file, const std::string& kind,
                          const std::vector<std::int64_t>& config, nn::arena& params, nn::backend& be, nn::adamw& opt);

// Logs `message` as an error of the component (banyan::log, under its path) and ends the run with exit
// code 1. A trainer calls it for any error it cannot recover from: bad data, a bad config, a failed save.
void fail(context& ctx, std::string_view message);

// The app's name: the first level of a component's path ("/train_gpt/trainer" -> "train_gpt").
std::string app_name(std::string_view component_path);

}  // namespace banyan::trainer
