// A trainer's state on disk and its way out on failure.
//
// State = a model's parameters plus the AdamW moments and step count, stored as one nn checkpoint
// (banyan/nn/checkpoint.hpp: checksummed), tagged with the model's kind ("gpt"), config and
// vocabulary so that a resume into another model or onto another corpus is a clear error rather than
// garbage. It is the blob `state` of a checkpoint folder (nn::checkpoint_store on banyan::store):
// saving copies it into the store's host buffer and training goes on while the store writes it.
#pragma once

#include <banyan/nn/adamw.hpp>
#include <banyan/nn/arena.hpp>
#include <banyan/nn/backend.hpp>
#include <banyan/nn/checkpoint.hpp>
#include <banyan/nn/checkpoint_store.hpp>
#include <banyan/sdk/context.hpp>

#include "banyan/trainer/options.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace banyan::trainer {

// The blob a trainer's state is saved under.
inline constexpr const char* state_blob = "state";

// Opens the checkpoint folder `o.checkpoint` for writing (created when missing), synchronous when
// o.checkpoint_sync; its host buffer shares `host_budget` (when given) with the memory manager's host
// pool. Errors name `flag` and the folder (invalid_argument: a file is in the way, the folder cannot be
// created or written).
result<std::unique_ptr<nn::checkpoint_store>> open_checkpoints(const common_options& o,
                                                               std::string_view flag = "--checkpoint",
                                                               std::shared_ptr<store::memory_budget> host_budget = {});

// The host budget a trainer's checkpoint buffer and its memory manager's host pool share: half of the
// memory the process may take now (cgroup v2 or MemAvailable, store::system_memory_source), and at
// least the buffer's default ceiling.
std::shared_ptr<store::memory_budget> shared_host_budget();

// Saves `params` (on `be`) and `opt` into `store` as the blob `state`, tagged with `id` (model,
// config, vocabulary; its stored_floats is not used). Returns once the bytes are in the store's buffer
// (or durable, when the store is synchronous). Errors: the store's (a failed write before, naming the
// file); what was durable stays.
result<void> save_state(nn::checkpoint_store& store, const nn::checkpoint_identity& id, const nn::arena& params,
                        nn::backend& be, const nn::adamw& opt);

// Loads the latest durable `state` of the checkpoint folder `dir` into `params` and `opt` and returns
// the step count it was saved at. Errors: nn::errc::io (missing, not a folder), store errors (no
// `state` in it, a damaged file), nn::errc corrupt, unsupported (another format version), mismatch
// (saved for another kind, config field, vocabulary or arena size, see nn::check_matches); `params`
// and `opt` are untouched on error.
result<int> restore_state(const std::filesystem::path& dir, const nn::checkpoint_identity& id, nn::arena& params,
                          nn::backend& be, nn::adamw& opt);

// Waits until every checkpoint saved into `store` is durable: what a run does before it says it is
// done. The error (a failed write) says which step is durable.
result<void> finish_checkpoints(nn::checkpoint_store& store);

// Checks, before any training, that checkpoints can be written in the folder `dir` later: not a
// file, in a folder that exists and is writable. errc::invalid_argument naming `flag` and the folder.
result<void> check_checkpoint_path(const std::filesystem::path& dir, std::string_view flag = "--checkpoint");

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
