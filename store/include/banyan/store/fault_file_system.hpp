// An in-memory file system that models what a power cut does to files, for crash tests: it keeps,
// per file, the bytes that were synced and the bytes appended since, and per folder the entries that
// were synced and the creates, renames and removes since.
//
// power_cut() is the crash: every file falls back to its synced bytes and every folder to its synced
// entries, except that
// - the last append that was not synced is torn: a random prefix of it survives (when its file
//   still has a name), and
// - with keep_unsynced_dir_ops, a random prefix of the folder operations since the last sync_dir
//   survives too (ext4's ordered journal does this; plain POSIX promises nothing, which is the
//   default: they are all lost).
// Faults: freeze_after(k) makes operation k+1 and every later one fail with errc::io ("power cut"),
// as when the machine stops mid-way; capacity(bytes) makes an append that would exceed it fail with
// errc::no_space; fail_next(kind, code) fails the next operation of that kind (EIO and friends).
//
// Thread-safety: every member may be called from any thread (one mutex). Paths are plain strings:
// "a/b" names file b in folder a; folders exist once make_dirs created them.
#pragma once

#include "banyan/store/file_system.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace banyan::store {

class fault_file_system : public file_system, public std::enable_shared_from_this<fault_file_system> {
 public:
  enum class op { create, append, sync, close, rename, remove, sync_dir, make_dirs, list, read };

  result<std::unique_ptr<writable_file>> create(const std::string& path) override;
  result<void> rename(const std::string& from, const std::string& to) override;
  result<void> remove(const std::string& path) override;
  result<void> sync_dir(const std::string& dir) override;
  result<void> make_dirs(const std::string& dir) override;
  result<std::vector<std::string>> list(const std::string& dir) override;
  result<std::vector<std::byte>> read(const std::string& path) override;
  result<std::vector<std::byte>> read(const std::string& path, std::uint64_t offset, std::uint64_t size) override;

  // Operations that change state (create, append, sync, close, rename, remove, sync_dir, make_dirs)
  // counted so far; reads and lists are not counted.
  std::uint64_t operations() const;
  // Operations after the first `k` (counted from now on) fail with errc::io until power_cut().
  void freeze_after(std::uint64_t k);
  // Appends that would bring the bytes held by all files above `bytes` fail with errc::no_space.
  void capacity(std::optional<std::uint64_t> bytes);
  // The next operation of this kind fails with `code`.
  void fail_next(op kind, errc code);
  // The crash (see above); afterwards the file system is usable again, unfrozen, with the
  // surviving state as its synced state. Open writable_files become dead (their calls fail).
  void power_cut(std::mt19937_64& random, bool keep_unsynced_dir_ops = false);

  struct inode;
  struct folder;

 private:
  friend class fault_file;
  result<void> admit(op kind, const std::string& path);  // counts, and fails when a fault says so
  result<void> append(const std::shared_ptr<inode>& file, std::uint64_t generation, std::span<const std::byte> bytes);
  result<void> sync(const std::shared_ptr<inode>& file, std::uint64_t generation);
  result<void> close_file(std::uint64_t generation, const std::string& path);
  std::pair<std::string, std::string> split(const std::string& path) const;

  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<folder>> folders_;
  std::uint64_t operations_ = 0;
  std::optional<std::uint64_t> freeze_at_;
  std::optional<std::uint64_t> capacity_;
  std::map<op, errc> fail_next_;
  std::uint64_t generation_ = 0;  // bumped by power_cut: older handles are dead
  // The last append not yet synced: its file and the byte range it added.
  std::shared_ptr<inode> last_append_file_;
  std::uint64_t last_append_offset_ = 0;
};

}  // namespace banyan::store
