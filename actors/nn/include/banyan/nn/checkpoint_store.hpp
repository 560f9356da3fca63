// A training run's checkpoints on banyan::store (docs/store.md): a folder in which each save() is one
// store transaction of named checkpoints, each a blob in the checkpoint file format (checkpoint.hpp).
// A pipeline saves every stage of one step in one transaction, so a crash never leaves stage 0 of
// step 200 beside stage 1 of step 100.
//
// save() returns once the checkpoint's bytes are in the store's host buffer: the training step waits
// for one copy of the tensors (encode) and none of the disk, unless the buffer is full. A background
// writer makes the checkpoints durable in order; flush() waits for them (a run calls it before it says
// it is done). With `synchronous`, save() itself waits until its checkpoint is durable (written,
// fsynced and renamed), which is what a checkpoint cost before the store, and the anchor of the
// store's stall figures (docs/benchmarks.md).
//
// Reading: read_checkpoint() reads the latest durable checkpoint of a name from a folder without
// opening it for writing (store::blob_reader), so several processes of one run may resume from the
// folder one of them writes.
//
// Thread-safety: save(), flush() and stats() from one thread (the trainer's); the store writes on its
// own thread.
#pragma once

#include "banyan/nn/backend.hpp"
#include "banyan/nn/checkpoint.hpp"

#include <banyan/store/store.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace banyan::nn {

struct checkpoint_store_options {
  bool synchronous = false;  // save() returns once durable
  // The host buffer's floor and ceiling (store::options); between them it follows free memory and
  // `budget`, shared with the memory manager's host pool (memory_options::host_budget).
  std::uint64_t buffer_floor = 64ull << 20;
  std::uint64_t buffer_ceiling = 1ull << 30;
  std::shared_ptr<store::memory_budget> budget;
  std::shared_ptr<store::file_system> fs;  // null: the real one (tests inject faults)
};

// What saving cost the caller, per save() in order.
struct checkpoint_save_stats {
  std::vector<double> stall_ms;  // time save() blocked: encode + commit (+ the wait for durability when synchronous)
  std::uint64_t bytes = 0;       // encoded bytes of every save
  double flush_ms = 0;           // time flush() calls waited, in all
  store::store_stats store;      // the store's own counters (buffer, waits for room, watermark)
};

class checkpoint_store {
 public:
  // Opens (creating when missing) the folder `dir`. Errors name it: a file where the folder should
  // be, a folder that cannot be created or written (store::errc::io, no_space), a damaged transaction
  // file (store::errc::corrupt).
  static result<std::unique_ptr<checkpoint_store>> open(const std::filesystem::path& dir,
                                                        checkpoint_store_options o = {});

  // Both saves return the transaction's id once its bytes are in the buffer (durable, when
  // synchronous). Errors: the encoding's (invalid_argument), the store's (the writer failed earlier:
  // disk full, EIO, folder gone; the message names the file and durable_step() says what is safe).
  //
  // A model's state as checkpoint `name` with one copy of the tensors: `floats` parameters and both
  // AdamW moments downloaded from `be` (device pointers) straight into the store's buffer; `head`
  // gives the model, config, step and vocabulary (its tensors are not read). The blob leaves its
  // checksum to the store, which checks every blob.
  result<store::txn_id> save_state(const std::string& name, const checkpoint& head, backend& be, const float* params,
                                   const float* m, const float* v, std::size_t floats);
  // Commits blobs encoded elsewhere (the checkpoints of a pipeline's stages, made by its leaves, and
  // its manifest) as one transaction of step `step`. `txn` from begin(): its put() copies into
  // buffers the store recycles.
  store::transaction begin() { return store_->begin(); }
  result<store::txn_id> save(store::transaction&& txn, std::int64_t step);

  // Waits until every save is durable, at most `limit`.
  result<void> flush(std::chrono::milliseconds limit);
  // The step of the newest durable save; -1: none yet.
  std::int64_t durable_step() const;

  checkpoint_save_stats stats() const;
  const std::filesystem::path& dir() const { return dir_; }

 private:
  result<store::txn_id> commit(store::transaction&& txn, std::int64_t step,
                               std::chrono::steady_clock::time_point start);

  checkpoint_store(std::filesystem::path dir, std::unique_ptr<store::blob_store> s, bool synchronous)
      : dir_(std::move(dir)), store_(std::move(s)), synchronous_(synchronous) {}
  std::filesystem::path dir_;
  std::unique_ptr<store::blob_store> store_;
  bool synchronous_;
  std::vector<double> stall_ms_;
  std::uint64_t bytes_ = 0;
  double flush_ms_ = 0;
  // (txn, step) of the saves not yet known durable, oldest first.
  mutable std::vector<std::pair<store::txn_id, std::int64_t>> steps_;
  mutable std::int64_t durable_step_ = -1;
};

// The latest durable checkpoint `name` in the store folder `dir`, checked and decoded; the error names
// the folder and the blob. errc::io when `dir` is missing or is not a folder, invalid_argument (from
// the store) when it holds no such checkpoint.
result<checkpoint> read_checkpoint(const std::filesystem::path& dir, const std::string& name);
// Whether `dir` holds a durable checkpoint `name` (false when `dir` does not exist).
bool has_checkpoint(const std::filesystem::path& dir, const std::string& name);

}  // namespace banyan::nn
