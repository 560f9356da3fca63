#include "banyan/store/memory.hpp"

#include <fstream>
#include <sstream>
#include <vector>

namespace banyan::store {
namespace {

std::optional<std::uint64_t> read_number(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return std::nullopt;
  try {
    return std::stoull(word);
  } catch (...) {
    return std::nullopt;
  }
}

class system_source : public memory_source {
 public:
  system_source(std::string cgroup_root, std::string meminfo, std::string self_cgroup) : meminfo_(std::move(meminfo)) {
    // cgroup v2: the line "0::/path" of /proc/self/cgroup names the process's group.
    std::ifstream in(self_cgroup);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("0::", 0) == 0) {
        const std::string group = line.substr(3);
        cgroup_dir_ = cgroup_root + (group == "/" ? "" : group);
      }
    }
  }

  std::optional<std::uint64_t> available() override {
    std::optional<std::uint64_t> best;
    if (!cgroup_dir_.empty()) {
      const auto max = read_number(cgroup_dir_ + "/memory.max");
      const auto current = read_number(cgroup_dir_ + "/memory.current");
      if (max && current) best = *max > *current ? *max - *current : 0;
    }
    std::ifstream in(meminfo_);
    std::string key;
    std::uint64_t kib = 0;
    std::string unit;
    while (in >> key >> kib) {
      std::getline(in, unit);
      if (key == "MemAvailable:") {
        const std::uint64_t bytes = kib * 1024;
        best = best ? std::min(*best, bytes) : bytes;
        break;
      }
    }
    return best;
  }

 private:
  std::string meminfo_;
  std::string cgroup_dir_;
};

class function_source : public memory_source {
 public:
  explicit function_source(std::function<std::optional<std::uint64_t>()> read) : read_(std::move(read)) {}
  std::optional<std::uint64_t> available() override { return read_(); }

 private:
  std::function<std::optional<std::uint64_t>()> read_;
};

}  // namespace

std::shared_ptr<memory_source> system_memory_source(std::string cgroup_root, std::string meminfo,
                                                    std::string self_cgroup) {
  return std::make_shared<system_source>(std::move(cgroup_root), std::move(meminfo), std::move(self_cgroup));
}

std::shared_ptr<memory_source> function_memory_source(std::function<std::optional<std::uint64_t>()> read) {
  return std::make_shared<function_source>(std::move(read));
}

std::uint64_t memory_budget::free() const {
  std::lock_guard lock(mutex_);
  const std::uint64_t used = taken_ + held_;
  return used >= capacity_ ? 0 : capacity_ - used;
}

std::uint64_t memory_budget::taken() const {
  std::lock_guard lock(mutex_);
  return taken_;
}

std::uint64_t memory_budget::held() const {
  std::lock_guard lock(mutex_);
  return held_;
}

bool memory_budget::take(std::uint64_t bytes, std::chrono::milliseconds limit) {
  {
    std::lock_guard lock(mutex_);
    taken_ += bytes;
  }
  notify_listeners();
  std::unique_lock lock(mutex_);
  if (released_.wait_for(lock, limit, [&] { return taken_ + held_ <= capacity_; })) return true;
  taken_ -= bytes;
  lock.unlock();
  notify_listeners();
  return false;
}

void memory_budget::give(std::uint64_t bytes) {
  {
    std::lock_guard lock(mutex_);
    taken_ -= std::min(bytes, taken_);
  }
  released_.notify_all();
  notify_listeners();
}

void memory_budget::hold(std::uint64_t bytes) {
  std::lock_guard lock(mutex_);
  held_ += bytes;
}

void memory_budget::release(std::uint64_t bytes) {
  {
    std::lock_guard lock(mutex_);
    held_ -= std::min(bytes, held_);
  }
  released_.notify_all();
}

std::uint64_t memory_budget::add_listener(std::function<void()> listener) {
  std::lock_guard lock(mutex_);
  const std::uint64_t id = next_listener_++;
  listeners_[id] = std::make_shared<std::function<void()>>(std::move(listener));
  return id;
}

void memory_budget::remove_listener(std::uint64_t id) {
  std::lock_guard calls(calls_);  // waits for a notify_listeners() in progress
  std::lock_guard lock(mutex_);
  listeners_.erase(id);
}

void memory_budget::notify_listeners() {
  // One notifying thread at a time, so remove_listener() can wait for the calls to end.
  std::lock_guard calls(calls_);
  std::vector<std::shared_ptr<std::function<void()>>> now;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [_, l] : listeners_) now.push_back(l);
  }
  for (const auto& l : now) (*l)();
}

}  // namespace banyan::store
