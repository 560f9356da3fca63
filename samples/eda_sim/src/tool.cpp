#include "tool.hpp"

#include <cstdlib>
#include <sstream>

namespace banyan::eda::detail {

result<run_output> run_tool(const std::vector<std::string>& argv, const std::string& dir) {
  return run_process(argv, {.working_dir = dir, .out = output_mode::capture, .err = output_mode::merge});
}

std::string make_temp_dir() {
  const char* base = std::getenv("TMPDIR");
  std::string templ = std::string(base && *base ? base : "/tmp") + "/banyan-eda-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) return {};
  return buf.data();
}

std::string excerpt(const std::string& text, const std::string& needle, int n) {
  std::vector<std::string> lines, hits;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    lines.push_back(line);
    if (!needle.empty() && line.find(needle) != std::string::npos) hits.push_back(line);
  }
  const auto& src = hits.empty() ? lines : hits;
  std::string out;
  const std::size_t from = src.size() > static_cast<std::size_t>(n) ? src.size() - n : 0;
  for (std::size_t i = from; i < src.size(); ++i) out += (out.empty() ? "" : "\n") + src[i];
  return out;
}

}  // namespace banyan::eda::detail
