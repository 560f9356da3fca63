#include "device_memory.hpp"

#include <CLI/CLI.hpp>

#include <cmath>

namespace banyan::trainer {

result<std::optional<nn::memory_options>> memory_budget(const std::string& size, const std::string& policy) {
  auto parsed_policy = nn::parse_memory_policy(policy);
  if (!parsed_policy) return error{nn::errc::invalid_argument, "--memory-policy: " + parsed_policy.error().message};
  if (size.empty()) return std::optional<nn::memory_options>{};
  std::string bytes = size;
  std::string wrong;
  try {
    wrong = CLI::AsSizeValue(true)(bytes);  // rewrites `bytes` to the plain number
  } catch (const std::exception& e) {
    wrong = e.what();
  }
  std::uint64_t n = 0;
  if (wrong.empty()) {
    try {
      std::size_t used = 0;
      n = std::stoull(bytes, &used);
      if (used != bytes.size()) wrong = "not a whole number of bytes";
    } catch (const std::exception&) {
      wrong = "not a whole number of bytes";
    }
  }
  if (!wrong.empty() || n == 0) {
    return error{nn::errc::invalid_argument, "--device-memory `" + size + "`: expected a positive size such as 200MiB, "
                                                 "1.5GB or 1048576" + (wrong.empty() ? "" : " (" + wrong + ")")};
  }
  return std::optional<nn::memory_options>{nn::memory_options{.budget = n, .policy = *parsed_policy}};
}

nlohmann::json memory_json(const nn::memory_executor& m, bool plan) {
  const auto& p = m.plan();
  const auto s = m.stats();
  nlohmann::json j{{"budget", m.options().budget},    {"policy", nn::to_string(p.policy)},
                   {"peak_bytes", s.peak_bytes},       {"plan_peak_bytes", p.peak_bytes},
                   {"host_bytes", p.host_bytes},       {"predicted_ms", p.predicted_ms},
                   {"compute_ms", p.compute_ms},       {"late_copies", s.late_copies}};
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
    rows.push_back({{"layer", g.ops[i].name}, {"tensors", names}, {"bytes", bytes},
                    {"decision", nn::to_string(p.decisions[i])}, {"extra_ms", p.extra_ms[i]},
                    {"swap_ms", std::isfinite(p.swap_ms[i]) ? nlohmann::json(p.swap_ms[i]) : nlohmann::json(nullptr)},
                    {"recompute_ms", p.recompute_ms[i]}});
  }
  j["plan"] = rows;
  return j;
}

}  // namespace banyan::trainer
