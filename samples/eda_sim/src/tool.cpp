#include "tool.hpp"

#include <cstdlib>
#include <sstream>

namespace banyan::eda::detail {

result<run_output> run_tool(const std::vector<std::string>& argv, const std::string& dir,
                            const std::function<void(double seconds)>& still_running, std::chrono::milliseconds every) {
  const spawn_options options{.working_dir = dir, .out = output_mode::capture, .err = output_mode::merge};
  if (!still_running) return run_process(argv, options);
  auto p = process::spawn(argv, options);
  if (!p) return std::move(p).error();
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    auto st = p->wait(every);
    if (st) return run_output{*st, p->output(process::stream::out), p->output(process::stream::err)};
    if (st.error().code != process_errc::timeout) {
      p->kill();
      return std::move(st).error();
    }
    still_running(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
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
