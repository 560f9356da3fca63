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

#include <string>
#include <vector>

namespace banyan::detail {

struct resolved_deployment {
  std::vector<std::string> names;  // node names, deployment order (index = node_id)
  std::vector<std::string> endpoints;
  std::vector<std::string> curve_public, curve_secret;  // per node, Z85; empty: no CURVE (secret: ours only)
  std::vector<node_id> node_of;    // per vertex of the app's tree
  node_id self = 0;
};

result<resolved_deployment> resolve_deployment(const std::string& path, const std::string& self,
                                               const component_tree& tree);

}  // namespace banyan::detail
