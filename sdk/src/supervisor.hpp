// The supervision of one component incarnation's children (docs/sdk.md, "Supervision"): OTP's
// rules in one class. Children start one at a time in declaration order, each whole subtree before
// the next sibling. A child that fails or stops is restarted as its restart type and the parent's
// strategy say, within the intensity limit, after the backoff, and past the limit the parent
// escalates. On shutdown the children stop in reverse order, each one's exit awaited. Private to
// the SDK.
//
// A child runs here (an actor, linked and monitored) or on another node. Its node runs it, numbered
// by generation, and reports its start and its end; the component's outbound gate starts and stops
// it there. A supervisor belongs to its component actor and is used only from that actor's handlers.
#pragma once

#include "banyan/broker/placement.hpp"
#include "banyan/broker/tree.hpp"
#include "banyan/sdk/error.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace banyan::detail {

class component_actor;
class outbound_gate;
class run_state;

class supervisor {
 public:
  // `initial`: this incarnation is part of the run's first start (each node starts its own part of
  // the tree then); a restart's incarnations ask the nodes of their remote children to start them.
  supervisor(component_actor& self, outbound_gate& gate, bool initial);

  // The incarnation starts: prepare() before its on_start (a start_child made there marks a dynamic
  // child, which then starts with the others), start_children() after it.
  void prepare();
  void start_children();

  result<void> start_dynamic(std::string_view name);  // ctx.start_child
  result<void> stop_dynamic(std::string_view name);   // ctx.stop_child

  // What the actor hears about its children.
  void child_started(vertex_id child);                                       // started_atom
  void remote_child_started(vertex_id child, std::uint64_t generation);      // rstarted_atom
  void child_gone(const caf::actor_addr& source, const caf::error& reason);  // its exit or down message
  void remote_child_failed(vertex_id child, std::uint64_t generation, const std::string& reason);
  void remote_child_stopped(vertex_id child, std::uint64_t generation);  // it called ctx.stop()
  // Its node `lost` is gone (ignored when the child no longer runs there: failed over already).
  void child_lost(const std::string& child_path, node_id lost, const std::string& reason);
  // Its node came back after it was lost (a new incarnation, taken back: nothing of it failed over)
  // and started it afresh, as at the run's start: that incarnation (1) is the child's, unless a start
  // was asked for since. A restart it waited for is over.
  void remote_child_back(vertex_id child);
  // A failover placed the lost children's subtrees on survivors (where() says which; `reasons`, one
  // per child, say so): restarted there as their restart types and this supervisor's strategy say,
  // within the intensity limit, as children that failed at one moment.
  void children_failed_over(const std::vector<vertex_id>& children, const std::vector<std::string>& reasons);
  // A live move: the child now runs on `to` (a local spawn when that is this node).
  void child_moved(vertex_id child, node_id to, std::uint64_t generation);
  // A local child went to sleep (its node's gateway keeps its state): its incarnation ends quietly
  // and none is started until it wakes (child_moved to this node, or to another).
  void child_asleep(vertex_id child);
  void backoff_over();  // restart_atom

  // The incarnation fails or is stopped by its own supervisor: its remote children go too (its
  // local ones go with it by their links).
  void stop_remote_children();
  // An orderly end (shutdown_atom, ctx.stop()): children in reverse order, then on_stop, then quit.
  void begin_shutdown(bool urgent);
  bool shutting_down() const { return shutting_down_; }

  void clear();  // the actor exits: drop every handle

 private:
  struct child {
    vertex_id vertex;
    caf::actor actor;
    bool stopping = false;  // stopped on purpose: its exit is not a failure
    bool remote = false;
    bool remote_up = false;                         // remote: an incarnation is running (or starting)
    std::uint64_t generation = 1;                   // remote: of that incarnation
    bool active = true;                             // false: a dynamic child not started (or stopped by stop_child)
    bool waiting = false;                           // a dynamic start held by the gate until its node is ready
    bool lost = false;                              // running when its node was lost (child_lost told the user)
    std::chrono::steady_clock::time_point spawned;  // its last start, for the profile's start time
  };
  static constexpr std::size_t none = ~std::size_t{0};

  std::size_t dynamic_child(std::string_view name) const;  // none if no such
  error no_dynamic_child(std::string_view name) const;
  void release(std::size_t i);      // a held dynamic start: its node is ready
  void queue(std::size_t i);        // to start, in declaration order among the pending
  bool spawn_child(std::size_t i);  // true: wait for its start before the next one
  void spawn_local(child& c, bool initial);
  void spawn_next();
  void timed_start(const child& c);  // its subtree started: the profile's start time
  void stop_child(child& c);
  // A child ended: after a failure (`failure`: on_child_failure with `reason`, then per its restart
  // type) or normally by ctx.stop() (restarted only if permanent). `was_starting`: it ended while it
  // was starting (its later siblings wait for it). `counts`: against the intensity limit (false for
  // the second and later children lost with one node).
  void supervise(std::size_t i, const std::string& reason, bool failure = true, bool was_starting = false,
                 bool counts = true);
  // Remote incarnation `generation` of `child` ended: its index, or none when that incarnation was
  // stopped or replaced already, or this one is shutting down. `was_starting` as for supervise().
  std::size_t remote_child_ended(vertex_id child, std::uint64_t generation, bool& was_starting);
  void ended_normally(std::size_t i, bool was_starting);  // ctx.stop(): only a permanent child restarts
  void shutdown_next();

  component_actor& self_;
  outbound_gate& gate_;
  run_state& state_;
  vertex_id vertex_;
  bool initial_;
  std::vector<child> children_;
  std::vector<std::size_t> pending_;  // children still to start, ascending
  std::size_t starting_ = none;       // the child whose start we are waiting for
  bool in_on_start_ = false;
  std::deque<std::chrono::steady_clock::time_point> restarts_;
  bool backing_off_ = false;   // a restart waits for its backoff (restart_atom)
  bool held_by_gate_ = false;  // spawn_next waits for a failover's go (gate_.starts_held())
  bool shutting_down_ = false;
  bool urgent_ = false;  // stopping on a signal: ahead of queued messages
};

}  // namespace banyan::detail
