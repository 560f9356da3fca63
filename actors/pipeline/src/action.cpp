#include <banyan/pipeline/action.hpp>

#include <banyan/base/log.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

namespace banyan::pipeline {

namespace {
constexpr std::array<std::pair<std::string_view, kind>, 8> kind_names{{{"SEND_F", kind::send_f},
                                                                       {"RECV_F", kind::recv_f},
                                                                       {"SEND_B", kind::send_b},
                                                                       {"RECV_B", kind::recv_b},
                                                                       {"F", kind::F},
                                                                       {"B", kind::B},
                                                                       {"I", kind::I},
                                                                       {"W", kind::W}}};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Reads a non-negative decimal number; false when there is none or it overflows an int.
bool read_number(std::string_view& s, int& out) {
  std::size_t n = 0;
  long long v = 0;
  while (n < s.size() && std::isdigit(static_cast<unsigned char>(s[n]))) {
    v = v * 10 + (s[n] - '0');
    if (v > 1'000'000'000) return false;
    ++n;
  }
  if (n == 0) return false;
  out = static_cast<int>(v);
  s.remove_prefix(n);
  return true;
}
}  // namespace

std::string_view kind_name(kind k) {
  for (const auto& [name, value] : kind_names)
    if (value == k) return name;
  return "?";
}

std::string to_string(const action& a) {
  return std::to_string(a.stage) + std::string(kind_name(a.op)) + std::to_string(a.microbatch);
}

result<action> parse_action(std::string_view text) {
  std::string_view s = trim(text);
  // Escaped and cut: a cell may be megabytes of anything.
  const std::string quoted = "`" + log::escape(s, 40) + "`";
  action a;
  if (!read_number(s, a.stage))
    return error{errc::parse, "action " + quoted + ": expected a stage number first (as in `2F0`)"};
  bool found = false;
  for (const auto& [name, value] : kind_names) {
    if (s.substr(0, name.size()) == name) {
      a.op = value;
      s.remove_prefix(name.size());
      found = true;
      break;
    }
  }
  if (!found)
    return error{errc::parse,
                 "action " + quoted + ": expected a kind after the stage (F, B, I, W, SEND_F, RECV_F, SEND_B, RECV_B)"};
  if (!read_number(s, a.microbatch))
    return error{errc::parse, "action " + quoted + ": expected a microbatch number after the kind"};
  if (!s.empty())
    return error{errc::parse, "action " + quoted + ": unexpected `" + log::escape(s, 40) + "` at the end"};
  return a;
}

bool table::has_comms() const {
  for (const auto& row : ranks)
    for (const auto& a : row)
      if (!is_compute(a.op)) return true;
  return false;
}

result<table> infer_shape(std::vector<std::vector<action>> ranks) {
  table t;
  // Every stage runs a forward of every microbatch, so a table of C compute actions has at most C
  // stages and C microbatches: a larger number is a typo (`0F999999999`), refused before anything
  // is sized by it.
  std::size_t compute = 0;
  for (const auto& row : ranks)
    for (const auto& a : row) compute += is_compute(a.op);
  for (int r = 0; r < static_cast<int>(ranks.size()); ++r) {
    for (std::size_t i = 0; i < ranks[r].size(); ++i) {
      const action& a = ranks[r][i];
      for (auto [what, number] : {std::pair{"stage", a.stage}, std::pair{"microbatch", a.microbatch}}) {
        if (static_cast<std::size_t>(number) >= std::max<std::size_t>(compute, 1)) {
          return error{errc::invalid, "rank " + std::to_string(r) + " step " + std::to_string(i) + " (" + to_string(a) +
                                          "): " + what + " " + std::to_string(number) + " needs at least " +
                                          std::to_string(static_cast<long long>(number) + 1) + " " + what +
                                          "s, but the table has only " + std::to_string(compute) +
                                          " compute actions (each microbatch runs a forward on every stage)"};
        }
      }
      t.stages = std::max(t.stages, a.stage + 1);
      t.microbatches = std::max(t.microbatches, a.microbatch + 1);
    }
  }
  t.stage_rank.assign(t.stages, -1);
  for (int r = 0; r < static_cast<int>(ranks.size()); ++r) {
    for (std::size_t i = 0; i < ranks[r].size(); ++i) {
      const action& a = ranks[r][i];
      if (!is_compute(a.op)) continue;
      int& owner = t.stage_rank[a.stage];
      if (owner != -1 && owner != r)
        return error{errc::invalid, "rank " + std::to_string(r) + " step " + std::to_string(i) + " (" + to_string(a) +
                                        "): stage " + std::to_string(a.stage) + " already runs on rank " +
                                        std::to_string(owner) + "; a stage must live on one rank"};
      owner = r;
    }
  }
  for (int s = 0; s < t.stages; ++s)
    if (t.stage_rank[s] == -1)
      return error{errc::invalid, "stage " + std::to_string(s) + " has no compute action on any rank"};
  // Peers of communication actions follow from the placement.
  for (int r = 0; r < static_cast<int>(ranks.size()); ++r) {
    for (std::size_t i = 0; i < ranks[r].size(); ++i) {
      action& a = ranks[r][i];
      if (is_compute(a.op)) continue;
      const int other = (a.op == kind::send_f || a.op == kind::recv_b) ? a.stage + 1 : a.stage - 1;
      if (other < 0 || other >= t.stages)
        return error{errc::invalid, "rank " + std::to_string(r) + " step " + std::to_string(i) + " (" + to_string(a) +
                                        "): stage " + std::to_string(a.stage) + " has no neighbour stage " +
                                        std::to_string(other) + " to talk to"};
      a.peer = t.stage_rank[other];
    }
  }
  t.ranks = std::move(ranks);
  return t;
}

std::string format_table(const table& t) {
  std::string out;
  for (int r = 0; r < t.num_ranks(); ++r) {
    out += "rank " + std::to_string(r) + ":";
    for (const auto& a : t.ranks[r]) out += " " + to_string(a);
    out += "\n";
  }
  return out;
}

}  // namespace banyan::pipeline
