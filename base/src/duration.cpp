#include "banyan/base/duration.hpp"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace banyan {

const char* to_string(parse_errc code) {
  switch (code) {
    case parse_errc::invalid_duration: return "invalid duration";
  }
  return "unknown";
}

result<std::chrono::milliseconds> parse_duration(std::string_view text) {
  auto fail = [&](const char* why) {
    return error{parse_errc::invalid_duration,
                 "duration `" + std::string(text.substr(0, 64)) + "`: " + why + " (e.g. 250ms, 2s, 1.5m, 30)"};
  };
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) return fail("expected a number");
  std::string number(text.substr(0, i));
  char* end = nullptr;
  double value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !std::isfinite(value)) return fail("expected a number");
  std::string_view unit = text.substr(i);
  double ms_per_unit = 0;
  if (unit.empty() || unit == "s") ms_per_unit = 1000;
  else if (unit == "ms") ms_per_unit = 1;
  else if (unit == "m" || unit == "min") ms_per_unit = 60'000;
  else if (unit == "h") ms_per_unit = 3'600'000;
  else return fail("unknown unit (ms, s, m or h)");
  double ms = value * ms_per_unit;
  if (ms > 9.2e15) return fail("too long");
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(ms)));
}

std::string format_duration(std::chrono::milliseconds d) {
  auto ms = d.count();
  if (ms % 1000 != 0) return std::to_string(ms) + "ms";
  auto s = ms / 1000;
  if (s % 3600 == 0 && s != 0) return std::to_string(s / 3600) + "h";
  if (s % 60 == 0 && s != 0) return std::to_string(s / 60) + "m";
  return std::to_string(s) + "s";
}

}  // namespace banyan
