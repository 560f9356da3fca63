#include "banyan/base/progress.hpp"

#include <unistd.h>

#include <cmath>

namespace banyan {
namespace {

std::FILE* out(const progress_options& o) { return o.stream ? o.stream : stderr; }

// "7s", "3m20s", "2h05m": whole seconds, as a person reads an estimate.
std::string approximate(double seconds) {
  const auto s = static_cast<long long>(std::llround(std::max(seconds, 0.0)));
  char buf[48];
  if (s < 60) std::snprintf(buf, sizeof buf, "%llds", s);
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, s % 3600 / 60);
  return buf;
}

}  // namespace

progress::progress(std::string label, std::uint64_t total, progress_options options)
    : label_(std::move(label)),
      total_(total),
      options_(std::move(options)),
      tty_(::isatty(::fileno(out(options_))) != 0) {
  restart();
}

progress::~progress() { clear(); }

void progress::restart() { start_ = last_ = std::chrono::steady_clock::now(); }

double progress::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::string progress::format(std::uint64_t done, double seconds, std::string_view detail, bool final) const {
  std::string line = label_;
  if (options_.bar_width > 0 && total_ > 0) {
    const auto filled =
        static_cast<std::size_t>(options_.bar_width * std::min<double>(1.0, double(done) / double(total_)));
    line +=
        " [" + std::string(filled, '=') + std::string(static_cast<std::size_t>(options_.bar_width) - filled, ' ') + "]";
  }
  const std::string unit = options_.unit.empty() ? "" : " " + options_.unit;
  line += "  " + std::to_string(done);
  if (total_ > 0) line += "/" + std::to_string(total_);
  line += unit;
  char buf[96];
  if (total_ > 0 && !final) {
    std::snprintf(buf, sizeof buf, " (%.0f%%)", 100.0 * double(done) / double(total_));
    line += buf;
  }
  const double rate = seconds > 0 ? double(done) / seconds : 0.0;
  std::snprintf(buf, sizeof buf, "  %.*f%s/s", options_.rate_decimals, rate, unit.c_str());
  line += buf;
  if (final) {
    std::snprintf(buf, sizeof buf, "  in %.*fs", seconds < 10 ? 2 : 1, seconds);
    line += buf;
  } else if (total_ > done && rate > 0) {
    line += "  ETA " + approximate(double(total_ - done) / rate);
  }
  if (!detail.empty()) line += "  " + std::string(detail);
  return line;
}

void progress::update(std::uint64_t done, std::string_view detail) {
  done_ = done;
  if (finished_) return;
  using display = progress_options::display;
  if (options_.show == display::final_only || (!tty_ && options_.show != display::always)) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < (tty_ ? options_.tty_period : options_.log_period)) return;
  last_ = now;
  const std::string line = format(done, std::chrono::duration<double>(now - start_).count(), detail, false);
  std::FILE* f = out(options_);
  if (tty_) {
    std::fprintf(f, "\r\033[K%s", line.c_str());
    drawn_ = true;
  } else {
    std::fprintf(f, "%s\n", line.c_str());
  }
  std::fflush(f);
}

void progress::event(std::string_view line) {
  if (options_.show == progress_options::display::final_only) return;
  clear();
  std::fprintf(out(options_), "%.*s\n", static_cast<int>(line.size()), line.data());
  std::fflush(out(options_));
}

void progress::finish(std::string_view summary) {
  if (finished_) return;
  finished_ = true;
  const double seconds = elapsed_seconds();
  if (seconds < std::chrono::duration<double>(options_.summary_after).count()) return clear();
  const std::string line = format(done_, seconds, summary, true);
  std::FILE* f = out(options_);
  std::fprintf(f, "%s%s\n", drawn_ ? "\r\033[K" : "", line.c_str());
  drawn_ = false;
  std::fflush(f);
}

void progress::clear() {
  if (!drawn_) return;
  std::fputs("\r\033[K", out(options_));
  std::fflush(out(options_));
  drawn_ = false;
}

}  // namespace banyan
