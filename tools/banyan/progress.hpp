// A progress line for long-running commands: "label  done/total  rate/s  ETA", rewritten in place
// on a terminal and printed at most every `period` otherwise (so CI logs stay short).
// Not thread-safe: call from one thread. Writes to stderr so stdout stays machine-readable.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace banyan::cli {

class progress {
 public:
  progress(std::string label, std::uint64_t total,
           std::chrono::milliseconds period = std::chrono::milliseconds(500));
  // Reports that `done` units (cumulative) are complete; cheap when called often.
  void update(std::uint64_t done, const std::string& detail = {});
  // Prints the final line with the total time and average rate.
  void finish(const std::string& summary = {});
  double elapsed_seconds() const;

 private:
  void print(std::uint64_t done, const std::string& detail, bool final);

  std::string label_;
  std::uint64_t total_;
  std::chrono::milliseconds period_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_;
  std::uint64_t done_ = 0;
  bool tty_;
  bool finished_ = false;
};

}  // namespace banyan::cli
