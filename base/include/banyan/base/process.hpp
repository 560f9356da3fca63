// Child processes: the one seam for fork/exec in banyan (the CLI's `launch`, the EDA flow's yosys and
// Icarus, benchmarks, multi-process tests).
//
// A `process` is a resource: move-only. Its destructor SIGKILLs a child that has not been reaped yet
// (its whole group with `own_process_group`), reaps it and closes the pipes, so no child or zombie
// outlives its owner; to let a child finish, wait() for it first.
//
// Output: stdout and stderr are each inherited, captured through a pipe, merged (stderr only: into
// stdout's pipe, or wherever stdout goes) or discarded. Captured bytes collect in the process's
// buffers as read()/wait()/wait_any() read them. A pipe nobody reads fills (64 KiB) and blocks the
// child: whoever captures keeps reading (wait() does).
//
// Waiting never busy-waits: one poll() covers the pipes and a pidfd of each child, so a call returns
// as soon as output arrives or a child exits (reaped at once, its status kept), or when the time
// limit passes.
//
// Thread-safety: none; one thread owns a process. spawn() may be called from any thread: the child
// runs only async-signal-safe calls between fork and exec. spawn_function() does not exec, so it is
// only safe while the calling process has a single thread (fork copies the calling thread alone).
//
// Errors: spawn() reports a missing program (`not_found`), one that cannot run (`cannot_execute`), a
// missing working directory (`bad_working_dir`) and failing system calls (`system`), naming the
// program; wait() past its limit reports `timeout` and leaves the child running.
#pragma once

#include "banyan/base/result.hpp"

#include <chrono>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace banyan {

enum class process_errc { not_found, cannot_execute, bad_working_dir, system, timeout };
const char* to_string(process_errc code);

}  // namespace banyan

BANYAN_ERROR_ENUM(banyan::process_errc, "process");

namespace banyan {

enum class output_mode {
  inherit,  // the child writes where we write
  capture,  // through a pipe into the process's buffer
  merge,    // stderr only: into the same place as stdout (its pipe when captured)
  discard,  // /dev/null
};

struct spawn_options {
  // Set in the child's environment (added, or replacing an inherited value).
  std::vector<std::pair<std::string, std::string>> env;
  std::string working_dir;  // empty: ours
  output_mode out = output_mode::inherit;
  output_mode err = output_mode::inherit;
  // The child leads a new process group, and signal()/kill()/the destructor reach the whole group
  // (e.g. everything a `sh -c` started).
  bool own_process_group = false;
};

// How a child ended: exited with `code`, or killed by `signal`.
struct exit_status {
  int code = 0;
  int signal = 0;  // 0 when it exited

  bool success() const { return signal == 0 && code == 0; }
  // The shell's number: the exit code, or 128 + the signal.
  int shell_code() const { return signal != 0 ? 128 + signal : code; }
  friend bool operator==(const exit_status&, const exit_status&) = default;
};

class process {
 public:
  enum class stream { out, err };

  // Starts argv[0] (looked up on PATH when it has no `/`) with argv[1..]; no shell, no quoting.
  static result<process> spawn(const std::vector<std::string>& argv, const spawn_options& options = {});
  // Runs `body` in a forked child without exec; its return value is the exit code. `name` names the
  // child in messages. Single-threaded callers only (see above).
  static result<process> spawn_function(std::string name, std::function<int()> body, const spawn_options& options = {});

  process(process&& other) noexcept;
  process& operator=(process&& other) noexcept;
  process(const process&) = delete;
  process& operator=(const process&) = delete;
  ~process();

  int pid() const { return pid_; }
  const std::string& name() const { return name_; }
  // Known once the child has been reaped (by read, wait, wait_any or kill).
  const std::optional<exit_status>& status() const { return status_; }

  // Output captured so far and not taken (stderr's is empty when merged or not captured).
  const std::string& output(stream s = stream::out) const { return s == stream::out ? out_.buffer : err_.buffer; }
  // Takes the complete lines captured so far (without '\n'); once the stream has closed, the last
  // unterminated line too.
  std::vector<std::string> take_lines(stream s = stream::out);
  // True once the stream's pipe has closed (or when it was never captured).
  bool closed(stream s = stream::out) const { return (s == stream::out ? out_ : err_).fd < 0; }

  // Waits until output arrives, a pipe closes or the child exits, at most `limit`; false when nothing
  // happened in that time or nothing is left to wait for. A signal handled meanwhile (EINTR) ends
  // the wait early, so a caller with a signal handler can look at its flag.
  bool read(std::chrono::milliseconds limit);
  // The same over several processes at once.
  static bool wait_any(std::span<process* const> processes, std::chrono::milliseconds limit);

  // Reads captured output until the child exits, then reaps it. With a limit, a child still running
  // then is an error (`timeout`) and keeps running.
  result<exit_status> wait(std::optional<std::chrono::milliseconds> limit = std::nullopt);
  // Sends `sig` (to the group with own_process_group); nothing once reaped.
  void signal(int sig);
  // SIGKILL, then reap; the status (already known if reaped before).
  exit_status kill();

 private:
  struct pipe_end {
    int fd = -1;
    std::string buffer;
  };
  process() = default;
  static result<process> start(std::string name, const spawn_options& options,
                               const std::function<void(int report_fd)>& in_child);
  // Reads what the pipes hold now without blocking; closes a pipe at end of file.
  void drain();
  // Reaps the child if it has exited; true when the status is known.
  bool try_reap();
  void release();

  std::string name_;
  int pid_ = -1;
  int pidfd_ = -1;  // readable when the child exits; -1 where the kernel has no pidfd (then polled)
  bool group_ = false;
  pipe_end out_, err_;
  std::optional<exit_status> status_;
};

// Everything a finished child printed, and how it ended.
struct run_output {
  exit_status status;
  std::string out, err;
};

// Spawns argv with both streams captured (unless `options` says otherwise), waits, and returns the
// output. With `limit`, a child still running then is killed and the result is `timeout`.
result<run_output> run_process(const std::vector<std::string>& argv,
                               spawn_options options = {.out = output_mode::capture, .err = output_mode::capture},
                               std::optional<std::chrono::milliseconds> limit = std::nullopt);

}  // namespace banyan
