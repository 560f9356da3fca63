// The gateway: the one actor that handles everything arriving from other nodes, in arrival order
// (a peer's `ready` must not overtake the subscriptions sent before it, nor `quit` the data).
// Private to the SDK; node_runtime starts it (node.hpp), docs/runtime.md "How a node works".
//
// It owns the inbound side of a node: it replicates peers' subscriptions into the routing table,
// routes data envelopes through the routing front (route_front.hpp) to local targets and on to
// further nodes, holds data that arrives before this node is cluster-ready (early data) until the
// last peer's `ready`, serves requests for local components and hands replies to node_runtime.
//
// It is also the local stand-in for remote supervisors: it starts (host_atom) and supervises the
// node's hosted roots, the components whose parent runs on another node. It reports each one's
// start and failure to the parent's node and starts or stops incarnations when the parent's node
// asks (node_wire.hpp's child_* kinds), so a remote supervisor acts on them as on a local child.
// It also keeps monitors across nodes: a peer's component watching one of ours (`monitor`), and
// the news of a remote watched component's end for one of ours (`down`). At the run's end (shutdown_atom) it stops them
// and reports each one's end to completion.hpp as a root's.
//
// Thread-safety: all of its state (route cache, early data) belongs to the gateway actor;
// node_runtime's transport callback (the I/O thread) only enqueues envelopes to it (remote_atom).
#pragma once

#include "move_state.hpp"
#include "node_wire.hpp"
#include "route_front.hpp"

#include "banyan/runtime/transport.hpp"

#include <caf/all.hpp>

#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace banyan::detail {

class node_runtime;
class run_state;

using movelimit_atom = caf::atom_constant<caf::atom("movelimit")>;  // epoch: the move's pause limit passed
using earlymove_atom = caf::atom_constant<caf::atom("earlymove")>;  // epoch: a freeze that should have come
using orphans_atom = caf::atom_constant<caf::atom("orphans")>;      // an incarnation ended with publishes held

// A failover this node takes part in (gateway_failover.cpp). Outside the gateway class: clang
// cannot tell an optional of a nested struct with member initializers default-constructible there.
struct failover_run {
  std::uint64_t epoch = 0;
  node_id lost = 0;
  node_id coordinator = 0;
  std::vector<node_id> before;     // the assignment when the node was lost
  std::vector<bool> applied_from;  // the coordinator's: per node
};
// A live move, sleep or wake this node takes part in (gateway_move.cpp, gateway_sleep.cpp). Outside
// the gateway class for the same reason as failover_run.
struct live_move {
  std::uint64_t epoch = 0;
  node_id coordinator = 0;
  // What the freeze said moves where (every node knows it): a `moved` may name only that subtree,
  // from that node (or from the coordinator, which takes it back when that node is lost).
  vertex_id subtree = no_vertex;
  node_id destination = 0;
  bool barrier_done = false;
  std::vector<bool> frozen_from, quiet_from, acked_from;  // per node
  bool quiet_sent = false;
  // The coordinator's part:
  vertex_id root = 0;
  node_id from = 0, to = 0;
  std::uint64_t answer = 0;  // node_runtime::answer_move's token
  std::chrono::steady_clock::time_point began;
  std::uint64_t state_bytes = 0;
  std::size_t components = 0;
  // The moved components whose snapshot() gave nothing: they start afresh on the new node, and
  // the move says so (a stateful component that cannot snapshot loses its state).
  std::vector<std::string> without_state;
  bool handed = false, moved_out = false;
  std::string shipped;  // the encoded states, until the destination has them running
  std::vector<std::pair<std::string, runtime::envelope>> handed_held;  // the held data that followed them
  std::uint64_t generation = 0;
  std::string aborted;  // why the subtree stayed (the move's error)
  // The destination's part:
  bool arriving = false, arrived = false, handed_marker = false, announced = false;
  std::size_t handed_data = 0;  // data the old node handed over, at the front of early_data_
  // A sleep (the states stay here) or a wake (the states come from here), not a move.
  bool sleep = false, wake = false;
  std::size_t held = 0;     // a wake: what it handed to the woken subtree
  double held_wait_ms = 0;  // a wake: the longest any of it waited
  double wake_ms = 0;       // a wake here: from its ask until the subtree served
};
struct pending_plan {  // a failover plan that came before this node found the loss itself
  std::uint64_t epoch = 0;
  node_id coordinator = 0, lost = 0;
  std::vector<node_id> next;
  std::string refused;  // not empty: no plan, the lost subtrees fit on no survivor (why)
};

// Something that reached a sleeping subtree, held by its node's gateway until the subtree is awake
// (gateway_sleep.cpp): a message for one of its components, or a request to one, from another node
// (its envelope) or from this one (its response promise).
struct held_delivery {
  enum class kind : std::uint8_t { data, remote_request, local_request };
  kind what = kind::data;
  vertex_id target = 0;
  std::chrono::steady_clock::time_point since;
  std::shared_ptr<const routed_message> message;  // data
  std::uint32_t index = 0;                        // data: the target's, in the route's plan
  std::string peer;                               // remote request: from
  runtime::envelope request;                      // remote request
  caf::response_promise promise;                  // local request
  std::string method;                             // local request
  payload data;                                   // local request
  vertex_id requester = 0;                        // local request
};
// A subtree asleep on this node: its states (move_state.hpp's encoding) and what waits for it.
struct sleeper {
  std::string states;
  std::uint64_t generation = 0;  // a hosted root's incarnation when it went to sleep
  std::chrono::steady_clock::time_point since;
  std::vector<held_delivery> held;
  bool waking = false;       // a wake is asked for (or on its way)
  bool starting = false;     // its new incarnation starts here (asleep to senders until the switch-over)
  bool started = false;      // and has started: the switch-over pause hands it the held work
  std::uint64_t answer = 0;  // the token of the wake asked for by the control channel (0: on demand)
  std::chrono::steady_clock::time_point wake_began;
};
// A standing keep-alive (`sleep PATH KEEP_ALIVE`): once woken on demand, the subtree sleeps again
// after this long without a message handled.
struct keep_alive {
  std::chrono::milliseconds idle{0};
  bool watching = false;   // awake on demand: idle time counts
  std::uint64_t seen = 0;  // messages handled by the subtree at the last look
  std::chrono::steady_clock::time_point last_change;
};

// A class, not a spawned function: CAF 0.17's function-actor factory dereferences an empty
// argument tuple, which UBSan reports.
class gateway_actor final : public caf::event_based_actor {
 public:
  gateway_actor(caf::actor_config& cfg, run_state* state, node_runtime* node);
  caf::behavior make_behavior() override;
  const char* name() const override { return "banyan.gateway"; }
  // Up to `messages_per_turn` messages a turn on a scheduler thread, not the scheduler's 100.
  resume_result resume(caf::execution_unit* unit, std::size_t max_throughput) override;
  static constexpr std::size_t messages_per_turn = 10000;

 private:
  void dispatch(const std::string& peer, runtime::envelope& e);
  void on_ready(const std::string& peer);
  void on_node_back(node_id n);  // a lost node is back (a new incarnation): supervision across it starts afresh
  void on_subscription(const std::string& peer, runtime::envelope& e);
  void on_data(const std::string& peer, runtime::envelope& e);
  // A message that enters this node at `entry` (over the edge from `from`): to the local targets
  // and on to the next nodes. `receipt`: the upstream link's, held until they have it.
  result<void> route_here(const std::string& topic, vertex_id publisher, vertex_id scope, vertex_id entry,
                          vertex_id from, const payload& data, std::uint64_t sequence,
                          const std::shared_ptr<const void>& receipt);
  // Publishes of ended incarnations (orphaned_publishes) whose component runs nowhere here now:
  // sent on their behalf once the cluster is ready and not paused.
  void release_orphans();
  void serve_request(const std::string& peer, runtime::envelope& e);
  void on_undelivered(const std::string& peer, runtime::envelope& e);
  // A copy this node could not forward (its next node is gone): counted per publisher and node, and
  // the publishers told together a moment later, not once per message.
  void unforwarded(vertex_id publisher, node_id to, const std::string& why);
  void tell_unforwarded();
  void log_dropped(const std::string& peer, const std::string& why);
  // Authority from the deployment: why `from` may not send `e`, or nothing (gateway.cpp).
  std::string unauthorised(node_id from, const runtime::envelope& e);
  void refuse_unauthorised(const std::string& peer, const runtime::envelope& e, const std::string& why);
  void refuse(const std::string& peer, const std::string& why);  // a malformed envelope: counted, logged rate-limited
  // Supervision of hosted roots.
  struct hosted {
    vertex_id vertex;
    caf::actor actor;              // the running incarnation (invalid: none)
    std::uint64_t generation = 1;  // of that incarnation, or of the one to start (1: the one this node starts itself)
    caf::actor exiting;            // an incarnation stopped on purpose whose exit has not come yet
    bool start_pending = false;    // start a new incarnation when `exiting` has gone
    bool counted_started = false;  // reported to completion's start latch
    bool arrived = false;          // brought by a live move: its start is no supervisor's
  };
  hosted* hosted_of(vertex_id v);
  void start_hosted(hosted& h, std::uint64_t generation, bool initial);
  void stop_hosted(hosted& h);
  void on_hosted_started(vertex_id v);
  void on_hosted_gone(const caf::actor_addr& source, const caf::error& reason);
  void on_child_command(const std::string& peer, runtime::envelope& e);
  void on_child_report(const std::string& peer, runtime::envelope& e);
  void on_monitor(const std::string& peer, runtime::envelope& e);  // monitors across nodes
  void on_down(const std::string& peer, runtime::envelope& e);
  void report(wire_kind kind, vertex_id v, std::uint64_t generation, std::string text = {});
  void shutdown_hosted(bool urgent);
  void release_held();  // the cluster is ready (again): held reports and early data go on

  // Live moves (gateway_move.cpp). The source node coordinates: freeze, quiet, move out, hand over,
  // moved, thaw. Every node takes part in the freeze and learns the new place.
  void on_move(const std::string& peer, runtime::envelope& e);
  // The coordinator: every other node freezes for move_'s subtree and destination.
  void send_freeze();
  // A move step `from` may not send (docs/runtime.md "What a peer may send"): why, or empty.
  std::string move_unauthorised(node_id from, move_step step, std::uint64_t epoch) const;
  // The root's node: a freeze from a node without the lease is called off on every node.
  void call_off(node_id from, std::uint64_t epoch);
  void remember_called_off(std::uint64_t epoch);
  // A move state made by an early `frozen` whose freeze never came is dropped (a forged one).
  void check_early_move(std::uint64_t epoch);
  // `answer`: node_runtime::answer_move's token for the move's outcome (0: nobody asks).
  void start_move(const std::string& path, const std::string& to, std::uint64_t answer);
  void refuse_change(const char* what, const std::string& path, std::uint64_t answer, const std::string& why);
  void freeze(std::uint64_t epoch, node_id coordinator);
  void check_quiet();
  void move_out();
  void hand_over(std::vector<std::shared_ptr<vertex_state>> states);
  void revert();  // the new node was lost after the hand-over: the subtree starts here again
  void take_over(vertex_id root, node_id from, std::uint64_t generation, std::string_view bytes);
  // The kept states (keep_state) among `states` go to this node's durable store (--state-dir).
  void make_durable(const std::vector<vertex_state>& states);
  void start_arrived(vertex_id root, std::uint64_t generation);
  void announce_moved();
  void settle(vertex_id root, node_id to);
  void maybe_thaw();
  void thaw_here();
  void end_move(std::string error);
  void on_peer_lost(node_id n);
  void on_move_limit(std::uint64_t epoch);
  std::chrono::milliseconds pause_limit() const;
  void send_move(node_id to, std::uint16_t step, std::string target = {}, std::string text = {},
                 std::uint64_t generation = 0, std::string payload = {});
  std::optional<live_move> move_;

  // Hibernate and wake (gateway_sleep.cpp, docs/runtime.md "Hibernate and wake"). A sleep is a move
  // that keeps the states here instead of shipping them; a wake is a move whose states come from
  // here, to this node or another. Both pause the deployment as a move does, so nothing sent to the
  // subtree passes what was held for it.
  void start_sleep(const std::string& path, std::chrono::milliseconds keep, std::uint64_t answer);
  void start_wake(const std::string& path, const std::string& to, std::uint64_t answer);
  // A wake here: the subtree starts from its states while senders still go to the hold; once it has
  // started, a short pause (switch_over) hands it the held work, ahead of anything newer.
  void start_here(vertex_id root);
  void switch_over(vertex_id root);
  void put_to_sleep();
  void release_sleeper(vertex_id root);  // the woken subtree runs here: what was held goes to it
  // Hands held work to the running targets, in order: how many pieces and the longest wait (ms).
  std::pair<std::size_t, double> hand_on(std::vector<held_delivery> held);
  // Supervision of a sleeping hosted root (node_wire.hpp's child_start, child_stop): it wakes first.
  std::vector<std::pair<std::string, runtime::envelope>> deferred_commands_;
  void hold(held_delivery d);  // for a sleeping target: held, and its subtree woken
  void on_hold_request(vertex_id target, held_delivery d);
  vertex_id sleeping_root_of(vertex_id v) const;  // the root of v's sleeping subtree (no_vertex: awake)
  void check_keep_alive();
  void wake_out();                          // a wake's move-out: the states kept here go to their node
  void log_sleep_or_wake(double pause_ms);  // end_move's line for a sleep or a wake
  void wake_failed(vertex_id root);         // the deployment did not pause: held work waits for a retry
  // Node time: how long this node ran any component (awake) since its start, for the cost of a
  // periodic plan (docs/runtime.md, "Hibernate and wake"); recounted at each thaw, logged at the end.
  void count_node_time();
  std::chrono::steady_clock::time_point node_time_since_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point in_use_since_ = node_time_since_;
  bool in_use_ = true;
  double in_use_seconds_ = 0;
  std::map<vertex_id, sleeper> sleeping_;
  std::map<vertex_id, keep_alive> keep_alive_;
  bool keep_alive_ticking_ = false;

  // Failover (gateway_failover.cpp, docs/runtime.md "Failover"): the root's node places the subtrees
  // a lost node hosted on the survivors (partitioner::place_lost) and sends the new assignment to
  // every survivor; each applies it (where, the lost components' subscriptions, its hosted roots)
  // and says so; with every survivor's word the root's node says go, and each supervisor of a lost
  // child restarts it where it now belongs, as its restart type and strategy say.
  void on_failover(const std::string& peer, runtime::envelope& e);
  void start_failover(node_id lost);
  void apply_failover(node_id lost, std::vector<node_id> next);
  // The lost components that restart here take their last durable state (run_options::state_dir).
  void restore_lost_states(node_id lost, const std::vector<node_id>& before, const std::vector<node_id>& next);
  void check_failover_applied();
  void failover_go();
  // No survivor can take the lost subtrees (capacity): each supervisor of one restarts it as for
  // any failure, on its lost node, where the start fails at once, until its intensity limit
  // escalates (the app is told, as OTP tells it; nothing waits for a start that cannot come).
  void failover_refused(node_id lost, const std::string& why);
  // Each local parent of a lost subtree's root hears of all its lost children at once.
  void tell_parents_of_lost(const std::vector<node_id>& before, node_id lost, const std::string& reason_prefix);
  void send_failover(node_id to, failover_step step, std::string payload = {});
  // The same for failover `epoch` of lost node `lost` (send_failover: the current one's).
  void send_failover_step(node_id to, failover_step step, std::uint64_t epoch, node_id lost, std::string payload = {});
  void next_failover();  // a failover or move that waited for this one
  std::optional<failover_run> failover_;
  // The root's node: failovers it coordinated and ended (epoch -> the lost node). A survivor whose
  // `applied` comes after the go (it was not ready when the go went) is told go then.
  std::map<std::uint64_t, node_id> failovers_done_;
  std::vector<node_id> failovers_waiting_;  // the coordinator's: lost nodes whose failover waits
  // A survivor applies a plan only once it has found the loss itself (node_runtime::on_peer_down
  // tells its components what ran there first, from the assignment before the plan).
  std::vector<bool> loss_seen_;
  std::optional<pending_plan> pending_plan_;
  void take_plan(pending_plan p);
  bool loss_found(node_id lost) const;
  struct waiting_move {
    std::string path, to;
    std::uint64_t answer;
    char kind;                       // 'm' move, 's' sleep, 'w' wake
    std::chrono::milliseconds keep;  // a sleep's keep-alive
  };
  void start_next(waiting_move next);
  // The deployment's one pause at a time (node_wire.hpp's lease steps). take_lease: true when this
  // node holds it; else `then` waits (in waiting_moves_) and the lease is asked for. The root's node
  // grants it in the order asked.
  bool take_lease(waiting_move then);
  void give_lease_back();
  void on_lease(node_id from, move_step step, std::uint64_t id);
  void lease_granted();
  void run_waiting();
  // A move step that carries only its id: the lease's steps (the request's id), a call-off's thaw.
  void send_step(node_id to, move_step step, std::uint64_t id);
  bool lease_held_ = false, lease_asked_ = false;
  std::uint64_t lease_request_ = 0;
  std::optional<node_id> lease_holder_;                         // the root's node: who holds it
  std::vector<std::pair<node_id, std::uint64_t>> lease_queue_;  // the root's node: who waits, in order
  std::vector<waiting_move> waiting_moves_;                     // asked while a move was on
  std::uint64_t next_epoch_ = 1;
  std::uint64_t superseded_epoch_ = 0;  // a move that ended here when the next one's freeze overtook its thaw
  // Pauses the root's node called off (a freeze from a node without the lease): a freeze of one of
  // them that arrives after the call is not obeyed.
  std::vector<std::uint64_t> called_off_;

  run_state* state_;
  node_runtime* node_;
  route_cache routes_;                                                 // by topic, publisher, scope, entry, from
  std::vector<std::pair<std::string, runtime::envelope>> early_data_;  // before cluster-ready, in order
  std::map<vertex_id, std::uint64_t> undelivered_told_;                // per local publisher: copies reported lost
  std::uint64_t malformed_ = 0;                                        // envelopes refused by check() (node_wire.hpp)
  struct lost_copies {
    std::uint64_t count = 0;
    std::string why;
  };
  std::map<std::pair<vertex_id, node_id>, lost_copies> unforwarded_;  // by publisher and next node
  std::vector<hosted> hosted_;
  bool shutting_down_ = false;
  // Reports to supervisors made before this node was cluster-ready (the links may not be up yet).
  struct held_report {
    wire_kind kind;
    vertex_id vertex;
    std::uint64_t generation;
    std::string text;
  };
  std::vector<held_report> held_reports_;
};

}  // namespace banyan::detail
