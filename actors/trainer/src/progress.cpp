#include "banyan/trainer/progress.hpp"

#include <cstdio>
#include <unistd.h>

namespace banyan::trainer {

progress::progress(std::string label, bool quiet, int rate_decimals)
    : label_(std::move(label)), quiet_(quiet), rate_decimals_(rate_decimals), tty_(isatty(2) != 0) {
  restart();
}

void progress::restart() { started_ = last_print_ = std::chrono::steady_clock::now(); }

double progress::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

void progress::update(long long done, long long total, std::string_view position, float loss) {
  draw(done, total, position, loss, false);
}

void progress::finish(long long done, long long total, std::string_view position, float loss) {
  draw(done, total, position, loss, true);
  if (tty_) std::fprintf(stderr, "\n");
}

void progress::event(std::string_view line) {
  if (quiet_) return;
  std::fprintf(stderr, "%s%.*s%s\n", tty_ ? "\r" : "", static_cast<int>(line.size()), line.data(), tty_ ? "\x1b[K" : "");
}

void progress::draw(long long done, long long total, std::string_view position, float loss, bool final) {
  const auto now = std::chrono::steady_clock::now();
  if (!final && now - last_print_ < std::chrono::milliseconds(tty_ ? 200 : 5000)) return;
  last_print_ = now;
  if (quiet_ && !final) return;
  const double secs = std::chrono::duration<double>(now - started_).count();
  const double rate = secs > 0 ? done / secs : 0.0;
  const double eta = rate > 0 ? (total - done) / rate : 0.0;
  constexpr int width = 30;
  std::string bar(total > 0 ? static_cast<std::size_t>(width * done / total) : width, '=');
  bar.resize(width, ' ');
  std::fprintf(stderr, "%s%s [%s] %.*s  loss %.4f  %.*f steps/s  ETA %.0fs%s", tty_ ? "\r" : "", label_.c_str(),
               bar.c_str(), static_cast<int>(position.size()), position.data(), loss, rate_decimals_, rate, eta,
               tty_ && !final ? "\x1b[K" : "\n");
}

}  // namespace banyan::trainer
