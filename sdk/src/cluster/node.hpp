// Multi-node mode of banyan::run: this process is one node of a deployment. node_runtime owns the
// node's links (the transport) and everything outbound: data hops, subscriptions, `ready`, `quit`,
// requests and replies; flow control on links (paused publishers waiting for credit); the table of
// requests awaiting a reply; per-link counters. What arrives is the gateway's (gateway.hpp); the
// wire use of envelopes is node_wire.hpp. Private to the SDK.
//
// Thread-safety: every public member may be called from any thread (component actors, the gateway,
// the transport's I/O thread, banyan::run's threads) except where a comment says otherwise; the
// requests table and the ready set have their own mutexes, counters are atomics.
#pragma once

#include "deployment.hpp"
#include "node_wire.hpp"
#include "resume_list.hpp"

#include "banyan/broker/placement.hpp"
#include "banyan/broker/profile.hpp"
#include "banyan/runtime/transport.hpp"
#include "banyan/sdk/app.hpp"
#include "banyan/sdk/payload.hpp"

#include <caf/all.hpp>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace banyan::detail {

class run_state;

class node_runtime {
 public:
  node_runtime(run_state& state, resolved_deployment d);
  ~node_runtime();

  // Starts the transport and the gateway actor (which handles everything that arrives), with the
  // run's heartbeat timeout, start timeout and payload limit, and the deployment's digest.
  result<void> start(caf::actor_system& system, const run_options& options);
  // Called when every local subtree has started: once all peers are up, sends them our subscriptions
  // followed by `ready`. Runs on the caller's thread (blocks until peers are up, or the run ends).
  // When they are not all up within the start timeout, or one runs another deployment, it records
  // the error (start_error) and ends the run.
  void announce_ready();
  // Why the node could not join the others (empty: it did, or has not tried yet).
  std::string start_error() const;
  // The largest payload a publish or request may carry (run_options::max_payload_bytes).
  std::size_t max_payload_bytes() const { return max_payload_bytes_; }
  // What every node of one deployment computes alike: the tree, the nodes, their endpoints and
  // public keys, the assignment and the routing mode; exchanged in the handshake.
  static std::uint64_t digest_of(const resolved_deployment& d, const component_tree& tree, routing_mode mode);
  void stop();

  const resolved_deployment& deployment() const { return deployment_; }
  const std::string& self_name() const { return deployment_.names[deployment_.self]; }
  // Where components run now: the deployment's assignment, changed by live moves (locality.hpp).
  bool is_local(vertex_id v) const;

  // Sends a data envelope for a hop of a route (from the publisher's or the gateway's actor).
  // `receipt` is the delivery receipt of the message being forwarded (kept until `h.node` has
  // delivered it); `block_at` as in transport::send.
  result<void> forward(const hop& h, const std::string& topic, vertex_id publisher, vertex_id scope,
                       std::uint64_t sequence, const payload& data, std::shared_ptr<const void> receipt,
                       std::size_t block_at);

  // Tells a publisher that `count` of its messages will not arrive: lost on the way to node `lost`,
  // because `reason`. A local publisher hears it in component::on_undelivered; for one on another
  // node an `undelivered` envelope goes to its node (node_wire.hpp), whose gateway hands it on. So a
  // copy lost on a node that was forwarding it (hier routing) reaches its publisher too.
  void tell_publisher(vertex_id publisher, const std::string& lost, std::uint64_t count, const std::string& reason);
  const std::string& name_of(node_id node) const { return deployment_.names[node]; }

  // Request/reply across nodes. The requester's actor later gets exactly one
  // `reply_atom, id, errc, message, payload` (errc::ok-like 0 on success) unless it gave up first
  // (forget_request, on its own timeout).
  result<void> send_request(vertex_id requester, vertex_id target, const std::string& method, const payload& data,
                            std::chrono::milliseconds timeout, std::uint64_t id, caf::actor reply_to,
                            std::size_t block_at);
  void forget_request(std::uint64_t id);
  // A `reply` envelope back to the requesting node (from the gateway); `text` says why when `code`
  // is not ok (node_wire.hpp).
  void send_reply(const std::string& peer, std::uint64_t id, reply_code code, std::string text, const payload& data);
  // Hands a `reply` envelope to the requester that is still waiting for it (from the gateway).
  void take_reply(runtime::envelope& e);
  // Whether node `from` may answer request `id`: the node it was sent to, or the one its target
  // runs on now or ran on before a live move passed it on (an unknown id changes nothing).
  bool reply_expected_from(std::uint64_t id, node_id from) const;
  std::uint64_t next_request_id() { return next_request_.fetch_add(1, std::memory_order_relaxed); }

  // Flow control for publishers (see component_actor::pause): whether a send to `node` would wait
  // for credit, and a `resume` message to `who` once it would not (or the node is lost, or the run
  // ends).
  bool link_full(node_id node) const;
  void resume_when_credit(node_id node, caf::actor who);
  // A publisher blocks its thread only past this many envelopes outstanding on a link.
  static constexpr std::size_t credit_window = 1024, publisher_block_at = 8 * credit_window;
  // Wakes every waiting publisher, now and from now on (the run is ending).
  void release_publishers();
  void broadcast_subscribe(subscription_id id, vertex_id subscriber, const std::string& filter);
  void broadcast_unsubscribe(subscription_id id);
  // Ends every node; `urgent` (a signal) makes them stop ahead of queued messages too.
  void broadcast_quit(int exit_code, bool urgent);

  // Supervision across nodes (node_wire.hpp's child_* kinds). send_child sends one to the node of
  // `child` (start, stop) or of its parent (started, failed); never waits for credit. A send to a
  // gone node is logged and dropped: that node's loss reaches the supervisor as on_child_failure.
  void send_child(wire_kind kind, vertex_id child, std::uint64_t generation, std::string text = {});
  // A new generation for the next incarnation of remote child `v` (1 is the one its node starts
  // itself). Called by v's supervisor only, so successive supervisor incarnations never reuse one.
  // Monitors across nodes (node_wire.hpp's monitor and down kinds): asks the node of `watched` to
  // report its ends to `watcher` (here) under monitor `id`; and tells node `to` that an incarnation
  // of local `watched` ended. Never wait for credit; a send to a gone node is dropped (the run is
  // ending, or that node is lost and its watchers with it).
  // `starting`: made while the cluster was starting, so the ends of `watched` before its node was
  // ready are news too.
  void send_monitor(vertex_id watcher, vertex_id watched, std::uint64_t id, bool starting);
  void send_down(vertex_id watched, std::uint32_t to, vertex_id watcher, std::uint64_t id, std::string reason);
  std::uint64_t next_generation(vertex_id v) { return generations_[v].fetch_add(1, std::memory_order_relaxed) + 1; }

  // The node's roots other than the tree's (parents on other nodes) are the gateway's: it starts
  // them (once, after start()) and stops them at the run's end, reporting each one's end to the
  // run's completion latch as a root's (gateway.hpp).
  // Live moves: a moved subtree has started here (its root's actor); the control channel asks this
  // node to move one of its subtrees (docs/runtime.md "Moving subtrees live"; the gateway runs the
  // move) and gets its outcome, a JSON object, through `answer` exactly once, on the gateway's thread.
  void arrived(vertex_id v);

  // The cluster start is over (every node has been ready once): `then` runs now if it is, else once
  // it is, on the thread that saw it (the control channel's `started` request waits on this).
  void when_started(std::function<void()> then);
  // run_state's, when every node is ready for the first time: the gateway and those waiting hear it.
  void started();
  // The same for a sleep (`arg`: the keep-alive in milliseconds, or empty) and a wake (`arg`: the
  // node to wake on, or empty for where it sleeps); docs/runtime.md "Hibernate and wake".
  enum class change { move, sleep, wake };
  void request_change(change kind, std::string path, std::string arg, std::function<void(std::string)> answer);
  // Where every component runs now, as this node knows it (after moves and failovers): JSON
  // {"assignments": {path: node}}, the tree's root and every component whose node differs from its
  // parent's (a deployment file's minimal assignments). Any thread.
  std::string assignment_json() const;
  void answer_move(std::uint64_t token, std::string answer);  // the gateway's side of request_change
  // A control envelope to one peer (never waits for credit); a send to a gone peer is logged and dropped.
  void send_control(node_id to, runtime::envelope e);
  routing_mode mode() const;

  // The gateway actor (set by start(), before any component starts): what reaches a sleeping
  // subtree goes to its hold (gateway_sleep.cpp).
  const caf::actor& gateway() const { return gateway_; }
  void host_roots();
  void shutdown_hosted(bool urgent);

  // Called by the gateway, in arrival order. A peer ready after the cluster is: it joined (a node
  // with `join: later`, or one back after it was lost); every local component hears of it. True
  // when it is one back after it was lost (a new incarnation, taken back).
  bool peer_ready(const std::string& peer);
  // Whether node `n` is linked and ready now (this node: always).
  bool node_ready(node_id n) const;
  // Node `n` was lost and no survivor can take what it ran (the gateway's failover refusal): a
  // child start sent there fails the child at once (send_child) instead of waiting for a failover.
  void refuse_starts_on(node_id n);
  // Between a failover's new assignment and its go (the gateway): a child start held for a lost
  // node waits for the go, as the restarts do (its new subscriptions must not be dropped with the
  // lost incarnation's on a survivor that has not applied the failover yet).
  void set_failing_over(bool on) { failing_over_ = on; }
  bool failing_over() const { return failing_over_; }
  bool late(node_id n) const { return n < deployment_.late.size() && deployment_.late[n]; }
  // `peer` ended the run: logged as `node `peer` ended the run with exit code N` (an error when N is
  // not 0), the line `banyan launch` reads to tell the node that failed from those it stopped.
  void peer_quit(const std::string& peer, int exit_code, bool urgent, const std::string& reason = {});

  // Data envelopes sent to each node (index = node), for the profile's `links`.
  std::vector<link_traffic> data_links() const;
  // Read-only, for the live profile's link health (banyan launch --dashboard): the transport's
  // counters of the link to node `n` (zeros for this node and before start()), and how many times a
  // publisher paused for credit so far, on any link. Safe from any thread.
  runtime::link_stats link_health(node_id n) const {
    return n == deployment_.self || !transport_ ? runtime::link_stats{} : transport_->stats(deployment_.names[n]);
  }
  std::uint64_t publisher_pauses() const { return pauses_.load(std::memory_order_relaxed); }
  // The index of node `peer` (this node's own for an unknown name).
  node_id index_of(const std::string& peer) const;
  // The root's node: a lost peer that comes back while the components its deployment gives it run
  // elsewhere (failed over) is told to end, and true; otherwise false.
  bool refuse_returning(const std::string& peer);
  // An envelope that `peer`'s place in the deployment does not allow it to send (the gateway's
  // authority check): counted per peer and kind for the summary; returns the count so far.
  std::uint64_t count_refused(node_id peer, const std::string& kind);
  // What count_refused counted so far: per (peer, kind).
  std::map<std::pair<node_id, std::string>, std::uint64_t> refused_counts() const;

 private:
  void on_envelope(const std::string& peer, runtime::envelope&& e);
  void on_peer_up(const std::string& peer);
  // A peer given up and heard again with the same incarnation (stopped or cut off, not restarted).
  void on_peer_returned(const std::string& peer);
  // The root's node does not take node `n` back: it tells it to end (exit 2), saying `why`, and no
  // longer counts its `ready`.
  void tell_to_end(node_id n, std::string why);
  // The cluster is ready once this node has announced itself and every required peer said ready.
  void check_cluster_ready();
  void on_peer_down(const std::string& peer, const std::string& reason);
  void on_undelivered(const std::string& peer, std::vector<runtime::envelope>& lost, const std::string& reason);
  void on_credit(const std::string& peer);
  void fail_requests_to(node_id node, const std::string& why);
  void send_to_all(const runtime::envelope& e);
  void log_summary();

  std::mutex started_mutex_;
  bool started_ = false;
  std::vector<std::function<void()>> when_started_;  // under started_mutex_
  std::mutex answers_mutex_;
  std::unordered_map<std::uint64_t, std::function<void(std::string)>> answers_;  // request_change's, by token
  std::uint64_t next_answer_ = 1;

  run_state& state_;
  resolved_deployment deployment_;
  std::unique_ptr<runtime::transport> transport_;
  caf::actor gateway_;
  std::atomic<bool> announced_{false};
  std::atomic<bool> quitting_{false};
  std::atomic<bool> stopped_{false};
  std::atomic<bool> failing_over_{false};
  mutable std::mutex ready_mutex_;
  std::vector<bool> ready_;         // per node: said ready and not lost since (under ready_mutex_)
  std::vector<bool> lost_;          // per node: lost at least once (under ready_mutex_)
  std::vector<bool> refused_;       // per node: lost with no failover (under ready_mutex_)
  std::vector<bool> refused_back_;  // per node: came back and was told to end (under ready_mutex_)
  std::vector<bool> required_;      // per node: waited for at start (set in start())
  resume_list waiters_;             // paused publishers, by congested link
  std::atomic<std::uint64_t> pauses_{0};
  std::atomic<std::uint64_t> undelivered_{0};  // data envelopes handed back by gone peers
  mutable std::mutex refused_mutex_;
  std::map<std::pair<node_id, std::string>, std::uint64_t> refused_by_;  // count_refused()
  struct pending_request {
    caf::actor reply_to;
    node_id node;      // where it was sent
    vertex_id target;  // a live move may pass it on to the target's new node, which answers
  };
  mutable std::mutex requests_mutex_;
  std::unordered_map<std::uint64_t, pending_request> requests_;  // sent, no reply yet
  std::atomic<std::uint64_t> next_request_{1};
  struct counters {
    std::atomic<std::uint64_t> messages{0}, bytes{0}, failed{0};
    std::atomic<bool> failing{false};
  };
  std::unique_ptr<counters[]> sent_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> generations_;  // per vertex: the last generation handed out
  std::chrono::milliseconds start_timeout_{60000}, heartbeat_timeout_{1000};
  std::size_t max_payload_bytes_ = 16 << 20;
  mutable std::mutex start_error_mutex_;
  std::string start_error_;
};

// The gateway actor of `node` (gateway.hpp), which node_runtime::start spawns: defined with it, so
// that the node runtime, below the gateway, does not include it.
caf::actor spawn_gateway(caf::actor_system& system, run_state* state, node_runtime* node);

}  // namespace banyan::detail
