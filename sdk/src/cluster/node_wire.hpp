// How the SDK fills runtime::envelope on node links: one table for both ends (node.cpp writes,
// gateway.cpp reads, check() stands between them). Private to the SDK.
//
//   kind         sender          scope        topic    target       text        numbers payload data         publisher
//   scope        topic    -            -           entry, from | none, origin_sequence  message subscribe    subscriber
//   -            filter   -            -           id                                   - unsubscribe  - -            -
//   -            -           id                                   - ready        -               -            - - - - -
//   quit         -               -            -        -            reason      code (exit code), urgent             -
//   request      requester       -            method   target path  -           id, timeout_ms request reply        -
//   -            -        -            error text  id, code (reply_code)                reply child_start  - - - child
//   path   -           id (generation)                      - child_stop   -               -            -        child
//   path   -           id (generation)                      - child_started -              -            -        child
//   path   -           id (generation)                      - child_failed -               -            -        child
//   path   reason      id (generation)                      - undelivered  publisher       -            -        lost
//   node    reason      id (= count of messages)             - move         -               -            - subtree root
//   node name   id (epoch), code (step), origin (gen) states
//
// The child_* kinds carry supervision across nodes (docs/sdk.md "Supervision across nodes"): a
// supervisor asks the node of a remote child to start or stop an incarnation (numbered by its
// generation, 1 for the one each node starts itself); that node answers with child_started once
// the incarnation's subtree has started, or child_failed with the user's failure reason, or
// child_stopped when it ended itself in order (ctx.stop(): its supervisor applies its restart type).
// `monitor` asks the node of a watched component to tell the watcher's node each time an
// incarnation of it ends; `down` is that news, with the reason (`stopped` for an orderly end).
// `undelivered` goes back to a publisher's node from a node that was forwarding the publisher's
// messages to a node that is gone (or could not send them on): how many copies will not arrive.
//
// `move` carries a live move's steps (docs/runtime.md "Moving subtrees live"): freeze, frozen,
// quiet, thaw (the deployment's pause), state (the subtree's states, to its new node, with the
// generation it runs under there), handed (the data held for it follows no more), moved (it runs
// on node `text` now) and ack; all of one move share its epoch.
//
// `failover` carries a failover's steps (docs/runtime.md "Failover"): plan (the new assignment, one
// little-endian u32 node index per vertex, in the payload), applied and go; `text` names the lost
// node, `id` is the failover's epoch. Only the root's node sends plan and go.
//
// sender and scope are tree vertices (every node holds the same tree: the deployment's digest), the
// other components travel as paths (target).
// Every cell is a typed field of the wire schema (runtime/schema/envelope.capnp): numbers and codes
// travel as numbers, never as decimal text. A field a kind does not use must keep its default.
#pragma once

#include "banyan/broker/tree.hpp"
#include "banyan/runtime/transport.hpp"

#include <cstdint>
#include <string>

namespace banyan::detail {

enum class wire_kind : std::uint16_t {
  data = 1,
  subscribe = 2,
  unsubscribe = 3,
  ready = 4,
  quit = 5,
  request = 6,
  reply = 7,
  child_start = 8,
  child_stop = 9,
  child_started = 10,
  child_failed = 11,
  undelivered = 12,
  child_stopped = 13,
  monitor = 14,
  down = 15,
  move = 16,
  failover = 17
};

// The steps of a live move (`code` of a move envelope; gateway_move.cpp).
enum class move_step : std::int32_t {
  freeze = 1,
  frozen = 2,
  quiet = 3,
  state = 4,
  handed = 5,
  moved = 6,
  ack = 7,
  thaw = 8,
  // One pause at a time in the whole deployment (moves, sleeps, wakes may start on any node): a
  // coordinator asks the root's node for the lease (id: its request), is granted it, and gives it
  // back when its pause is over (gateway_sleep.cpp).
  lease = 9,
  granted = 10,
  release = 11
};

// The steps of a failover (`code` of a failover envelope; gateway_failover.cpp).
enum class failover_step : std::int32_t {
  plan = 1,     // the root's node -> every survivor: the new assignment (payload)
  applied = 2,  // a survivor -> the root's node: applied here
  go = 3,       // the root's node -> every survivor: supervisors restart the lost children
  refused = 4   // the root's node -> every survivor: no survivor can take them (text payload: why)
};

// A reply's outcome (`code` of a reply envelope).
enum class reply_code : std::int32_t { ok = 0, timeout = 1, failed = 2 };

inline constexpr std::uint32_t max_request_timeout_ms = 24u * 3600u * 1000u;
inline constexpr std::size_t max_method_bytes = 256, max_error_text_bytes = 4096, max_node_name_bytes = 256;

// Whether `e`, received from the node with index `from_node`, is well-formed for its kind: empty
// when it is, else what is wrong with it, naming the field (what the peer sent is clipped to 64
// bytes, not escaped: banyan::log escapes every line). Checks
// every field of every kind: the kind is known; vertices are below the tree's size and paths name
// components of `tree`; the scope of a
// data message contains its publisher; topics and filters parse; vertices are in the tree (`from`
// may be none); sequence numbers, ids and timeouts are in range; a subscription id was made by the
// sending node; exit codes are 0..255 and reply codes known; payloads only where the kind has one;
// and every field the kind does not use is at its default.
std::string check(const runtime::envelope& e, const component_tree& tree, std::uint32_t from_node);

}  // namespace banyan::detail
