#include "device_memory.hpp"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string_view>

namespace banyan::trainer {

namespace {

// The bytes a unit stands for (case-insensitive; KB = 1000, KiB = 1024, a bare K is 1000), 0 for none.
std::uint64_t unit_factor(std::string unit) {
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (unit.empty() || unit == "b") return 1;
  static constexpr std::string_view prefixes = "kmgtpe";
  const std::size_t power = prefixes.find(unit[0]);
  if (power == std::string_view::npos) return 0;
  const std::string rest = unit.substr(1);
  const bool binary = rest == "i" || rest == "ib";
  if (!binary && !rest.empty() && rest != "b") return 0;
  std::uint64_t f = 1;
  for (std::size_t i = 0; i <= power; ++i) f *= binary ? 1024 : 1000;
  return f;
}

}  // namespace

result<std::optional<nn::memory_options>> memory_budget(const std::string& size, const std::string& policy) {
  auto parsed_policy = nn::parse_memory_policy(policy);
  if (!parsed_policy) return error{nn::errc::invalid_argument, "--memory-policy: " + parsed_policy.error().message};
  if (size.empty()) return std::optional<nn::memory_options>{};
  auto wrong = [&size](const std::string& what) {
    return error{nn::errc::invalid_argument, "--device-memory `" + size + "`: " + what};
  };
  const std::string expected = "expected a positive size such as 200MiB, 1.5GB or 1048576";
  if (size.starts_with('-')) return wrong("must be a positive size, such as 200MiB, 1.5GB or 1048576");
  // A number (digits, at most one '.'), optional spaces, a unit. Read here rather than by CLI11's
  // size reader, which takes "-5MiB" for 2^64 - 5 bytes and no fractions ("1.5GB").
  std::size_t i = 0;
  std::uint64_t mantissa = 0, scale = 1;
  bool point = false, digits = false;
  for (; i < size.size() && (std::isdigit(static_cast<unsigned char>(size[i])) || (size[i] == '.' && !point)); ++i) {
    if (size[i] == '.') {
      point = true;
      continue;
    }
    digits = true;
    if (mantissa > (std::numeric_limits<std::uint64_t>::max() - 9) / 10 ||
        (point && scale > std::numeric_limits<std::uint64_t>::max() / 10)) {
      return wrong("too large or too precise");
    }
    mantissa = mantissa * 10 + static_cast<std::uint64_t>(size[i] - '0');
    if (point) scale *= 10;
  }
  std::size_t unit = i;
  while (unit < size.size() && size[unit] == ' ') ++unit;
  const std::uint64_t factor = digits ? unit_factor(size.substr(unit)) : 0;
  if (factor == 0) return wrong(expected);
  // mantissa / scale x factor, in whole bytes: cancel what factor and scale share first.
  const std::uint64_t shared = std::gcd(factor, scale);
  const std::uint64_t f = factor / shared, d = scale / shared;
  if (mantissa % d != 0) return wrong("not a whole number of bytes");
  const std::uint64_t whole = mantissa / d;
  if (whole > std::numeric_limits<std::uint64_t>::max() / f) return wrong("too large: more than 2^64 - 1 bytes");
  if (whole == 0) return wrong("must be a positive size, such as 200MiB, 1.5GB or 1048576");
  return std::optional<nn::memory_options>{nn::memory_options{.budget = whole * f, .policy = *parsed_policy}};
}

nlohmann::json memory_json(const nn::memory_executor& m, bool plan) {
  const auto& p = m.plan();
  const auto s = m.stats();
  nlohmann::json j{{"budget", m.options().budget}, {"policy", nn::to_string(p.policy)},
                   {"peak_bytes", s.peak_bytes},   {"plan_peak_bytes", p.peak_bytes},
                   {"host_bytes", p.host_bytes},   {"predicted_ms", p.predicted_ms},
                   {"compute_ms", p.compute_ms},   {"late_copies", s.late_copies}};
  if (const auto& host = m.options().host_budget) {  // shared with the checkpoint buffer
    j["host_budget"] = {{"capacity", host->capacity()}, {"taken", host->taken()}, {"held", host->held()}};
  }
  if (!plan) return j;
  const auto& g = m.graph();
  auto rows = nlohmann::json::array();
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    std::size_t bytes = 0;
    auto names = nlohmann::json::array();
    for (int t : g.ops[i].outputs) {
      bool saved = false;
      for (const auto& op : g.ops) {
        for (int r : op.saved_reads) saved = saved || r == t;
      }
      if (!saved) continue;
      names.push_back(g.tensors[t].name);
      bytes += g.tensors[t].bytes;
    }
    if (names.empty()) continue;
    rows.push_back({{"layer", g.ops[i].name},
                    {"tensors", names},
                    {"bytes", bytes},
                    {"decision", nn::to_string(p.decisions[i])},
                    {"extra_ms", p.extra_ms[i]},
                    {"swap_ms", std::isfinite(p.swap_ms[i]) ? nlohmann::json(p.swap_ms[i]) : nlohmann::json(nullptr)},
                    {"recompute_ms", p.recompute_ms[i]}});
  }
  j["plan"] = rows;
  return j;
}

}  // namespace banyan::trainer
