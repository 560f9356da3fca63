// `banyan launch DEPLOYMENT [--profile FILE] -- APP ARGS...`: starts one process per node of the
// deployment on this machine (`APP ARGS --deployment DEPLOYMENT --node NAME`), prefixes and merges their
// output, forwards SIGINT/SIGTERM, and exits non-zero if any node fails. With --profile it merges the
// nodes' profiles into one (per-edge traffic, loads, flows and per-link cross-node totals).
#include "banyan/command.hpp"

#include "banyan/broker/profile.hpp"
#include "banyan/partitioner/io.hpp"

#include <nlohmann/json.hpp>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace banyan::cli {
namespace {

struct options {
  std::string deployment;
  std::string profile;
  double timeout = 0;
  bool json = false;
  std::vector<std::string> command;
};

struct child {
  std::string node;
  pid_t pid = -1;
  int out = -1, err = -1;
  std::string out_buf, err_buf;
  int status = -1;  // exit code, or 128+signal
  bool done = false;
};

volatile std::sig_atomic_t pending_signal = 0;
void on_signal(int sig) { pending_signal = sig; }

void flush_lines(std::string& buf, const std::string& node, FILE* to, bool all) {
  std::size_t start = 0, nl;
  while ((nl = buf.find('\n', start)) != std::string::npos) {
    std::fprintf(to, "[%s] %.*s\n", node.c_str(), static_cast<int>(nl - start), buf.data() + start);
    start = nl + 1;
  }
  buf.erase(0, start);
  if (all && !buf.empty()) {
    std::fprintf(to, "[%s] %s\n", node.c_str(), buf.c_str());
    buf.clear();
  }
  std::fflush(to);
}

int run(const options& o) {
  auto d = partitioner::load_deployment(o.deployment);
  if (!d) {
    std::fprintf(stderr, "banyan launch: %s\n", d.error().message.c_str());
    return 2;
  }
  if (o.command.empty()) {
    std::fprintf(stderr, "banyan launch: no app given; usage: banyan launch DEPLOYMENT -- APP ARGS...\n");
    return 2;
  }
  std::filesystem::path scratch;
  if (!o.profile.empty()) {
    char tmpl[] = "/tmp/banyan-launch-XXXXXX";
    if (!mkdtemp(tmpl)) {
      std::fprintf(stderr, "banyan launch: cannot create a temporary folder: %s\n", std::strerror(errno));
      return 1;
    }
    scratch = tmpl;
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGPIPE, SIG_IGN);

  std::vector<child> children;
  for (const auto& n : d->c.nodes) {
    int out[2], err[2];
    if (pipe(out) != 0 || pipe(err) != 0) {
      std::fprintf(stderr, "banyan launch: pipe: %s\n", std::strerror(errno));
      return 1;
    }
    std::vector<std::string> args = o.command;
    args.insert(args.end(), {"--deployment", o.deployment, "--node", n.name});
    if (!scratch.empty()) args.insert(args.end(), {"--profile", (scratch / (n.name + ".json")).string()});
    pid_t pid = fork();
    if (pid == 0) {
      dup2(out[1], STDOUT_FILENO);
      dup2(err[1], STDERR_FILENO);
      close(out[0]);
      close(err[0]);
      close(out[1]);
      close(err[1]);
      std::signal(SIGINT, SIG_DFL);
      std::signal(SIGTERM, SIG_DFL);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execvp(argv[0], argv.data());
      std::fprintf(stderr, "cannot run `%s`: %s\n", argv[0], std::strerror(errno));
      _exit(127);
    }
    close(out[1]);
    close(err[1]);
    children.push_back({n.name, pid, out[0], err[0]});
    if (!o.json) std::fprintf(stderr, "banyan launch: node %s started (pid %d)\n", n.name.c_str(), pid);
  }

  auto started = std::chrono::steady_clock::now();
  bool stopping = false;
  std::size_t running = children.size();
  while (running > 0) {
    if (pending_signal && !stopping) {
      stopping = true;
      std::fprintf(stderr, "banyan launch: forwarding signal %d to every node\n", static_cast<int>(pending_signal));
      for (auto& c : children)
        if (!c.done) kill(c.pid, pending_signal);
    }
    if (o.timeout > 0 && !stopping &&
        std::chrono::steady_clock::now() - started > std::chrono::duration<double>(o.timeout)) {
      stopping = true;
      std::fprintf(stderr, "banyan launch: --timeout %.1fs passed; stopping every node\n", o.timeout);
      for (auto& c : children)
        if (!c.done) kill(c.pid, SIGTERM);
    }
    std::vector<pollfd> fds;
    std::vector<std::pair<child*, bool>> owners;  // (child, is_stdout)
    for (auto& c : children) {
      if (c.out >= 0) { fds.push_back({c.out, POLLIN, 0}); owners.emplace_back(&c, true); }
      if (c.err >= 0) { fds.push_back({c.err, POLLIN, 0}); owners.emplace_back(&c, false); }
    }
    if (!fds.empty()) poll(fds.data(), fds.size(), 100);
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      auto [c, is_out] = owners[i];
      char buf[65536];
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      std::string& acc = is_out ? c->out_buf : c->err_buf;
      if (n > 0) {
        acc.append(buf, static_cast<std::size_t>(n));
        flush_lines(acc, c->node, is_out ? stdout : stderr, false);
      } else {
        flush_lines(acc, c->node, is_out ? stdout : stderr, true);
        close(fds[i].fd);
        (is_out ? c->out : c->err) = -1;
      }
    }
    if (fds.empty()) usleep(20000);  // only exits left to reap
    for (auto& c : children) {
      if (c.done) continue;
      int status = 0;
      if (waitpid(c.pid, &status, WNOHANG) != c.pid) continue;
      c.done = true;
      --running;
      c.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      if (!o.json) std::fprintf(stderr, "banyan launch: node %s exited with %d\n", c.node.c_str(), c.status);
      if (c.status != 0 && !stopping) {
        stopping = true;
        std::fprintf(stderr, "banyan launch: node %s failed; stopping the others\n", c.node.c_str());
        for (auto& other : children)
          if (!other.done) kill(other.pid, SIGTERM);
      }
    }
  }
  for (auto& c : children) {
    if (c.out >= 0) close(c.out);
    if (c.err >= 0) close(c.err);
  }

  int code = 0;
  for (const auto& c : children) if (c.status != 0) code = 1;
  nlohmann::json summary = {{"deployment", o.deployment}, {"exit_code", code}, {"nodes", nlohmann::json::array()}};
  for (const auto& c : children) summary["nodes"].push_back({{"node", c.node}, {"exit_code", c.status}});
  if (!scratch.empty()) {
    std::optional<profile> merged;
    for (const auto& c : children) {
      auto p = profile::load((scratch / (c.node + ".json")).string());
      if (!p) {
        std::fprintf(stderr, "banyan launch: node %s wrote no profile: %s\n", c.node.c_str(), p.error().what().c_str());
        code = 1;
        continue;
      }
      if (!merged) merged = std::move(*p);
      else if (auto r = merged->merge(*p); !r) std::fprintf(stderr, "banyan launch: %s\n", r.error().what().c_str());
    }
    if (merged) {
      auto w = merged->write(o.profile);
      if (!w) {
        std::fprintf(stderr, "banyan launch: %s\n", w.error().what().c_str());
        code = 1;
      }
      std::uint64_t total = 0;
      for (const auto& l : merged->links) {
        summary["links"].push_back({{"from", l.from}, {"to", l.to}, {"messages", l.messages}, {"bytes", l.bytes}});
        total += l.messages;
        if (!o.json)
          std::printf("link %s -> %s: %llu messages, %llu bytes\n", l.from.c_str(), l.to.c_str(),
                      static_cast<unsigned long long>(l.messages), static_cast<unsigned long long>(l.bytes));
      }
      summary["cross_node_messages"] = total;
      summary["profile"] = o.profile;
      if (!o.json) std::printf("cross-node messages: %llu (profile: %s)\n", static_cast<unsigned long long>(total), o.profile.c_str());
    }
    std::filesystem::remove_all(scratch);
  }
  summary["exit_code"] = code;
  if (o.json) std::printf("%s\n", summary.dump(1).c_str());
  else std::fprintf(stderr, "banyan launch: %s\n", code == 0 ? "every node succeeded" : "some node failed");
  return code;
}

const bool registered = register_command({
    "launch", "Run an app as every node of a deployment on this machine",
    [](CLI::App& sub) {
      auto o = std::make_shared<options>();
      sub.add_option("deployment", o->deployment, "Deployment YAML (nodes, endpoints, assignments)")->required();
      sub.add_option("--profile", o->profile, "Merge the nodes' profiles into this JSON file");
      sub.add_option("--timeout", o->timeout, "Stop every node after this many seconds (0: no limit)");
      sub.add_flag("--json", o->json, "Print a JSON summary on stdout");
      sub.add_option("command", o->command, "-- APP ARGS...: the app binary and its arguments")->required();
      return [o] { return run(*o); };
    }});

}  // namespace
}  // namespace banyan::cli
