// Helpers shared by the SDK tests: a thread-safe event recorder that components write into.
#pragma once

#include "banyan/sdk/sdk.hpp"

#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace banyan::testing {

class recorder {
 public:
  void add(std::string event) {
    std::lock_guard lock(mutex_);
    events_.push_back(std::move(event));
  }
  std::vector<std::string> events() const {
    std::lock_guard lock(mutex_);
    return events_;
  }
  std::size_t count(const std::string& event) const {
    std::lock_guard lock(mutex_);
    std::size_t n = 0;
    for (const auto& e : events_) n += e == event;
    return n;
  }
  int bump(const std::string& key) {
    std::lock_guard lock(mutex_);
    return ++counters_[key];
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> events_;
  std::map<std::string, int> counters_;
};

inline run_options test_options(routing_mode mode = routing_mode::hier) {
  run_options o;
  o.mode = mode;
  o.threads = 2;
  o.max_runtime = std::chrono::seconds(60);  // a hung test fails instead of blocking CI
  return o;
}

}  // namespace banyan::testing
