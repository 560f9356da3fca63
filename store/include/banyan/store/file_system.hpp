// The file layer the store writes through: the only place the store meets the operating system
// (LevelDB's Env, cut to what a write-ahead store needs). Two implementations: posix_file_system()
// (the real one) and fault_file_system (fault_file_system.hpp: an in-memory model that can lose
// power, fill up, or fail with EIO, for the crash tests).
//
// Durability contract, which the store relies on and the fault model enforces:
// - bytes appended to a file survive a power cut only once sync() on that file returned;
// - a create, rename or remove survives only once sync_dir() on its folder returned;
// - rename() replaces the target atomically: after a crash the name holds the old or the new file.
//
// Errors name the path and carry errc::no_space for ENOSPC/EDQUOT and errc::io for everything else.
// Thread-safety: an implementation may be called from several threads at once; one writable_file is
// used by one thread at a time.
#pragma once

#include "banyan/base/result.hpp"
#include "banyan/store/error.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace banyan::store {

// A file open for appending. Closing without sync() leaves its bytes at the mercy of a crash.
class writable_file {
 public:
  virtual ~writable_file() = default;
  virtual result<void> append(std::span<const std::byte> bytes) = 0;
  virtual result<void> sync() = 0;  // fsync: the bytes appended so far survive a power cut
  virtual result<void> close() = 0;
};

class file_system {
 public:
  virtual ~file_system() = default;

  // Creates (or truncates) `path` for appending.
  virtual result<std::unique_ptr<writable_file>> create(const std::string& path) = 0;
  virtual result<void> rename(const std::string& from, const std::string& to) = 0;
  virtual result<void> remove(const std::string& path) = 0;
  // fsync of the folder: creates, renames and removes in it so far survive a power cut.
  virtual result<void> sync_dir(const std::string& dir) = 0;
  // Creates `dir` and its parents when missing.
  virtual result<void> make_dirs(const std::string& dir) = 0;
  // The names (not paths) of the regular files in `dir`, in no particular order.
  virtual result<std::vector<std::string>> list(const std::string& dir) = 0;
  // The whole file, or `size` bytes from `offset` (an error when the file is shorter).
  virtual result<std::vector<std::byte>> read(const std::string& path) = 0;
  virtual result<std::vector<std::byte>> read(const std::string& path, std::uint64_t offset, std::uint64_t size) = 0;
};

// The real file system (open/write/fsync/rename/unlink, and fsync of an O_DIRECTORY descriptor).
std::shared_ptr<file_system> posix_file_system();

}  // namespace banyan::store
