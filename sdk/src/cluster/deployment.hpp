// A deployment file resolved against this app's tree and this node's name: what a node needs to
// join the others. Private to the SDK.
//
// The file's format and its checks belong to the partitioner's reader (partitioner/io.hpp,
// docs/formats.md); this adds the checks that need the app and the node: every assignment names a
// component of this app, `--node` is a node of the deployment, and this node's key files (when the
// deployment uses CURVE) hold keys. Errors name the file and line.
#pragma once

#include "banyan/base/result.hpp"
#include "banyan/broker/placement.hpp"
#include "banyan/broker/tree.hpp"
#include "banyan/partitioner/model.hpp"
#include "banyan/sdk/app.hpp"

#include <string>
#include <vector>

namespace banyan::detail {

struct resolved_deployment {
  std::vector<std::string> names;  // node names, deployment order (index = node_id)
  std::vector<std::string> endpoints;
  std::vector<std::string> curve_public, curve_secret;  // per node, Z85; empty: no CURVE (secret: ours only)
  std::vector<node_id> node_of;                         // per vertex of the app's tree
  std::vector<bool> late;        // per node: `join: later` (the others do not wait for it at start)
  partitioner::cluster cluster;  // the nodes' capacities and link costs (a failover's placement)
  std::vector<double> load_of;   // per vertex: the `loads:` of the assignment it roots (0: none)
  node_id self = 0;
};

// The launcher variables that give this process's rank, in the order they are read: Open MPI's
// mpirun, MPICH/Hydra and PMI launchers, Slurm's srun. Rank i runs the i-th node of the deployment.
inline constexpr const char* launcher_rank_variables[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};
// The node name for this process from the first launcher variable set; an error naming the variable
// when it is not a rank of `names` (or none is set).
result<std::string> node_from_launcher(const std::string& path, const std::vector<std::string>& names);

// Where --profile writes: `{node}` in run_options::profile_path becomes this process's node (from
// --node or the launcher's rank), so that every rank of a launcher, given the same arguments, writes
// its own file.
std::string profile_path_of(const run_options& options);

// `self` empty: the node comes from the launcher's rank (node_from_launcher).
// `insecure`: endpoints other machines can reach are allowed without CURVE keys (--insecure).
result<resolved_deployment> resolve_deployment(const std::string& path, const std::string& self,
                                               const component_tree& tree, bool insecure = false);

}  // namespace banyan::detail
