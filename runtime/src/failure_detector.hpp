// When a silent peer is suspected: a phi-accrual style threshold (Hayashibara et al.; as in Akka and
// Cassandra) over the intervals between the peer's control frames. Private to the transport.
//
// Heartbeats are sent every `period`. With regular arrivals the threshold is `base` (the configured
// 4/5 of heartbeat_timeout), so a dead peer is found as documented. When arrivals are late or
// irregular (a loaded machine, a starved I/O thread) the threshold grows by how far the observed
// intervals exceed the period, mean + 5.6 standard deviations - the silence whose probability is
// 1e-8 under a normal model (phi = 8) - so jitter alone is not taken for a stall. It never exceeds
// `cap`. A value type; not thread-safe (the I/O thread owns it).
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>

namespace banyan::runtime::detail {

class failure_detector {
 public:
  using clock = std::chrono::steady_clock;

  failure_detector(clock::duration period, clock::duration base, clock::duration cap)
      : period_(period), base_(base), cap_(std::max(cap, base)) {}

  // A control frame arrived at `now`.
  void heard(clock::time_point now) {
    if (last_ != clock::time_point{}) {
      intervals_[next_] = std::chrono::duration<double>(now - last_).count();
      next_ = (next_ + 1) % intervals_.size();
      count_ = std::min(count_ + 1, intervals_.size());
    }
    last_ = now;
  }
  // Forget the history (a new incarnation of the peer).
  void reset() { *this = failure_detector(period_, base_, cap_); }

  // The silence after which the peer is suspected.
  clock::duration threshold() const {
    if (count_ < 4) return base_;  // too few samples to say anything about jitter
    double mean = 0, var = 0;
    for (std::size_t i = 0; i < count_; ++i) mean += intervals_[i];
    mean /= double(count_);
    for (std::size_t i = 0; i < count_; ++i) var += (intervals_[i] - mean) * (intervals_[i] - mean);
    const double sd = std::sqrt(var / double(count_));
    const double period = std::chrono::duration<double>(period_).count();
    // The regular case (mean <= period, small sd) adds nothing: half a period of slack.
    const double excess = std::max(0.0, mean + 5.6 * sd - 1.5 * period);
    const auto t = base_ + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(excess));
    return std::min(t, cap_);
  }

 private:
  clock::duration period_, base_, cap_;
  clock::time_point last_{};
  std::array<double, 64> intervals_{};
  std::size_t next_ = 0, count_ = 0;
};

}  // namespace banyan::runtime::detail
