// What banyan::options holds: the CLI11 app, the app's option bindings and banyan's own options
// (docs/cli.md, docs/sdk.md). Private to the SDK: CLI11 never reaches a public header.
//
// banyan's options are added on the first parse, after the app's, so --help lists the app's first.
// Thread-safety: none (main() before the run).
#pragma once

#include "banyan/sdk/app.hpp"
#include "banyan/sdk/options.hpp"

#include <CLI/CLI.hpp>

#include <chrono>
#include <deque>
#include <string>

namespace banyan::detail {

struct command_line {
  explicit command_line(const std::string& app_name) : cli("banyan app " + app_name) {}

  CLI::App cli;
  std::deque<option_binding> bindings;  // a deque: option handles point into it
  bool run_options_added = false;
  // banyan's options, as parsed
  run_options run;
  std::string mode = "hier";
  std::int64_t heartbeat_ms = 1000;  // --heartbeat-timeout-ms (deprecated)
  bool warned_heartbeat_ms = false;
};

}  // namespace banyan::detail
