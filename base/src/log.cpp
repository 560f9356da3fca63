#include "banyan/base/log.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace banyan::log {
namespace {

level initial_threshold() {
  const char* env = std::getenv("BANYAN_LOG");
  if (env == nullptr) return level::info;
  std::string_view v(env);
  if (v == "debug") return level::debug;
  if (v == "warning") return level::warning;
  if (v == "error") return level::error;
  return level::info;
}

struct global {
  std::mutex mutex;
  sink current;
  std::atomic<level> threshold{initial_threshold()};
};

global& state() {
  static global g;  // never destroyed before its last user: function-local static
  return g;
}

std::string format(level l, std::string_view component, std::string_view text) {
  std::string line;
  line.reserve(component.size() + text.size() + 16);
  line += '[';
  line += escape(component);
  line += "] ";
  if (l == level::warning) line += "warning: ";
  if (l == level::error) line += "error: ";
  line += escape(text, 64 * 1024);
  return line;
}

}  // namespace

const char* to_string(level l) {
  switch (l) {
    case level::debug: return "debug";
    case level::info: return "info";
    case level::warning: return "warning";
    case level::error: return "error";
  }
  return "?";
}

void set_threshold(level l) { state().threshold.store(l); }
level threshold() { return state().threshold.load(); }

void write(level l, std::string_view component, std::string_view text) {
  auto& g = state();
  if (l < g.threshold.load(std::memory_order_relaxed)) return;
  std::string line = format(l, component, text);
  std::lock_guard lock(g.mutex);
  if (g.current) {
    g.current(l, component, line);
  } else {
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), stderr);
  }
}

bool worth_logging(std::uint64_t n) {
  if (n <= 10) return true;
  for (; n > 1; n /= 10)
    if (n % 10 != 0) return false;
  return true;
}

std::string escape(std::string_view untrusted, std::size_t max_bytes) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  const std::size_t n = std::min(untrusted.size(), max_bytes);
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    auto c = static_cast<unsigned char>(untrusted[i]);
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\\': out += "\\\\"; break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          out += "\\x";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  if (n < untrusted.size()) out += "...(" + std::to_string(untrusted.size()) + " bytes)";
  return out;
}

sink set_sink(sink s) {
  auto& g = state();
  std::lock_guard lock(g.mutex);
  std::swap(g.current, s);
  return s;
}

struct capture::state {
  mutable std::mutex mutex;
  std::vector<std::string> lines;
};

capture::capture() : state_(new state) {
  previous_ = set_sink([s = state_](level, std::string_view, std::string_view line) {
    std::lock_guard lock(s->mutex);
    s->lines.emplace_back(line);
  });
}

capture::~capture() {
  set_sink(std::move(previous_));
  delete state_;
}

std::vector<std::string> capture::lines() const {
  std::lock_guard lock(state_->mutex);
  return state_->lines;
}

bool capture::contains(std::string_view fragment) const {
  std::lock_guard lock(state_->mutex);
  for (const auto& l : state_->lines)
    if (l.find(fragment) != std::string::npos) return true;
  return false;
}

}  // namespace banyan::log
