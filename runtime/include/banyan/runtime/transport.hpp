// The node-to-node transport: reliable, ordered, flow-controlled links between banyan nodes.
//
// Every node binds one ROUTER socket (its endpoint) and connects one DEALER to each peer's ROUTER;
// all traffic from A to B (data, credits, heartbeats) travels on A's DEALER, so each node reads one
// socket and the ROUTER names the sender. One I/O thread per transport owns every socket.
//
// Guarantees, per ordered pair of nodes (a *link*):
//  - Order: envelopes arrive in send() order; each carries a per-link sequence number (1, 2, ...),
//    which the receiver checks (a gap is counted and logged, never hidden).
//  - Bounded memory: at most `credit_window` envelopes are queued or unacknowledged per peer; send()
//    blocks beyond that until the receiver has *delivered* enough of them. An envelope counts as
//    delivered when the last copy of its `receipt` is released: at once if on_envelope drops it,
//    later if the application keeps it until the work is done. A slow receiver therefore slows its
//    senders; nothing is dropped to make room.
//  - Liveness: a peer silent for `heartbeat_timeout` is declared lost (on_peer_down, a log line).
//    Envelopes then queued or unacknowledged for it are counted as `lost_on_down` and reported in
//    the reason; sends to a lost peer fail. When it is heard again (the same process after a
//    stall, or a restarted one) on_peer_up fires again and our side of the link starts a new send
//    session (sequence 1, full credit); each direction is reset only by its own sender, so both
//    ends always agree on the numbering and the credit.
//  - Bad input: frames that do not parse, are truncated, too large, of another wire version, from
//    an unknown sender or stale are counted (reject_stats) and logged (rate-limited), never fatal.
//  - With CURVE keys, links are encrypted and a peer must present an authorised public key; others
//    are rejected at the handshake, logged and counted.
#pragma once

#include "banyan/runtime/error.hpp"
#include "banyan/runtime/bytes.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace banyan::runtime {

// Wire version written into, and required of, every frame.
inline constexpr std::uint16_t wire_version = 2;

struct peer_config {
  std::string name;              // the peer's node name (its ROUTER sees us under our `self` name)
  std::string endpoint;          // where its ROUTER is bound: tcp://host:port or ipc://path
  std::string curve_public_key;  // Z85; required when CURVE is on (it authenticates the server)
};

struct transport_options {
  std::string self;           // this node's name; unique in the deployment
  std::string bind_endpoint;  // tcp://127.0.0.1:7100, tcp://127.0.0.1:* (see bound_endpoint()), ipc://...
  std::vector<peer_config> peers;
  std::chrono::milliseconds heartbeat_timeout{1000};  // silence after which a peer is lost
  std::size_t credit_window = 1024;                   // envelopes queued + unacknowledged per peer
  std::size_t max_batch = 256;                        // envelopes coalesced into one ZeroMQ message
  std::size_t max_frame_bytes = 64 << 20;             // larger frames are rejected and counted
  std::string curve_secret_key, curve_public_key;     // this node's keys (Z85); both empty = no CURVE
  std::vector<std::string> authorized_keys;           // peers' public keys allowed in (CURVE on)
};

// What crosses a link. Payload bytes are carried as they are (never re-encoded).
struct envelope {
  std::uint16_t kind = 0;            // app-defined (data, subscribe, control, ...)
  std::string sender, scope, topic;  // component paths / topic text
  std::vector<std::string> extra;    // small app-defined fields (e.g. target paths)
  std::uint64_t sequence = 0;        // per-link, set by the transport on send
  shared_bytes payload;
  // Not sent. On a received envelope: its delivery receipt; the sender gets credit for it when the
  // last copy is released. On a sent one: kept, with the envelope, until the peer has delivered it
  // (so a node forwarding what it received holds the upstream credit until downstream delivery).
  std::shared_ptr<const void> receipt;
};

// send()'s `block_at`: block while this many envelopes are outstanding for the peer.
inline constexpr std::size_t at_window = 0;                       // the credit window
inline constexpr std::size_t never_block = static_cast<std::size_t>(-1);  // accept beyond it

enum class log_level { info, warning, error };

// Called on the I/O thread. They must return quickly (hand work to actors or queues): while one
// runs, this node neither reads, sends nor heartbeats. They may call send(), which then never
// blocks (blocking would deadlock): the envelope is accepted beyond the window.
struct callbacks {
  std::function<void(const std::string& peer, envelope&& e)> on_envelope;
  std::function<void(const std::string& peer)> on_peer_up;
  std::function<void(const std::string& peer, const std::string& reason)> on_peer_down;
  // Default: banyan::log (banyan/base/log.hpp) with this node's name as the component. Strings a
  // peer sent (routing ids, frame details) are already escaped in `line`.
  std::function<void(log_level, const std::string& line)> on_log;
  // The peer delivered more of our envelopes (window_full() may have turned false).
  std::function<void(const std::string& peer)> on_credit;
};

struct link_stats {
  bool up = false;
  std::uint64_t messages_sent = 0, bytes_sent = 0;          // envelopes / payload bytes written
  std::uint64_t messages_received = 0, bytes_received = 0;  // envelopes / payload bytes delivered
  std::uint64_t batches_sent = 0, batches_received = 0;     // ZeroMQ messages carrying envelopes
  std::uint64_t credit_waits = 0;      // send() calls that had to wait for credit
  std::uint64_t max_outstanding = 0;   // high-water mark of queued + unacknowledged envelopes
  std::uint64_t max_undelivered = 0;   // high-water mark of received envelopes whose receipts are held
  std::uint64_t sequence_gaps = 0;     // received sequence numbers that were not the next one
  std::uint64_t send_failures = 0;     // send() calls refused (peer down, window full on I/O thread)
  std::uint64_t lost_on_down = 0;      // envelopes queued or unacknowledged when the peer was lost
  std::uint64_t sessions = 0;          // times the link came up (1 + reconnects)
};

// Frames this node refused, by reason (over all senders, known or not).
struct reject_stats {
  std::uint64_t garbage = 0;       // not a Frame, or the wrong number of ZeroMQ frames
  std::uint64_t truncated = 0;     // shorter than its own header or payload sizes say
  std::uint64_t oversized = 0;     // larger than max_frame_bytes
  std::uint64_t version = 0;       // another wire version
  std::uint64_t unknown_peer = 0;  // a sender name that is not a configured peer
  std::uint64_t stale = 0;         // addressed to an earlier incarnation of this node
  std::uint64_t auth = 0;          // CURVE handshakes refused (key not authorised)
  std::uint64_t total() const { return garbage + truncated + oversized + version + unknown_peer + stale + auth; }
};

// A resource: one per node, move-only through unique_ptr. Destruction stops it.
class transport {
 public:
  // Validates the options (names, endpoints, keys), binds, connects and starts the I/O thread.
  // Errors name the offending option: errc::invalid_argument for bad options, errc::io when the
  // endpoint cannot be bound.
  static result<std::unique_ptr<transport>> start(transport_options options, callbacks cbs);
  virtual ~transport() = default;
  transport(const transport&) = delete;
  transport& operator=(const transport&) = delete;

  // Thread-safe. Queues `e` for `peer` (sets e.sequence) and returns once it is queued; blocks while
  // `block_at` envelopes (at_window: the credit window) are outstanding for the peer. never_block
  // accepts `e` beyond the window: for callers whose envelopes are bounded by other means (a node
  // forwarding what it received under its own credit). On the I/O thread it never blocks.
  // Fails with errc::invalid_argument for an unknown peer, errc::io when the peer is down (now, or
  // while waiting).
  virtual result<void> send(const std::string& peer, envelope e, std::size_t block_at = at_window) = 0;
  // Whether a send() to `peer` would wait: it is up and `credit_window` envelopes are outstanding.
  // (False for a peer that is down: sends to it fail at once, there is nothing to wait for.)
  virtual bool window_full(const std::string& peer) const = 0;
  // Blocks until every envelope queued so far has been written to its socket (or its peer was lost).
  virtual void flush() = 0;
  // Blocks until `peer` is up or `timeout` passes (errc::timeout); errc::invalid_argument if unknown.
  virtual result<void> wait_until_up(const std::string& peer, std::chrono::milliseconds timeout) = 0;

  virtual link_stats stats(const std::string& peer) const = 0;  // zeros for an unknown peer
  virtual reject_stats rejects() const = 0;
  virtual std::string bound_endpoint() const = 0;  // the resolved endpoint (tcp port chosen for `*`)

  // Stops heartbeats, closes the sockets and joins the I/O thread; blocked senders fail. Idempotent.
  virtual void stop() = 0;

 protected:
  transport() = default;
};

}  // namespace banyan::runtime
