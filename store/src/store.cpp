#include "banyan/store/store.hpp"

#include "buffer_pool.hpp"
#include "format.hpp"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace banyan::store {

void transaction::put(std::string name, std::vector<std::byte> bytes) {
  for (auto& [n, b] : blobs_) {
    if (n == name) {
      bytes_ = bytes_ - b.size() + bytes.size();
      b = std::move(bytes);
      return;
    }
  }
  bytes_ += bytes.size();
  blobs_.emplace_back(std::move(name), std::move(bytes));
}

void transaction::put(std::string name, std::span<const std::byte> bytes) {
  if (pool_) {
    put(std::move(name), pool_->copy(bytes.data(), bytes.size()));
  } else {
    put(std::move(name), std::vector<std::byte>(bytes.begin(), bytes.end()));
  }
}

std::span<std::byte> transaction::reserve(std::string name, std::size_t size) {
  put(name, pool_ ? pool_->take(size) : std::vector<std::byte>(size));
  for (auto& [n, b] : blobs_) {
    if (n == name) return b;  // the vector's heap buffer: it stays where it is when blobs_ grows
  }
  return {};
}

void transaction::put(std::string name, std::string_view bytes) {
  put(std::move(name), std::as_bytes(std::span(bytes.data(), bytes.size())));
}

namespace {

using clock = std::chrono::steady_clock;

struct pending {
  txn_id id = 0;
  transaction txn;
};

struct on_disk_blob {
  txn_id txn = 0;
  format::blob_entry entry;
};

struct on_disk {
  std::map<txn_id, std::vector<format::blob_entry>> files;  // the durable transactions, checked
};

std::string path_in(const std::string& dir, const std::string& name) { return dir + "/" + name; }

// The durable transactions in `dir`, each file read whole and checked. With `remove_temp`, leftover
// `.tmp` files of an interrupted write are removed (and the removal made durable): the writer's
// recovery; without, the folder is only read.
result<on_disk> scan(file_system& fs, const std::string& dir, bool remove_temp) {
  auto names = fs.list(dir);
  if (!names) return std::move(names).error();
  std::vector<txn_id> ids;
  bool removed_temp = false;
  for (const auto& name : *names) {
    if (format::is_temp(name)) {
      if (!remove_temp) continue;
      if (auto ok = fs.remove(path_in(dir, name)); !ok) return std::move(ok).error();
      removed_temp = true;
    } else if (const txn_id id = format::txn_of(name); id != 0) {
      ids.push_back(id);
    }
  }
  if (removed_temp) {
    if (auto ok = fs.sync_dir(dir); !ok) return std::move(ok).error();
  }
  on_disk out;
  for (txn_id id : ids) {
    const std::string file = path_in(dir, format::file_name(id));
    auto bytes = fs.read(file);
    if (!bytes) return std::move(bytes).error();
    auto entries = format::parse(*bytes, id, file);
    if (!entries) return std::move(entries).error();
    out.files[id] = std::move(*entries);
  }
  return out;
}

// Reads blob `name` of transaction `txn` and checks it.
result<std::vector<std::byte>> read_blob(file_system& fs, const std::string& dir, const std::string& name, txn_id txn,
                                         const format::blob_entry& entry) {
  const std::string file = path_in(dir, format::file_name(txn));
  auto bytes = fs.read(file, entry.offset, entry.size);
  if (!bytes) return bytes;
  if (format::crc32c(*bytes) != entry.crc)
    return error{errc::corrupt, "`" + file + "`: blob `" + name + "`: checksum mismatch"};
  return bytes;
}

}  // namespace

// Everything the writer thread and the callers share.
struct blob_store::state {
  std::string dir;
  options opts;
  std::shared_ptr<file_system> fs;
  std::shared_ptr<detail::buffer_pool> pool = std::make_shared<detail::buffer_pool>();

  mutable std::mutex mutex;
  std::condition_variable room;     // commit() waits here for the buffer to drain
  std::condition_variable durable;  // wait_durable() waits here
  std::condition_variable work;     // the writer waits here
  std::deque<pending> queue;        // committed, not yet durable, in commit order
  txn_id last_committed = 0;
  txn_id watermark = 0;
  std::uint64_t buffered = 0;
  std::uint64_t held = 0;    // of `buffered` + `pooled`, the bytes above the floor, held from the budget
  std::uint64_t pooled = 0;  // the pool's bytes when last looked at
  std::optional<error> failure;
  bool closing = false;
  store_stats stats;
  // The durable files on disk and each name's latest version.
  std::map<txn_id, std::vector<format::blob_entry>> files;
  std::map<std::string, on_disk_blob> latest;
  // The memory source's last answer.
  std::optional<std::uint64_t> available;
  clock::time_point available_at{};
  std::thread writer;
  std::uint64_t listener = 0;  // our listener on the budget

  std::string path(const std::string& name) const { return path_in(dir, name); }

  // The buffer's size now (lock held).
  std::uint64_t limit(clock::time_point now) {
    if (opts.memory && (opts.memory_poll_interval.count() == 0 || now - available_at >= opts.memory_poll_interval ||
                        available_at == clock::time_point{})) {
      available = opts.memory->available();
      available_at = now;
    }
    std::uint64_t l = opts.ceiling_bytes;
    if (available)
      l = std::min(l, buffered + static_cast<std::uint64_t>(opts.free_memory_fraction * double(*available)));
    if (opts.budget) l = std::min(l, buffered + opts.budget->free());
    return std::clamp(l, opts.floor_bytes, opts.ceiling_bytes);
  }

  // Moves the budget's share to match `buffered` (lock held).
  void rebalance_budget() {
    if (!opts.budget) return;
    const std::uint64_t mine = buffered + pooled;
    const std::uint64_t want = mine > opts.floor_bytes ? mine - opts.floor_bytes : 0;
    if (want > held) opts.budget->hold(want - held);
    if (want < held) opts.budget->release(held - want);
    held = want;
  }

  result<std::vector<format::blob_entry>> write(const pending& p) {
    const std::string tmp = path(format::temp_name(p.id));
    const std::string final_path = path(format::file_name(p.id));
    auto file = fs->create(tmp);
    if (!file) return std::move(file).error();
    auto fail = [&](error e) -> result<std::vector<format::blob_entry>> {
      (void)(*file)->close();
      (void)fs->remove(tmp);  // best effort: open() removes leftovers too
      return e;
    };
    std::vector<format::blob_entry> entries;
    std::uint64_t offset = 0;
    std::uint32_t file_crc = 0;
    // The file's checksum covers everything but the blobs' data, which their own checksums cover.
    auto put = [&](std::span<const std::byte> bytes, bool data) -> result<void> {
      if (!data) file_crc = format::crc32c(bytes, file_crc);
      offset += bytes.size();
      return (*file)->append(bytes);
    };
    const auto head = format::header(p.id, static_cast<std::uint32_t>(p.txn.blobs().size()));
    if (auto ok = put(head, false); !ok) return fail(std::move(ok).error());
    for (const auto& [name, bytes] : p.txn.blobs()) {
      const std::uint32_t crc = format::crc32c(bytes);
      if (auto ok = put(format::blob_header(name, bytes.size(), crc), false); !ok) return fail(std::move(ok).error());
      entries.push_back({name, offset, bytes.size(), crc});
      if (auto ok = put(bytes, true); !ok) return fail(std::move(ok).error());
    }
    const auto foot = format::footer(file_crc);
    if (auto ok = (*file)->append(foot); !ok) return fail(std::move(ok).error());
    offset += foot.size();
    if (auto ok = (*file)->sync(); !ok) return fail(std::move(ok).error());
    if (auto ok = (*file)->close(); !ok) return fail(std::move(ok).error());
    if (auto ok = fs->rename(tmp, final_path); !ok) return fail(std::move(ok).error());
    if (auto ok = fs->sync_dir(dir); !ok) return std::move(ok).error();
    std::lock_guard lock(mutex);
    stats.bytes_written += offset;
    return entries;
  }

  // Files that hold no name's latest version and are older than the last keep_last (lock held).
  std::vector<txn_id> removable() const {
    std::set<txn_id> needed;
    for (const auto& [_, b] : latest) needed.insert(b.txn);
    std::vector<txn_id> out;
    for (const auto& [id, _] : files) {
      if (id + opts.keep_last <= watermark && !needed.contains(id)) out.push_back(id);
    }
    return out;
  }

  result<void> compact(const std::vector<txn_id>& ids) {
    if (ids.empty()) return {};
    for (txn_id id : ids) {
      if (auto ok = fs->remove(path(format::file_name(id))); !ok) return ok;
      std::lock_guard lock(mutex);
      files.erase(id);
      ++stats.files_removed;
    }
    return fs->sync_dir(dir);
  }

  void run_writer() {
    std::unique_lock lock(mutex);
    for (;;) {
      work.wait(lock, [&] { return !queue.empty() || closing; });
      if (queue.empty()) return;
      const pending& p = queue.front();  // stable: the deque only grows at the back meanwhile
      lock.unlock();
      auto entries = write(p);
      lock.lock();
      if (!entries) {
        fail(std::move(entries).error());
        return;
      }
      watermark = p.id;
      files[p.id] = *entries;
      for (const auto& e : *entries) latest[e.name] = on_disk_blob{p.id, e};
      const std::uint64_t txn_bytes = p.txn.bytes();
      buffered -= txn_bytes;
      std::vector<std::vector<std::byte>> spare;
      for (auto& [name, bytes] : queue.front().txn.blobs_) spare.push_back(std::move(bytes));
      queue.pop_front();
      // The pool keeps about one transaction's worth (the next checkpoint is usually the same
      // size), within what the buffer's limit leaves room for; the rest is freed.
      const std::uint64_t room_left = limit(clock::now());
      pool->bound(std::min(room_left - std::min(room_left, buffered), txn_bytes + txn_bytes / 8));
      for (auto& b : spare) pool->give(std::move(b));
      pooled = pool->bytes();
      rebalance_budget();
      const auto old = removable();
      room.notify_all();
      durable.notify_all();
      lock.unlock();
      auto compacted = compact(old);
      lock.lock();
      if (!compacted) {
        fail(std::move(compacted).error());
        return;
      }
    }
  }

  // The writer stops: what is buffered can no longer be written (lock held).
  void fail(error e) {
    e.message = "store `" + dir + "`: " + e.message + " (durable up to transaction " + std::to_string(watermark) + ")";
    failure = std::move(e);
    queue.clear();
    buffered = 0;
    pool->bound(0);
    pooled = 0;
    rebalance_budget();
    room.notify_all();
    durable.notify_all();
  }
};

blob_store::blob_store(std::unique_ptr<state> s) : state_(std::move(s)) {}

result<std::unique_ptr<blob_store>> blob_store::open(std::string dir, options opts) {
  if (dir.empty()) return error{errc::invalid_argument, "store: empty folder name"};
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (opts.floor_bytes > opts.ceiling_bytes)
    return error{errc::invalid_argument, "store `" + dir + "`: floor_bytes (" + std::to_string(opts.floor_bytes) +
                                             ") is above ceiling_bytes (" + std::to_string(opts.ceiling_bytes) + ")"};
  if (opts.keep_last == 0) return error{errc::invalid_argument, "store `" + dir + "`: keep_last must be at least 1"};
  if (!(opts.free_memory_fraction > 0 && opts.free_memory_fraction <= 1))
    return error{errc::invalid_argument, "store `" + dir + "`: free_memory_fraction must be in (0, 1]"};
  if (!opts.fs) opts.fs = posix_file_system();
  if (!opts.memory) opts.memory = system_memory_source();

  auto s = std::make_unique<state>();
  s->dir = dir;
  s->fs = opts.fs;
  s->opts = std::move(opts);
  auto named = [&](error e) {
    e.message = "store `" + dir + "`: " + e.message;
    return e;
  };
  if (auto ok = s->fs->make_dirs(dir); !ok) return named(std::move(ok).error());
  auto found = scan(*s->fs, dir, true);
  if (!found) return named(std::move(found).error());
  s->files = std::move(found->files);
  for (const auto& [id, entries] : s->files) {
    for (const auto& e : entries) s->latest[e.name] = on_disk_blob{id, e};
  }
  s->watermark = s->files.empty() ? 0 : s->files.rbegin()->first;
  s->last_committed = s->watermark;
  s->stats.durable = s->watermark;
  auto store = std::unique_ptr<blob_store>(new blob_store(std::move(s)));
  state* raw = store->state_.get();
  if (raw->opts.budget) {
    raw->listener = raw->opts.budget->add_listener([raw] {
      std::lock_guard lock(raw->mutex);
      // Spare buffers go first when someone takes budget: they hold no data.
      raw->pool->bound(0);
      raw->pooled = 0;
      raw->rebalance_budget();
      raw->room.notify_all();
    });
  }
  raw->writer = std::thread([raw] { raw->run_writer(); });
  return store;
}

blob_store::~blob_store() {
  {
    std::lock_guard lock(state_->mutex);
    state_->closing = true;
  }
  state_->work.notify_all();
  state_->room.notify_all();
  if (state_->writer.joinable()) state_->writer.join();
  if (state_->opts.budget) {
    state_->opts.budget->remove_listener(state_->listener);  // waits for a call in progress
    std::lock_guard lock(state_->mutex);
    if (state_->held > 0) state_->opts.budget->release(state_->held);
    state_->held = 0;
  }
}

transaction blob_store::begin() { return transaction(state_->pool); }

result<txn_id> blob_store::commit(transaction&& txn) {
  auto& s = *state_;
  const std::uint64_t n = txn.bytes();
  std::unique_lock lock(s.mutex);
  const auto start = clock::now();
  bool waited = false;
  for (;;) {
    if (s.failure || s.closing) {
      if (waited) --s.stats.commits_waiting;
      if (s.failure) return *s.failure;
      return error{errc::closed, "store `" + s.dir + "`: closing"};
    }
    s.stats.buffer_limit = s.limit(clock::now());
    if (s.buffered == 0 || s.buffered + n <= s.stats.buffer_limit) break;
    if (!waited) ++s.stats.commits_waiting;
    waited = true;
    s.room.wait(lock);
  }
  if (waited) --s.stats.commits_waiting;
  if (waited) {
    ++s.stats.commit_waits;
    s.stats.commit_wait_ns +=
        static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - start).count());
  }
  const txn_id id = ++s.last_committed;
  s.buffered += n;
  s.pooled = s.pool->bytes();
  s.rebalance_budget();
  s.queue.push_back(pending{id, std::move(txn)});
  lock.unlock();
  s.work.notify_one();
  return id;
}

result<void> blob_store::wait_durable(txn_id id, std::chrono::milliseconds limit) {
  auto& s = *state_;
  std::unique_lock lock(s.mutex);
  if (id > s.last_committed)
    return error{errc::invalid_argument, "store `" + s.dir + "`: transaction " + std::to_string(id) +
                                             " was never committed (last: " + std::to_string(s.last_committed) + ")"};
  s.durable.wait_for(lock, limit, [&] { return s.watermark >= id || s.failure.has_value(); });
  if (s.watermark >= id) return {};
  if (s.failure) return *s.failure;
  return error{errc::timeout, "store `" + s.dir + "`: transaction " + std::to_string(id) + " not durable after " +
                                  std::to_string(limit.count()) + " ms (durable up to " + std::to_string(s.watermark) +
                                  ")"};
}

result<void> blob_store::flush(std::chrono::milliseconds limit) {
  txn_id last = 0;
  {
    std::lock_guard lock(state_->mutex);
    last = state_->last_committed;
  }
  return wait_durable(last, limit);
}

txn_id blob_store::durable_id() const {
  std::lock_guard lock(state_->mutex);
  return state_->watermark;
}

std::vector<txn_id> blob_store::durable_transactions() const {
  std::lock_guard lock(state_->mutex);
  std::vector<txn_id> out;
  for (const auto& [id, _] : state_->files) out.push_back(id);
  return out;
}

std::vector<blob_info> blob_store::blobs() const {
  std::lock_guard lock(state_->mutex);
  std::vector<blob_info> out;
  for (const auto& [name, b] : state_->latest) out.push_back({name, b.txn, b.entry.size});
  return out;
}

result<std::vector<std::byte>> blob_store::read(const std::string& name) const {
  on_disk_blob b;
  {
    std::lock_guard lock(state_->mutex);
    auto it = state_->latest.find(name);
    if (it == state_->latest.end())
      return error{errc::invalid_argument, "store `" + state_->dir + "`: no durable blob named `" + name + "`"};
    b = it->second;
  }
  return read_blob(*state_->fs, state_->dir, name, b.txn, b.entry);
}

std::optional<error> blob_store::failure() const {
  std::lock_guard lock(state_->mutex);
  return state_->failure;
}

store_stats blob_store::stats() const {
  std::lock_guard lock(state_->mutex);
  store_stats out = state_->stats;
  out.bytes_buffered = state_->buffered;
  out.last_committed = state_->last_committed;
  out.durable = state_->watermark;
  out.bytes_pooled = state_->pool->bytes();
  return out;
}

const std::string& blob_store::dir() const { return state_->dir; }

}  // namespace banyan::store

namespace banyan::store {

struct blob_reader::state {
  std::string dir;
  std::shared_ptr<file_system> fs;
  std::map<std::string, std::pair<txn_id, format::blob_entry>> latest;
  txn_id last = 0;
};

blob_reader::blob_reader(std::shared_ptr<const state> s) : state_(std::move(s)) {}

result<blob_reader> blob_reader::open(std::string dir, std::shared_ptr<file_system> fs) {
  if (dir.empty()) return error{errc::invalid_argument, "store: empty folder name"};
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  auto s = std::make_shared<state>();
  s->dir = dir;
  s->fs = fs ? std::move(fs) : posix_file_system();
  auto found = scan(*s->fs, dir, false);
  if (!found) {
    error e = std::move(found).error();
    e.message = "store `" + dir + "`: " + e.message;
    return e;
  }
  for (const auto& [id, entries] : found->files) {
    for (const auto& e : entries) s->latest[e.name] = {id, e};
    s->last = id;
  }
  return blob_reader(std::move(s));
}

std::vector<blob_info> blob_reader::blobs() const {
  std::vector<blob_info> out;
  for (const auto& [name, b] : state_->latest) out.push_back({name, b.first, b.second.size});
  return out;
}

txn_id blob_reader::last() const { return state_->last; }

result<std::vector<std::byte>> blob_reader::read(const std::string& name) const {
  auto it = state_->latest.find(name);
  if (it == state_->latest.end())
    return error{errc::invalid_argument, "store `" + state_->dir + "`: no durable blob named `" + name + "`"};
  return read_blob(*state_->fs, state_->dir, name, it->second.first, it->second.second);
}

const std::string& blob_reader::dir() const { return state_->dir; }

}  // namespace banyan::store
