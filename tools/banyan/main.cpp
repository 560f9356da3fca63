// `banyan`: the command-line tool. Subcommands register themselves; see command.hpp.
#include "banyan/command.hpp"

#include <iostream>
#include <map>

int main(int argc, char** argv) {
  CLI::App app{"banyan: actor-model middleware SDK tools (partition, launch, profile, pipeline, ...)",
               "banyan"};
  app.require_subcommand(1);
  std::map<CLI::App*, banyan::cli::action> actions;
  for (const auto& cmd : banyan::cli::commands()) {
    CLI::App* sub = app.add_subcommand(cmd.name, cmd.summary);
    actions[sub] = cmd.setup(*sub);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (auto& [sub, act] : actions) {
    if (sub->parsed()) return act();
  }
  return 2;
}
