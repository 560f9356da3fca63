// The setup functions of the `banyan` subcommands (see banyan::cli::command), one per source file;
// tools/banyan/main.cpp lists those that are part of this build.
#pragma once

#include "banyan/cli.hpp"

namespace banyan::cli {

action setup_gen_tree(CLI::App& sub);     // gen_tree_command.cpp
action setup_partition(CLI::App& sub);    // partition_command.cpp
action setup_plan(CLI::App& sub);         // plan_command.cpp
action setup_pipeline(CLI::App& sub);     // pipeline_command.cpp
action setup_keygen(CLI::App& sub);       // keygen_command.cpp
action setup_launch(CLI::App& sub);       // launch_command.cpp
action setup_profile(CLI::App& sub);      // profile_command.cpp
action setup_reconfigure(CLI::App& sub);  // reconfigure_command.cpp
action setup_status(CLI::App& sub);       // status_command.cpp
action setup_sleep(CLI::App& sub);        // hibernate_command.cpp
action setup_wake(CLI::App& sub);         // hibernate_command.cpp

}  // namespace banyan::cli
