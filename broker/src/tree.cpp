#include "banyan/broker/tree.hpp"

#include <unordered_set>

namespace banyan {

component_tree::component_tree(std::string_view root_name) {
  parent_.push_back(no_vertex);
  depth_.push_back(0);
  path_.push_back("/" + std::string(root_name));
  children_.emplace_back();
  by_path_.emplace(path_.back(), 0);
}

result<vertex_id> component_tree::add(vertex_id parent, std::string_view name) {
  if (parent >= size()) return error{broker::errc::no_such_component, "parent vertex out of range"};
  std::string path = path_[parent] + "/" + std::string(name);
  if (name.empty() || name.find('/') != std::string_view::npos)
    return error{broker::errc::invalid_argument, "component `" + path + "`: a name is one non-empty level"};
  if (by_path_.count(path)) return error{broker::errc::invalid_argument, "component `" + path + "` already exists"};
  auto v = static_cast<vertex_id>(size());
  parent_.push_back(parent);
  depth_.push_back(depth_[parent] + 1);
  path_.push_back(path);
  children_.emplace_back();
  children_[parent].push_back(v);
  by_path_.emplace(std::move(path), v);
  numbered_ = false;
  return v;
}

result<vertex_id> component_tree::find(std::string_view path) const {
  auto it = by_path_.find(std::string(path));
  if (it == by_path_.end())
    return error{broker::errc::no_such_component, "path `" + std::string(path) + "` names no component"};
  return it->second;
}

vertex_id component_tree::lca(vertex_id a, vertex_id b) const {
  while (depth_[a] > depth_[b]) a = parent_[a];
  while (depth_[b] > depth_[a]) b = parent_[b];
  while (a != b) {
    a = parent_[a];
    b = parent_[b];
  }
  return a;
}

std::vector<vertex_id> component_tree::steiner_edges(vertex_id from, const std::vector<vertex_id>& to) const {
  // Walking up from a target may stop at an edge already taken: everything above it up to the same
  // lowest common ancestor is taken too.
  std::unordered_set<vertex_id> taken;
  vertex_id top = from;
  for (auto t : to) {
    vertex_id meet = lca(from, t);
    if (depth_[meet] < depth_[top]) top = meet;
    for (vertex_id v = t; v != meet && taken.insert(v).second; v = parent_[v]) {
    }
  }
  for (vertex_id v = from; v != top; v = parent_[v]) taken.insert(v);
  return {taken.begin(), taken.end()};
}

void component_tree::renumber() const {
  enter_.assign(size(), 0);
  leave_.assign(size(), 0);
  std::uint32_t clock = 0;
  // Iterative DFS: trees may be deep (a chain of 10^5 components must not overflow the stack).
  std::vector<std::pair<vertex_id, std::size_t>> stack{{0, 0}};
  enter_[0] = clock++;
  while (!stack.empty()) {
    auto& [v, next] = stack.back();
    if (next < children_[v].size()) {
      vertex_id c = children_[v][next++];
      enter_[c] = clock++;
      stack.emplace_back(c, 0);
    } else {
      leave_[v] = clock++;
      stack.pop_back();
    }
  }
  numbered_ = true;
}

}  // namespace banyan
