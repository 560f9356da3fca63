// What the multi-node integration tests share: a scratch folder for ipc:// endpoints and
// deployments, writing a deployment, and running a command (node processes, banyan launch) with a time limit that keeps
// its output even when the limit is hit (banyan::run_process returns only the timeout then).
#pragma once

#include "banyan/base/process.hpp"

#include <nlohmann/json.hpp>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
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

// A deployment of `nodes` nodes n0.. on ipc:// endpoints in `dir` (capacity 1 each) with the given
// assignments, e.g. {{"/mesh", "n0"}, {"/mesh/zone1", "n1"}}; returns its path (dir/deployment.yaml).
inline std::filesystem::path write_deployment(const std::filesystem::path& dir,
                                              const std::vector<std::pair<std::string, std::string>>& assignments,
                                              int nodes = 3) {
  std::filesystem::path d = dir / "deployment.yaml";
  std::ofstream out(d);
  out << "version: 1\nnodes:\n";
  for (int i = 0; i < nodes; ++i)
    out << "  - {name: n" << i << ", endpoint: \"ipc://" << (dir / ("n" + std::to_string(i))).string()
        << "\", capacity: {cpu: 1}}\n";
  out << "assignments:\n";
  for (const auto& [path, node] : assignments) out << "  " << path << ": " << node << "\n";
  return d;
}

struct outcome {
  int exit_code;       // -1: killed (a signal, or past the limit)
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
inline outcome run_command(const std::string& cmd, std::chrono::seconds limit) {
  return run_argv({"sh", "-c", cmd}, limit);
}

// A process in the background (a `banyan launch`) whose output is read into `log` as it comes.
struct running_launch {
  std::optional<process> p;
  std::string log;
  // Reads until `text` is in the log; false when it was not within `limit` or the process ended first.
  bool read_until(const std::string& text, std::chrono::seconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    std::vector<process*> all{&*p};
    while (true) {
      for (auto& l : p->take_lines()) log += l + "\n";
      if (log.find(text) != std::string::npos) return true;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      if (left.count() <= 0 || (p->closed() && p->status())) return false;
      process::wait_any(all, std::min(left, std::chrono::milliseconds(200)));
    }
  }
  // Takes what the pipe holds now without waiting, so the process never blocks on a full pipe.
  void drain() {
    (void)p->read(std::chrono::milliseconds(0));
    for (auto& l : p->take_lines()) log += l + "\n";
  }
};

// A `banyan launch` whose merged output is read as it comes, for tests that act while it runs
// (kill a node, start another launch).
struct watched_launch {
  std::optional<process> p;
  std::string log;

  explicit watched_launch(const std::vector<std::string>& argv) {
    auto spawned = process::spawn(argv, {.out = output_mode::capture, .err = output_mode::merge});
    if (spawned) p.emplace(std::move(spawned).value());
    else log = spawned.error().message + "\n";
  }
  // Reads until `done()` holds; false when the launch ended first or `limit` passed.
  template <class Done>
  bool until(Done done, std::chrono::seconds limit) {
    if (!p) return false;
    std::vector<process*> all{&*p};
    const auto end = std::chrono::steady_clock::now() + limit;
    for (;;) {
      for (auto& l : p->take_lines()) log += l + "\n";
      if (done()) return true;
      if (std::chrono::steady_clock::now() >= end || (p->closed() && p->status())) return false;
      process::wait_any(all, std::chrono::milliseconds(50));
    }
  }
  bool until_line(const std::string& text, std::chrono::seconds limit = std::chrono::seconds(60)) {
    return until([&] { return log.find(text) != std::string::npos; }, limit);
  }
  // Every node n0..n<nodes-1> says the cluster is ready (in the log of the app's root `root`): a
  // node lost before its peers ever saw it would be a failed start, not a failover.
  bool cluster_ready(const std::string& root, int nodes = 3) {
    for (int i = 0; i < nodes; ++i)
      if (!until_line("[n" + std::to_string(i) + "] [" + root + "] every node is ready")) return false;
    return true;
  }
  // kill -9 of `node`'s process (its pid from launch's `node X started (pid N)` line).
  bool kill_node(const std::string& node) {
    std::smatch m;
    const std::regex started("node " + node + R"( started \(pid (\d+)\))");
    return std::regex_search(log, m, started) && ::kill(std::stoi(m[1]), SIGKILL) == 0;
  }
  // Waits for the launch's end; its exit code, -1 when it did not end.
  int end(std::chrono::seconds limit) {
    if (!p) return -1;
    auto st = p->wait(limit);
    for (auto& l : p->take_lines()) log += l + "\n";
    return st ? st->code : -1;
  }
};

// An app's JSON summary in its output: the lines from the last `{` to the next `}`. Under banyan
// launch every line of node `node` carries a `[node] ` prefix, and only those lines count.
inline nlohmann::json summary(const std::string& output, const std::string& node = "") {
  const std::string prefix = node.empty() ? "" : "[" + node + "] ";
  std::vector<std::string> lines;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) lines.push_back(line.substr(prefix.size()));
  const auto open = std::find(lines.rbegin(), lines.rend(), "{");
  if (open == lines.rend()) return {};
  std::string text;
  for (auto it = std::prev(open.base()); it != lines.end(); ++it) {
    text += *it + "\n";
    if (*it == "}") break;
  }
  return nlohmann::json::parse(text, nullptr, false);
}

}  // namespace banyan::test
