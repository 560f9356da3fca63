// `banyan gen-tree`: a seeded hierarchical workload (profile JSON) and a matching cluster YAML.
// The model behind the numbers is documented in docs/partitioner.md ("Generator").
#include "banyan/cli.hpp"
#include "banyan/commands.hpp"

#include "banyan/base/progress.hpp"
#include "banyan/partitioner/generator.hpp"
#include "banyan/partitioner/io.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>

namespace banyan::cli {
namespace {

namespace bp = banyan::partitioner;

constexpr const char* tool = "banyan gen-tree";

struct options {
  bp::generator_options g;
  std::string out = "profile.json", cluster_out = "cluster.yaml";
  bool json = false;
};

int run(options o) {
  if (o.g.components < 1 || o.g.components > 100000000)
    return cli::fail(tool, "--components must be between 1 and 10^8, got " + std::to_string(o.g.components),
                     exit_bad_arguments);
  banyan::progress bar("gen-tree", 3, {.unit = "steps", .summary_after = std::chrono::seconds(1)});
  const bp::tree t = bp::generate_tree(o.g);
  bar.update(1, "tree generated");
  const bp::cluster c = bp::generate_cluster(t, o.g);
  std::ofstream profile(o.out);
  if (!profile) return cli::fail(tool, o.out + ": cannot open for writing");
  bp::write_profile(profile, t);
  profile.close();
  bar.update(2, "profile written");
  std::ofstream cluster(o.cluster_out);
  if (!cluster) return cli::fail(tool, o.cluster_out + ": cannot open for writing");
  cluster << "# banyan gen-tree --components " << o.g.components << " --seed " << o.g.seed << " --nodes " << o.g.nodes
          << " --slack " << o.g.slack << "\n";
  bp::write_cluster(cluster, c);
  cluster.close();
  bar.update(3);
  std::size_t leaves = 0, depth_max = 0;
  std::vector<std::size_t> depth(t.size(), 0), kids(t.size(), 0);
  double load = 0, traffic = 0;
  for (std::size_t v = 0; v < t.size(); ++v) {
    if (v > 0) {
      depth[v] = depth[t.parent[v]] + 1;
      ++kids[t.parent[v]];
    }
    depth_max = std::max(depth_max, depth[v]);
    load += t.cpu[v];
    traffic += t.weight[v];
  }
  for (std::size_t k : kids) leaves += k == 0;
  bar.finish("cluster written");
  nlohmann::json s{{"components", t.size()}, {"leaves", leaves},         {"depth", depth_max},
                   {"total_cpu", load},      {"total_traffic", traffic}, {"nodes", c.size()},
                   {"seed", o.g.seed},       {"profile", o.out},         {"cluster", o.cluster_out}};
  if (o.json) {
    std::cout << s.dump(2) << "\n";
  } else {
    std::printf(
        "gen-tree: %zu components (%zu leaves, depth %zu), total cpu %.6g, edge traffic %.6g messages;\n"
        "          %zu nodes with slack %.2f; wrote %s and %s (seed %llu)\n",
        t.size(), leaves, depth_max, load, traffic, c.size(), o.g.slack, o.out.c_str(), o.cluster_out.c_str(),
        static_cast<unsigned long long>(o.g.seed));
  }
  return 0;
}

}  // namespace

action setup_gen_tree(CLI::App& sub) {
  auto o = std::make_shared<options>();
  auto& g = o->g;
  sub.add_option("--components,-n", g.components, "number of components (10 .. 1,000,000 typical)")
      ->capture_default_str();
  sub.add_option("--seed", g.seed, "seed; same seed and options, same files")->capture_default_str();
  sub.add_option("--nodes,-k", g.nodes, "nodes in the cluster")->capture_default_str();
  sub.add_option("--fanout", g.fanout_mean, "mean children per composite (1 + geometric)")->capture_default_str();
  auto* leaf = sub.add_option("--leaf-probability", g.leaf_fraction_depth,
                              "probability that a new component is a leaf (sets depth)")
                   ->capture_default_str();
  sub.add_option("--load-sigma", g.load_sigma, "leaf CPU load ~ lognormal(0, sigma) milliseconds")
      ->capture_default_str();
  sub.add_option("--messages", g.messages_per_leaf, "messages each leaf publishes")->capture_default_str();
  sub.add_option("--locality", g.locality, "share of flows that stay under the publisher's parent")
      ->capture_default_str();
  sub.add_flag("--memory", g.memory, "give components a memory load and nodes a memory capacity");
  sub.add_option("--slack", g.slack, "total capacity / total load")->capture_default_str();
  sub.add_option("--heterogeneity", g.heterogeneity, "node capacities vary by +-this fraction")->capture_default_str();
  auto* rack =
      sub.add_option("--rack-size", g.rack_size, "nodes per rack; link cost 1 within a rack, 4 across (0: uniform)")
          ->capture_default_str();
  sub.add_option("--root", g.root_name, "name of the root component")->capture_default_str();
  sub.add_option("--out,-o", o->out, "profile JSON to write")->capture_default_str();
  auto* cluster = sub.add_option("--cluster", o->cluster_out, "cluster YAML to write")->capture_default_str();
  sub.add_flag("--json", o->json, "print the summary as JSON on stdout");
  add_deprecated_alias(sub, leaf, "--leaf-prob", tool);
  add_deprecated_alias(sub, rack, "--rack", tool);
  add_deprecated_alias(sub, cluster, "--cluster-out", tool);
  return [o] { return run(*o); };
}

}  // namespace banyan::cli
