// The progress line of every long-running command (STYLE.md, habit 9), on stderr so that stdout stays
// machine-readable:
//
//   simulate [=========           ] 4096/10000 cycles (41%)  812.3 cycles/s  ETA 7s  <detail>
//
// and a final summary line from finish():
//
//   simulate  10000/10000 cycles  820.0 cycles/s  in 12.2s  <summary>
//
// It is shown only where someone watches: on a terminal the line is redrawn in place, at most every
// `tty_period`; when stderr is a file or a pipe nothing periodic is written unless the display is
// `always` (a plain line every `log_period`, for the log of a long unattended run). The final line
// is written in every display mode; callers that print their own summary call clear() instead.
//
// Not thread-safe: one thread owns a progress. Cheap to update() in a tight loop (a clock read).
// Log lines (banyan::log) are not coordinated with it: event() is how a caller writes a line while a
// bar may be on screen.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace banyan {

struct progress_options {
  enum class display {
    automatic,   // periodic line on a terminal only
    always,      // also when stderr is not a terminal
    final_only,  // no periodic line, no events (e.g. under --json): only finish()'s line
  };
  display show = display::automatic;
  std::string unit;                            // "cycles", "steps": shown after the count and rate
  int bar_width = 0;                           // a `[====    ]` bar of this many characters (0: none)
  int rate_decimals = 1;                       // digits of the rate
  std::chrono::milliseconds tty_period{200};   // redraws on a terminal at most this often
  std::chrono::milliseconds log_period{5000};  // plain lines otherwise (display::always)
  std::chrono::milliseconds summary_after{0};  // finish() is silent for runs shorter than this
  std::FILE* stream = nullptr;                 // where to write; nullptr: stderr (tests pass a file)
};

class progress {
 public:
  // `total` 0: unknown (no percentage, bar or ETA). The clock starts now. Whether stderr is a
  // terminal is read once, here.
  progress(std::string label, std::uint64_t total, progress_options options = {});
  // Clears a bar still on screen (as clear()).
  ~progress();
  progress(const progress&) = delete;
  progress& operator=(const progress&) = delete;

  // `done` units (cumulative) are complete; draws when the period has passed. `detail` ends the line.
  void update(std::uint64_t done, std::string_view detail = {});
  // One line of its own ("step 200: val loss 2.0") that replaces the bar on a terminal.
  void event(std::string_view line);
  // The final line: the last count given to update(), the average rate, the elapsed time and
  // `summary` (nothing, as clear(), when the run took less than `summary_after`). Once; later calls
  // do nothing.
  void finish(std::string_view summary = {});
  // Removes the bar from the terminal without a final line (for callers with their own summary).
  void clear();

  // Restarts the clock: rate and ETA count from here.
  void restart();
  double elapsed_seconds() const;
  std::uint64_t total() const { return total_; }
  bool on_terminal() const { return tty_; }

  // The line for `done` after `seconds` (no control characters); what update() and finish() print.
  std::string format(std::uint64_t done, double seconds, std::string_view detail, bool final) const;

 private:
  std::string label_;
  std::uint64_t total_;
  progress_options options_;
  bool tty_;
  bool drawn_ = false;  // a bar is on the terminal, not ended by a newline
  bool finished_ = false;
  std::uint64_t done_ = 0;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace banyan
