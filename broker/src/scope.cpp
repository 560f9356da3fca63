#include "banyan/broker/scope.hpp"

namespace banyan {

result<vertex_id> scope::resolve(const component_tree& tree, vertex_id publisher) const {
  switch (kind_) {
    case kind::root: return vertex_id{0};
    case kind::up: {
      vertex_id v = publisher;
      for (std::uint32_t i = 0; i < levels_; ++i) {
        if (v == 0)
          return error{broker::errc::invalid_scope, "scope " + describe() + " from `" + tree.path(publisher) +
                                                        "`: the publisher has only " +
                                                        std::to_string(tree.depth(publisher)) +
                                                        (tree.depth(publisher) == 1 ? " ancestor" : " ancestors")};
        v = tree.parent(v);
      }
      return v;
    }
    case kind::path: {
      auto v = tree.find(path_);
      if (!v) return error{broker::errc::invalid_scope, "scope `" + path_ + "` names no component"};
      if (!tree.contains(*v, publisher))
        return error{broker::errc::invalid_scope,
                     "scope `" + path_ + "` is not an ancestor of the publisher `" + tree.path(publisher) + "`"};
      return *v;
    }
  }
  return error{broker::errc::invalid_scope, "unknown scope kind"};
}

std::string scope::describe() const {
  switch (kind_) {
    case kind::root: return "root";
    case kind::up: return levels_ == 0 ? "self" : levels_ == 1 ? "parent" : "up(" + std::to_string(levels_) + ")";
    case kind::path: return "`" + path_ + "`";
  }
  return "?";
}

}  // namespace banyan
