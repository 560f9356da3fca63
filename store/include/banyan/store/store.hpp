// banyan's write path for persisted state (checkpoints, snapshots): named blobs written in
// transactions, buffered in host memory, made durable by a background writer strictly in commit
// order, and recovered after a crash to a prefix of the committed transactions.
//
// Guarantees
// - commit() returns once the transaction's bytes are in the host buffer (moved in, or copied from
//   a span): the caller never waits for the disk, except when the buffer is full (back-pressure,
//   measured in stats()).
// - Order: transaction N is durable only after every transaction before it is. The durability
//   watermark durable_id() is the last durable id; wait_durable(id) waits for it.
// - Crash consistency: after kill -9 or a power cut, open() finds exactly transactions 1..L for some
//   L >= the watermark at the crash (minus those compaction removed, see keep_last), each complete:
//   never a torn blob, never N+1 without N.
// - Faults: when a write fails (disk full, EIO, folder deleted or read-only) the writer stops: the
//   watermark stays at the last durable transaction, nothing durable is touched, and every later
//   commit() and wait_durable() past the watermark returns that error, which names the file (none
//   of them hangs). The buffered transactions past the watermark are dropped: they cannot be written.
// - Bounded disk: the latest keep_last transactions stay on disk, plus, for each name, the
//   transaction holding its latest version; older transaction files are removed.
//
// On disk (docs/store.md): one file per transaction, `txn-<id, 20 digits>.dat`, written as `.tmp`,
// fsynced, renamed, then the folder fsynced; every blob and the whole file carry a CRC32C.
//
// Thread-safety: every member may be called from any thread. The destructor waits until every
// committed transaction is durable or the writer has failed.
#pragma once

#include "banyan/base/result.hpp"
#include "banyan/store/error.hpp"
#include "banyan/store/file_system.hpp"
#include "banyan/store/memory.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace banyan::store {

using txn_id = std::uint64_t;  // 1, 2, 3, ... in commit order; 0 means "none"

struct options {
  // The host buffer's size: never below floor, never above ceiling; in between, the smaller of
  // free_memory_fraction x the memory source's answer and what the budget leaves.
  std::uint64_t floor_bytes = 64ull << 20;
  std::uint64_t ceiling_bytes = 1ull << 30;
  double free_memory_fraction = 0.5;
  // The memory source is read at most this often (it reads files); 0: at every commit.
  std::chrono::milliseconds memory_poll_interval{100};
  // Transactions kept on disk besides those holding the latest version of some name (>= 1).
  std::uint64_t keep_last = 2;
  std::shared_ptr<file_system> fs;        // null: posix_file_system()
  std::shared_ptr<memory_source> memory;  // null: system_memory_source()
  std::shared_ptr<memory_budget> budget;  // null: none
};

namespace detail {
class buffer_pool;
}

// The named blobs of one transaction, built by the caller, then handed to commit(). A value: a
// later put() of the same name replaces the earlier one. One from blob_store::begin() copies into
// buffers the store recycles (memory already faulted in: the copy runs at memcpy speed); a
// default-constructed one allocates fresh buffers.
class transaction {
 public:
  transaction() = default;
  void put(std::string name, std::vector<std::byte> bytes);      // moved in: no copy
  void put(std::string name, std::span<const std::byte> bytes);  // copied
  void put(std::string name, std::string_view bytes);            // copied
  // A blob of `size` bytes that the caller fills in through the returned span before commit(): a
  // state copied straight from where it lives (a device, a model's arena) into the store's buffer,
  // with no copy in between. Its bytes are unspecified until filled. The span stays valid until the
  // transaction is committed or replaces the blob.
  std::span<std::byte> reserve(std::string name, std::size_t size);
  std::uint64_t bytes() const { return bytes_; }
  const std::vector<std::pair<std::string, std::vector<std::byte>>>& blobs() const { return blobs_; }

 private:
  friend class blob_store;
  explicit transaction(std::shared_ptr<detail::buffer_pool> pool) : pool_(std::move(pool)) {}
  std::vector<std::pair<std::string, std::vector<std::byte>>> blobs_;
  std::uint64_t bytes_ = 0;
  std::shared_ptr<detail::buffer_pool> pool_;
};

// A name's latest durable version.
struct blob_info {
  std::string name;
  txn_id txn = 0;
  std::uint64_t size = 0;
  friend bool operator==(const blob_info&, const blob_info&) = default;
};

struct store_stats {
  std::uint64_t bytes_buffered = 0;   // committed, not yet durable
  std::uint64_t buffer_limit = 0;     // the buffer's size now (floor..ceiling)
  std::uint64_t commit_waits = 0;     // commits that waited for room
  std::uint64_t commit_wait_ns = 0;   // their total wait
  std::uint64_t commits_waiting = 0;  // commits waiting for room now
  txn_id last_committed = 0;
  txn_id durable = 0;               // the watermark
  std::uint64_t bytes_written = 0;  // to transaction files, since open
  std::uint64_t files_removed = 0;  // by compaction, since open
  std::uint64_t bytes_pooled = 0;   // spare buffers kept for the next begin()'s copies
};

class blob_store {
 public:
  // Opens (creating the folder when missing) and recovers: the durable transactions found, the
  // latest version of each name. Leftover `.tmp` files of an interrupted write are removed.
  // Errors: invalid_argument (options), io / no_space (the folder), corrupt (a transaction file
  // failing its checksum; named). Starts the writer thread. One blob_store per folder at a time,
  // across processes too: nothing locks the folder (give each rank or node its own).
  static result<std::unique_ptr<blob_store>> open(std::string dir, options opts = {});

  blob_store(const blob_store&) = delete;
  blob_store& operator=(const blob_store&) = delete;
  ~blob_store();

  // A transaction whose put() copies into the store's recycled buffers. Never blocks.
  transaction begin();

  // Puts the transaction in the buffer and gives it the next id. Waits while the buffer is full
  // (a transaction larger than the whole buffer waits until the buffer is empty). Errors: the
  // writer's failure (io, no_space, naming the file), closed.
  result<txn_id> commit(transaction&& txn);

  // Waits until transaction `id` is durable, at most `limit`. Errors: timeout; the writer's failure
  // when it stopped before `id`; invalid_argument for an id never committed.
  result<void> wait_durable(txn_id id, std::chrono::milliseconds limit);
  // wait_durable(last committed id).
  result<void> flush(std::chrono::milliseconds limit);

  txn_id durable_id() const;
  // The ids of the durable transactions still on disk, ascending.
  std::vector<txn_id> durable_transactions() const;
  // The latest durable version of every name, by name.
  std::vector<blob_info> blobs() const;
  // The latest durable bytes of `name`, read from disk and checked. Errors: invalid_argument (no
  // such name), io, corrupt.
  result<std::vector<std::byte>> read(const std::string& name) const;
  // The writer's failure, if it stopped.
  std::optional<error> failure() const;
  store_stats stats() const;
  const std::string& dir() const;

 private:
  struct state;
  explicit blob_store(std::unique_ptr<state> s);
  std::unique_ptr<state> state_;
};

// A read-only view of a store's folder as it is on disk when opened: the durable transactions and
// the latest version of each name. It changes nothing (no writer, leftover `.tmp` files stay), so
// other processes may read a folder one blob_store writes, e.g. every rank of a run resuming from
// the checkpoints rank 0 writes. A transaction file that the writer's compaction removed after
// open() is an io error naming it. Errors of open() as blob_store::open's (the folder must exist).
class blob_reader {
 public:
  static result<blob_reader> open(std::string dir, std::shared_ptr<file_system> fs = nullptr);
  std::vector<blob_info> blobs() const;
  txn_id last() const;  // the newest durable transaction; 0: none
  result<std::vector<std::byte>> read(const std::string& name) const;
  const std::string& dir() const;

 private:
  struct state;
  explicit blob_reader(std::shared_ptr<const state> s);
  std::shared_ptr<const state> state_;
};

}  // namespace banyan::store
