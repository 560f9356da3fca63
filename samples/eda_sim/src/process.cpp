#include "process.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace banyan::eda::detail {

process_result run_process(const std::vector<std::string>& argv, const std::string& cwd) {
  process_result r;
  int fds[2];
  if (argv.empty() || pipe(fds) != 0) return r;
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return r;
  }
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    execvp(args[0], args.data());
    const char* msg = "cannot execute ";
    (void)!write(2, msg, std::strlen(msg));
    (void)!write(2, args[0], std::strlen(args[0]));
    (void)!write(2, "\n", 1);
    _exit(127);
  }
  close(fds[1]);
  std::array<char, 65536> buf;
  for (;;) {
    const ssize_t n = read(fds[0], buf.data(), buf.size());
    if (n > 0) {
      r.output.append(buf.data(), static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(fds[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
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
