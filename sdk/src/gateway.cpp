#include "gateway.hpp"

#include "actor_protocol.hpp"
#include "node.hpp"
#include "node_wire.hpp"
#include "run_state.hpp"

#include "banyan/base/log.hpp"

namespace banyan::detail {
namespace {
using tell_atom = caf::atom_constant<caf::atom("tell")>;  // tell publishers what could not be forwarded
constexpr auto tell_after = std::chrono::milliseconds(100);
}  // namespace

gateway_actor::gateway_actor(caf::actor_config& cfg, run_state* state, node_runtime* node)
    : caf::event_based_actor(cfg), state_(state), node_(node), routes_(state->front()) {}

caf::behavior gateway_actor::make_behavior() {
  return {[this](remote_atom, const std::string& peer, std::shared_ptr<runtime::envelope>& e) { dispatch(peer, *e); },
          [this](tell_atom) { tell_unforwarded(); }};
}

void gateway_actor::dispatch(const std::string& peer, runtime::envelope& e) {
  // Every field of every kind is checked before anything uses it (node_wire.hpp); what is left to
  // the handlers is what needs this node's state (is the entry local, is the target running).
  if (auto fault = check(e, state_->tree(), node_->index_of(peer)); !fault.empty()) return refuse(peer, fault);
  switch (static_cast<wire_kind>(e.kind)) {
    case wire_kind::ready: return on_ready(peer);
    case wire_kind::quit: return node_->peer_quit(e.code, e.urgent);
    case wire_kind::subscribe:
    case wire_kind::unsubscribe: return on_subscription(peer, e);
    case wire_kind::data:
      if (!state_->cluster_ready()) {
        // Our replica of every node's subscriptions is not complete yet: route it later.
        early_data_.emplace_back(peer, std::move(e));
        return;
      }
      return on_data(peer, e);
    case wire_kind::request: return serve_request(peer, e);
    case wire_kind::reply: return node_->take_reply(e);
    case wire_kind::undelivered: return on_undelivered(peer, e);
  }
}

void gateway_actor::log_dropped(const std::string& peer, const std::string& why) {
  log::warning(node_->self_name(), "envelope from `" + peer + "` dropped: " + why);
}

void gateway_actor::refuse(const std::string& peer, const std::string& why) {
  // The first 10, then at every power of ten: a peer sending nothing but malformed envelopes cannot
  // flood the log, and the count says how many there were.
  const std::uint64_t n = ++malformed_;
  bool pow10 = true;
  for (std::uint64_t x = n; x > 1; x /= 10) {
    if (x % 10 != 0) {
      pow10 = false;
      break;
    }
  }
  if (n <= 10 || pow10) log_dropped(peer, "malformed " + why + " (" + std::to_string(n) + " malformed so far)");
}

void gateway_actor::on_ready(const std::string& peer) {
  node_->peer_ready(peer);
  if (!state_->cluster_ready()) return;
  auto waiting = std::move(early_data_);
  early_data_.clear();
  for (auto& [from_peer, envelope] : waiting) dispatch(from_peer, envelope);
}

void gateway_actor::on_subscription(const std::string& peer, runtime::envelope& e) {
  if (static_cast<wire_kind>(e.kind) == wire_kind::unsubscribe) {
    state_->routing().unsubscribe(e.id);
    return;
  }
  const vertex_id who = *state_->tree().find(e.sender);  // check() found it
  auto r = state_->routing().add_replica(e.id, who, e.topic);
  if (!r) log_dropped(peer, "replicated subscription: " + r.error().what());
}

void gateway_actor::on_data(const std::string& peer, runtime::envelope& e) {
  const auto& tree = state_->tree();
  const auto who = tree.find(e.sender);          // check() found both paths and the vertices in range
  const auto scope_vertex = tree.find(e.scope);
  const vertex_id entry = e.entry;
  const vertex_id from = e.from == runtime::no_vertex_field ? no_vertex : e.from;
  if (!state_->is_local(entry)) return log_dropped(peer, "data for a component not on this node");
  auto route = routes_.get(e.topic, *who, *scope_vertex, entry, from);
  if (!route) return log_dropped(peer, "data: " + route.error().what());
  const route_info& info = **route;
  auto data = payload::view_of(e.payload.owner(), e.payload.data(), e.payload.size());
  const std::uint64_t sequence = e.origin_sequence;
  // The link's credit comes back when the local targets have handled the message and the nodes it
  // is forwarded to have delivered it (the receipt rides along; forwards never wait: they are
  // bounded by the credit they hold).
  if (!info.local.empty()) {
    auto message = std::make_shared<const routed_message>(routed_message{*route, data, sequence, e.receipt});
    for (auto i : info.local) {
      if (!info.targets[i]) continue;
      state_->flow().queued(info.plan->targets()[i].component);
      caf::anon_send(info.targets[i], deliver_atom::value, message, i);
    }
  }
  for (const auto& h : info.hops) {
    auto sent = node_->forward(h, info.topic, *who, *scope_vertex, sequence, data, e.receipt, runtime::never_block);
    if (!sent) unforwarded(*who, h.node, sent.error().message);
  }
}

void gateway_actor::unforwarded(vertex_id publisher, node_id to, const std::string& why) {
  if (unforwarded_.empty()) delayed_send(this, tell_after, tell_atom::value);
  auto& lost = unforwarded_[{publisher, to}];
  ++lost.count;
  lost.why = why;
}

void gateway_actor::tell_unforwarded() {
  for (const auto& [key, lost] : unforwarded_) node_->tell_publisher(key.first, node_->name_of(key.second), lost.count, lost.why);
  unforwarded_.clear();
}

// Copies of a local publisher's messages that a node forwarding them could not deliver
// (node_runtime::tell_publisher on that node).
void gateway_actor::on_undelivered(const std::string& peer, runtime::envelope& e) {
  const vertex_id who = *state_->tree().find(e.sender);  // check() found it
  if (!node_->is_local(who)) return log_dropped(peer, "undelivered: publisher `" + e.sender + "` is not on this node");
  node_->tell_publisher(who, e.target, e.id, e.text);
}

// The target's gateway asks the target actor as a local requester would and sends a `reply`
// envelope back (node_wire.hpp).
void gateway_actor::serve_request(const std::string& peer, runtime::envelope& e) {
  auto reply = [node = node_, peer, id = e.id](reply_code code, std::string text, const payload& data) {
    node->send_reply(peer, id, code, std::move(text), data);
  };
  const std::string& path = e.target;
  const vertex_id target = *state_->tree().find(path);  // check() found it
  if (!state_->is_local(target)) return reply(reply_code::failed, "`" + path + "` is not on node `" + node_->self_name() + "`", {});
  auto actor = state_->actors().get(target);
  if (!actor) return reply(reply_code::failed, "`" + path + "` is not running", {});
  const std::chrono::milliseconds timeout{e.timeout_ms};
  request(actor, caf::duration{timeout}, request_atom::value, e.topic, payload::view_of(e.payload.owner(), e.payload.data(), e.payload.size()))
      .then([reply](std::string& err, payload& data) { err.empty() ? reply(reply_code::ok, "", data) : reply(reply_code::failed, err, {}); },
            [reply, timeout](caf::error& err) {
              if (err == caf::sec::request_timeout)
                reply(reply_code::timeout, "no reply within " + std::to_string(timeout.count()) + " ms", {});
              else
                reply(reply_code::failed, to_string(err), {});
            });
}

}  // namespace banyan::detail
