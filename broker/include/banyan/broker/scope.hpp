// A scope bounds a publish: the message reaches matching subscribers inside the scope's subtree and
// nothing outside it. Every scope names the publisher itself or one of its ancestors.
#pragma once

#include "banyan/broker/error.hpp"
#include "banyan/broker/tree.hpp"

#include <string>

namespace banyan {

class scope {
 public:
  static scope self() { return scope(kind::up, 0, {}); }
  static scope parent() { return scope(kind::up, 1, {}); }
  // The n-th ancestor (0 = self, 1 = parent, ...).
  static scope up(std::uint32_t levels) { return scope(kind::up, levels, {}); }
  static scope root() { return scope(kind::root, 0, {}); }
  // An ancestor (or the publisher itself) named by absolute path.
  static scope at(std::string path) { return scope(kind::path, 0, std::move(path)); }

  // The scope's vertex for a publish from `publisher`, or an error when it names no component or a
  // component that is not an ancestor of the publisher (the message says which).
  result<vertex_id> resolve(const component_tree& tree, vertex_id publisher) const;

  std::string describe() const;
  friend bool operator==(const scope&, const scope&) = default;

 private:
  enum class kind { up, root, path };
  scope(kind k, std::uint32_t levels, std::string path) : kind_(k), levels_(levels), path_(std::move(path)) {}

  kind kind_;
  std::uint32_t levels_;
  std::string path_;
};

}  // namespace banyan
