// What the multi-node integration tests share: a scratch folder for ipc:// endpoints and
// deployments, and running a command (node processes, banyan launch) with a time limit that keeps
// its output even when the limit is hit (banyan::run_process returns only the timeout then).
#pragma once

#include "banyan/base/process.hpp"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace banyan::test {

struct scratch_dir {
  std::filesystem::path path;
  scratch_dir() {
    char tmpl[] = "/tmp/banyan-it-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~scratch_dir() { std::filesystem::remove_all(path); }
};

struct outcome {
  int exit_code;  // -1: killed (a signal, or past the limit)
  std::string output;  // stdout and stderr merged
};

// Runs argv in its own process group; past `limit` the whole group is killed.
inline outcome run_argv(const std::vector<std::string>& argv, std::chrono::seconds limit) {
  auto p = process::spawn(argv, {.out = output_mode::capture, .err = output_mode::merge, .own_process_group = true});
  if (!p) return {-1, p.error().what()};
  auto st = p->wait(limit);
  if (!st) {
    p->kill();
    return {-1, p->output() + "\n" + st.error().what()};
  }
  return {st->signal != 0 ? -1 : st->code, p->output()};
}

// The same for a shell command line.
inline outcome run_command(const std::string& cmd, std::chrono::seconds limit) { return run_argv({"sh", "-c", cmd}, limit); }

}  // namespace banyan::test
