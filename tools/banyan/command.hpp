// The `banyan` CLI is one executable whose subcommands live in their own translation units and
// register themselves at static-initialisation time:
//
//   static const bool registered = banyan::cli::register_command({
//       "partition", "Map a profile onto a cluster",
//       [](CLI::App& sub) {
//         auto opts = std::make_shared<options>();
//         sub.add_option("profile", opts->profile)->required();
//         return [opts] { return run_partition(*opts); };   // returns the exit code
//       }});
//
// Contract: `setup` only declares options; the returned action runs only when that subcommand was
// chosen. Actions return a process exit code (0 success, 1 failure, 2 bad usage) and report errors
// on stderr as `banyan <name>: <what is wrong, naming the input>`.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace banyan::cli {

using action = std::function<int()>;

struct command {
  std::string name;
  std::string summary;
  std::function<action(CLI::App& sub)> setup;
};

// Registers a subcommand; returns true so it can initialise a static. Names must be unique.
bool register_command(command c);

// All registered subcommands, sorted by name.
const std::vector<command>& commands();

}  // namespace banyan::cli
