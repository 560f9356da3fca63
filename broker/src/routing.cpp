#include "banyan/broker/routing.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace banyan {

const char* to_string(routing_mode mode) {
  switch (mode) {
    case routing_mode::hier: return "hier";
    case routing_mode::flat_p2p: return "flat-p2p";
    case routing_mode::flat_node: return "flat-node";
  }
  return "?";
}

result<routing_mode> parse_routing_mode(std::string_view text) {
  if (text == "hier") return routing_mode::hier;
  if (text == "flat-p2p") return routing_mode::flat_p2p;
  if (text == "flat-node") return routing_mode::flat_node;
  return error{broker::errc::invalid_argument,
               "routing mode `" + std::string(text) + "`: expected `hier`, `flat-p2p` or `flat-node`"};
}

// Where routes leave their counts when they die, and the registry of live routes. Shared by the table
// and its routes so either may outlive the other.
struct traffic_sink {
  std::mutex mutex;
  std::vector<edge_traffic> retired;  // counts of routes already destroyed
  std::map<std::pair<vertex_id, std::vector<vertex_id>>, edge_traffic> retired_flows;
  std::vector<std::weak_ptr<const route>> live;
  std::size_t live_after_purge = 0;
};

namespace {
std::vector<vertex_id> components_of(const std::vector<route::target>& targets) {
  std::vector<vertex_id> out;
  out.reserve(targets.size());
  for (const auto& t : targets) out.push_back(t.component);
  return out;
}
}  // namespace

route::route(std::shared_ptr<traffic_sink> sink, vertex_id publisher, std::vector<target> targets,
             std::vector<edge_use> edges)
    : sink_(std::move(sink)), publisher_(publisher), targets_(std::move(targets)), edges_(std::move(edges)) {}

route::~route() {
  std::lock_guard lock(sink_->mutex);
  add_to(sink_->retired);
  if (auto n = messages()) {
    auto& f = sink_->retired_flows[{publisher_, components_of(targets_)}];
    f.messages += n;
    f.bytes += bytes();
  }
}

void route::add_to(std::vector<edge_traffic>& per_edge) const {
  auto messages = messages_.load(std::memory_order_relaxed);
  auto bytes = bytes_.load(std::memory_order_relaxed);
  for (const auto& e : edges_) {
    per_edge[e.edge].messages += messages * e.copies;
    per_edge[e.edge].bytes += bytes * e.copies;
  }
}

struct routing_table::subscription {
  subscription_id id;
  vertex_id component;
  topic_filter filter;
};

struct routing_table::trie {
  std::unordered_map<std::string, std::unique_ptr<trie>> children;
  std::unique_ptr<trie> plus;
  std::vector<std::pair<vertex_id, subscription_id>> exact;  // filters that end here
  std::vector<std::pair<vertex_id, subscription_id>> hash;   // filters that end with `#` here
};

routing_table::routing_table(std::shared_ptr<const component_tree> tree, routing_mode mode, std::uint32_t origin)
    : tree_(std::move(tree)),
      mode_(mode),
      root_(std::make_unique<trie>()),
      origin_(origin),
      sink_(std::make_shared<traffic_sink>()) {
  tree_->freeze();
  sink_->retired.resize(tree_->size());
}

routing_table::~routing_table() = default;

result<subscription_id> routing_table::subscribe(vertex_id subscriber, std::string_view text) {
  auto filter = topic_filter::parse(text);
  if (!filter) return filter.error();
  if (subscriber >= tree_->size()) return error{broker::errc::no_such_component, "subscriber vertex out of range"};
  std::unique_lock lock(mutex_);
  subscription_id id = (static_cast<subscription_id>(origin_) << 40) | next_id_++;
  insert_locked(id, subscriber, std::move(*filter));
  version_.fetch_add(1, std::memory_order_acq_rel);
  return id;
}

result<void> routing_table::add_replica(subscription_id id, vertex_id subscriber, std::string_view text) {
  auto filter = topic_filter::parse(text);
  if (!filter) return filter.error();
  if (subscriber >= tree_->size()) return error{broker::errc::no_such_component, "subscriber vertex out of range"};
  std::unique_lock lock(mutex_);
  auto it = std::lower_bound(subscriptions_.begin(), subscriptions_.end(), id,
                             [](const subscription& s, subscription_id x) { return s.id < x; });
  if (it != subscriptions_.end() && it->id == id) return {};
  insert_locked(id, subscriber, std::move(*filter));
  version_.fetch_add(1, std::memory_order_acq_rel);
  return {};
}

std::vector<routing_table::entry> routing_table::local_subscriptions() const {
  std::shared_lock lock(mutex_);
  std::vector<entry> out;
  for (const auto& s : subscriptions_)
    if ((s.id >> 40) == origin_) out.push_back({s.id, s.component, s.filter.str()});
  return out;
}

void routing_table::insert_locked(subscription_id id, vertex_id subscriber, topic_filter filter) {
  trie* node = root_.get();
  const auto& levels = filter.levels();
  for (std::size_t i = 0; i < levels.size(); ++i) {
    if (levels[i] == "#") {
      node->hash.emplace_back(subscriber, id);
      node = nullptr;
      break;
    }
    auto& next = levels[i] == "+" ? node->plus : node->children[levels[i]];
    if (!next) next = std::make_unique<trie>();
    node = next.get();
  }
  if (node) node->exact.emplace_back(subscriber, id);
  auto pos = std::lower_bound(subscriptions_.begin(), subscriptions_.end(), id,
                              [](const subscription& s, subscription_id x) { return s.id < x; });
  subscriptions_.insert(pos, {id, subscriber, std::move(filter)});
}

void routing_table::erase_locked(subscription_id id) {
  auto it = std::lower_bound(subscriptions_.begin(), subscriptions_.end(), id,
                             [](const subscription& s, subscription_id x) { return s.id < x; });
  if (it == subscriptions_.end() || it->id != id) return;
  trie* node = root_.get();
  const auto& levels = it->filter.levels();
  auto drop = [id](std::vector<std::pair<vertex_id, subscription_id>>& v) {
    std::erase_if(v, [id](const auto& e) { return e.second == id; });
  };
  for (std::size_t i = 0; i < levels.size() && node; ++i) {
    if (levels[i] == "#") {
      drop(node->hash);
      node = nullptr;
      break;
    }
    if (levels[i] == "+") {
      node = node->plus.get();
    } else {
      auto child = node->children.find(levels[i]);
      node = child == node->children.end() ? nullptr : child->second.get();
    }
  }
  if (node) drop(node->exact);
  subscriptions_.erase(it);
}

bool routing_table::unsubscribe(subscription_id id) {
  std::unique_lock lock(mutex_);
  auto before = subscriptions_.size();
  erase_locked(id);
  if (subscriptions_.size() == before) return false;
  version_.fetch_add(1, std::memory_order_acq_rel);
  return true;
}

std::optional<vertex_id> routing_table::subscriber_of(subscription_id id) const {
  std::shared_lock lock(mutex_);
  auto it = std::lower_bound(subscriptions_.begin(), subscriptions_.end(), id,
                             [](const subscription& s, subscription_id v) { return s.id < v; });
  if (it == subscriptions_.end() || it->id != id) return std::nullopt;
  return it->component;
}

std::vector<subscription_id> routing_table::unsubscribe_all(vertex_id component) {
  std::unique_lock lock(mutex_);
  std::vector<subscription_id> ids;
  for (const auto& s : subscriptions_)
    if (s.component == component) ids.push_back(s.id);
  for (auto id : ids) erase_locked(id);
  if (!ids.empty()) version_.fetch_add(1, std::memory_order_acq_rel);
  return ids;
}

std::size_t routing_table::subscription_count() const {
  std::shared_lock lock(mutex_);
  return subscriptions_.size();
}

void routing_table::collect(const trie& node, const std::vector<std::string>& levels, std::size_t i,
                            std::vector<std::pair<vertex_id, subscription_id>>& out) const {
  out.insert(out.end(), node.hash.begin(), node.hash.end());  // `#` matches zero or more levels
  if (i == levels.size()) {
    out.insert(out.end(), node.exact.begin(), node.exact.end());
    return;
  }
  if (auto child = node.children.find(levels[i]); child != node.children.end())
    collect(*child->second, levels, i + 1, out);
  if (node.plus) collect(*node.plus, levels, i + 1, out);
}

std::shared_ptr<const route> routing_table::plan(vertex_id publisher, vertex_id scope, const topic& t) const {
  const component_tree& tree = *tree_;
  std::vector<std::pair<vertex_id, subscription_id>> matches;
  {
    std::shared_lock lock(mutex_);
    collect(*root_, t.levels(), 0, matches);
  }
  std::erase_if(matches, [&](const auto& m) { return !tree.contains(scope, m.first); });
  std::sort(matches.begin(), matches.end());

  std::vector<route::target> targets;
  for (const auto& [component, id] : matches) {
    if (targets.empty() || targets.back().component != component) targets.push_back({component, {}});
    targets.back().subscriptions.push_back(id);
  }

  std::vector<route::edge_use> edges;
  if (mode_ != routing_mode::flat_p2p) {
    std::vector<vertex_id> components;
    components.reserve(targets.size());
    for (const auto& target : targets) components.push_back(target.component);
    auto steiner = tree.steiner_edges(publisher, components);
    edges.reserve(steiner.size());
    for (vertex_id v : steiner) edges.push_back({v, 1});
  } else {
    std::map<vertex_id, std::uint32_t> copies;
    for (const auto& target : targets) {
      vertex_id meet = tree.lca(publisher, target.component);
      for (vertex_id v = target.component; v != meet; v = tree.parent(v)) ++copies[v];
      for (vertex_id v = publisher; v != meet; v = tree.parent(v)) ++copies[v];
    }
    for (auto [v, n] : copies) edges.push_back({v, n});
  }
  std::sort(edges.begin(), edges.end(), [](const auto& a, const auto& b) { return a.edge < b.edge; });

  auto r = std::make_shared<const route>(sink_, publisher, std::move(targets), std::move(edges));
  std::lock_guard lock(sink_->mutex);
  if (sink_->live.size() >= 2 * sink_->live_after_purge + 64) {  // amortised O(1) per plan
    std::erase_if(sink_->live, [](const auto& w) { return w.expired(); });
    sink_->live_after_purge = sink_->live.size();
  }
  sink_->live.push_back(r);
  return r;
}

std::vector<edge_traffic> routing_table::traffic() const {
  std::vector<edge_traffic> total;
  std::vector<std::shared_ptr<const route>> live;
  {
    std::lock_guard lock(sink_->mutex);
    total = sink_->retired;
    for (const auto& w : sink_->live)
      if (auto r = w.lock()) live.push_back(std::move(r));
  }
  // Outside the lock: dropping the last reference to a route folds it into the sink under that lock.
  for (const auto& r : live) r->add_to(total);
  return total;
}

std::vector<flow> routing_table::flows() const {
  std::map<std::pair<vertex_id, std::vector<vertex_id>>, edge_traffic> merged;
  std::vector<std::shared_ptr<const route>> live;
  {
    std::lock_guard lock(sink_->mutex);
    merged = sink_->retired_flows;
    for (const auto& w : sink_->live)
      if (auto r = w.lock()) live.push_back(std::move(r));
  }
  for (const auto& r : live) {
    if (!r->messages()) continue;
    auto& f = merged[{r->publisher(), components_of(r->targets())}];
    f.messages += r->messages();
    f.bytes += r->bytes();
  }
  std::vector<flow> out;
  for (auto& [key, t] : merged) out.push_back({key.first, key.second, t.messages, t.bytes});
  return out;
}

}  // namespace banyan
