#include <banyan/pipeline/csv.hpp>

namespace banyan::pipeline {

result<table> read_csv(std::string_view text, const std::string& source) {
  std::vector<std::vector<action>> ranks;
  std::size_t pos = 0;
  int line = 0;
  while (pos < text.size()) {
    ++line;
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view row = text.substr(pos, end - pos);
    pos = end + 1;
    if (!row.empty() && row.back() == '\r') row.remove_suffix(1);
    std::vector<action> actions;
    std::size_t cell_start = 0;
    while (cell_start <= row.size()) {
      std::size_t comma = row.find(',', cell_start);
      if (comma == std::string_view::npos) comma = row.size();
      std::string_view cell = row.substr(cell_start, comma - cell_start);
      const std::size_t col = cell_start + 1;
      if (cell.size() >= 2 && cell.front() == '"' && cell.back() == '"') cell = cell.substr(1, cell.size() - 2);
      if (cell.find_first_not_of(" \t") != std::string_view::npos) {
        auto a = parse_action(cell);
        if (!a)
          return error{a.error().code,
                       source + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " + a.error().message};
        actions.push_back(*a);
      }
      cell_start = comma + 1;
    }
    ranks.push_back(std::move(actions));
  }
  // A trailing newline ends the last row; it does not start an empty rank.
  if (ranks.empty()) return error{errc::parse, source + ": no rows; expected one row of actions per rank"};
  auto t = infer_shape(std::move(ranks));
  if (!t) return error{t.error().code, source + ": " + t.error().message};
  return t;
}

std::string write_csv(const table& t) {
  std::string out;
  for (const auto& row : t.ranks) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (i) out += ',';
      out += to_string(row[i]);
    }
    out += '\n';
  }
  return out;
}

}  // namespace banyan::pipeline
