// The node-to-node transport: reliable, ordered, flow-controlled links between banyan nodes.
//
// Every node binds one ROUTER socket (its endpoint) and connects two DEALERs to each peer's ROUTER,
// one for data and one for control (heartbeats, credit), so a heartbeat never waits behind data. All
// traffic from A to B travels on A's DEALERs, so each node reads one socket. ZeroMQ's routing ids
// name connections, not nodes: who sent a frame is the name in it, proven by the CURVE key or, in
// plain mode, bound by a handshake on incarnations. One I/O thread per transport owns every socket.
//
// Guarantees, per ordered pair of nodes (a *link*):
//  - Exactly once, in order: envelopes arrive in send() order, each once. Each carries a per-link
//    sequence number (1, 2, ...); the sender keeps every envelope until the receiver has delivered
//    it and writes again what was lost in transit (a dropped connection), the receiver drops what
//    it already has. An envelope that can no longer arrive (the peer is gone: restarted, its
//    process died, or silent past `give_up_after`) is handed back through on_undelivered.
//  - Bounded memory: at most `credit_window` envelopes and `credit_window_bytes` payload bytes are
//    queued or unacknowledged per peer (one envelope always fits); send() blocks beyond that until
//    the receiver has *delivered* enough of them. A payload above `chunk_bytes` is sent as chunks,
//    each under the same credit, and delivered whole once its last chunk has arrived (the receiver
//    keeps at most `max_payload_bytes` per payload being assembled). An envelope counts as delivered when the last copy
//    of its `receipt` is released: at once if on_envelope drops it, later if the application keeps
//    it until the work is done. A slow receiver therefore slows its senders; nothing is dropped.
//  - Liveness: a peer silent for `heartbeat_timeout` (longer when its heartbeats have been irregular,
//    see docs/runtime.md "Failure detector") is *stalled*: on_peer_stalled, nothing is dropped, sends
//    still queue (up to the window), and when it is heard again on_peer_resumed and the link goes on.
//    A stalled peer whose connection is closed (its process died), or that stays silent for
//    `give_up_after`, or that is heard with a new incarnation (restarted) is *gone*: on_peer_down,
//    on_undelivered, sends fail with errc::peer_lost until it is up again (on_peer_up, a new send
//    session). Liveness is two-way: a peer that tells us it no longer hears us makes us reconnect.
//  - Identity: a frame claiming a peer's name with another incarnation while that peer is live is
//    refused (counted as `impostor`), so no newcomer takes over a live link.
//  - Bad input: frames that do not parse, are truncated, too large, of another wire version, from
//    an unknown sender, stale, impostors or of another deployment digest are counted (reject_stats)
//    and logged (rate-limited; what a peer sent is escaped), never fatal.
//  - With CURVE keys, links are encrypted and a peer must present an authorised public key; others
//    are refused at the handshake, logged and counted.
#pragma once

#include "banyan/runtime/bytes.hpp"
#include "banyan/runtime/error.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace banyan::runtime {

// Wire version written into, and required of, every frame.
inline constexpr std::uint16_t wire_version = 6;

struct peer_config {
  std::string name;              // the peer's node name (its ROUTER sees us under our `self` name)
  std::string endpoint;          // where its ROUTER is bound: tcp://host:port or ipc://path
  std::string curve_public_key;  // Z85; required when CURVE is on (it authenticates the server)
  // A peer that may never come up (it joins later, or this node joins a running deployment): not
  // waited for by wait_until_all_up, not named as missing while it is not up.
  bool required = true;
};

struct transport_options {
  std::string self;           // this node's name (1..255 bytes); unique in the deployment
  std::string bind_endpoint;  // tcp://127.0.0.1:7100, tcp://127.0.0.1:* (see bound_endpoint()), ipc://...
  std::vector<peer_config> peers;
  std::chrono::milliseconds heartbeat_timeout{1000};  // silence after which a peer is stalled
  // A stalled peer still connected is given up (gone) after this much silence.
  std::chrono::milliseconds give_up_after{30000};
  std::size_t credit_window = 1024;            // envelopes queued + unacknowledged per peer
  std::size_t credit_window_bytes = 16 << 20;  // payload bytes queued + unacknowledged per peer
  std::size_t max_batch = 256;                 // envelopes coalesced into one ZeroMQ message
  std::size_t max_batch_bytes = 1 << 20;       // bytes (payload and text) per ZeroMQ message
  // Larger envelopes (payload and text) are refused by send(); lowered to what the peer accepts.
  std::size_t max_payload_bytes = 16 << 20;
  std::size_t max_frame_bytes = 64 << 20;  // larger frames are rejected and counted
  // A larger payload travels as chunks of this size (less where the peer's frames are smaller), each
  // under the link's credit like any envelope.
  std::size_t chunk_bytes = 1 << 20;
  std::string curve_secret_key, curve_public_key;  // this node's keys (Z85); both empty = no CURVE
  std::vector<std::string> authorized_keys;        // peers' public keys allowed in (CURVE on)
  // What both ends must share (a digest of the deployment); 0 = not checked. A peer with another
  // nonzero digest is refused: wait_until_up() then fails with errc::incompatible_peer.
  std::uint64_t digest = 0;
  // While a peer has never been up, a line naming it is logged this often.
  std::chrono::milliseconds missing_peer_log_every{3000};
};

// What crosses a link. Payload bytes are carried as they are (never re-encoded). Besides kind and
// payload, the fields are typed slots of the node protocol: the transport carries them unchanged
// and gives them no meaning (the SDK's use, per kind: sdk/src/node_wire.hpp).
inline constexpr std::uint32_t no_vertex_field = 0xffffffffu;  // `entry` / `from` not set
struct envelope {
  std::uint16_t kind = 0;  // app-defined (data, subscribe, control, ...)
  // Tree vertices (no_vertex_field: none): the publisher, subscriber, requester or watcher, and a
  // publish's scope. Every node holds the same tree, so no path travels for them.
  std::uint32_t sender = no_vertex_field, scope = no_vertex_field;
  std::string topic;                                              // topic text
  std::string target;                                             // a second component path, or a node name
  std::string text;                                               // free text (an error message)
  std::uint64_t id = 0;                                           // an identifier (subscription, request)
  std::uint64_t origin_sequence = 0;                              // the originator's own sequence number
  std::uint32_t entry = no_vertex_field, from = no_vertex_field;  // tree vertices
  std::int32_t code = 0;                                          // an exit code or outcome
  std::uint32_t timeout_ms = 0;
  bool urgent = false;
  std::uint64_t sequence = 0;  // per-link, set by the transport on send
  // Set by the transport on the chunks of a payload larger than `chunk_bytes` (never on what
  // on_envelope or on_undelivered sees): the first chunk's sequence, the whole size, this chunk's place.
  struct chunk_info {
    std::uint64_t of = 0, total = 0, offset = 0;
  } chunk;
  shared_bytes payload;
  // Not sent. On a received envelope: its delivery receipt; the sender gets credit for it when the
  // last copy is released. On a sent one: kept, with the envelope, until the peer has delivered it
  // (so a node forwarding what it received holds the upstream credit until downstream delivery).
  std::shared_ptr<const void> receipt;
};

// send()'s `block_at`: block while this many envelopes are outstanding for the peer (or the byte
// window would overflow).
inline constexpr std::size_t at_window = 0;                               // the credit window
inline constexpr std::size_t never_block = static_cast<std::size_t>(-1);  // accept beyond it

enum class log_level { info, warning, error };

// Called on the I/O thread. They must return quickly (hand work to actors or queues): while one
// runs, this node neither reads, sends nor heartbeats. They may call send(), which then never
// blocks (blocking would deadlock): the envelope is accepted beyond the window.
struct callbacks {
  std::function<void(const std::string& peer, envelope&& e)> on_envelope;
  // A new incarnation of the peer is up (first contact, or after it was gone): a new link.
  std::function<void(const std::string& peer)> on_peer_up;
  // The peer was gone (given up) and is heard again with the same incarnation: it did not restart,
  // it was stopped or cut off. A new link, as for on_peer_up; when set, called instead of it.
  std::function<void(const std::string& peer)> on_peer_returned;
  // The peer is gone: what was queued or unacknowledged for it went to on_undelivered first.
  std::function<void(const std::string& peer, const std::string& reason)> on_peer_down;
  // Silent past the failure detector's threshold but not given up: nothing is dropped.
  std::function<void(const std::string& peer, const std::string& reason)> on_peer_stalled;
  // A stalled peer was heard again (the same incarnation): the link goes on where it was.
  std::function<void(const std::string& peer)> on_peer_resumed;
  // Envelopes accepted by send() that will never be delivered (the peer is gone), in send order,
  // with their receipts (released when the callback lets go of them). Default: dropped, counted in
  // link_stats::lost_on_down and named in on_peer_down's reason.
  std::function<void(const std::string& peer, std::vector<envelope>&& lost, const std::string& reason)> on_undelivered;
  // Default: banyan::log (banyan/base/log.hpp) with this node's name as the component. Strings a
  // peer sent (names, frame details) are already escaped in `line`.
  std::function<void(log_level, const std::string& line)> on_log;
  // The peer delivered more of our envelopes (window_full() may have turned false).
  std::function<void(const std::string& peer)> on_credit;
};

struct link_stats {
  bool up = false;       // a live or stalled link (not gone, not yet up)
  bool stalled = false;  // silent past the failure detector's threshold
  std::uint64_t messages_sent = 0,
                bytes_sent = 0;  // envelopes (a chunk counts as one) / payload bytes written (once each)
  std::uint64_t messages_received = 0,
                bytes_received = 0;  // envelopes (a chunk counts as one) / payload bytes delivered (once each)
  std::uint64_t batches_sent = 0, batches_received = 0;  // ZeroMQ messages carrying envelopes
  std::uint64_t credit_waits = 0;                        // send() calls that had to wait for credit
  std::uint64_t outstanding = 0, outstanding_bytes = 0;  // now: queued + unacknowledged envelopes / payload bytes
  std::uint64_t max_outstanding = 0;                     // high-water mark of queued + unacknowledged envelopes
  std::uint64_t max_outstanding_bytes = 0;               // ... of their payload bytes
  std::uint64_t max_undelivered = 0;        // high-water mark of received envelopes whose receipts are held
  std::uint64_t max_undelivered_bytes = 0;  // ... of their payload bytes
  std::uint64_t sequence_gaps = 0;          // times envelopes were found missing (each repaired by a resend)
  std::uint64_t resent = 0;                 // envelopes written again (asked for by the receiver)
  std::uint64_t duplicates = 0;             // envelopes received again (or ahead of a gap) and dropped
  std::uint64_t send_failures = 0;          // send() calls refused (peer gone, payload too large, stopped)
  std::uint64_t lost_on_down = 0;           // envelopes queued or unacknowledged when the peer was gone
  std::uint64_t sessions = 0;               // times the link came up (1 + times after the peer was gone)
  std::uint64_t stalls = 0;                 // times the peer was stalled
  std::uint64_t reconnects = 0;             // times we reconnected because the peer no longer heard us
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
  std::uint64_t impostor = 0;      // claiming a peer's name: another CURVE key, or another incarnation while it is live
  std::uint64_t mismatch = 0;      // another deployment digest
  std::uint64_t chunks = 0;        // chunks of a large payload out of place, or beyond max_payload_bytes
  std::uint64_t total() const {
    return garbage + truncated + oversized + version + unknown_peer + stale + auth + impostor + mismatch + chunks;
  }
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
  // `block_at` envelopes (at_window: the credit window) are outstanding for the peer, or their bytes
  // would pass the byte window. A payload above `chunk_bytes` is queued chunk by chunk, each waiting
  // for credit, so send() returns when its last chunk is queued; envelopes of other threads may go
  // between its chunks. never_block accepts
  // `e` beyond the window: for callers whose envelopes are bounded by other means (a node forwarding
  // what it received under its own credit). On the I/O thread it never blocks. A stalled peer
  // accepts sends (within the window); they go out when it is heard again.
  // Errors: errc::invalid_argument for an unknown peer; errc::payload_too_large for an envelope of
  // more than max_payload_bytes (payload and text); errc::peer_lost when the peer is gone or was
  // never up (now, or while waiting); errc::io once stopped.
  virtual result<void> send(const std::string& peer, envelope e, std::size_t block_at = at_window) = 0;
  // Whether a send() to `peer` would wait: it is up (or stalled) and its window is full.
  // (False for a peer that is gone: sends to it fail at once, there is nothing to wait for.)
  virtual bool window_full(const std::string& peer) const = 0;
  // Blocks until every envelope queued so far has been written to its socket (or its peer is not up;
  // a stalled peer, one that may be heard again, is waited for up to a heartbeat timeout).
  virtual void flush() = 0;
  // Blocks until `peer` is up or `timeout` passes (errc::timeout, naming its endpoint);
  // errc::invalid_argument if unknown; errc::incompatible_peer if it runs another digest.
  virtual result<void> wait_until_up(const std::string& peer, std::chrono::milliseconds timeout) = 0;
  // The same for every required peer: the error names each one still missing and its endpoint.
  virtual result<void> wait_until_all_up(std::chrono::milliseconds timeout) = 0;

  virtual link_stats stats(const std::string& peer) const = 0;  // zeros for an unknown peer
  virtual reject_stats rejects() const = 0;
  virtual std::string bound_endpoint() const = 0;  // the resolved endpoint (tcp port chosen for `*`)

  // Stops heartbeats, closes the sockets and joins the I/O thread; blocked senders fail. Idempotent.
  virtual void stop() = 0;

 protected:
  transport() = default;
};

}  // namespace banyan::runtime
