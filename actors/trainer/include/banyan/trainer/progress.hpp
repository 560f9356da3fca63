// What a trainer shows while it runs, on stderr: a progress bar and event lines. Log lines (a failure,
// a resume) go through banyan::log instead; the summary goes to stdout.
//
// On a terminal the bar is redrawn in place at most every 200 ms and an event line replaces it; when
// stderr is a file or a pipe, the bar is a plain line every 5 s, so logs stay short. In quiet (JSON)
// mode only the final bar is written, and no event lines.
//
// Not thread-safe: one trainer leaf owns one progress and calls it from its own handlers.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace banyan::trainer {

class progress {
 public:
  // `label` starts every bar ("train_gpt [=====     ] ..."); `rate_decimals` is how many digits the
  // steps/s figure shows (a fast loop reads better without any). The clock starts now.
  progress(std::string label, bool quiet, int rate_decimals = 1);

  // Restarts the clock: rate and ETA count from here.
  void restart();
  // Seconds since the clock started.
  double seconds() const;

  // The bar after `done` of `total` steps of this run: "<label> [====      ] <position>  loss 1.2345
  // 12.3 steps/s  ETA 40s". `position` says where the run is ("step 40/100"). Throttled (see above).
  void update(long long done, long long total, std::string_view position, float loss);
  // The same bar, unthrottled and in quiet mode too, ending the line: call it once, at the end.
  void finish(long long done, long long total, std::string_view position, float loss);
  // One line that replaces the bar on a terminal ("step 200: train loss 1.9, val loss 2.0").
  void event(std::string_view line);

 private:
  void draw(long long done, long long total, std::string_view position, float loss, bool final);

  std::string label_;
  bool quiet_;
  int rate_decimals_;
  bool tty_;
  std::chrono::steady_clock::time_point started_, last_print_;
};

}  // namespace banyan::trainer
