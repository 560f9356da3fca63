// What a component incarnation carries from one node to another in a live move (docs/runtime.md,
// "Moving subtrees live"), and the moves this node takes part in. Private to the SDK.
//
// A moved incarnation leaves its node with: its user state (component::snapshot, taken whether or
// not the spec keeps state across restarts), its publish sequence number (so its subscribers go on
// seeing one sequence per publisher), its subscriptions (id and filter: the ids, replicated on every
// node, stay; the new incarnation's subscribe calls in restore/on_start take them over by filter),
// and the publishes it made while the deployment was frozen (sent, in order, when it thaws).
// Encoded as length-prefixed little-endian fields; decode() checks every length and vertex.
//
// Thread-safety: move_arrivals may be used from any thread (one mutex).
#pragma once

#include "banyan/broker/error.hpp"
#include "banyan/broker/tree.hpp"

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace banyan::detail {

struct moved_publish {
  std::string topic;
  vertex_id scope;
  std::string data;
};

struct vertex_state {
  vertex_id vertex = 0;
  std::optional<std::string> snapshot;                               // component::snapshot's bytes
  std::uint64_t sequence = 0;                                        // the last publish's sequence number
  std::vector<std::pair<std::uint64_t, std::string>> subscriptions;  // id, filter
  std::vector<moved_publish> held;                                   // publishes made while frozen, in order
};

std::string encode(const std::vector<vertex_state>& states);
// v and every component under it, v first (breadth first).
std::vector<vertex_id> subtree_of(const component_tree& tree, vertex_id v);
// Checks that every vertex is in `root`'s subtree and appears once; an error names the field.
result<std::vector<vertex_state>> decode(std::string_view bytes, const component_tree& tree, vertex_id root);

// Publishes an incarnation made while its gate held them (the cluster still starting, a move's
// freeze) and did not live to send: they were published before it ended, so they go out on its
// behalf, ahead of anything newer: its next incarnation here sends them before its own
// (cluster_gate::arrive), or the gateway does once the cluster is ready if none runs.
class orphaned_publishes {
 public:
  struct entry {
    std::vector<moved_publish> publishes;
    std::uint64_t after_sequence = 0;  // the sequence number the ended incarnation had reached
  };
  void add(vertex_id v, std::vector<moved_publish> publishes, std::uint64_t after_sequence);
  std::optional<entry> take(vertex_id v);
  std::vector<vertex_id> vertices() const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<vertex_id, entry> held_;
};

// Incarnations arriving here: the gate of the arriving incarnation takes its vertex's state, once
// (cluster_gate::arrive). The roots of subtrees arriving (a move's, a wake's) until their arrival is
// over: an incarnation of one that starts after the first failed says it has arrived too.
class move_arrivals {
 public:
  void put(std::vector<vertex_state> states);
  std::optional<vertex_state> take(vertex_id v);
  void begin(vertex_id root);
  void over(vertex_id root);
  bool arriving(vertex_id root) const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<vertex_id, vertex_state> states_;
  std::unordered_set<vertex_id> roots_;
};

}  // namespace banyan::detail
