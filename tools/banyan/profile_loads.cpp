#include "banyan/profile_loads.hpp"

#include <cstdio>

namespace banyan::cli {
namespace {

namespace bp = banyan::partitioner;

std::string fixed(double x, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}

}  // namespace

std::string load_confidence::describe() const {
  std::string line = "CPU loads: " + fixed(cpu_s, 4) + " cpu s over " +
                     (window_s > 0 ? "a " + fixed(window_s, 2) + " s window" : "an unrecorded window");
  if (!judged()) return line + (has_messages ? "" : " (no message counts: confidence not judged)");
  line += ", " + std::to_string(messages) + " messages; " + fixed(100 * well_sampled_share, 0) +
          "% of the load from components with >= " + std::to_string(min_messages) +
          " messages and >= " + fixed(min_cpu_s * 1e3, 0) + " ms";
  if (trusted()) return line;
  line += ": too noisy to trust (" + std::to_string(thin_components) + " components thinly sampled";
  if (cpu_s < min_total_cpu_s) line += ", under " + fixed(min_total_cpu_s * 1e3, 0) + " ms measured in all";
  return line +
         "); the same app can partition very differently from run to run. Profile a longer run "
         "(--run-for), or partition by --load messages";
}

load_confidence judge_loads(const bp::tree& t, const bp::profile_measurements& m) {
  load_confidence c;
  c.window_s = m.duration_s;
  c.has_messages = m.has_messages;
  double well = 0, messages = 0;
  for (std::size_t v = 0; v < t.size(); ++v) {
    const double cpu = t.cpu[v];
    const double handled = m.messages.empty() ? 0.0 : m.messages[v];
    c.cpu_s += cpu;
    messages += handled;
    if (cpu <= 0) continue;
    if (handled >= load_confidence::min_messages && cpu >= load_confidence::min_cpu_s) well += cpu;
    else ++c.thin_components;
  }
  c.messages = static_cast<std::uint64_t>(messages);
  c.well_sampled_share = c.cpu_s > 0 ? well / c.cpu_s : 1.0;
  return c;
}

result<void> use_message_loads(bp::tree& t, const bp::profile_measurements& m, const std::string& file) {
  double total = 0;
  for (double x : m.messages) total += x;
  if (!m.has_messages || total == 0) {
    return error{bp::errc::invalid, file +
                                        ": --load messages: the profile has no message counts (load.messages), "
                                        "as a run's --profile writes; this one may be synthetic (gen-tree)"};
  }
  for (std::size_t v = 0; v < t.size(); ++v) t.cpu[v] = m.messages[v];
  return {};
}

}  // namespace banyan::cli
