// What the SDK's actors say to each other: component actors, the gateway (multi-node runs) and
// banyan::run's main thread. Private to the SDK.
//
// Every message is a CAF atom followed by its arguments; the handler of each lives in
// component_actor.cpp (components; supervision and the outbound gate act on what it hears) or
// gateway.cpp (the gateway). A `deliver` carries a
// routed_message (route_front.hpp).
#pragma once

#include "move_state.hpp"

#include "banyan/sdk/payload.hpp"

#include <caf/all.hpp>

#include <functional>
#include <string>

namespace banyan::runtime {
struct envelope;  // transport.hpp
}  // namespace banyan::runtime

namespace banyan::detail {

using deliver_atom = caf::atom_constant<caf::atom("deliver")>;  // local_delivery, payload; or routed_message (from
                                                                // another node), target index
using unroute_atom =
    caf::atom_constant<caf::atom("unroute")>;  // shared route_info: a route its publisher no longer uses (route_cache)
using post_atom = caf::atom_constant<caf::atom("post")>;  // task: the component's own work
using request_atom =
    caf::atom_constant<caf::atom("request")>;  // method, payload, requester vertex -> error text, reply
using shutdown_atom = caf::atom_constant<caf::atom("shutdown")>;  // urgent: stop ahead of queued messages
using started_atom = caf::atom_constant<caf::atom("started")>;    // a child's subtree has started
using ready_atom = caf::atom_constant<caf::atom("ready")>;        // every node is ready: flush held publishes
using lost_atom = caf::atom_constant<caf::atom("lost")>;  // child path, node, reason: a child on another node was lost
using failover_atom = caf::atom_constant<caf::atom("failover")>;  // child vertices, reasons: lost children's subtrees
                                                                  // now run on survivors
using resume_atom = caf::atom_constant<caf::atom("resume")>;      // a paused publisher may go on
using reply_atom = caf::atom_constant<caf::atom("reply")>;        // a reply from another node
using expire_atom = caf::atom_constant<caf::atom("expire")>;      // a cross-node request's timeout
using restart_atom =
    caf::atom_constant<caf::atom("restart")>;  // a supervisor's backoff has passed: start what is pending
using joined_atom =
    caf::atom_constant<caf::atom("joined")>;  // node index: a node joined (or came back) after the start
using nodelost_atom = caf::atom_constant<caf::atom("nodelost")>;  // node index, reason, the components it ran
                                                                  // (ascending): remote monitors of them fire
using mondown_atom = caf::atom_constant<caf::atom("mondown")>;  // monitor id, path, reason: a monitored component ended
using undeliv_atom =
    caf::atom_constant<caf::atom("undeliv")>;  // node, count, reason: our publishes a gone node will not deliver
// Live moves (gateway_move.cpp, docs/runtime.md "Moving subtrees live"):
using sync_atom = caf::atom_constant<caf::atom("sync")>;  // -> (nothing): a barrier; answered between two messages
using moveout_atom = caf::atom_constant<caf::atom("moveout")>;  // -> shared vertex_state: hand over the state, go idle
using movequit_atom = caf::atom_constant<caf::atom("movequit")>;    // end this incarnation quietly: it moved
using childmove_atom = caf::atom_constant<caf::atom("childmove")>;  // child vertex, node, generation: a child moved
using arrived_atom =
    caf::atom_constant<caf::atom("arrived")>;  // vertex: a moved subtree has started here (to the gateway)
// Hibernate and wake (gateway_sleep.cpp, docs/runtime.md "Hibernate and wake"):
using childsleep_atom = caf::atom_constant<caf::atom("childsleep")>;  // child vertex: a child went to sleep
using keepalive_atom = caf::atom_constant<caf::atom("keepalive")>;    // look for subtrees idle past their keep-alive
using hold_atom = caf::atom_constant<caf::atom("hold")>;  // shared routed_message, target index: for a sleeping
                                                          // target (to the gateway, which wakes it); or
                                                          // method, payload, requester, target -> error text,
                                                          // reply: a request to a sleeping component
// To the gateway, from the node runtime (cluster/gateway.hpp):
using remote_atom = caf::atom_constant<caf::atom("remote")>;  // peer name, shared_ptr<runtime::envelope>
using host_atom = caf::atom_constant<caf::atom("host")>;      // start the hosted roots (once, at the run's start)
using move_atom = caf::atom_constant<caf::atom("move")>;      // path, node, answer token: move a local subtree there
using sleep_atom = caf::atom_constant<caf::atom("sleep")>;    // path, idle ms, answer token: put a subtree to sleep
using wake_atom = caf::atom_constant<caf::atom("wake")>;      // path, node ("": here), answer token: wake it
using peerlost_atom = caf::atom_constant<caf::atom("peerlost")>;  // node index: a peer is gone
// Supervision across nodes (node_wire.hpp's child_* envelopes, turned into messages by the gateway):
using rstarted_atom =
    caf::atom_constant<caf::atom("rstarted")>;  // child vertex, generation: a remote child's subtree started
using rfailed_atom =
    caf::atom_constant<caf::atom("rfailed")>;  // child vertex, generation, reason: a remote child failed
using rstopped_atom =
    caf::atom_constant<caf::atom("rstopped")>;  // child vertex, generation: a remote child ended by ctx.stop()
using rback_atom =
    caf::atom_constant<caf::atom("rback")>;  // child vertex: its node came back and started it afresh (incarnation 1)

// The text of an actor's exit reason as the user wrote it: a component's failure is
// make_error(sec::runtime_error, what) (component_actor.cpp), so its context holds `what` alone;
// any other reason (a kill, CAF's own) prints as CAF names it.
inline std::string reason_text(const caf::error& reason) {
  const auto& context = reason.context();
  if (reason == caf::sec::runtime_error && context.match_elements<std::string>()) return context.get_as<std::string>(0);
  return to_string(reason);
}

// Work a component posted to itself (ctx.post / ctx.after).
struct task {
  std::function<void()> fn;
};

}  // namespace banyan::detail

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(banyan::detail::task)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(banyan::payload)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<banyan::detail::vertex_state>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<banyan::runtime::envelope>)  // remote_atom
