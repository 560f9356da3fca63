// The outbound gate of a component incarnation on a node of a deployment (outbound_gate.hpp): what
// crosses to other nodes goes through the node runtime, and what is made while the gate is closed
// waits in one queue. Private to the SDK.
//
// The rule: the gate is open while every node is ready (run_state::cluster_ready). Closed, it holds
// publishes, requests to other nodes and monitors of their components, and requests to local
// components while a move froze the deployment (their target may be leaving). It holds them in the
// order they were made. A request's timeout runs from when it was made. A child start waits for its
// own node as well, and a start that waits for a node that is not ready does not hold back the rest.
// Work made while the gate releases queues behind what it releases.
#pragma once

#include "outbound_gate.hpp"

#include <deque>
#include <unordered_map>

namespace banyan::detail {

class node_runtime;
class run_state;

class cluster_gate final : public outbound_gate {
 public:
  cluster_gate(component_actor& self, node_runtime& node);

  result<void> publish(std::string_view topic, vertex_id scope, const payload& data) override;
  result<void> forward(const route_info& info, std::uint64_t sequence, const payload& data) override;
  void request(vertex_id target, std::string method, const payload& data, std::chrono::milliseconds timeout,
               context::reply_handler on_reply) override;
  void answer(std::uint64_t id, result<payload> outcome) override;
  void expire(std::uint64_t id, std::chrono::milliseconds after) override;
  void monitor(vertex_id watched, std::uint64_t id) override;
  std::vector<std::pair<std::uint64_t, vertex_id>> monitors_lost_with(const std::vector<vertex_id>& gone) override;
  void subscribed(subscription_id id, const std::string& filter) override;
  void unsubscribed(subscription_id id) override;
  std::uint64_t start_child(vertex_id child) override;
  void stop_child(vertex_id child, std::uint64_t generation) override;
  void start_when_ready(vertex_id child, std::function<void()> start) override;
  bool starts_held() const override;
  std::optional<vertex_state> arrive() override;
  void arrived() override;
  void leave(vertex_state& out) override;
  void open() override;
  void clear() override;

 private:
  enum class kind { publish, request, monitor, child_start };
  struct held {
    kind what;
    std::string topic;  // kind::publish
    vertex_id scope = 0;
    payload data;
    std::function<void()> send;  // the other kinds: sends it now, never holds it again
    // kind::child_start: the child, whose node (where it runs when released: a failover may have
    // moved it) must be ready too; kind::monitor: the component watched, likewise.
    std::optional<vertex_id> child;
    std::uint64_t id = 0;  // kind::monitor: the monitor's id
  };
  bool is_open() const;
  // Releases what is held, in order; false when it had to stop (the deployment froze meanwhile),
  // so what comes next must queue behind what is left.
  bool release();
  bool child_node_ready(vertex_id child) const;
  std::size_t block_at() const;  // how far past a link's window a send may go before it blocks
  // Sends a request now: to wherever its target runs at that moment.
  void send_request(vertex_id target, std::string method, const payload& data, std::chrono::milliseconds timeout,
                    context::reply_handler on_reply);
  void transmit(std::uint64_t id, vertex_id target, const std::string& method, const payload& data,
                std::chrono::milliseconds timeout);

  component_actor& self_;
  run_state& state_;
  node_runtime& node_;
  std::deque<held> held_;
  bool releasing_ = false;  // open() runs: what is made meanwhile queues behind (in order)
  // Requests sent to other nodes, by id: the handler, and what to call the request in errors.
  struct pending_request {
    context::reply_handler on_reply;
    std::string what;
  };
  std::unordered_map<std::uint64_t, pending_request> requests_;
  std::unordered_map<std::uint64_t, vertex_id> remote_watched_;  // monitors of components on other nodes, by id
};

}  // namespace banyan::detail
