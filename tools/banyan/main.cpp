// `banyan`: the command-line tool. Every subcommand is listed here; a subcommand whose library is
// not part of this build (BANYAN_ONLY) is left out: tools/CMakeLists.txt defines BANYAN_CLI_<GROUP>
// for each group of commands it compiles (see banyan_cli_command).
#include "banyan/cli.hpp"
#include "banyan/commands.hpp"

#include <map>
#include <vector>

namespace {

const std::vector<banyan::cli::command>& commands() {
  static const std::vector<banyan::cli::command> all = {
#ifdef BANYAN_CLI_PARTITIONER
      {"gen-tree", "Generate a seeded hierarchical workload (profile) and a matching cluster",
       banyan::cli::setup_gen_tree},
#endif
#ifdef BANYAN_CLI_RUNTIME
      {"keygen", "Make a CURVE key pair for a node (NAME.key secret, NAME.pub public)", banyan::cli::setup_keygen},
#endif
#ifdef BANYAN_CLI_LAUNCH
      {"launch", "Run an app as every node of a deployment on this machine", banyan::cli::setup_launch},
      {"profile", "Ask a running launch of a deployment for its merged live profile", banyan::cli::setup_profile},
      {"reconfigure", "Move subtrees of a running launch to a new deployment, live", banyan::cli::setup_reconfigure},
      {"status", "The state of a running launch's nodes (started, starting, ended)", banyan::cli::setup_status},
      {"sleep", "Put a subtree of a running launch to sleep (its state kept, its capacity freed)",
       banyan::cli::setup_sleep},
      {"wake", "Wake a sleeping subtree of a running launch, where it sleeps or on another node",
       banyan::cli::setup_wake},
#endif
#ifdef BANYAN_CLI_PARTITIONER
      {"partition", "Map a traffic profile onto a cluster and write a deployment", banyan::cli::setup_partition},
      {"plan", "Plan when periodic subtrees are awake and where (a reliability target per workflow)",
       banyan::cli::setup_plan},
#endif
#ifdef BANYAN_CLI_PIPELINE
      {"pipeline", "Pipeline schedules: show, validate, simulate and search (DSL programs and torch CSV tables)",
       banyan::cli::setup_pipeline},
#endif
  };
  return all;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"banyan: actor-model middleware SDK tools (partition, launch, profile, gen-tree, keygen, pipeline, ...)",
               "banyan"};
  app.require_subcommand(1);
  std::map<CLI::App*, banyan::cli::action> actions;
  for (const auto& cmd : commands()) {
    CLI::App* sub = app.add_subcommand(cmd.name, cmd.summary);
    actions[sub] = cmd.setup(*sub);
  }
  if (auto code = banyan::cli::parse(app, argc, argv)) return *code;
  for (auto& [sub, act] : actions) {
    if (sub->parsed()) return act();
  }
  return banyan::cli::exit_bad_arguments;
}
