// The component tree as the broker sees it: vertices with paths, parents and depths, plus the
// Euler-tour intervals that answer "is A an ancestor of B" in O(1).
//
// A value: built once per application run and immutable afterwards, so any number of threads may read
// it. Vertex 0 is the root; a vertex's parent always has a smaller index. The tree edge of a vertex v
// (v != 0) is the edge v—parent(v) and is identified by v itself.
#pragma once

#include "banyan/broker/error.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace banyan {

using vertex_id = std::uint32_t;
inline constexpr vertex_id no_vertex = ~vertex_id{0};

class component_tree {
 public:
  // A tree with only a root named `root_name` (path `/root_name`).
  explicit component_tree(std::string_view root_name);

  // Adds a child named `name` under `parent`; names must be unique among siblings and must not contain
  // `/`. Returns the new vertex, or an error naming the path. Invalidates nothing already returned.
  result<vertex_id> add(vertex_id parent, std::string_view name);

  std::size_t size() const { return parent_.size(); }
  vertex_id parent(vertex_id v) const { return parent_[v]; }
  std::uint32_t depth(vertex_id v) const { return depth_[v]; }
  const std::string& path(vertex_id v) const { return path_[v]; }
  const std::vector<vertex_id>& children(vertex_id v) const { return children_[v]; }

  // The vertex at an absolute path (`/chip/alu`), or an error naming the path.
  result<vertex_id> find(std::string_view path) const;

  // True when a is b or an ancestor of b.
  bool contains(vertex_id a, vertex_id b) const { return enter_[a] <= enter_[b] && leave_[b] <= leave_[a]; }
  vertex_id lca(vertex_id a, vertex_id b) const;
  // The edges (child vertices) of the Steiner tree of `from` and `to`: the union of the paths
  // from→t for every t, each edge once, in no particular order.
  std::vector<vertex_id> steiner_edges(vertex_id from, const std::vector<vertex_id>& to) const;

  // Numbers the tree for contains(). Call after the last add() and before concurrent use.
  void freeze() const {
    if (!numbered_) renumber();
  }

 private:
  void renumber() const;

  std::vector<vertex_id> parent_;
  std::vector<std::uint32_t> depth_;
  std::vector<std::string> path_;
  std::vector<std::vector<vertex_id>> children_;
  std::unordered_map<std::string, vertex_id> by_path_;
  // Euler-tour entry/exit times; recomputed lazily after add().
  mutable std::vector<std::uint32_t> enter_, leave_;
  mutable bool numbered_ = false;
};

}  // namespace banyan
