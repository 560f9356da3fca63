// Which components run in this process. Private to the SDK.
//
// A single-process run hosts everything. A node of a deployment hosts the components assigned to
// it (deployment.hpp); its roots are the components whose parent runs elsewhere (or the tree's
// root), and each is started and supervised here.
//
// Thread-safety: a value, set before any actor starts and read-only afterwards (any thread).
#pragma once

#include "banyan/broker/placement.hpp"
#include "banyan/broker/tree.hpp"

#include <vector>

namespace banyan::detail {

class locality {
 public:
  locality() = default;  // everything here
  locality(std::vector<node_id> node_of, node_id self) : node_of_(std::move(node_of)), self_(self) {}

  bool multi_node() const { return !node_of_.empty(); }
  bool is_local(vertex_id v) const { return node_of_.empty() || node_of_[v] == self_; }
  const std::vector<node_id>& node_of() const { return node_of_; }  // empty in a single process
  node_id self() const { return self_; }
  // The components this process starts itself, ascending.
  std::vector<vertex_id> roots(const component_tree& tree) const;

 private:
  std::vector<node_id> node_of_;  // per vertex
  node_id self_ = 0;
};

}  // namespace banyan::detail
