#include "locality.hpp"

namespace banyan::detail {

std::vector<vertex_id> locality::roots(const component_tree& tree) const {
  std::vector<vertex_id> out;
  for (vertex_id v = 0; v < tree.size(); ++v)
    if (is_local(v) && (v == 0 || !is_local(tree.parent(v)))) out.push_back(v);
  return out;
}

}  // namespace banyan::detail
