// What every banyan command-line tool shares (the `banyan` subcommands and the benchmarks), so that
// they all follow docs/cli.md the same way: parse errors exit 2, old spellings warn and still work,
// durations read `250ms`, `2s`, `1.5m` or bare seconds, and the error a tool exits with reads
// `<tool>: <what is wrong, naming the input>`.
//
// Output, for every tool: results (tables, --json, --report) on stdout; the progress line
// (banyan::progress), the short final summary of a run and the error before a non-zero exit directly
// on stderr; every other line on stderr (events while running, deprecation warnings) through
// banyan::log, as `[<tool>] text`.
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>

namespace banyan::cli {

// Exit codes (docs/cli.md).
inline constexpr int exit_failed = 1;         // the work failed: a check, a solver, a node
inline constexpr int exit_bad_arguments = 2;  // bad arguments or input files

// A subcommand's work, run only when that subcommand was chosen; returns the exit code.
using action = std::function<int()>;

// One `banyan` subcommand: `setup` declares its options (and sub-subcommands) on `sub` and returns
// its action. The list of them is in tools/banyan/main.cpp.
struct command {
  const char* name;
  const char* summary;
  action (*setup)(CLI::App& sub);
};

// Parses the command line. nullopt: parsed, carry on. Otherwise the exit code, the message already
// printed: 0 after --help, 2 after any parse error (CLI11's own codes, 105..., are never returned).
std::optional<int> parse(CLI::App& app, int argc, char** argv);

// Adds `old_name` (e.g. "--timeout") to `app` as a deprecated spelling of `current`, hidden from
// --help: it takes the same values, logs `warning: --old is deprecated; use --new` for `tool`
// through banyan::log, then behaves exactly as `current` given those values.
CLI::Option* add_deprecated_alias(CLI::App& app, CLI::Option* current, const std::string& old_name,
                                  const std::string& tool);

// A DURATION option (docs/cli.md): `250ms`, `2s`, `1.5m`, `1h` or bare seconds, within [min, max];
// anything else is a parse error naming the text. The help shows the current value as the default.
CLI::Option* add_duration_option(CLI::App& app, const std::string& name, std::chrono::milliseconds& target,
                                 const std::string& description,
                                 std::chrono::milliseconds min = std::chrono::milliseconds(0),
                                 std::chrono::milliseconds max = std::chrono::milliseconds::max());

// Writes `<tool>: <what>` on stderr and returns `code`: the one way a tool reports the error it
// exits with.
int fail(const std::string& tool, const std::string& what, int code = exit_failed);

}  // namespace banyan::cli
