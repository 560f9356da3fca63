#include "banyan/sdk/launcher.hpp"

#include "banyan/sdk/error.hpp"

#include <cstdlib>
#include <cstring>

namespace banyan::launcher {

namespace {

error bad(std::string_view variable, std::string_view list, const std::string& what) {
  const std::string shown = list.size() > 80 ? std::string(list.substr(0, 80)) + "..." : std::string(list);
  return error{sdk::errc::invalid_argument, std::string(variable) + "=`" + shown + "`: " + what};
}

// A decimal count (no sign); false when `text` is not one or is past `max`.
bool parse_count(std::string_view text, std::size_t max, std::size_t& out) {
  if (text.empty() || text.size() > 9) return false;
  out = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    out = out * 10 + static_cast<std::size_t>(c - '0');
  }
  return out <= max;
}

// Splits at commas outside brackets.
std::vector<std::string_view> split_top(std::string_view list) {
  std::vector<std::string_view> out;
  int depth = 0;
  std::size_t begin = 0;
  for (std::size_t i = 0; i <= list.size(); ++i) {
    if (i == list.size() || (list[i] == ',' && depth == 0)) {
      out.push_back(list.substr(begin, i - begin));
      begin = i + 1;
    } else if (list[i] == '[') {
      ++depth;
    } else if (list[i] == ']') {
      --depth;
    }
  }
  return out;
}

constexpr std::size_t max_ranks = 1 << 20;  // bounds what a malformed list can make us allocate

}  // namespace

result<std::vector<std::string>> parse_host_slots(std::string_view list, std::string_view variable) {
  std::vector<std::string> out;
  for (auto item : split_top(list)) {
    std::size_t slots = 1;
    const auto colon = item.find(':');
    std::string_view host = item.substr(0, colon);
    if (host.empty()) return bad(variable, list, "an empty host name");
    if (colon != std::string_view::npos && (!parse_count(item.substr(colon + 1), max_ranks, slots) || slots == 0))
      return bad(variable, list, "`" + std::string(item) + "`: the slots after `:` must be a count from 1");
    if (out.size() + slots > max_ranks) return bad(variable, list, "more than " + std::to_string(max_ranks) + " ranks");
    out.insert(out.end(), slots, std::string(host));
  }
  return out;
}

result<std::vector<std::string>> expand_slurm_hostlist(std::string_view list, std::string_view variable) {
  std::vector<std::string> out;
  for (auto item : split_top(list)) {
    const auto open = item.find('[');
    if (open == std::string_view::npos) {
      if (item.empty() || item.find(']') != std::string_view::npos)
        return bad(variable, list, "a malformed host `" + std::string(item) + "`");
      out.emplace_back(item);
      continue;
    }
    const auto close = item.find(']', open);
    if (close == std::string_view::npos || open == 0)
      return bad(variable, list, "`" + std::string(item) + "`: a range needs a prefix and a closing `]`");
    const std::string prefix(item.substr(0, open));
    const std::string suffix(item.substr(close + 1));
    if (suffix.find_first_of("[]") != std::string::npos)
      return bad(variable, list, "`" + std::string(item) + "`: one range per host name is supported");
    std::string_view ranges = item.substr(open + 1, close - open - 1);
    std::size_t begin = 0;
    while (begin <= ranges.size()) {
      auto end = ranges.find(',', begin);
      if (end == std::string_view::npos) end = ranges.size();
      const auto range = ranges.substr(begin, end - begin);
      const auto dash = range.find('-');
      const auto lo_text = range.substr(0, dash);
      const auto hi_text = dash == std::string_view::npos ? lo_text : range.substr(dash + 1);
      std::size_t lo = 0, hi = 0;
      if (!parse_count(lo_text, 999'999'999, lo) || !parse_count(hi_text, 999'999'999, hi) || hi < lo)
        return bad(variable, list, "`" + std::string(range) + "` is not a range like 01-03 or 7");
      if (out.size() + (hi - lo + 1) > max_ranks)
        return bad(variable, list, "more than " + std::to_string(max_ranks) + " hosts");
      const std::size_t width = lo_text.size();  // zero padding: n[01-10] -> n01 ... n10
      for (std::size_t n = lo; n <= hi; ++n) {
        std::string digits = std::to_string(n);
        if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
        out.push_back(prefix + digits + suffix);
      }
      begin = end + 1;
    }
  }
  return out;
}

result<std::vector<std::size_t>> expand_slurm_tasks(std::string_view list, std::string_view variable) {
  std::vector<std::size_t> out;
  for (auto item : split_top(list)) {
    std::size_t tasks = 0, repeat = 1;
    const auto paren = item.find('(');
    if (!parse_count(item.substr(0, paren), max_ranks, tasks))
      return bad(variable, list, "`" + std::string(item) + "` is not a count like 2 or 2(x3)");
    if (paren != std::string_view::npos) {
      const auto inner = item.substr(paren + 1);
      if (inner.size() < 3 || inner[0] != 'x' || inner.back() != ')' ||
          !parse_count(inner.substr(1, inner.size() - 2), max_ranks, repeat))
        return bad(variable, list, "`" + std::string(item) + "` is not a count like 2 or 2(x3)");
    }
    if (out.size() + repeat > max_ranks)
      return bad(variable, list, "more than " + std::to_string(max_ranks) + " hosts");
    out.insert(out.end(), repeat, tasks);
  }
  return out;
}

result<std::vector<std::string>> hosts_by_rank() {
  if (const char* hosts = std::getenv("BANYAN_HOSTS")) return parse_host_slots(hosts, "BANYAN_HOSTS");
  const char* nodes = std::getenv("SLURM_STEP_NODELIST");
  const char* tasks = std::getenv("SLURM_STEP_TASKS_PER_NODE");
  if (!nodes || !tasks) return std::vector<std::string>{};
  if (const char* dist = std::getenv("SLURM_DISTRIBUTION"); dist && std::strncmp(dist, "block", 5) != 0)
    return bad("SLURM_DISTRIBUTION", dist,
               "only srun's block distribution maps ranks to hosts here (set BANYAN_HOSTS instead)");
  auto names = expand_slurm_hostlist(nodes, "SLURM_STEP_NODELIST");
  if (!names) return names.error();
  auto counts = expand_slurm_tasks(tasks, "SLURM_STEP_TASKS_PER_NODE");
  if (!counts) return counts.error();
  if (names->size() != counts->size())
    return bad("SLURM_STEP_TASKS_PER_NODE", tasks,
               "gives " + std::to_string(counts->size()) + " hosts but SLURM_STEP_NODELIST has " +
                   std::to_string(names->size()));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < names->size(); ++i) {
    if (out.size() + (*counts)[i] > max_ranks)
      return bad("SLURM_STEP_TASKS_PER_NODE", tasks, "more than " + std::to_string(max_ranks) + " ranks");
    out.insert(out.end(), (*counts)[i], (*names)[i]);
  }
  return out;
}

}  // namespace banyan::launcher
