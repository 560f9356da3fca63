#include "cluster_gate.hpp"

#include "component_actor.hpp"
#include "gateway.hpp"
#include "node.hpp"

#include "banyan/base/log.hpp"

namespace banyan::detail {

std::unique_ptr<outbound_gate> make_gate(component_actor& self) {
  if (auto* node = self.state().node()) return std::make_unique<cluster_gate>(self, *node);
  return std::make_unique<local_gate>(self);
}

namespace {

error too_large(const std::string& what, std::size_t bytes, std::size_t limit) {
  return error{runtime::errc::payload_too_large, what + ": a payload of " + std::to_string(bytes) +
                                                     " bytes is larger than --max-payload (" + std::to_string(limit) +
                                                     " bytes)"};
}

}  // namespace

cluster_gate::cluster_gate(component_actor& self, node_runtime& node)
    : self_(self), state_(self.state()), node_(node) {}

bool cluster_gate::is_open() const { return state_.cluster_ready() && !releasing_; }

std::size_t cluster_gate::block_at() const {
  // Past the window the actor pauses (component_actor::pause); only far past it does a send block
  // its thread, and never in a handler for a message from another node.
  return self_.in_remote_delivery() ? runtime::never_block : node_runtime::publisher_block_at;
}

result<void> cluster_gate::publish(std::string_view topic_text, vertex_id scope, const payload& data) {
  // Refused whatever the route, so that the app sees the same on every deployment.
  if (data.size() > node_.max_payload_bytes())
    return too_large("publish `" + std::string(topic_text) + "`", data.size(), node_.max_payload_bytes());
  // Held when the gate is closed, or when what it held could not all go (a freeze came while it
  // was released): never ahead of an older publish.
  if (!is_open() || (!held_.empty() && !release())) {
    auto t = topic::parse(topic_text);
    if (!t) return t.error();
    held_.push_back({kind::publish, t->str(), scope, data, {}, std::nullopt});
    // A live move's freeze: stop originating work until the thaw (as for a full link), so a
    // publisher's loop does not pile up held messages while the deployment waits.
    if (state_.frozen()) self_.pause();
    return {};
  }
  return self_.route(topic_text, scope, data);
}

result<void> cluster_gate::forward(const route_info& info, std::uint64_t sequence, const payload& data) {
  // A failure (the node is lost) is counted and logged once per outage by the node runtime.
  result<void> out;
  const std::size_t limit = block_at();
  for (const auto& h : info.hops) {
    auto r = node_.forward(h, info.topic, info.publisher, info.scope, sequence, data, {}, limit);
    if (!r && out) {
      out = error{r.error().code, "publish `" + info.topic + "`: not delivered to node `" + node_.name_of(h.node) +
                                      "` (nor beyond it): " + r.error().message};
    }
  }
  for (const auto& h : info.hops) {
    if (node_.link_full(h.node)) {
      if (self_.pause()) node_.resume_when_credit(h.node, caf::actor_cast<caf::actor>(&self_));
      break;
    }
  }
  return out;
}

void cluster_gate::request(vertex_id target, std::string method, const payload& data, std::chrono::milliseconds timeout,
                           context::reply_handler on_reply) {
  if (!state_.is_local(target) || (!state_.frozen() && !releasing_))
    return send_request(target, std::move(method), data, timeout, std::move(on_reply));
  // A live move froze the deployment: the target may be leaving. Sent when the gate opens, to
  // wherever the target runs then.
  held_.push_back({kind::request,
                   {},
                   0,
                   {},
                   [this, target, method = std::move(method), data, timeout, on_reply = std::move(on_reply)]() mutable {
                     send_request(target, std::move(method), data, timeout, std::move(on_reply));
                   },
                   std::nullopt});
}

void cluster_gate::send_request(vertex_id target, std::string method, const payload& data,
                                std::chrono::milliseconds timeout, context::reply_handler on_reply) {
  if (state_.is_local(target)) return self_.request_here(target, std::move(method), data, timeout, std::move(on_reply));
  const std::uint64_t id = node_.next_request_id();
  std::string what = "request `" + method + "` to `" + state_.tree().path(target) + "`";
  if (data.size() > node_.max_payload_bytes()) {
    return self_.post_task(
        [on_reply = std::move(on_reply), e = too_large(what, data.size(), node_.max_payload_bytes())] { on_reply(e); });
  }
  // Its timeout runs from now, held or not.
  requests_[id] = {std::move(on_reply), std::move(what)};
  self_.delayed_send(caf::actor_cast<caf::actor>(&self_), timeout, expire_atom::value, id,
                     static_cast<std::int64_t>(timeout.count()));
  if (!is_open() || (!held_.empty() && !release())) {
    held_.push_back({kind::request,
                     {},
                     0,
                     {},
                     [this, id, target, method = std::move(method), data, timeout] {
                       if (requests_.count(id)) transmit(id, target, method, data, timeout);  // else it expired
                     },
                     std::nullopt});
    return;
  }
  transmit(id, target, method, data, timeout);
}

void cluster_gate::transmit(std::uint64_t id, vertex_id target, const std::string& method, const payload& data,
                            std::chrono::milliseconds timeout) {
  const vertex_id requester = self_.vertex();
  state_.requests().record(requester, target, data.size());  // the profile's request traffic
  auto sent =
      node_.send_request(requester, target, method, data, timeout, id, caf::actor_cast<caf::actor>(&self_), block_at());
  // Reported later, never from inside ctx.request() (as in one process).
  if (!sent) self_.post_task([this, id, e = error{sdk::errc::request_failed, sent.error().what()}] { answer(id, e); });
}

void cluster_gate::answer(std::uint64_t id, result<payload> outcome) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return;  // answered or expired already
  auto r = std::move(it->second);
  requests_.erase(it);
  if (!outcome) outcome = error{outcome.error().code, r.what + ": " + outcome.error().message};
  self_.call_user([&](component&, context&) { r.on_reply(std::move(outcome)); });
}

void cluster_gate::expire(std::uint64_t id, std::chrono::milliseconds after) {
  if (!requests_.count(id)) return;
  node_.forget_request(id);
  answer(id, error{sdk::errc::timeout, "no reply within " + std::to_string(after.count()) + " ms"});
}

void cluster_gate::monitor(vertex_id watched, std::uint64_t id) {
  if (state_.is_local(watched)) {
    state_.watching().add(watched, self_.address(), id);
    return;
  }
  remote_watched_.emplace(id, watched);  // its node's loss fires it too (monitors_lost_with)
  // Its node tells us of each of its ends (`down`). Made while the cluster starts, or while that
  // node is away (not joined yet, lost, or a failover placing it), the monitor waits for it and then
  // hears of the ends that node had at its start too: they came after the monitor was made.
  const bool early = !state_.cluster_ready() || !child_node_ready(watched);
  auto send = [this, watched, id, early] {
    if (!state_.is_local(watched)) return node_.send_monitor(self_.vertex(), watched, id, early);
    remote_watched_.erase(id);  // a failover placed it here
    state_.watching().add(watched, self_.address(), id);
  };
  if (is_open() && !early) return send();
  held_.push_back({kind::monitor, {}, 0, {}, std::move(send), watched, id});
}

std::vector<std::pair<std::uint64_t, vertex_id>> cluster_gate::monitors_lost_with(const std::vector<vertex_id>& gone) {
  // Every component on the lost node ended with it (Erlang's `noconnection`); that node will report
  // nothing more. `gone` is read when the loss was found: a failover may have placed them since.
  std::vector<std::pair<std::uint64_t, vertex_id>> fired;
  std::erase_if(remote_watched_, [&](const auto& m) {
    if (!std::binary_search(gone.begin(), gone.end(), m.second)) return false;
    fired.emplace_back(m);
    return true;
  });
  std::sort(fired.begin(), fired.end());  // ids grow: the order the monitors were made
  // Each goes on: made again where its component runs next (a failover's survivor, or its node
  // back after a restart), replacing one still held for the node that was lost.
  std::erase_if(held_, [&](const held& h) {
    return h.what == kind::monitor && std::any_of(fired.begin(), fired.end(), [&](auto& f) { return f.first == h.id; });
  });
  for (const auto& [id, watched] : fired) monitor(watched, id);
  return fired;
}

void cluster_gate::subscribed(subscription_id id, const std::string& filter) {
  node_.broadcast_subscribe(id, self_.vertex(), filter);
}

void cluster_gate::unsubscribed(subscription_id id) { node_.broadcast_unsubscribe(id); }

std::uint64_t cluster_gate::start_child(vertex_id child) {
  const std::uint64_t generation = node_.next_generation(child);
  node_.send_child(wire_kind::child_start, child, generation);
  return generation;
}

void cluster_gate::stop_child(vertex_id child, std::uint64_t generation) {
  node_.send_child(wire_kind::child_stop, child, generation);
}

void cluster_gate::start_when_ready(vertex_id child, std::function<void()> start) {
  // A local child starts at once, also before the cluster is ready; not during a failover, which
  // may just have placed it here.
  if (child_node_ready(child) && (state_.is_local(child) || is_open())) return start();
  held_.push_back({kind::child_start, {}, 0, {}, std::move(start), child});
}

bool cluster_gate::starts_held() const { return node_.failing_over(); }

bool cluster_gate::child_node_ready(vertex_id child) const {
  return !node_.failing_over() && (state_.is_local(child) || node_.node_ready(state_.where().node_of(child)));
}

std::optional<vertex_state> cluster_gate::arrive() {
  // What the incarnation before this one published and could not send goes ahead of this one's.
  if (auto orphans = state_.orphans().take(self_.vertex())) {
    for (auto& p : orphans->publishes)
      held_.push_back({kind::publish, std::move(p.topic), p.scope, payload::copy_of(p.data), {}, std::nullopt});
    if (is_open()) release();
  }
  auto arrival = state_.arrivals().take(self_.vertex());
  if (!arrival) return arrival;
  for (auto& p : arrival->held)
    held_.push_back({kind::publish, std::move(p.topic), p.scope, payload::copy_of(p.data), {}, std::nullopt});
  arrival->held.clear();
  return arrival;
}

void cluster_gate::arrived() { node_.arrived(self_.vertex()); }

void cluster_gate::leave(vertex_state& out) {
  std::size_t requests = 0;
  for (auto& h : held_) {
    if (h.what == kind::publish) {
      const auto bytes = h.data.bytes();
      out.held.push_back(
          {std::move(h.topic), h.scope, std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size())});
    } else if (h.what == kind::request) ++requests;
  }
  held_.clear();
  if (requests != 0)
    log::warning(
        state_.tree().path(self_.vertex()),
        std::to_string(requests) + " request(s) made while the deployment was frozen end with this incarnation");
}

void cluster_gate::open() { release(); }

bool cluster_gate::release() {
  if (releasing_) return false;
  releasing_ = true;
  // What a released item causes (a held child start runs its parent's on_children_started, which
  // may publish) queues behind and goes in this same pass.
  std::size_t at = 0;  // the items before it wait for their node
  while (at < held_.size() && state_.cluster_ready()) {
    if (held_[at].child && !child_node_ready(*held_[at].child)) {
      ++at;
      continue;
    }
    held h = std::move(held_[at]);
    held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(at));
    // A held publish already returned; a node lost meanwhile is counted and logged by the node.
    if (h.what == kind::publish) (void)self_.route(h.topic, h.scope, h.data);
    else h.send();
  }
  releasing_ = false;
  // Stopped early (a freeze came): what is left goes at the thaw, and what comes next behind it.
  // Items left that wait for their node hold nothing back.
  return at == held_.size();
}

void cluster_gate::clear() {
  // The incarnation ended with work held. Its publishes were made before it ended: they go out on
  // its behalf (orphaned_publishes). Its requests, monitors and child starts end with it, as they
  // would have had they been sent: nobody is left to hear the answer.
  std::vector<moved_publish> publishes;
  std::size_t others = 0;
  for (auto& h : held_) {
    if (h.what != kind::publish) {
      ++others;
      continue;
    }
    const auto bytes = h.data.bytes();
    publishes.push_back(
        {std::move(h.topic), h.scope, std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size())});
  }
  const std::string path = state_.tree().path(self_.vertex());
  if (!publishes.empty()) {
    log::info(path, "ended with " + std::to_string(publishes.size()) +
                        " publish(es) held while the deployment started or paused: they go out on its behalf");
    state_.orphans().add(self_.vertex(), std::move(publishes), self_.published());
    caf::anon_send(node_.gateway(), orphans_atom::value);
  }
  if (others != 0)
    log::warning(path, "ended with " + std::to_string(others) +
                           " request(s), monitor(s) or child start(s) held while the deployment started or paused: "
                           "not sent, nobody is left to hear of them");
  held_.clear();
  requests_.clear();
  remote_watched_.clear();
}

}  // namespace banyan::detail
