// Request/reply traffic for the profile: each request and each reply counted,
// messages and payload bytes, on every tree edge of the path it travels in the model (from the
// sender up to the lowest common ancestor of sender and receiver, then down to the receiver), so
// the partitioner weighs services like publishes. Private to the SDK.
//
// Each message is counted once, by its sender when it is sent: the request by the requester, the
// reply by the callee once its handler returned (so a run that ends right after a handler still
// counts its reply; a request that times out before an answer still counts the late reply).
// Merged node profiles hold each message once. Only the tree edges: a request between two nodes goes straight
// over their link, so it is in neither the profile's `flows` nor its `links` (those are publishes).
//
// Thread-safety: record() and add_to() may be called from any thread (relaxed atomics per edge).
// Cost: record() is O(path length).
#pragma once

#include "banyan/broker/routing.hpp"
#include "banyan/broker/tree.hpp"

#include <atomic>
#include <memory>
#include <vector>

namespace banyan::detail {

class request_traffic {
 public:
  explicit request_traffic(std::shared_ptr<const component_tree> tree)
      : tree_(std::move(tree)), messages_(tree_->size()), bytes_(tree_->size()) {}

  // One message of `bytes` payload bytes from `from` to `to` (a request, or a reply the other way).
  void record(vertex_id from, vertex_id to, std::size_t bytes) {
    const vertex_id top = tree_->lca(from, to);
    for (vertex_id v : {from, to}) {
      for (; v != top; v = tree_->parent(v)) {
        messages_[v].fetch_add(1, std::memory_order_relaxed);
        bytes_[v].fetch_add(bytes, std::memory_order_relaxed);
      }
    }
  }
  // Adds the counts to per-edge traffic indexed by the edge's child vertex.
  void add_to(std::vector<edge_traffic>& edges) const {
    if (edges.size() < messages_.size()) edges.resize(messages_.size());
    for (std::size_t v = 0; v < messages_.size(); ++v) {
      edges[v].messages += messages_[v].load(std::memory_order_relaxed);
      edges[v].bytes += bytes_[v].load(std::memory_order_relaxed);
    }
  }

 private:
  std::shared_ptr<const component_tree> tree_;
  std::vector<std::atomic<std::uint64_t>> messages_, bytes_;
};

}  // namespace banyan::detail
