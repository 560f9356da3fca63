// The CAF actor that runs one component incarnation: hosts the user's object, routes its publishes,
// dispatches deliveries, requests and posted work to it, and supervises its children.
#pragma once

#include "actor_protocol.hpp"
#include "route_front.hpp"
#include "run_state.hpp"

#include <caf/all.hpp>

#include <deque>
#include <optional>
#include <unordered_map>

namespace banyan::detail {

class component_actor final : public caf::event_based_actor {
 public:
  // `initial`: this incarnation is part of the run's first start (each node starts its own part of
  // the tree then); a restart's incarnations ask the nodes of their remote children to start them.
  component_actor(caf::actor_config& cfg, std::shared_ptr<run_state> state, vertex_id v, caf::actor_addr parent,
                  bool initial = true);
  ~component_actor() override;

  caf::behavior make_behavior() override;
  // Drops everything that holds other actors (route caches, children) or the run: actors that hold
  // each other's handles would otherwise keep each other alive after they terminated.
  void on_exit() override;
  resume_result resume(caf::execution_unit* unit, std::size_t max_throughput) override;
  const char* name() const override { return "banyan.component"; }

  // The component-facing API (see context.hpp); called only from this actor's handlers.
  result<subscription_id> subscribe(std::string_view filter, banyan::context::handler on_message);
  bool unsubscribe(subscription_id id);
  result<void> publish(std::string_view topic, const payload& data, const scope& where);
  void serve(std::string method, banyan::context::service handler);
  void send_request(std::string_view path, std::string method, const payload& data, std::chrono::milliseconds timeout,
                    banyan::context::reply_handler on_reply);
  void post_task(std::function<void()> fn);
  void post_after(std::chrono::milliseconds delay, std::function<void()> fn);
  void stop_self();  // ctx.stop(): an orderly end of this component alone
  result<void> watch(std::string_view path, banyan::context::down_handler on_down);  // ctx.monitor
  result<void> start_dynamic(std::string_view name);                                 // ctx.start_child
  void release_held_dynamic();                       // starts held dynamic children whose node is ready now
  result<void> stop_dynamic(std::string_view name);  // ctx.stop_child
  void checkpoint();  // component::snapshot into the run's state_store, if the spec keeps state

  run_state& state() { return *state_; }
  vertex_id vertex() const { return vertex_; }

 private:
  // A child runs here (actor) or on another node (remote: its node runs it, numbered by
  // generation, and reports its start and failure; node_wire.hpp's child_* kinds).
  struct child {
    vertex_id vertex;
    caf::actor actor;
    bool stopping = false;  // stopped on purpose: its exit is not a failure
    bool remote = false;
    bool remote_up = false;        // remote: an incarnation is running (or starting)
    std::uint64_t generation = 1;  // remote: of that incarnation
    bool active = true;            // false: a dynamic child not started (or stopped by stop_child)
  };
  std::size_t dynamic_child(std::string_view name) const;  // none if no such
  error no_dynamic_child(std::string_view name) const;
  // Requests to other nodes made before every node was ready, in order; their reply handlers wait
  // in remote_requests_ (and time out there).
  struct held_request {
    std::uint64_t id;
    vertex_id target;
    std::string method;
    payload data;
    std::chrono::milliseconds timeout;
  };

  template <class F>
  void counted(F&& f);
  void start();
  bool spawn_child(std::size_t i);  // true: wait for its start before the next one
  void spawn_next();
  void on_exit_message(caf::exit_msg& msg);
  void on_child_gone(const caf::actor_addr& source, const caf::error& reason);
  // A child ended: after a failure (`failure`: on_child_failure with `reason`, then per its restart
  // type) or normally by ctx.stop() (restarted only if permanent).
  // `was_starting`: it ended while it was starting (its later siblings wait for it).
  void supervise(std::size_t i, const std::string& reason, bool failure = true, bool was_starting = false);
  // A remote child's incarnation `generation` ended: which child, and whether it was the one being
  // started; nothing when that incarnation was stopped or replaced already, or this one is shutting down.
  struct ended_child {
    std::size_t index;
    bool was_starting;
  };
  std::optional<ended_child> remote_child_ended(vertex_id child_vertex, std::uint64_t generation);
  void on_remote_failure(vertex_id child_vertex, std::uint64_t generation, const std::string& reason);
  void on_remote_stopped(vertex_id child_vertex, std::uint64_t generation);  // it called ctx.stop()
  void stop_child(child& c);
  void stop_remote_children();  // this incarnation fails or is stopped: its remote children go too
  void shutdown_next();
  result<void> send_on(const std::shared_ptr<const route_info>& info, const payload& data);
  void flush_held();
  // `remote`: the message came from another node (its handler must not block on a node link).
  void deliver(const route_info& info, const payload& data, std::uint64_t sequence, std::uint32_t index, bool remote);
  void send_remote_request(vertex_id target, std::string method, const payload& data, std::chrono::milliseconds timeout,
                           banyan::context::reply_handler on_reply);
  void finish_remote_request(std::uint64_t id, result<payload> outcome);
  void transmit_request(const held_request& r);
  void flush_held_requests();
  void begin_shutdown(bool urgent);
  // Live moves (gateway_move.cpp): this incarnation hands its state over and goes idle; a parent
  // takes note that its child now runs on `to` (a local spawn when that is this node).
  std::shared_ptr<vertex_state> move_out();
  void child_moved(vertex_id child_vertex, node_id to, std::uint64_t generation);
  bool pause();  // false if it cannot pause now (already paused, starting or shutting down)
  void resume();

  std::shared_ptr<run_state> state_;
  vertex_id vertex_;
  caf::actor_addr parent_;
  bool initial_;
  std::unique_ptr<component> user_;
  std::unique_ptr<banyan::context> ctx_;
  std::vector<child> children_;
  // Children start one at a time, in order (OTP's synchronous start): a child's on_start, and its
  // whole subtree's, completes before its next sibling is spawned.
  std::vector<std::size_t> pending_;  // children still to start, ascending
  static constexpr std::size_t none = ~std::size_t{0};
  std::size_t starting_ = none;  // the child whose start we are waiting for
  bool reported_started_ = false;
  bool in_on_start_ = false;  // this incarnation's on_start is running
  std::deque<std::chrono::steady_clock::time_point> restarts_;
  bool backing_off_ = false;  // a restart waits for its backoff (restart_atom)
  bool shutting_down_ = false;
  bool urgent_ = false;  // stopping on a signal: ahead of queued messages
  // Flow control (see pause()): after a publish found a target's backlog or a node link full.
  caf::message_handler main_;  // the behaviour; paused: a few skips in front of it
  bool paused_ = false;
  bool behavior_ready_ = false;      // become() is usable (false while make_behavior runs)
  std::uint64_t calls_ = 0;          // calls into the component's code in this run of the actor (resume)
  std::int64_t delivered_ = 0;       // deliveries handled in this run of the actor
  bool in_remote_delivery_ = false;  // handling a message from another node: never block the thread

  // Requests to components on other nodes, by id: the handler and what to call it in errors.
  struct remote_request {
    banyan::context::reply_handler on_reply;
    std::string what;
  };
  std::unordered_map<std::uint64_t, remote_request> remote_requests_;
  std::unordered_map<subscription_id, banyan::context::handler> handlers_;
  std::unordered_map<subscription_id, std::string> filters_;  // what a live move carries
  // Arrived by a live move: the subscriptions of the incarnation that left, taken over by filter
  // by this one's subscribe calls (in restore and on_start); the rest are dropped after on_start.
  std::vector<std::pair<subscription_id, std::string>> adopt_;
  bool arrived_ = false;
  std::shared_ptr<std::atomic<bool>> moved_ = std::make_shared<std::atomic<bool>>(false);  // left by a live move
  std::deque<std::function<void()>> frozen_requests_;  // local requests made while a move froze the deployment
  std::unordered_map<std::string, banyan::context::service> services_;
  std::unordered_map<std::uint64_t, banyan::context::down_handler> monitors_;  // by id (watchers.hpp)
  // Monitors of components on other nodes made before every node was ready: (watched, id).
  std::vector<std::pair<vertex_id, std::uint64_t>> held_monitors_;
  std::unordered_map<std::uint64_t, vertex_id> remote_watched_;  // monitors of components on other nodes, by id
  std::vector<std::size_t> held_dynamic_;  // remote dynamic children started before their node was ready
  route_cache routes_;                     // this component's publishes
  std::uint64_t sequence_ = 0;
  // Publishes made before every node of a deployment was ready, in order (multi-node runs only).
  struct held_publish {
    std::string topic;
    vertex_id scope;
    payload data;
  };
  std::deque<held_publish> held_;
  std::deque<held_request> held_requests_;
};

// Spawns the component at `v` from `spawner` (an actor, or the actor system for the root): on a
// thread of its own when its spec asks for one (spec::own_thread), else on the shared scheduler.
template <class Spawner>
caf::actor spawn_component(Spawner& spawner, std::shared_ptr<run_state> state, vertex_id v, caf::actor_addr parent,
                           bool initial) {
  if (state->spec_of(v).owns_thread()) {
    return spawner.template spawn<component_actor, caf::detached>(std::move(state), v, std::move(parent), initial);
  }
  return spawner.template spawn<component_actor>(std::move(state), v, std::move(parent), initial);
}

}  // namespace banyan::detail
