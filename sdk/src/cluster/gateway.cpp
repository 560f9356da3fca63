#include "gateway.hpp"

#include "actor_protocol.hpp"
#include "component_actor.hpp"
#include "node.hpp"
#include "node_wire.hpp"
#include "run_state.hpp"

#include "banyan/base/log.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace banyan::detail {
namespace {
using tell_atom = caf::atom_constant<caf::atom("tell")>;  // tell publishers what could not be forwarded
constexpr auto tell_after = std::chrono::milliseconds(100);
}  // namespace

caf::actor spawn_gateway(caf::actor_system& system, run_state* state, node_runtime* node) {
  return system.spawn<gateway_actor>(state, node);
}

// Its handlers are short (routing, bookkeeping), so it takes many messages a turn: components
// with slow handlers and a long backlog hold the scheduler's threads for a turn each (100
// messages of their work), and a gateway that took only 100 between their turns would leave the
// node's traffic, a peer's `quit`, a move or a failover waiting behind thousands of deliveries for
// seconds. What it can take is bounded by the links' credit, which only the components' handling
// gives back, so it cannot keep a thread from them for long either.
caf::resumable::resume_result gateway_actor::resume(caf::execution_unit* unit, std::size_t max_throughput) {
  return caf::event_based_actor::resume(unit, std::max(max_throughput, messages_per_turn));
}

gateway_actor::gateway_actor(caf::actor_config& cfg, run_state* state, node_runtime* node)
    : caf::event_based_actor(cfg), state_(state), node_(node), routes_(state->front()) {}

caf::behavior gateway_actor::make_behavior() {
  set_exit_handler([this](caf::exit_msg& msg) {
    if (!msg.source || msg.source == address()) return quit(msg.reason);  // node_runtime::stop()
    on_hosted_gone(msg.source, msg.reason);
  });
  // A hosted root we stopped unlinks from us when it handles our exit message: its end comes as a
  // down message (they are monitored too); whichever comes first counts.
  set_down_handler([this](caf::down_msg& msg) { on_hosted_gone(msg.source, msg.reason); });
  return {
      [this](remote_atom, const std::string& peer, std::shared_ptr<runtime::envelope>& e) { dispatch(peer, *e); },
      [this](host_atom) {
        node_time_since_ = in_use_since_ = std::chrono::steady_clock::now();
        count_node_time();
        for (auto v : state_->where().roots(state_->tree()))
          if (v != 0) hosted_.push_back({v, caf::actor{}});
        for (auto& h : hosted_) {
          if (!state_->under_dynamic(h.vertex)) start_hosted(h, 1, /*initial=*/true);
          else if (!h.counted_started) {
            // Started only when its supervisor asks (ctx.start_child, or a dynamic ancestor's start):
            // the node is ready without it.
            h.counted_started = true;
            state_->done().root_started();
          }
        }
      },
      [this](started_atom, vertex_id v) { on_hosted_started(v); },
      [this](shutdown_atom, bool urgent) { shutdown_hosted(urgent); },
      [this](tell_atom) { tell_unforwarded(); },
      [this](move_atom, const std::string& path, const std::string& to, std::uint64_t answer) {
        start_move(path, to, answer);
      },
      [this](arrived_atom, vertex_id v) {
        if (move_ && move_->arriving && v == move_->root) {
          state_->arrivals().over(v);
          move_->arrived = true;
          return announce_moved();
        }
        if (auto z = sleeping_.find(v); z != sleeping_.end() && z->second.starting) {
          state_->arrivals().over(v);
          z->second.started = true;
          switch_over(v);
        }
      },
      [this](sleep_atom, const std::string& path, std::int64_t keep_ms, std::uint64_t answer) {
        start_sleep(path, std::chrono::milliseconds(keep_ms), answer);
      },
      [this](wake_atom, const std::string& path, const std::string& to, std::uint64_t answer) {
        start_wake(path, to, answer);
      },
      [this](hold_atom, std::shared_ptr<const routed_message>& m, std::uint32_t index) {
        held_delivery d;
        d.target = m->info->plan->targets()[index].component;
        d.message = std::move(m);
        d.index = index;
        hold(std::move(d));
      },
      [this](hold_atom, std::string& method, payload& data, vertex_id requester,
             vertex_id target) -> caf::result<std::string, payload> {
        held_delivery d;
        d.what = held_delivery::kind::local_request;
        d.method = std::move(method);
        d.data = std::move(data);
        d.requester = requester;
        d.promise = make_response_promise();
        auto promise = d.promise;
        on_hold_request(target, std::move(d));
        return promise;
      },
      [this](keepalive_atom) { check_keep_alive(); },
      [this](peerlost_atom, node_id n) { on_peer_lost(n); },
      // The cluster became ready on another thread (this node announced itself after every peer's
      // `ready` had come): what this gateway held goes now.
      [this](ready_atom) { release_held(); },
      [this](movelimit_atom, std::uint64_t epoch) { on_move_limit(epoch); },
      [this](earlymove_atom, std::uint64_t epoch) { check_early_move(epoch); },
      [this](orphans_atom) { release_orphans(); },
  };
}

gateway_actor::hosted* gateway_actor::hosted_of(vertex_id v) {
  for (auto& h : hosted_)
    if (h.vertex == v) return &h;
  return nullptr;
}

void gateway_actor::start_hosted(hosted& h, std::uint64_t generation, bool initial) {
  if (h.actor) stop_hosted(h);
  h.generation = generation;
  // The old incarnation is still stopping (taking its snapshot): start at its exit.
  if (h.exiting) {
    h.start_pending = true;
    return;
  }
  h.start_pending = false;
  if (!h.arrived) state_->forget_subtree(h.vertex);  // what the old incarnation subscribed (a moved one keeps them)
  h.actor = spawn_component(*this, state_->shared_from_this(), h.vertex, address(), initial);
  state_->set_actor(h.vertex, h.actor);
  link_to(h.actor);
  monitor(h.actor);
}

void gateway_actor::stop_hosted(hosted& h) {
  h.start_pending = false;
  if (!h.actor) return;
  // Its exit is not a failure; a new incarnation waits for it.
  send_exit(h.actor, caf::exit_reason::user_shutdown);
  h.exiting = std::exchange(h.actor, caf::actor{});
  state_->forget_subtree(h.vertex);
}

void gateway_actor::on_hosted_started(vertex_id v) {
  auto* h = hosted_of(v);
  if (!h || !h->actor) return;
  if (!h->counted_started) {
    h->counted_started = true;
    state_->done().root_started();
  }
  const bool arrival = std::exchange(h->arrived, false);  // its supervisor did not ask for this start
  if (h->generation > 1 && !arrival) report(wire_kind::child_started, v, h->generation);
}

void gateway_actor::on_hosted_gone(const caf::actor_addr& source, const caf::error& reason) {
  for (auto& h : hosted_) {
    if (!h.exiting || h.exiting.address() != source) continue;
    h.exiting = caf::actor{};  // stopped on purpose
    if (shutting_down_ && !h.actor) return state_->done().root_down(false);
    if (h.start_pending && !shutting_down_) start_hosted(h, h.generation, /*initial=*/false);
    return;
  }
  auto it = std::find_if(hosted_.begin(), hosted_.end(),
                         [&](const hosted& h) { return h.actor && h.actor.address() == source; });
  if (it == hosted_.end()) return;  // not ours
  it->actor = caf::actor{};
  if (shutting_down_) return state_->done().root_down(false);
  const bool failed = reason && reason != caf::exit_reason::user_shutdown && reason != caf::exit_reason::normal;
  if (!failed) {
    // Ended itself (ctx.stop()): its supervisor applies its restart type.
    state_->forget_subtree(it->vertex);
    return report(wire_kind::child_stopped, it->vertex, it->generation);
  }
  // A root that fails during the node's start still lets the node announce itself: its supervisor
  // (reached once the cluster is ready) decides what happens next.
  if (!it->counted_started) {
    it->counted_started = true;
    state_->done().root_started();
  }
  state_->forget_subtree(it->vertex);
  report(wire_kind::child_failed, it->vertex, it->generation, reason_text(reason));
}

void gateway_actor::report(wire_kind kind, vertex_id v, std::uint64_t generation, std::string text) {
  if (!state_->cluster_ready()) {
    held_reports_.push_back({kind, v, generation, std::move(text)});
    return;
  }
  node_->send_child(kind, v, generation, std::move(text));
}

// A supervisor on another node asks to start or stop an incarnation of one of our hosted roots.
void gateway_actor::on_child_command(const std::string& peer, runtime::envelope& e) {
  const vertex_id v = *state_->tree().find(e.target);  // check() found it
  auto* h = hosted_of(v);
  if (!h && sleeping_.count(v) && state_->where().node_of(state_->tree().parent(v)) == node_->index_of(peer)) {
    // Asleep here: woken first (what was held for it goes to it), then the command applies.
    deferred_commands_.emplace_back(peer, std::move(e));
    if (!sleeping_[v].waking) start_wake(state_->tree().path(v), {}, 0);
    return;
  }
  if (!h)
    return log_dropped(peer,
                       "supervision of `" + e.target + "`: not a hosted root of node `" + node_->self_name() + "`");
  // Only the node of its supervisor may ask (another peer could otherwise stop any of our roots).
  if (state_->where().node_of(state_->tree().parent(v)) != node_->index_of(peer))
    return log_dropped(peer, "supervision of `" + e.target + "`: its supervisor is not on node `" + peer + "`");
  if (shutting_down_ || e.id < h->generation) return;  // stale: a later incarnation was asked for already
  if (static_cast<wire_kind>(e.kind) == wire_kind::child_stop) return stop_hosted(*h);
  if (e.id == h->generation && h->actor) return;  // a repeated start
  start_hosted(*h, e.id, /*initial=*/false);
}

// A hosted root of another node, whose parent runs here, started or failed.
void gateway_actor::on_child_report(const std::string& peer, runtime::envelope& e) {
  const vertex_id v = *state_->tree().find(e.target);  // check() found it
  const vertex_id parent = state_->tree().parent(v);
  if (!state_->is_local(parent))
    return log_dropped(peer, "supervision report for `" + e.target + "`: its parent is not on this node");
  // Only the node that hosts the child may report on it (a forged report would restart a child).
  if (state_->where().node_of(v) != node_->index_of(peer))
    return log_dropped(peer, "supervision report for `" + e.target + "`: it is not hosted by node `" + peer + "`");
  auto supervisor = state_->actors().get(parent);
  if (!supervisor) return;  // between incarnations: the next one starts its children afresh
  switch (static_cast<wire_kind>(e.kind)) {
    case wire_kind::child_started: return anon_send(supervisor, rstarted_atom::value, v, e.id);
    case wire_kind::child_stopped: return anon_send(supervisor, rstopped_atom::value, v, e.id);
    default: return anon_send(supervisor, rfailed_atom::value, v, e.id, std::move(e.text));
  }
}

// A component on `peer` monitors one of ours: tell it of each end from now on.
void gateway_actor::on_monitor(const std::string& peer, runtime::envelope& e) {
  const vertex_id watched = *state_->tree().find(e.target);  // check() found both
  const vertex_id watcher = e.sender;
  if (!state_->is_local(watched)) return log_dropped(peer, "monitor of `" + e.target + "`: not on this node");
  if (state_->where().node_of(watcher) != node_->index_of(peer))
    return log_dropped(peer, "monitor by `" + state_->tree().path(watcher) + "`: it is not on node `" + peer + "`");
  state_->watching().add_remote(watched, {node_->index_of(peer), watcher, e.id});
  // Made while the cluster was starting: the ends here before then are news to it too.
  if (e.code == 1)
    for (auto& why : state_->watching().early_ends_of(watched))
      node_->send_down(watched, node_->index_of(peer), watcher, e.id, std::move(why));
}

// A component we monitor on `peer` ended: tell the watcher (a stale id is ignored there).
void gateway_actor::on_down(const std::string& peer, runtime::envelope& e) {
  const vertex_id watcher = *state_->tree().find(e.target);  // check() found both
  const vertex_id watched = e.sender;
  if (!state_->is_local(watcher)) return log_dropped(peer, "down for `" + e.target + "`: not on this node");
  if (state_->where().node_of(watched) != node_->index_of(peer))
    return log_dropped(peer, "down of `" + state_->tree().path(watched) + "`: it is not hosted by node `" + peer + "`");
  if (auto a = state_->actors().get(watcher))
    anon_send(a, mondown_atom::value, e.id, state_->tree().path(watched), std::move(e.text));
}

void gateway_actor::shutdown_hosted(bool urgent) {
  if (!shutting_down_) {
    count_node_time();
    char line[160];
    const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - node_time_since_).count();
    std::snprintf(line, sizeof line, "node time: in use %.3f s of %.3f s", in_use_seconds_, total);
    log::info(node_->self_name(), line);
  }
  shutting_down_ = true;
  held_reports_.clear();
  for (auto& h : hosted_) {
    h.start_pending = false;
    if (!h.actor) {
      if (!h.exiting) state_->done().root_down(false);  // else at its exit
      continue;
    }
    if (urgent) send<caf::message_priority::high>(h.actor, shutdown_atom::value, true);
    else send(h.actor, shutdown_atom::value, false);
  }
}

void gateway_actor::dispatch(const std::string& peer, runtime::envelope& e) {
  // Every field of every kind is checked before anything uses it (node_wire.hpp); what is left to
  // the handlers is what needs this node's state (is the entry local, is the target running).
  if (auto fault = check(e, state_->tree(), node_->index_of(peer)); !fault.empty()) return refuse(peer, fault);
  if (auto why = unauthorised(node_->index_of(peer), e); !why.empty()) return refuse_unauthorised(peer, e, why);
  switch (static_cast<wire_kind>(e.kind)) {
    case wire_kind::ready: return on_ready(peer);
    case wire_kind::quit: return node_->peer_quit(peer, e.code, e.urgent, e.text);
    case wire_kind::subscribe:
    case wire_kind::unsubscribe: return on_subscription(peer, e);
    case wire_kind::data:
      if (!state_->cluster_ready()) {
        // Our replica of every node's subscriptions is not complete yet: route it later. Held by
        // a live move's freeze, its credit goes back at once: a publisher blocked on a full link
        // must finish its handler for the freeze's barrier (only data sent before it is in flight).
        if (state_->frozen()) e.receipt.reset();
        if (move_ && move_->arriving && !move_->handed_marker && node_->index_of(peer) == move_->from &&
            e.entry < state_->tree().size() && state_->tree().contains(move_->root, e.entry)) {
          // Held for a subtree moving here by its old node: older than anything this node holds
          // for it (that came here after this node froze; the old node's came through here before).
          early_data_.emplace(early_data_.begin() + static_cast<std::ptrdiff_t>(move_->handed_data++), peer,
                              std::move(e));
          return;
        }
        early_data_.emplace_back(peer, std::move(e));
        return;
      }
      return on_data(peer, e);
    case wire_kind::request: return serve_request(peer, e);
    case wire_kind::reply: return node_->take_reply(e);
    case wire_kind::undelivered: return on_undelivered(peer, e);
    case wire_kind::child_start:
    case wire_kind::child_stop: return on_child_command(peer, e);
    case wire_kind::child_started:
    case wire_kind::child_failed:
    case wire_kind::child_stopped: return on_child_report(peer, e);
    case wire_kind::monitor: return on_monitor(peer, e);
    case wire_kind::down: return on_down(peer, e);
    case wire_kind::move: return on_move(peer, e);
    case wire_kind::failover: return on_failover(peer, e);
  }
}

// Authority from the deployment (docs/runtime.md, "What a peer may send"): a well-formed envelope
// is taken only from a node whose place allows it. A node sends data across the tree edge from a
// component it hosts (`from`; the publisher itself in the flat modes) and subscribes and
// unsubscribes for components it hosts; an assignment that just changed allows the node of before
// too (what it sent before the change), and a move in progress here allows its destination for the
// moving subtree (the new node starts it before the thaw). A request comes from its requester's
// node, a reply from the node asked. `undelivered` may report no more copies of a publisher's
// messages than its routes could have lost. Returns why not, or nothing.
std::string gateway_actor::unauthorised(node_id from, const runtime::envelope& e) {
  const auto& where = state_->where();
  auto hosted_by_from = [&](vertex_id v) {
    if (where.node_of(v) == from || where.previous_node_of(v) == from) return true;
    // A live move: its destination starts the moving subtree before the thaw (the freeze named both).
    return move_ && move_->subtree != no_vertex && from == move_->destination &&
           state_->tree().contains(move_->subtree, v);
  };
  auto path = [&](vertex_id v) { return "`" + state_->tree().path(v) + "`"; };
  switch (static_cast<wire_kind>(e.kind)) {
    case wire_kind::data: {
      const vertex_id hop = e.from == runtime::no_vertex_field ? e.sender : e.from;
      // An entry that moved away from `from` is sent on by it to where it runs now (on_data).
      if (hosted_by_from(hop) || where.previous_node_of(e.entry) == from) return {};
      return "data across the edge from " + path(hop) + ", which its node does not host";
    }
    case wire_kind::subscribe:
      if (hosted_by_from(e.sender)) return {};
      return "a subscription for " + path(e.sender) + ", which its node does not host";
    case wire_kind::unsubscribe: {
      const auto subscriber = state_->routing().subscriber_of(e.id);
      if (!subscriber || hosted_by_from(*subscriber)) return {};  // an unknown id changes nothing
      return "the end of a subscription of " + path(*subscriber) + ", which its node does not host";
    }
    case wire_kind::request:
      // From the requester's node, or passed on by the node its target left in a live move.
      if (hosted_by_from(e.sender)) return {};
      if (auto target = state_->tree().find(e.target); target && where.previous_node_of(*target) == from) return {};
      return "a request from " + path(e.sender) + ", which its node does not host";
    case wire_kind::reply:
      if (node_->reply_expected_from(e.id, from)) return {};
      return "a reply (id " + std::to_string(e.id) + ") to no request this node sent it";
    case wire_kind::undelivered: {
      // Each publish crosses each cut edge of its route at most once: no more copies than that
      // can be lost, whoever forwarded them.
      std::uint64_t published = 0;
      for (const auto& f : state_->routing().flows())
        if (f.publisher == e.sender) published += f.messages;
      const std::uint64_t most = published * state_->tree().size();
      auto& told = undelivered_told_[e.sender];
      if (e.id <= most - std::min(most, told)) {
        told += e.id;
        return {};
      }
      return std::to_string(e.id) + " copies of " + path(e.sender) + " for node `" + e.target +
             "` undelivered, but it published " + std::to_string(published) + " messages (" + std::to_string(told) +
             " copies reported before)";
    }
    default: return {};
  }
}

void gateway_actor::refuse_unauthorised(const std::string& peer, const runtime::envelope& e, const std::string& why) {
  const auto k = static_cast<wire_kind>(e.kind);
  const std::string kind = k == wire_kind::data          ? "data"
                           : k == wire_kind::subscribe   ? "subscribe"
                           : k == wire_kind::unsubscribe ? "unsubscribe"
                           : k == wire_kind::move        ? "move"
                           : k == wire_kind::request     ? "request"
                           : k == wire_kind::reply       ? "reply"
                                                         : "undelivered";
  const std::uint64_t n = node_->count_refused(node_->index_of(peer), kind);
  if (log::worth_logging(n))
    log_dropped(peer, "refused " + kind + ": " + why + " (" + std::to_string(n) + " " + kind + " envelopes from `" +
                          peer + "` refused so far)");
}

void gateway_actor::log_dropped(const std::string& peer, const std::string& why) {
  log::warning(node_->self_name(), "envelope from `" + peer + "` dropped: " + why);
}

void gateway_actor::refuse(const std::string& peer, const std::string& why) {
  const std::uint64_t n = ++malformed_;
  if (log::worth_logging(n)) log_dropped(peer, "malformed " + why + " (" + std::to_string(n) + " malformed so far)");
}

void gateway_actor::on_ready(const std::string& peer) {
  if (node_->peer_ready(peer)) on_node_back(node_->index_of(peer));
  release_held();
}

void gateway_actor::on_node_back(node_id n) {
  // Node `n` was lost and a new incarnation of it is back (taken back: nothing of it failed over).
  // It started its part of the tree afresh, as at the run's start, each root it hosts as its
  // incarnation 1 and each of their remote children left to their own nodes.
  const auto& tree = state_->tree();
  const auto& where = state_->where().node_of();
  const node_id self = state_->where().self();
  // Its roots whose supervisors run here: incarnation 1 is theirs now, and what it reports counts
  // (a failure during its rejoin reaches the supervisor like any other).
  for (vertex_id v = 1; v < tree.size(); ++v) {
    if (where[v] != n || where[tree.parent(v)] != self || state_->under_dynamic(v)) continue;
    if (auto parent = state_->actors().get(tree.parent(v))) anon_send(parent, rback_atom::value, v);
  }
  // Our roots whose supervisors ran there went with them (OTP: children go with their supervisor).
  // The new supervisor counts on incarnation 1 of each, started here as at the run's start, and
  // restarts it from there (its node's generations begin again at 1); a dynamic one it starts when
  // it asks.
  if (shutting_down_) return;
  for (auto& h : hosted_) {
    if (where[tree.parent(h.vertex)] != n) continue;
    const bool dynamic = state_->under_dynamic(h.vertex);
    log::info(node_->self_name(), "`" + tree.path(h.vertex) + "`'s parent runs on `" + node_->name_of(n) +
                                      "`, which came back: " + (dynamic ? "stopped" : "started afresh"));
    if (dynamic) {
      stop_hosted(h);
      h.generation = 0;  // any start is new
    } else {
      start_hosted(h, 1, /*initial=*/false);
    }
  }
}

void gateway_actor::release_held() {
  if (!state_->cluster_ready()) return;
  for (auto& r : std::exchange(held_reports_, {})) node_->send_child(r.kind, r.vertex, r.generation, std::move(r.text));
  auto waiting = std::move(early_data_);
  early_data_.clear();
  for (auto& [from_peer, envelope] : waiting) dispatch(from_peer, envelope);
  release_orphans();
}

void gateway_actor::on_subscription(const std::string& peer, runtime::envelope& e) {
  if (static_cast<wire_kind>(e.kind) == wire_kind::unsubscribe) {
    state_->routing().unsubscribe(e.id);
    return;
  }
  const vertex_id who = e.sender;  // check() found it in the tree
  auto r = state_->routing().add_replica(e.id, who, e.topic);
  if (!r) log_dropped(peer, "replicated subscription: " + r.error().what());
}

void gateway_actor::on_data(const std::string& peer, runtime::envelope& e) {
  const vertex_id who = e.sender;  // check() found every vertex in the tree
  const vertex_id scope_vertex = e.scope;
  const vertex_id entry = e.entry;
  const vertex_id from = e.from == runtime::no_vertex_field ? no_vertex : e.from;
  if (!state_->is_local(entry)) {
    // Sent before the deployment learnt that the entry moved (a live move): on to where it runs now.
    const node_id now = state_->where().node_of(entry);
    if (now == node_->index_of(peer)) return log_dropped(peer, "data for a component not on this node");
    auto sent = node_->forward({now, entry, from}, e.topic, who, scope_vertex, e.origin_sequence,
                               payload::view_of(e.payload.owner(), e.payload.data(), e.payload.size()), e.receipt,
                               runtime::never_block);
    if (!sent) unforwarded(who, now, sent.error().message);
    return;
  }
  // The link's credit comes back when the local targets have handled the message and the nodes it
  // is forwarded to have delivered it (the receipt rides along; forwards never wait: they are
  // bounded by the credit they hold).
  auto routed =
      route_here(e.topic, who, scope_vertex, entry, from,
                 payload::view_of(e.payload.owner(), e.payload.data(), e.payload.size()), e.origin_sequence, e.receipt);
  if (!routed) log_dropped(peer, "data: " + routed.error().what());
}

result<void> gateway_actor::route_here(const std::string& topic, vertex_id who, vertex_id scope_vertex, vertex_id entry,
                                       vertex_id from, const payload& data, std::uint64_t sequence,
                                       const std::shared_ptr<const void>& receipt) {
  auto found = routes_.get(topic, who, scope_vertex, entry, from);
  if (!found) return found.error();
  const std::shared_ptr<const route_info>& route = **found;
  const route_info& info = *route;
  if (!info.local.empty()) {
    auto message = std::make_shared<const routed_message>(routed_message{route, data, sequence, receipt});
    for (auto i : info.local) {
      if (!info.targets[i]) {
        const vertex_id target = info.plan->targets()[i].component;
        if (!state_->where().asleep(target)) continue;
        // Held without the link's receipt: a wake pauses the deployment, and the pause must not
        // wait on the credit this message holds.
        held_delivery d;
        d.target = target;
        d.message = std::make_shared<const routed_message>(routed_message{route, data, sequence, nullptr});
        d.index = i;
        hold(std::move(d));
        continue;
      }
      state_->flow().queued(info.plan->targets()[i].component);
      caf::anon_send(info.targets[i], deliver_atom::value, message, i);
    }
  }
  for (const auto& h : info.hops) {
    auto sent = node_->forward(h, info.topic, who, scope_vertex, sequence, data, receipt, runtime::never_block);
    if (!sent) unforwarded(who, h.node, sent.error().message);
  }
  return {};
}

void gateway_actor::release_orphans() {
  if (!state_->cluster_ready() || state_->frozen()) return;
  for (const vertex_id v : state_->orphans().vertices()) {
    if (state_->actors().get(v)) continue;  // its incarnation sends them ahead of its own (cluster_gate::arrive)
    auto orphans = state_->orphans().take(v);
    if (!orphans) continue;
    std::uint64_t sequence = orphans->after_sequence;
    for (auto& p : orphans->publishes) {
      auto routed = route_here(p.topic, v, p.scope, v, no_vertex, payload::copy_of(p.data), ++sequence, nullptr);
      if (!routed)
        log::warning(node_->self_name(), "a publish of `" + state_->tree().path(v) + "` on `" + p.topic +
                                             "` it made before it ended: " + routed.error().what());
    }
  }
}

void gateway_actor::unforwarded(vertex_id publisher, node_id to, const std::string& why) {
  if (unforwarded_.empty()) delayed_send(this, tell_after, tell_atom::value);
  auto& lost = unforwarded_[{publisher, to}];
  ++lost.count;
  lost.why = why;
}

void gateway_actor::tell_unforwarded() {
  for (const auto& [key, lost] : unforwarded_)
    node_->tell_publisher(key.first, node_->name_of(key.second), lost.count, lost.why);
  unforwarded_.clear();
}

// Copies of a local publisher's messages that a node forwarding them could not deliver
// (node_runtime::tell_publisher on that node).
void gateway_actor::on_undelivered(const std::string& peer, runtime::envelope& e) {
  const vertex_id who = e.sender;  // check() found it in the tree
  if (!node_->is_local(who))
    return log_dropped(peer, "undelivered: publisher `" + state_->tree().path(who) + "` is not on this node");
  node_->tell_publisher(who, e.target, e.id, e.text);
}

// The target's gateway asks the target actor as a local requester would and sends a `reply`
// envelope back (node_wire.hpp).
void gateway_actor::serve_request(const std::string& peer, runtime::envelope& e) {
  // The reply goes to the requester's node, which is `peer` unless this request was passed on to
  // a component's new node after a live move (below).
  const vertex_id requester = e.sender;  // check() found it in the tree
  const node_id home = state_->where().node_of(requester);
  const std::string to = home == state_->where().self() ? peer : node_->name_of(home);
  auto reply = [node = node_, to, id = e.id](reply_code code, std::string text, const payload& data) {
    node->send_reply(to, id, code, std::move(text), data);
  };
  const std::string& path = e.target;
  const vertex_id target = *state_->tree().find(path);  // check() found it
  if (!state_->is_local(target)) {
    const node_id now = state_->where().node_of(target);
    if (now == node_->index_of(peer))
      return reply(reply_code::failed, "`" + path + "` is not on node `" + node_->self_name() + "`", {});
    return node_->send_control(now, std::move(e));  // it moved (a live move): answered there
  }
  auto actor = state_->actors().get(target);
  if (!actor && state_->where().asleep(target)) {
    held_delivery d;
    d.what = held_delivery::kind::remote_request;
    d.target = target;
    d.peer = peer;
    d.request = std::move(e);
    return hold(std::move(d));
  }
  if (!actor) return reply(reply_code::failed, "`" + path + "` is not running", {});
  const std::chrono::milliseconds timeout{e.timeout_ms};
  request(actor, caf::duration{timeout}, request_atom::value, e.topic,
          payload::view_of(e.payload.owner(), e.payload.data(), e.payload.size()), requester)
      .then(
          [reply](std::string& err, payload& data) {
            err.empty() ? reply(reply_code::ok, "", data) : reply(reply_code::failed, err, {});
          },
          [reply, timeout](caf::error& err) {
            if (err == caf::sec::request_timeout)
              reply(reply_code::timeout, "no reply within " + std::to_string(timeout.count()) + " ms", {});
            else reply(reply_code::failed, reason_text(err), {});  // the callee's what(), not CAF's rendering
          });
}

}  // namespace banyan::detail
