// The subscription table and the routes it computes.
//
// A route answers "who receives topic T published by P within scope S, and which tree edges does the
// message use": in `hier` mode the edges of the Steiner tree of P and the subscribers it reaches (each
// edge once, none that leads to no subscriber); in `flat_p2p` mode one copy per subscriber straight
// from P, so every edge of each publisher→subscriber path counts once per copy. `flat_node` (one copy
// per subscribing node, for multi-node runs) changes only what crosses node links; its tree-edge
// accounting is hier's.
//
// Routes are immutable after construction except for their traffic counters. Callers cache them per
// (publisher, scope, topic) and recompute when version() changes; any subscribe/unsubscribe bumps the
// version before it returns, so it applies to every message planned after it returns.
//
// Thread-safety: every member function may be called from any thread.
// Cost: plan() is O(matching subscriptions + path lengths); record() is two relaxed atomic adds.
#pragma once

#include "banyan/broker/error.hpp"
#include "banyan/broker/topic.hpp"
#include "banyan/broker/tree.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <vector>

namespace banyan {

enum class routing_mode { hier, flat_p2p, flat_node };
const char* to_string(routing_mode mode);
result<routing_mode> parse_routing_mode(std::string_view text);

using subscription_id = std::uint64_t;

struct edge_traffic {
  std::uint64_t messages = 0;
  std::uint64_t bytes = 0;
};

// The traffic of one publisher to one set of subscribing components. Flows determine every routing
// mode's traffic on any deployment, so the cost model can predict cross-node messages from them.
struct flow {
  vertex_id publisher;
  std::vector<vertex_id> targets;  // ascending
  std::uint64_t messages = 0;
  std::uint64_t bytes = 0;
};

class routing_table;
struct traffic_sink;  // private to routing.cpp

class route {
 public:
  struct target {
    vertex_id component;
    std::vector<subscription_id> subscriptions;  // this component's matching subscriptions
  };
  // One entry per tree edge the message uses, with the copies each message sends over it.
  struct edge_use {
    vertex_id edge;  // the edge's child vertex
    std::uint32_t copies;
  };

  route(std::shared_ptr<traffic_sink> sink, vertex_id publisher, std::vector<target> targets,
        std::vector<edge_use> edges);
  ~route();
  route(const route&) = delete;
  route& operator=(const route&) = delete;

  vertex_id publisher() const { return publisher_; }
  const std::vector<target>& targets() const { return targets_; }
  const std::vector<edge_use>& edges() const { return edges_; }

  // Counts one published message of `bytes` payload bytes on this route (all its edges). One
  // writer at a time (the actor that routes with it; readers may read concurrently): plain adds,
  // no locked instructions on the publish path.
  void record(std::size_t bytes) const {
    messages_.store(messages_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    bytes_.store(bytes_.load(std::memory_order_relaxed) + bytes, std::memory_order_relaxed);
  }
  void add_to(std::vector<edge_traffic>& per_edge) const;
  std::uint64_t messages() const { return messages_.load(std::memory_order_relaxed); }
  std::uint64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

 private:
  std::shared_ptr<traffic_sink> sink_;
  vertex_id publisher_;
  std::vector<target> targets_;
  std::vector<edge_use> edges_;
  mutable std::atomic<std::uint64_t> messages_{0};
  mutable std::atomic<std::uint64_t> bytes_{0};
};

class routing_table {
 public:
  // Subscription ids made here are `origin << 40 | counter`, so the tables of several nodes can share
  // ids without clashing (each node uses its own origin).
  routing_table(std::shared_ptr<const component_tree> tree, routing_mode mode, std::uint32_t origin = 0);
  ~routing_table();

  const component_tree& tree() const { return *tree_; }
  routing_mode mode() const { return mode_; }
  // Sets the origin for ids made from now on (call before the first subscribe).
  void set_origin(std::uint32_t origin) { origin_ = origin; }

  result<subscription_id> subscribe(vertex_id subscriber, std::string_view filter);
  // Adds a subscription made elsewhere (another node's table) under its id; a known id is ignored.
  result<void> add_replica(subscription_id id, vertex_id subscriber, std::string_view filter);
  struct entry {
    subscription_id id;
    vertex_id subscriber;
    std::string filter;
  };
  // The subscriptions made with this table's origin (to send to a peer that (re)joins).
  std::vector<entry> local_subscriptions() const;
  // Returns false when the id is unknown (already removed).
  bool unsubscribe(subscription_id id);
  // The subscriber of subscription `id`; nullopt when the id is unknown.
  std::optional<vertex_id> subscriber_of(subscription_id id) const;
  // Removes every subscription of `component` (used when a component fails or restarts); returns
  // the ids removed.
  std::vector<subscription_id> unsubscribe_all(vertex_id component);
  std::size_t subscription_count() const;

  std::uint64_t version() const { return version_.load(std::memory_order_acquire); }

  // The route for `t` published by `publisher` within the subtree of `scope` (a resolved ancestor of the
  // publisher, see scope::resolve).
  std::shared_ptr<const route> plan(vertex_id publisher, vertex_id scope, const topic& t) const;

  // Traffic so far per tree edge, indexed by the edge's child vertex (entry 0, the root, stays zero).
  std::vector<edge_traffic> traffic() const;
  // Traffic so far per flow (publisher → target set), merged over every route that had that flow.
  std::vector<flow> flows() const;

 private:
  struct trie;
  struct subscription;
  void collect(const trie& node, const std::vector<std::string>& levels, std::size_t i,
               std::vector<std::pair<vertex_id, subscription_id>>& out) const;
  void erase_locked(subscription_id id);
  void insert_locked(subscription_id id, vertex_id subscriber, topic_filter filter);

  std::shared_ptr<const component_tree> tree_;
  routing_mode mode_;
  mutable std::shared_mutex mutex_;
  std::unique_ptr<trie> root_;
  std::vector<subscription> subscriptions_;  // sorted by id
  std::uint32_t origin_;
  subscription_id next_id_ = 1;
  std::atomic<std::uint64_t> version_{1};
  std::shared_ptr<traffic_sink> sink_;
};

}  // namespace banyan
