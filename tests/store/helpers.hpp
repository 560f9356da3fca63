// What the store's tests share: a temporary folder that removes itself, bytes from strings.
#pragma once

#include "banyan/store/store.hpp"

#include <gtest/gtest.h>

#include <stdlib.h>

#include <condition_variable>
#include <cstddef>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace banyan::store::test {

class temp_dir {
 public:
  temp_dir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "banyan-store-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::vector<std::byte> bytes_of(std::string_view s) {
  const auto b = std::as_bytes(std::span(s.data(), s.size()));
  return {b.begin(), b.end()};
}

inline std::string string_of(const std::vector<std::byte>& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

// Options for tests: no system memory source (an unlimited one), a small floor.
inline options test_options() {
  options o;
  o.floor_bytes = 1 << 20;
  o.ceiling_bytes = 64 << 20;
  o.memory = function_memory_source([] { return std::nullopt; });
  return o;
}

}  // namespace banyan::store::test

namespace banyan::store::test {

// A file layer whose create() waits until the gate opens: the writer stops before its next
// transaction, so what is buffered is known exactly.
class gated_file_system : public file_system {
 public:
  explicit gated_file_system(std::shared_ptr<file_system> inner) : inner_(std::move(inner)) {}
  void open_gate() {
    {
      std::lock_guard lock(mutex_);
      open_ = true;
    }
    cv_.notify_all();
  }
  result<std::unique_ptr<writable_file>> create(const std::string& path) override {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return open_; });
    lock.unlock();
    return inner_->create(path);
  }
  result<void> rename(const std::string& a, const std::string& b) override { return inner_->rename(a, b); }
  result<void> remove(const std::string& p) override { return inner_->remove(p); }
  result<void> sync_dir(const std::string& d) override { return inner_->sync_dir(d); }
  result<void> make_dirs(const std::string& d) override { return inner_->make_dirs(d); }
  result<std::vector<std::string>> list(const std::string& d) override { return inner_->list(d); }
  result<std::vector<std::byte>> read(const std::string& p) override { return inner_->read(p); }
  result<std::vector<std::byte>> read(const std::string& p, std::uint64_t o, std::uint64_t n) override {
    return inner_->read(p, o, n);
  }

 private:
  std::shared_ptr<file_system> inner_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
};

// Waits (yielding, never sleeping) until `done()` holds, at most `limit`.
template <class Predicate>
bool eventually(Predicate done, std::chrono::milliseconds limit = std::chrono::seconds(30)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace banyan::store::test
