#include "run_state.hpp"

#include "actor_protocol.hpp"
#include "cluster/node.hpp"

#include "banyan/base/log.hpp"

#include <stdexcept>

namespace banyan::detail {

namespace {

std::shared_ptr<component_tree> make_tree(const spec& root) {
  auto tree = std::make_shared<component_tree>(root.name());
  // Depth-first keeps a subtree's vertices contiguous.
  std::vector<std::pair<const spec*, vertex_id>> stack{{&root, 0}};
  while (!stack.empty()) {
    auto [s, v] = stack.back();
    stack.pop_back();
    std::vector<std::pair<const spec*, vertex_id>> kids;
    for (const auto& child : s->children()) {
      auto c = tree->add(v, child.name());
      if (!c) throw std::invalid_argument(c.error().what());
      kids.emplace_back(&child, *c);
    }
    for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.push_back(*it);
  }
  tree->freeze();
  return tree;
}

void add_specs(const component_tree& tree, std::vector<const spec*>& specs, const spec& s, vertex_id v) {
  specs[v] = &s;
  const auto& kids = tree.children(v);
  std::size_t i = 0;
  for (const auto& child : s.children()) add_specs(tree, specs, child, kids[i++]);
}

}  // namespace

run_state::run_state(const app& application, const run_options& options)
    : tree_(make_tree(application.root())),
      specs_(tree_->size(), nullptr),
      options_(options),
      routing_(tree_, options.mode),
      loads_(tree_->size()),
      actors_(tree_->size()),
      flow_(tree_->size()) {
  add_specs(*tree_, specs_, application.root(), 0);
}

void run_state::set_actor(vertex_id v, caf::actor a) {
  std::lock_guard lock(set_actor_mutex_);
  if (a && actors_.get(v) == a) return;
  actors_.set(v, std::move(a));
  flow_.reset(v);  // what was queued for the old incarnation is gone with it
}

void run_state::forget_subtree(vertex_id v, bool lost) {
  if (is_local(v)) {
    for (auto id : routing_.unsubscribe_all(v))
      if (node_) node_->broadcast_unsubscribe(id);
  } else if (lost) {
    routing_.unsubscribe_all(v);
  }
  for (auto c : tree_->children(v)) forget_subtree(c, lost);
}

void run_state::tell_watchers(vertex_id v, const std::string& why) {
  if (node_ && !cluster_ready()) watching_.add_early_end(v, why);
  for (const auto& [watcher, id] : watching_.of(v)) {
    if (auto w = caf::actor_cast<caf::actor>(watcher)) caf::anon_send(w, mondown_atom::value, id, tree_->path(v), why);
  }
  if (node_)
    for (const auto& w : watching_.remote_of(v)) node_->send_down(v, w.node, w.watcher, w.id, why);
}

void run_state::set_node(node_runtime* node, locality where) {
  node_ = node;
  routing_.set_origin(where.self());  // subscription ids stay unique across the nodes' replicas
  where_ = std::move(where);
  cluster_ready_ = node == nullptr;
}

void run_state::set_cluster_ready() {
  if (frozen()) return;  // thaw() releases it
  if (cluster_ready_.exchange(true, std::memory_order_acq_rel)) return;
  if (!said_ready_.exchange(true)) {
    log::info(tree_->path(0), "every node is ready");
    if (node_) node_->started();
  }
  for (const auto& a : actors_.running()) caf::anon_send(a, ready_atom::value);
}

void run_state::freeze() {
  frozen_.store(true, std::memory_order_release);
  cluster_ready_.store(false, std::memory_order_release);
}

void run_state::thaw() {
  frozen_.store(false, std::memory_order_release);
  set_cluster_ready();
}

}  // namespace banyan::detail
