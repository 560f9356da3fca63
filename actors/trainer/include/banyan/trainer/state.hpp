// A trainer's state on disk and its way out on failure.
//
// State = a model's parameters plus the AdamW moments and step count, stored as one nn checkpoint
// (banyan/nn/checkpoint.hpp: atomic replace, checksummed), tagged with the model's kind ("gpt"),
// config and vocabulary so that a resume into another model or onto another corpus is a clear error
// rather than garbage.
#pragma once

#include <banyan/nn/adamw.hpp>
#include <banyan/nn/arena.hpp>
#include <banyan/nn/backend.hpp>
#include <banyan/nn/checkpoint.hpp>
#include <banyan/sdk/context.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace banyan::trainer {

// Saves `params` (on `be`) and `opt` to `file` tagged with `id` (model, config, vocabulary; its
// stored_floats is not used). Errors (nn::errc::io): the file cannot be written; the previous file, if
// any, is then left as it was.
result<void> save_state(const std::filesystem::path& file, const nn::checkpoint_identity& id, const nn::arena& params,
                        nn::backend& be, const nn::adamw& opt);

// Loads `file` into `params` and `opt` and returns the step count it was saved at. Errors (nn::errc):
// io (missing, unreadable, a directory), corrupt, unsupported (another format version), mismatch
// (saved for another kind, config field, vocabulary or arena size, see nn::check_matches); `params`
// and `opt` are untouched on error.
result<int> restore_state(const std::filesystem::path& file, const nn::checkpoint_identity& id, nn::arena& params,
                          nn::backend& be, nn::adamw& opt);

// Checks, before any training, that a checkpoint can be written at `file` later: not a directory, in
// a directory that exists and is writable. errc::invalid_argument naming `flag` and the file.
result<void> check_checkpoint_path(const std::filesystem::path& file, std::string_view flag = "--checkpoint");

// An input file that cannot be used (the corpus, a checkpoint to resume from: missing, unreadable,
// corrupt, made for another model) as the argument error it is for the user: errc::invalid_argument,
// so fail() exits 2, with `e`'s message after the flag that named the file ("--resume: checkpoint
// `run.ckpt`: bad magic ...").
error input_error(std::string_view flag, const error& e);

// Logs `message` as an error of the component (banyan::log, under its path) and ends the run with
// `exit_code`: 2 for bad arguments or input (docs/cli.md), 1 for work that failed. A trainer calls it
// once for any error it cannot recover from (the component is not restarted): bad data, a bad
// config, a failed save.
void fail(context& ctx, std::string_view message, int exit_code = 1);
// fail() with the exit code an error deserves: 2 for errc::invalid_argument, 1 otherwise.
void fail(context& ctx, const error& e);

// The app's name: the first level of a component's path ("/train_gpt/trainer" -> "train_gpt").
std::string app_name(std::string_view component_path);

}  // namespace banyan::trainer
