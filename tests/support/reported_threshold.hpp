// How fast a loss was found, as the failure detector itself judged it: tests compare with the
// threshold it reported rather than with a wall-time constant.
#pragma once

#include <chrono>
#include <optional>
#include <regex>
#include <string>

namespace banyan::test {

// The failure detector's threshold as the transport reported it when it gave a silent peer up
// ("no frame for 812 ms (threshold 800 ms, ..."); nullopt when the reason names none (a restart).
// Tests of how fast a loss is found compare with this rather than with a constant: the threshold
// grows with the jitter the detector saw, which a loaded machine adds.
inline std::optional<std::chrono::milliseconds> reported_threshold(const std::string& down_reason) {
  static const std::regex threshold(R"(\(threshold ([0-9]+) ms)");
  std::smatch m;
  if (!std::regex_search(down_reason, m, threshold)) return std::nullopt;
  return std::chrono::milliseconds(std::stoll(m[1].str()));
}

}  // namespace banyan::test
