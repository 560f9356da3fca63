#include "banyan/progress.hpp"

#include <cstdio>
#include <unistd.h>

namespace banyan::cli {

progress::progress(std::string label, std::uint64_t total, std::chrono::milliseconds period)
    : label_(std::move(label)),
      total_(total),
      period_(period),
      start_(std::chrono::steady_clock::now()),
      last_(start_),
      tty_(isatty(STDERR_FILENO) != 0) {}

double progress::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void progress::update(std::uint64_t done, const std::string& detail) {
  done_ = done;
  auto now = std::chrono::steady_clock::now();
  if (now - last_ < period_) return;
  last_ = now;
  print(done, detail, false);
}

void progress::finish(const std::string& summary) {
  if (finished_) return;
  finished_ = true;
  print(total_ ? total_ : done_, summary, true);
}

void progress::print(std::uint64_t done, const std::string& detail, bool final) {
  double secs = elapsed_seconds();
  double rate = secs > 0 ? static_cast<double>(done) / secs : 0.0;
  char eta[32] = "";
  if (!final && total_ > done && rate > 0) {
    std::snprintf(eta, sizeof eta, "  ETA %.1fs", static_cast<double>(total_ - done) / rate);
  }
  char count[64];
  if (total_)
    std::snprintf(count, sizeof count, "%llu/%llu (%.0f%%)", static_cast<unsigned long long>(done),
                  static_cast<unsigned long long>(total_), 100.0 * done / total_);
  else
    std::snprintf(count, sizeof count, "%llu", static_cast<unsigned long long>(done));
  std::fprintf(stderr, "%s%s  %s  %.1f/s%s%s%s%s%s", tty_ ? "\r\033[K" : "", label_.c_str(), count,
               rate, eta, final ? "  in " : "", final ? std::to_string(secs).substr(0, 6).c_str() : "",
               final ? "s" : "", detail.empty() ? "" : ("  " + detail).c_str());
  std::fputs(final || !tty_ ? "\n" : "", stderr);
  std::fflush(stderr);
}

}  // namespace banyan::cli
