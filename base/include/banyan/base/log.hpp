// The run's log: one seam every module writes through, so tests can capture it and untrusted text
// (peer ids, topics, file contents) can never forge or cut lines.
//
// A line is `[component] text` (warnings and errors say so: `[runtime] warning: ...`), written whole
// to the sink; the default sink is stderr. Text is escaped before it reaches the sink: control bytes,
// newlines and NUL become `\n`, `\x00`, ... so one call is always exactly one line.
//
// Thread-safety: every function may be called from any thread; a sink is called under a lock, one
// line at a time. set_sink/capture are meant for tests and tools, not for hot paths.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace banyan::log {

enum class level { debug, info, warning, error };

const char* to_string(level l);

// Writes one line for `component` (a module name such as "runtime", or a component path).
void write(level l, std::string_view component, std::string_view text);
inline void debug(std::string_view component, std::string_view text) { write(level::debug, component, text); }
inline void info(std::string_view component, std::string_view text) { write(level::info, component, text); }
inline void warning(std::string_view component, std::string_view text) { write(level::warning, component, text); }
inline void error(std::string_view component, std::string_view text) { write(level::error, component, text); }

// Lines below `l` are dropped (default: info; BANYAN_LOG=debug|info|warning|error sets it at start).
void set_threshold(level l);
level threshold();

// The rule for a line that may repeat without bound (a peer sending malformed frames): whether its
// `n`-th occurrence (from 1) is written. The first 10 are, then every power of ten (100, 1000, ...),
// so a flood cannot drown the log and the count the line carries says how many there were.
bool worth_logging(std::uint64_t n);

// Returns `untrusted` with every byte outside printable ASCII (and the backslash) written as an escape:
// `\n`, `\t`, `\\`, `\xNN`. Length is capped at `max_bytes` (then `...(N bytes)`), so a 10 MB token
// never floods a log or an error message.
std::string escape(std::string_view untrusted, std::size_t max_bytes = 256);

// Receives each formatted line (without the trailing newline), already escaped.
using sink = std::function<void(level, std::string_view component, std::string_view line)>;
// Replaces the sink (an empty one restores stderr); returns the previous one.
sink set_sink(sink s);

// Collects every line written while it lives (and still forwards nothing to stderr). For tests.
class capture {
 public:
  capture();
  ~capture();
  capture(const capture&) = delete;
  capture& operator=(const capture&) = delete;

  // Every line so far, formatted as the default sink writes them.
  std::vector<std::string> lines() const;
  bool contains(std::string_view fragment) const;

 private:
  struct state;
  state* state_;
  sink previous_;
};

}  // namespace banyan::log
