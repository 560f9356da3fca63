// The CAF actor that runs one component incarnation: hosts the user's object, routes its publishes,
// and dispatches deliveries, requests and posted work to it. Its children are its supervisor's
// (supervisor.hpp); whatever may leave its node goes through its outbound gate (outbound_gate.hpp).
#pragma once

#include "actor_protocol.hpp"
#include "outbound_gate.hpp"
#include "route_front.hpp"
#include "run_state.hpp"
#include "supervisor.hpp"

#include <caf/all.hpp>

#include <memory>
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
  result<void> watch(std::string_view path, banyan::context::down_handler on_down);              // ctx.monitor
  result<void> start_dynamic(std::string_view name) { return supervisor_.start_dynamic(name); }  // ctx.start_child
  result<void> stop_dynamic(std::string_view name) { return supervisor_.stop_dynamic(name); }    // ctx.stop_child
  void checkpoint();  // component::snapshot into the run's state_store, if the spec keeps state

  // For the outbound gate and the supervisor, which act for this actor.
  run_state& state() { return *state_; }
  std::shared_ptr<run_state> shared_state() const { return state_; }
  vertex_id vertex() const { return vertex_; }
  std::uint64_t published() const { return sequence_; }  // this incarnation's last sequence number
  // Routes a publish and sends it now: to its local targets from here, to other nodes through the gate.
  result<void> route(std::string_view topic, vertex_id scope, const payload& data);
  // A request to the component at `target`, which runs on this node.
  void request_here(vertex_id target, std::string method, const payload& data, std::chrono::milliseconds timeout,
                    banyan::context::reply_handler on_reply);
  // Publishing to a component with a full backlog, or past a node link's window, pauses the actor
  // after the current message (see the definition). False if it cannot pause now (already paused,
  // starting or shutting down).
  bool pause();
  bool in_remote_delivery() const { return in_remote_delivery_; }  // a handler must not block on a node link
  // Calls `f(component, context)`: a call into the user's code, one message of its load.
  template <class F>
  void call_user(F&& f) {
    counted([&] { f(*user_, *ctx_); });
  }
  void children_started();  // every child has started (or none is to start): tell our supervisor once

 private:
  // A call into the component's code: one message of its load. Its time is counted by resume().
  template <class F>
  void counted(F&& f) {
    f();
    ++calls_;
  }
  void start();
  void on_exit_message(caf::exit_msg& msg);
  result<void> send_on(const std::shared_ptr<const route_info>& info, const payload& data);
  // A local target of a publish without an actor: asleep, the gateway holds the message for it.
  void hold_for_sleeper(const std::shared_ptr<const route_info>& info, std::uint32_t index, std::uint64_t sequence,
                        const payload& data);
  void on_request_error(const banyan::context::reply_handler& on_reply, const std::string& what,
                        std::chrono::milliseconds timeout, const caf::error& e);
  // `remote`: the message came from another node (its handler must not block on a node link).
  void deliver(const route_info& info, const payload& data, std::uint64_t sequence, std::uint32_t index, bool remote);
  // Live moves (gateway_move.cpp): this incarnation hands its state over and goes idle.
  std::shared_ptr<vertex_state> move_out();
  void resume();

  std::shared_ptr<run_state> state_;
  vertex_id vertex_;
  caf::actor_addr parent_;
  std::unique_ptr<component> user_;
  std::unique_ptr<banyan::context> ctx_;
  std::unique_ptr<outbound_gate> gate_;  // everything that may leave this node goes through it
  supervisor supervisor_;
  bool reported_started_ = false;
  // Flow control (see pause()): after a publish found a target's backlog or a node link full.
  caf::message_handler main_;  // the behaviour; paused: a few skips in front of it
  bool paused_ = false;
  bool behavior_ready_ = false;      // become() is usable (false while make_behavior runs)
  std::uint64_t calls_ = 0;          // calls into the component's code in this run of the actor (resume)
  std::int64_t delivered_ = 0;       // deliveries handled in this run of the actor
  bool in_remote_delivery_ = false;  // handling a message from another node: never block the thread

  std::unordered_map<subscription_id, banyan::context::handler> handlers_;
  std::unordered_map<subscription_id, std::string> filters_;  // what a live move carries
  // Arrived by a live move: the subscriptions of the incarnation that left, taken over by filter
  // by this one's subscribe calls (in restore and on_start); the rest are dropped after on_start.
  std::vector<std::pair<subscription_id, std::string>> adopt_;
  bool arrived_ = false;
  std::shared_ptr<std::atomic<bool>> moved_ = std::make_shared<std::atomic<bool>>(false);  // left by a live move
  std::unordered_map<std::string, banyan::context::service> services_;
  std::unordered_map<std::uint64_t, banyan::context::down_handler> monitors_;  // by id (watchers.hpp)
  route_cache routes_;                                                         // this component's publishes
  std::uint64_t sequence_ = 0;
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
