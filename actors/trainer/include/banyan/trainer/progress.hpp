// How a trainer shows its progress: banyan::progress (banyan/base/progress.hpp) with a 30-character
// bar, counted in steps, on stderr. Off a terminal the bar is a plain line every 5 s so that the log
// of a long unattended run shows it; in JSON mode only the final line is written, and no event lines.
// Log lines (a failure, a resume) go through banyan::log instead; the summary goes to stdout.
#pragma once

#include <banyan/base/progress.hpp>

#include <chrono>

namespace banyan::trainer {

inline progress_options progress_style(bool json, int rate_decimals = 1) {
  return {.show = json ? progress_options::display::final_only : progress_options::display::always,
          .unit = "steps",
          .bar_width = 30,
          .rate_decimals = rate_decimals,
          .log_period = std::chrono::seconds(5)};
}

}  // namespace banyan::trainer
