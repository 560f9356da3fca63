#include "run_state.hpp"

#include "node.hpp"

#include <cstdio>

namespace banyan::detail {

namespace {
std::shared_ptr<component_tree> make_tree(const spec& root) {
  auto tree = std::make_shared<component_tree>(root.name());
  // Breadth-first is not required; depth-first keeps a subtree's vertices contiguous.
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
}  // namespace

run_state::run_state(const app& application, const run_options& options)
    : tree_(make_tree(application.root())),
      specs_(tree_->size(), nullptr),
      options_(options),
      routing_(tree_, options.mode),
      loads_(tree_->size()),
      actors_(tree_->size()),
      backlog_(new std::atomic<std::int64_t>[tree_->size()]) {
  for (vertex_id v = 0; v < tree_->size(); ++v) backlog_[v] = 0;
  add_specs(application.root(), 0);
}

void run_state::add_specs(const spec& s, vertex_id v) {
  specs_[v] = &s;
  const auto& kids = tree_->children(v);
  std::size_t i = 0;
  for (const auto& child : s.children()) add_specs(child, kids[i++]);
}

void run_state::set_actor(vertex_id v, caf::actor a) {
  {
    std::lock_guard lock(directory_mutex_);
    actors_[v] = std::move(a);
    directory_version_.fetch_add(1, std::memory_order_acq_rel);
  }
  // A new incarnation (or none) starts with no backlog: what was queued for the old one is gone.
  backlog_[v] = 0;
  resume_drained(v);
}

void resume_list::add(std::uint32_t key, caf::actor who) {
  {
    std::lock_guard lock(mutex_);
    if (!closed_) {
      waiters_.emplace_back(key, std::move(who));
      return;
    }
  }
  caf::anon_send(who, resume_atom::value);
}

void resume_list::resume(bool all, std::uint32_t key) {
  std::vector<caf::actor> wake;
  {
    std::lock_guard lock(mutex_);
    std::erase_if(waiters_, [&](auto& w) {
      if (!all && w.first != key) return false;
      wake.push_back(std::move(w.second));
      return true;
    });
  }
  for (auto& a : wake) caf::anon_send(a, resume_atom::value);
}

void resume_list::close() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  resume(true, 0);
}

void run_state::resume_when_drained(vertex_id v, caf::actor who) {
  drain_waiters_.add(v, std::move(who));
  // It may have drained between the publisher's check and now (the same low-water mark as handled()).
  if (backlog_[v].load(std::memory_order_acquire) <= backlog_limit / 2) resume_drained(v);
}

void run_state::resume_drained(vertex_id v) { drain_waiters_.release(v); }

caf::actor run_state::actor_of(vertex_id v) {
  std::lock_guard lock(directory_mutex_);
  return actors_[v];
}

void run_state::log(std::string_view path, std::string_view line) {
  std::lock_guard lock(log_mutex_);
  std::fprintf(stderr, "[banyan] %.*s: %.*s\n", static_cast<int>(path.size()), path.data(),
               static_cast<int>(line.size()), line.data());
}

bool run_state::urgent_stop() const {
  std::lock_guard lock(done_mutex_);
  return urgent_;
}

void run_state::request_quit(int exit_code, bool urgent) {
  std::lock_guard lock(done_mutex_);
  if (urgent) urgent_ = true;
  if (!quit_requested_) {
    quit_requested_ = true;
    exit_code_ = exit_code;
  }
  done_cv_.notify_all();
}

void run_state::set_roots_alive(std::size_t n) {
  std::lock_guard lock(done_mutex_);
  roots_alive_ = n;
}

void run_state::root_down(bool failed) {
  std::lock_guard lock(done_mutex_);
  if (roots_alive_) --roots_alive_;
  // One failed local root ends this node's run; otherwise the run ends when all are down.
  if (failed) root_failed_ = true;
  if (failed || roots_alive_ == 0) root_down_ = true;
  done_cv_.notify_all();
}

run_state::wake run_state::wait(std::optional<std::chrono::steady_clock::time_point> deadline,
                                std::chrono::milliseconds slice) {
  std::unique_lock lock(done_mutex_);
  auto until = std::chrono::steady_clock::now() + slice;
  if (deadline && *deadline < until) until = *deadline;
  done_cv_.wait_until(lock, until, [&] { return quit_requested_ || root_down_; });
  if (root_down_) return wake::root_down;
  if (quit_requested_) return wake::quit;
  if (deadline && std::chrono::steady_clock::now() >= *deadline) return wake::deadline;
  return wake::idle;
}

void run_state::wait_root_down() {
  std::unique_lock lock(done_mutex_);
  done_cv_.wait(lock, [&] { return roots_alive_ == 0; });
}

int run_state::exit_code() const {
  std::lock_guard lock(done_mutex_);
  if (quit_requested_) return exit_code_;
  return root_failed_ ? 1 : 0;
}

bool run_state::root_failed() const {
  std::lock_guard lock(done_mutex_);
  return root_failed_;
}

void run_state::set_node(node_runtime* node, std::vector<node_index> node_of, node_index self) {
  node_ = node;
  node_of_ = std::move(node_of);
  self_ = self;
  routing_.set_origin(self);  // subscription ids stay unique across the nodes' replicas
  cluster_ready_ = node == nullptr;
}

std::vector<vertex_id> run_state::local_roots() const {
  std::vector<vertex_id> out;
  for (vertex_id v = 0; v < tree_->size(); ++v)
    if (is_local(v) && (v == 0 || !is_local(tree_->parent(v)))) out.push_back(v);
  return out;
}

void run_state::set_cluster_ready() {
  if (cluster_ready_.exchange(true, std::memory_order_acq_rel)) return;
  log(tree_->path(0), "every node is ready");
  std::lock_guard lock(directory_mutex_);
  for (const auto& a : actors_)
    if (a) caf::anon_send(a, ready_atom::value);
}

void run_state::local_root_started() {
  std::lock_guard lock(done_mutex_);
  ++local_roots_started_;
  done_cv_.notify_all();
}

void run_state::wait_local_started() {
  auto roots = local_roots().size();
  std::unique_lock lock(done_mutex_);
  done_cv_.wait(lock, [&] { return local_roots_started_ >= roots || quit_requested_ || root_down_; });
}

bool run_state::ending() const {
  std::lock_guard lock(done_mutex_);
  return quit_requested_ || root_down_;
}

void run_state::notify_child_lost(vertex_id parent, std::string child_path, std::string reason) {
  if (auto a = actor_of(parent)) caf::anon_send(a, lost_atom::value, std::move(child_path), std::move(reason));
}

void run_state::handle_remote(node_runtime& node, const std::string& peer, runtime::envelope& e) {
  auto kind = static_cast<wire_kind>(e.kind);
  auto id_of = [&](std::size_t i) { return i < e.extra.size() ? std::stoull(e.extra[i]) : 0ull; };
  if (kind == wire_kind::ready) {
    node.peer_ready(peer);
    // Data that arrived before our replica of every node's subscriptions was complete waited here.
    if (cluster_ready()) {
      auto waiting = std::move(early_data_);
      early_data_.clear();
      for (auto& [from_peer, envelope] : waiting) handle_remote(node, from_peer, envelope);
    }
    return;
  }
  if (kind == wire_kind::quit) return node.peer_quit(static_cast<int>(id_of(0)), e.extra.size() > 1 && e.extra[1] == "urgent");
  if (kind == wire_kind::data && !cluster_ready()) {
    early_data_.emplace_back(peer, std::move(e));
    return;
  }
  if (kind == wire_kind::subscribe || kind == wire_kind::unsubscribe || kind == wire_kind::data) {
    try {
      if (kind == wire_kind::unsubscribe) {
        routing_.unsubscribe(id_of(0));
        return;
      }
      auto who = tree_->find(e.sender);
      if (!who) return log("node", "envelope from another node: " + who.error().message);
      if (kind == wire_kind::subscribe) {
        auto r = routing_.add_replica(id_of(0), *who, e.topic);
        if (!r) log("node", "replicated subscription: " + r.error().what());
        return;
      }
      auto scope_vertex = tree_->find(e.scope);
      if (!scope_vertex) return log("node", "data envelope: " + scope_vertex.error().message);
      auto key = e.topic + '\0' + e.sender + '\0' + e.scope;
      auto& cached = remote_routes_[key];
      if (!cached.info || cached.routing_version != routing_.version()) {
        auto t = topic::parse(e.topic);
        if (!t) return log("node", "data envelope: " + t.error().what());
        cached.routing_version = routing_.version();
        cached.info = std::make_shared<route_info>();
        cached.info->topic = t->str();
        cached.info->publisher = *who;
        cached.info->scope = *scope_vertex;
        cached.info->plan = routing_.plan(*who, *scope_vertex, *t);
      }
      auto entry = static_cast<vertex_id>(id_of(0));
      vertex_id from = e.extra.size() > 1 && !e.extra[1].empty() ? static_cast<vertex_id>(id_of(1)) : no_vertex;
      if (entry >= tree_->size() || !is_local(entry)) return log("node", "data envelope for a component not on this node");
      auto region = plan_region(*tree_, *cached.info->plan, node_of_, options_.mode, entry, from);
      auto data = payload::copy_of(e.payload.span());
      auto seq = id_of(2);
      // The link's credit comes back when the local targets have handled the message and the
      // nodes it is forwarded to have delivered it (the receipt rides along; forwards never wait:
      // they are bounded by the credit they hold).
      if (!region.local_targets.empty()) {
        auto env = std::make_shared<const envelope>(envelope{cached.info, data, seq, e.receipt});
        for (auto i : region.local_targets) {
          const vertex_id target = cached.info->plan->targets()[i].component;
          if (auto a = actor_of(target)) {
            queued(target);
            caf::anon_send(a, deliver_atom::value, env, i);
          }
        }
      }
      for (const auto& h : region.hops)
        (void)node.forward(h, cached.info->topic, *who, *scope_vertex, seq, data, e.receipt, runtime::never_block);
    } catch (const std::exception& ex) {
      log("node", std::string("malformed envelope from another node: ") + ex.what());
    }
  }
}

}  // namespace banyan::detail
