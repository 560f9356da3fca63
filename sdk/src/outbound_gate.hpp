// The one way out of a component incarnation: everything it sends that may have to reach another
// node (publishes, requests, monitors, the starts and stops of its children) goes through its gate,
// and the component actor never asks whether there is a node. Private to the SDK.
//
// A single-process run gets the trivial gate (local_gate below): everything is sent at once and
// nothing is remote. A node of a deployment gets the cluster gate (cluster/cluster_gate.hpp). It
// decides what crosses to other nodes and when, and it owns the one hold queue with one rule.
// Work made while the gate is closed (the cluster is starting, or a live move froze the deployment)
// is held in the order it was made and released in that order when the gate opens. A child start
// that waits for its node to join stays held without holding back what comes after it.
//
// A gate belongs to one incarnation and is used only from its actor's handlers.
#pragma once

#include "move_state.hpp"

#include "banyan/broker/placement.hpp"
#include "banyan/broker/tree.hpp"
#include "banyan/sdk/context.hpp"
#include "banyan/sdk/payload.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace banyan::detail {

class component_actor;
struct route_info;

class outbound_gate {
 public:
  virtual ~outbound_gate() = default;

  // A publish: routed now by the actor (component_actor::route), or held until the gate opens.
  // Errors that do not depend on when it is sent (a malformed topic, a payload over the limit)
  // are returned now either way.
  virtual result<void> publish(std::string_view topic, vertex_id scope, const payload& data) = 0;
  // The hops of a routed publish to other nodes (its local targets are the actor's to deliver).
  // An error names the node it did not reach.
  virtual result<void> forward(const route_info& info, std::uint64_t sequence, const payload& data) = 0;

  // A request to the component at `target`; `on_reply` is called exactly once, later, on the actor.
  virtual void request(vertex_id target, std::string method, const payload& data, std::chrono::milliseconds timeout,
                       context::reply_handler on_reply) = 0;
  // The reply to, or the expiry of, a request this gate sent to another node (reply_atom, expire_atom).
  virtual void answer(std::uint64_t id, result<payload> outcome) = 0;
  virtual void expire(std::uint64_t id, std::chrono::milliseconds after) = 0;

  // Watches `watched` under `id`: its end comes to the actor as mondown_atom.
  virtual void monitor(vertex_id watched, std::uint64_t id) = 0;
  // A node is gone with the components `gone` (ascending, as they were placed when the loss was
  // found): the monitors of them, in the order they were made, which fire now and go on (made again
  // where each component runs next, once that node is ready).
  virtual std::vector<std::pair<std::uint64_t, vertex_id>> monitors_lost_with(const std::vector<vertex_id>& gone) = 0;

  // Subscriptions made and dropped by this incarnation: every node's replica learns them.
  virtual void subscribed(subscription_id id, const std::string& filter) = 0;
  virtual void unsubscribed(subscription_id id) = 0;

  // Children on other nodes. `start_child` returns the new incarnation's generation.
  virtual std::uint64_t start_child(vertex_id child) = 0;
  virtual void stop_child(vertex_id child, std::uint64_t generation) = 0;
  // Runs `start` once `child`'s node can start it: now, or when that node is ready (it joins late,
  // or comes back after a loss).
  virtual void start_when_ready(vertex_id child, std::function<void()> start) = 0;
  // Whether starts wait now (a failover's new assignment is being applied: nothing starts before
  // its go); start_when_ready runs them once they may.
  virtual bool starts_held() const { return false; }

  // Live moves. `arrive`: the state this incarnation brought, if a move brought it here (what it
  // held comes along, held again here); `arrived`: its subtree has started; `leave`: it moves away
  // and takes what it held.
  virtual std::optional<vertex_state> arrive() = 0;
  virtual void arrived() = 0;
  virtual void leave(vertex_state& out) = 0;

  // Every node is ready again (ready_atom, joined_atom): what was held goes out, in order.
  virtual void open() = 0;
  // The actor exits: drops what is held and every reply handler (they may hold other actors).
  virtual void clear() = 0;
};

// A single-process run: nothing is held, nothing is remote.
class local_gate final : public outbound_gate {
 public:
  explicit local_gate(component_actor& self) : self_(self) {}

  result<void> publish(std::string_view topic, vertex_id scope, const payload& data) override;
  result<void> forward(const route_info&, std::uint64_t, const payload&) override { return {}; }
  void request(vertex_id target, std::string method, const payload& data, std::chrono::milliseconds timeout,
               context::reply_handler on_reply) override;
  void answer(std::uint64_t, result<payload>) override {}
  void expire(std::uint64_t, std::chrono::milliseconds) override {}
  void monitor(vertex_id watched, std::uint64_t id) override;
  std::vector<std::pair<std::uint64_t, vertex_id>> monitors_lost_with(const std::vector<vertex_id>&) override {
    return {};
  }
  void subscribed(subscription_id, const std::string&) override {}
  void unsubscribed(subscription_id) override {}
  std::uint64_t start_child(vertex_id child) override;
  void stop_child(vertex_id, std::uint64_t) override {}
  void start_when_ready(vertex_id, std::function<void()> start) override { start(); }
  std::optional<vertex_state> arrive() override { return std::nullopt; }
  void arrived() override {}
  void leave(vertex_state&) override {}
  void open() override {}
  void clear() override {}

 private:
  component_actor& self_;
};

// The gate for `self`: the cluster gate on a node of a deployment, else the local one.
std::unique_ptr<outbound_gate> make_gate(component_actor& self);

}  // namespace banyan::detail
