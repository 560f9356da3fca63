#include "locality.hpp"

#include <utility>

namespace banyan::detail {

locality::locality(std::vector<node_id> node_of, node_id self)
    : asleep_(std::make_unique<std::atomic<bool>[]>(node_of.size())),
      asleep_size_(node_of.size()),
      self_(self),
      multi_(!node_of.empty()) {
  snapshots_.front() = std::move(node_of);
}

locality& locality::operator=(locality&& other) noexcept {
  snapshots_ = std::move(other.snapshots_);
  current_.store(&snapshots_.back(), std::memory_order_release);
  version_.store(other.version_.load() + 1, std::memory_order_release);
  asleep_ = std::move(other.asleep_);
  asleep_size_ = std::exchange(other.asleep_size_, 0);
  self_ = other.self_;
  multi_ = other.multi_;
  return *this;
}

std::vector<vertex_id> locality::roots(const component_tree& tree) const {
  std::vector<vertex_id> out;
  for (vertex_id v = 0; v < tree.size(); ++v)
    if (is_local(v) && (v == 0 || !is_local(tree.parent(v)))) out.push_back(v);
  return out;
}

void locality::move(const component_tree& tree, vertex_id v, node_id to) {
  std::vector<node_id> next = node_of();
  std::vector<vertex_id> stack{v};
  while (!stack.empty()) {
    const vertex_id u = stack.back();
    stack.pop_back();
    next[u] = to;
    for (auto c : tree.children(u)) stack.push_back(c);
  }
  assign(std::move(next));
}

void locality::sleep(const component_tree& tree, vertex_id v, bool asleep) {
  std::vector<vertex_id> stack{v};
  while (!stack.empty()) {
    const vertex_id u = stack.back();
    stack.pop_back();
    if (u < asleep_size_) asleep_[u].store(asleep, std::memory_order_release);
    for (auto c : tree.children(u)) stack.push_back(c);
  }
  version_.fetch_add(1, std::memory_order_acq_rel);
}

void locality::assign(std::vector<node_id> next) {
  snapshots_.push_back(std::move(next));  // a deque: earlier snapshots stay where they are
  current_.store(&snapshots_.back(), std::memory_order_release);
  version_.fetch_add(1, std::memory_order_acq_rel);
}

}  // namespace banyan::detail
