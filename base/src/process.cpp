#include "banyan/base/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

extern char** environ;

namespace banyan {

const char* to_string(process_errc code) {
  switch (code) {
    case process_errc::not_found: return "program not found";
    case process_errc::cannot_execute: return "cannot execute";
    case process_errc::bad_working_dir: return "bad working directory";
    case process_errc::system: return "system call failed";
    case process_errc::timeout: return "timed out";
  }
  return "unknown";
}

namespace {

using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

// What the child reports through the close-on-exec pipe when it cannot reach exec.
enum stage : int { stage_setup = 1, stage_chdir = 2, stage_exec = 3 };
struct child_failure {
  int stage;
  int err;
};

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

error system_error(const std::string& name, const char* call) {
  return error{process_errc::system, "cannot start `" + name + "`: " + call + ": " + std::strerror(errno)};
}

// Runs in the child between fork and exec: only async-signal-safe calls.
void report_and_exit(int report_fd, int stage) {
  const child_failure f{stage, errno};
  (void)!::write(report_fd, &f, sizeof f);
  ::_exit(127);
}

// The environment with `extra` set, built before fork (the child must not allocate).
std::vector<std::string> environment_with(const std::vector<std::pair<std::string, std::string>>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view entry(*e);
    bool replaced = false;
    for (const auto& [key, value] : extra) replaced |= entry.starts_with(key + "=");
    if (!replaced) env.emplace_back(entry);
  }
  for (const auto& [key, value] : extra) env.push_back(key + "=" + value);
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

int open_pidfd(int pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

exit_status decode(int status) {
  if (WIFSIGNALED(status)) return {0, WTERMSIG(status)};
  return {WEXITSTATUS(status), 0};
}

}  // namespace

result<process> process::start(std::string name, const spawn_options& o,
                               const std::function<void(int report_fd)>& in_child) {
  // Pipes are close-on-exec, so no other child inherits them; dup2 clears the flag on 1 and 2.
  int out[2] = {-1, -1}, err[2] = {-1, -1}, report[2] = {-1, -1};
  auto close_all = [&] {
    for (int* p : {out, err, report}) close_fd(p[0]), close_fd(p[1]);
  };
  if ((o.out == output_mode::capture && ::pipe2(out, O_CLOEXEC) != 0) ||
      (o.err == output_mode::capture && ::pipe2(err, O_CLOEXEC) != 0) || ::pipe2(report, O_CLOEXEC) != 0) {
    auto e = system_error(name, "pipe");
    close_all();
    return e;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    auto e = system_error(name, "fork");
    close_all();
    return e;
  }
  if (pid == 0) {
    if (o.own_process_group) (void)::setpgid(0, 0);
    // Our signal mask and ignored SIGPIPE are ours, not the child's.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    const auto redirect = [&](output_mode mode, int pipe_write, int target) {
      switch (mode) {
        case output_mode::inherit: return true;
        case output_mode::capture: return ::dup2(pipe_write, target) >= 0;
        case output_mode::merge: return ::dup2(STDOUT_FILENO, target) >= 0;
        case output_mode::discard: {
          const int null = ::open("/dev/null", O_WRONLY);
          return null >= 0 && ::dup2(null, target) >= 0 && ::close(null) == 0;
        }
      }
      return false;
    };
    if (!redirect(o.out == output_mode::merge ? output_mode::inherit : o.out, out[1], STDOUT_FILENO) ||
        !redirect(o.err, err[1], STDERR_FILENO))
      report_and_exit(report[1], stage_setup);
    if (!o.working_dir.empty() && ::chdir(o.working_dir.c_str()) != 0) report_and_exit(report[1], stage_chdir);
    in_child(report[1]);
    report_and_exit(report[1], stage_exec);
  }
  if (o.own_process_group) (void)::setpgid(pid, pid);  // also here: no race with an early signal()
  close_fd(out[1]);
  close_fd(err[1]);
  close_fd(report[1]);

  process p;
  p.name_ = std::move(name);
  p.pid_ = pid;
  p.pidfd_ = open_pidfd(pid);
  p.group_ = o.own_process_group;
  p.out_.fd = out[0];
  p.err_.fd = err[0];
  for (int fd : {p.out_.fd, p.err_.fd})
    if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);

  // The report pipe closes at exec (nothing to read) or carries why the child never got there.
  child_failure f{};
  ssize_t n;
  while ((n = ::read(report[0], &f, sizeof f)) < 0 && errno == EINTR) {
  }
  close_fd(report[0]);
  if (n == static_cast<ssize_t>(sizeof f)) {
    (void)p.wait();
    const std::string what = "cannot start `" + p.name_ + "`: ";
    switch (f.stage) {
      case stage_chdir:
        return error{process_errc::bad_working_dir,
                     what + "working directory `" + o.working_dir + "`: " + std::strerror(f.err)};
      case stage_exec:
        if (f.err == ENOENT)
          return error{process_errc::not_found,
                       what + "no such program" + (p.name_.find('/') == std::string::npos ? " on PATH" : "")};
        return error{process_errc::cannot_execute, what + std::strerror(f.err)};
      default: return error{process_errc::system, what + "setting up its output: " + std::strerror(f.err)};
    }
  }
  return p;
}

result<process> process::spawn(const std::vector<std::string>& argv, const spawn_options& o) {
  if (argv.empty() || argv[0].empty()) return error{process_errc::not_found, "cannot start a process: empty command"};
  std::vector<std::string> args = argv;
  std::vector<char*> arg_ptrs = pointers(args);
  std::vector<std::string> env = o.env.empty() ? std::vector<std::string>{} : environment_with(o.env);
  std::vector<char*> env_ptrs = pointers(env);
  char** envp = o.env.empty() ? environ : env_ptrs.data();
  return start(argv[0], o, [&](int) { ::execvpe(arg_ptrs[0], arg_ptrs.data(), envp); });
}

result<process> process::spawn_function(std::string name, std::function<int()> body, const spawn_options& o) {
  std::fflush(nullptr);  // or the child would write our pending stdio buffers a second time
  return start(std::move(name), o, [&](int report_fd) {
    ::close(report_fd);  // the parent learns that the child started
    for (const auto& [key, value] : o.env) ::setenv(key.c_str(), value.c_str(), 1);
    int code = 70;
    try {
      code = body();
    } catch (...) {
    }
    std::fflush(nullptr);
    ::_exit(code);
  });
}

process::process(process&& other) noexcept { *this = std::move(other); }

process& process::operator=(process&& other) noexcept {
  if (this != &other) {
    release();
    name_ = std::move(other.name_);
    pid_ = std::exchange(other.pid_, -1);
    pidfd_ = std::exchange(other.pidfd_, -1);
    group_ = other.group_;
    out_.fd = std::exchange(other.out_.fd, -1);
    err_.fd = std::exchange(other.err_.fd, -1);
    out_.buffer = std::move(other.out_.buffer);
    err_.buffer = std::move(other.err_.buffer);
    status_ = std::exchange(other.status_, std::nullopt);
  }
  return *this;
}

process::~process() { release(); }

void process::release() {
  if (pid_ > 0 && !status_) (void)kill();
  close_fd(out_.fd);
  close_fd(err_.fd);
  close_fd(pidfd_);
  pid_ = -1;
}

std::vector<std::string> process::take_lines(stream s) {
  pipe_end& p = s == stream::out ? out_ : err_;
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t nl; (nl = p.buffer.find('\n', start)) != std::string::npos; start = nl + 1)
    lines.push_back(p.buffer.substr(start, nl - start));
  p.buffer.erase(0, start);
  if (p.fd < 0 && !p.buffer.empty()) lines.push_back(std::exchange(p.buffer, {}));
  return lines;
}

void process::drain() {
  for (pipe_end* p : {&out_, &err_}) {
    char buf[65536];
    while (p->fd >= 0) {
      const ssize_t n = ::read(p->fd, buf, sizeof buf);
      if (n > 0) {
        p->buffer.append(buf, static_cast<std::size_t>(n));
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        close_fd(p->fd);
      } else if (errno == EAGAIN) {
        break;
      }
    }
  }
}

bool process::try_reap() {
  if (status_) return true;
  if (pid_ <= 0) return false;
  int st = 0;
  pid_t r;
  while ((r = ::waitpid(pid_, &st, WNOHANG)) < 0 && errno == EINTR) {
  }
  if (r != pid_) return false;
  drain();  // everything the child wrote is in the pipes by now
  status_ = decode(st);
  close_fd(pidfd_);
  return true;
}

bool process::wait_any(std::span<process* const> ps, milliseconds limit) {
  std::vector<pollfd> fds;
  bool without_pidfd = false;
  for (process* p : ps) {
    for (int fd : {p->out_.fd, p->err_.fd})
      if (fd >= 0) fds.push_back({fd, POLLIN, 0});
    if (!p->status_ && p->pid_ > 0) {
      if (p->pidfd_ >= 0) fds.push_back({p->pidfd_, POLLIN, 0});
      else without_pidfd = true;
    }
  }
  if (fds.empty() && !without_pidfd) return false;
  // Without pidfds (old kernels), exits are noticed by polling every 10 ms.
  const auto cap = without_pidfd ? milliseconds::rep{10} : milliseconds::rep{std::numeric_limits<int>::max()};
  const int wait_ms = static_cast<int>(std::min(limit.count(), cap));
  // A signal caught meanwhile ends the wait early (EINTR), so callers can look at their flags.
  const int ready = ::poll(fds.data(), fds.size(), std::max(wait_ms, 0));
  bool happened = ready > 0;
  for (process* p : ps) {
    const bool had_out = p->out_.fd >= 0, had_err = p->err_.fd >= 0;
    const auto before = p->out_.buffer.size() + p->err_.buffer.size();
    if (ready > 0) p->drain();
    const bool reaped_now = !p->status_ && p->try_reap();
    happened |= reaped_now || before != p->out_.buffer.size() + p->err_.buffer.size() || had_out != (p->out_.fd >= 0) ||
                had_err != (p->err_.fd >= 0);
  }
  return happened;
}

bool process::read(milliseconds limit) {
  process* self = this;
  return wait_any(std::span<process* const>(&self, 1), limit);
}

result<exit_status> process::wait(std::optional<milliseconds> limit) {
  const auto deadline = limit ? clock_type::now() + *limit : clock_type::time_point::max();
  while (!try_reap()) {
    if (pid_ <= 0) return error{process_errc::system, "`" + name_ + "`: no child to wait for"};
    const auto left =
        limit ? std::chrono::duration_cast<milliseconds>(deadline - clock_type::now()) : milliseconds(60000);
    if (left.count() <= 0) {
      return error{process_errc::timeout,
                   "`" + name_ + "` still running after " + std::to_string(limit->count()) + " ms"};
    }
    (void)read(left);
  }
  return *status_;
}

void process::signal(int sig) {
  if (pid_ <= 0 || status_) return;
  ::kill(group_ ? -pid_ : pid_, sig);
}

exit_status process::kill() {
  if (status_ || pid_ <= 0) return status_.value_or(exit_status{});
  signal(SIGKILL);
  int st = 0;
  while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
  }
  drain();
  status_ = decode(st);
  close_fd(pidfd_);
  return *status_;
}

result<run_output> run_process(const std::vector<std::string>& argv, spawn_options options,
                               std::optional<std::chrono::milliseconds> limit) {
  auto p = process::spawn(argv, options);
  if (!p) return std::move(p).error();
  auto st = p->wait(limit);
  if (!st) {
    p->kill();
    return std::move(st).error();
  }
  return run_output{*st, p->output(process::stream::out), p->output(process::stream::err)};
}

}  // namespace banyan
