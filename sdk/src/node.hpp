// Multi-node mode of banyan::run: this process is one node of a deployment. It hosts the components
// assigned to it, replicates subscriptions to and from its peers, and carries messages across node
// links along the propagation path (see broker/placement.hpp). Private to the SDK.
#pragma once

#include "banyan/broker/placement.hpp"
#include "banyan/broker/profile.hpp"
#include "banyan/sdk/payload.hpp"
#include "banyan/runtime/transport.hpp"

#include <caf/all.hpp>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace banyan::detail {

class run_state;

// Envelope kinds on node links.
enum class wire_kind : std::uint16_t { data = 1, subscribe = 2, unsubscribe = 3, ready = 4, quit = 5 };

// Which node hosts each component: read from the deployment and checked against the app's tree.
struct placement {
  std::vector<std::string> names;       // node names, deployment order
  std::vector<std::string> endpoints;
  std::vector<std::string> curve_public, curve_secret;  // per node, Z85 (empty: no CURVE)
  std::vector<node_index> node_of;      // per vertex
  node_index self = 0;
};

// Reads `path` and places `tree`'s components; errors name the file and line.
result<placement> load_placement(const std::string& path, const std::string& self, const component_tree& tree);

class node_runtime {
 public:
  node_runtime(run_state& state, placement p);
  ~node_runtime();

  // Starts the transport and the gateway actor (which handles everything that arrives).
  result<void> start(caf::actor_system& system, std::chrono::milliseconds heartbeat_timeout);
  // Called when every local subtree has started: once all peers are up, sends them our subscriptions
  // followed by `ready`. Runs on the caller's thread (blocks until peers are up, or the run ends).
  void announce_ready();
  void stop();

  const placement& where() const { return placement_; }
  bool is_local(vertex_id v) const { return placement_.node_of[v] == placement_.self; }

  // Sends a data envelope for a hop of a route (from the publisher's or the gateway's actor).
  result<void> forward(const hop& h, const std::string& topic, vertex_id publisher, vertex_id scope,
                       std::uint64_t sequence, const payload& data);
  void broadcast_subscribe(subscription_id id, vertex_id subscriber, const std::string& filter);
  void broadcast_unsubscribe(subscription_id id);
  void broadcast_quit(int exit_code);

  // Called by the gateway, in arrival order.
  void peer_ready(const std::string& peer);
  void peer_quit(int exit_code);

  // Data envelopes sent to each node (index = node), for the profile's `links`.
  std::vector<link_traffic> data_links() const;

 private:
  void on_envelope(const std::string& peer, runtime::envelope&& e);
  void on_peer_up(const std::string& peer);
  void on_peer_down(const std::string& peer, const std::string& reason);
  void send_to_all(const runtime::envelope& e);

  run_state& state_;
  placement placement_;
  std::unique_ptr<runtime::transport> transport_;
  caf::actor gateway_;
  std::atomic<bool> announced_{false};
  std::atomic<bool> quitting_{false};
  std::mutex ready_mutex_;
  std::set<std::string> peers_ready_;
  struct counters {
    std::atomic<std::uint64_t> messages{0}, bytes{0}, failed{0};
    std::atomic<bool> failing{false};
  };
  std::unique_ptr<counters[]> sent_;
};

}  // namespace banyan::detail
