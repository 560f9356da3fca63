#include "node.hpp"

#include "component_actor.hpp"
#include "run_state.hpp"

#include "banyan/partitioner/io.hpp"

#include <yaml-cpp/yaml.h>

#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <thread>

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<banyan::runtime::envelope>)

namespace banyan::detail {

namespace {

using remote_atom = caf::atom_constant<caf::atom("remote")>;

result<std::string> read_key(const std::filesystem::path& file, const std::string& what) {
  std::ifstream in(file);
  std::string key;
  if (!in || !(in >> key))
    return error{sdk::errc::io, what + ": cannot read key file `" + file.string() + "`"};
  return key;
}

std::string number(std::uint64_t v) { return std::to_string(v); }


}  // namespace

// Handles everything that arrives from other nodes, in arrival order. (A class, not a spawned
// function: CAF 0.17's function-actor factory dereferences an empty argument tuple, which UBSan
// reports.)
class gateway_actor final : public caf::event_based_actor {
 public:
  gateway_actor(caf::actor_config& cfg, node_runtime* node) : caf::event_based_actor(cfg), node_(node) {}
  caf::behavior make_behavior() override {
    return {[this](remote_atom, const std::string& peer, std::shared_ptr<runtime::envelope>& e) {
      node_->dispatch(this, peer, *e);
    }};
  }
  const char* name() const override { return "banyan.gateway"; }

 private:
  node_runtime* node_;
};

void node_runtime::dispatch(caf::event_based_actor* gateway, const std::string& peer, runtime::envelope& e) {
  switch (static_cast<wire_kind>(e.kind)) {
    case wire_kind::request: return serve_request(gateway, peer, e);
    case wire_kind::reply: return take_reply(e);
    default: return state_.handle_remote(*this, peer, e);
  }
}

result<placement> load_placement(const std::string& path, const std::string& self, const component_tree& tree) {
  auto d = partitioner::load_deployment(path);
  if (!d) return std::move(d).error();  // the partitioner's code and message, unchanged
  placement p;
  bool found = false;
  for (std::size_t i = 0; i < d->c.nodes.size(); ++i) {
    const auto& n = d->c.nodes[i];
    p.names.push_back(n.name);
    p.endpoints.push_back(n.endpoint);
    if (n.name == self) {
      p.self = static_cast<node_index>(i);
      found = true;
    }
  }
  if (!found) {
    std::string names;
    for (const auto& n : p.names) names += (names.empty() ? "" : ", ") + n;
    return error{sdk::errc::invalid_argument, path + ": --node `" + self + "` is not in the deployment (nodes: " + names + ")"};
  }
  // Place every component: an assignment places its subtree, a descendant's assignment overrides.
  std::vector<int> assigned(tree.size(), -1);
  for (const auto& a : d->assignments) {
    auto v = tree.find(a.path);
    if (!v)
      return error{sdk::errc::invalid_argument,
                   path + ":" + std::to_string(a.line) + ": assignment `" + a.path + "` names no component of this app"};
    assigned[*v] = a.node;
  }
  if (assigned[0] < 0)
    return error{sdk::errc::invalid_argument, path + ": the root `" + tree.path(0) + "` has no assignment"};
  p.node_of.resize(tree.size());
  for (vertex_id v = 0; v < tree.size(); ++v)  // parents have smaller indices
    p.node_of[v] = static_cast<node_index>(assigned[v] >= 0 ? assigned[v] : p.node_of[tree.parent(v)]);

  // Optional CURVE keys: nodes[i].curve: {public: FILE, secret: FILE}, relative to the deployment.
  p.curve_public.assign(p.names.size(), {});
  p.curve_secret.assign(p.names.size(), {});
  try {
    YAML::Node root = YAML::LoadFile(path);
    auto base = std::filesystem::path(path).parent_path();
    for (std::size_t i = 0; i < p.names.size(); ++i) {
      YAML::Node curve = root["nodes"][i]["curve"];
      if (!curve) continue;
      std::string where = path + ":" + std::to_string(curve.Mark().line + 1) + ": node `" + p.names[i] + "` curve";
      if (!curve["public"]) return error{sdk::errc::invalid_argument, where + ": needs `public`"};
      auto pub = read_key(base / curve["public"].as<std::string>(), where);
      if (!pub) return pub.error();
      p.curve_public[i] = *pub;
      if (i == p.self) {
        if (!curve["secret"]) return error{sdk::errc::invalid_argument, where + ": this node needs `secret`"};
        auto sec = read_key(base / curve["secret"].as<std::string>(), where);
        if (!sec) return sec.error();
        p.curve_secret[i] = *sec;
      }
    }
  } catch (const YAML::Exception& e) {
    return error{sdk::errc::invalid_argument, path + ": " + e.what()};
  }
  return p;
}

node_runtime::node_runtime(run_state& state, placement p)
    : state_(state), placement_(std::move(p)), sent_(new counters[placement_.names.size()]) {}

node_runtime::~node_runtime() { stop(); }

result<void> node_runtime::start(caf::actor_system& system, std::chrono::milliseconds heartbeat_timeout) {
  gateway_ = system.spawn<gateway_actor>(this);
  runtime::transport_options o;
  o.self = placement_.names[placement_.self];
  o.bind_endpoint = placement_.endpoints[placement_.self];
  o.heartbeat_timeout = heartbeat_timeout;
  o.credit_window = credit_window;
  o.curve_public_key = placement_.curve_public[placement_.self];
  o.curve_secret_key = placement_.curve_secret[placement_.self];
  for (std::size_t i = 0; i < placement_.names.size(); ++i) {
    if (i == placement_.self) continue;
    o.peers.push_back({placement_.names[i], placement_.endpoints[i], placement_.curve_public[i]});
    if (!placement_.curve_public[i].empty()) o.authorized_keys.push_back(placement_.curve_public[i]);
  }
  runtime::callbacks cbs;
  cbs.on_envelope = [this](const std::string& peer, runtime::envelope&& e) { on_envelope(peer, std::move(e)); };
  cbs.on_peer_up = [this](const std::string& peer) { on_peer_up(peer); };
  cbs.on_peer_down = [this](const std::string& peer, const std::string& reason) { on_peer_down(peer, reason); };
  cbs.on_credit = [this](const std::string& peer) { on_credit(peer); };
  cbs.on_log = [this](runtime::log_level, const std::string& line) {
    state_.log("node " + placement_.names[placement_.self], line);
  };
  auto t = runtime::transport::start(std::move(o), std::move(cbs));
  if (!t) return t.error();
  transport_ = std::move(*t);
  return {};
}

void node_runtime::announce_ready() {
  for (std::size_t i = 0; i < placement_.names.size(); ++i) {
    if (i == placement_.self) continue;
    while (!state_.ending()) {
      if (transport_->wait_until_up(placement_.names[i], std::chrono::milliseconds(200))) break;
    }
    if (state_.ending()) return;
  }
  announced_ = true;
  for (const auto& s : state_.routing().local_subscriptions()) broadcast_subscribe(s.id, s.subscriber, s.filter);
  runtime::envelope ready;
  ready.kind = static_cast<std::uint16_t>(wire_kind::ready);
  send_to_all(ready);
  state_.log("node " + placement_.names[placement_.self], "started; waiting for every peer to be ready");
}

void node_runtime::stop() {
  release_publishers();
  if (transport_ && !stopped_.exchange(true)) log_summary();
  for (std::size_t i = 0; i < placement_.names.size(); ++i)
    if (auto n = sent_[i].failed.exchange(0))
      state_.log("node " + placement_.names[placement_.self],
                 std::to_string(n) + " messages for `" + placement_.names[i] + "` could not be sent (node lost)");
  if (transport_) {
    transport_->flush();
    transport_->stop();
  }
  if (gateway_) {
    caf::anon_send_exit(gateway_, caf::exit_reason::user_shutdown);
    gateway_ = caf::actor{};
  }
}

void node_runtime::send_to_all(const runtime::envelope& e) {
  // Control envelopes (subscriptions, `ready`) never wait for credit: a peer holds the data that
  // arrives before it is cluster-ready, with its credit, until our `ready` arrives.
  for (std::size_t i = 0; i < placement_.names.size(); ++i) {
    if (i == placement_.self) continue;
    auto r = transport_->send(placement_.names[i], e, runtime::never_block);
    if (!r) state_.log("node " + placement_.names[placement_.self], r.error().what());
  }
}

result<void> node_runtime::forward(const hop& h, const std::string& topic, vertex_id publisher, vertex_id scope,
                                   std::uint64_t sequence, const payload& data, std::shared_ptr<const void> receipt,
                                   std::size_t block_at) {
  runtime::envelope e;
  e.kind = static_cast<std::uint16_t>(wire_kind::data);
  const auto& tree = state_.tree();
  e.sender = tree.path(publisher);
  e.scope = tree.path(scope);
  e.topic = topic;
  e.extra = {number(h.entry), h.from == no_vertex ? std::string() : number(h.from), number(sequence)};
  e.payload = runtime::shared_bytes(data.owner(), data.bytes().data(), data.size());
  e.receipt = std::move(receipt);
  auto r = transport_->send(placement_.names[h.node], std::move(e), block_at);
  if (r) {
    sent_[h.node].messages.fetch_add(1, std::memory_order_relaxed);
    sent_[h.node].bytes.fetch_add(data.size(), std::memory_order_relaxed);
  } else {
    sent_[h.node].failed.fetch_add(1, std::memory_order_relaxed);
    // One line per outage, not one per message; the count is in the final log line.
    if (!sent_[h.node].failing.exchange(true))
      state_.log("node " + placement_.names[placement_.self],
                 "messages for `" + placement_.names[h.node] + "` are not delivered: " + r.error().what());
  }
  return r;
}

void node_runtime::broadcast_subscribe(subscription_id id, vertex_id subscriber, const std::string& filter) {
  if (!announced_) return;  // the snapshot sent with `ready` carries it
  runtime::envelope e;
  e.kind = static_cast<std::uint16_t>(wire_kind::subscribe);
  e.sender = state_.tree().path(subscriber);
  e.topic = filter;
  e.extra = {number(id)};
  send_to_all(e);
}

void node_runtime::broadcast_unsubscribe(subscription_id id) {
  if (!announced_) return;
  runtime::envelope e;
  e.kind = static_cast<std::uint16_t>(wire_kind::unsubscribe);
  e.extra = {number(id)};
  send_to_all(e);
}

void node_runtime::broadcast_quit(int exit_code, bool urgent) {
  if (quitting_.exchange(true) || !transport_) return;
  runtime::envelope e;
  e.kind = static_cast<std::uint16_t>(wire_kind::quit);
  e.extra = {std::to_string(exit_code), urgent ? "urgent" : ""};
  // Never waits for credit: a slow peer must not hold up the stop (nor this thread, the run's main).
  for (std::size_t i = 0; i < placement_.names.size(); ++i)
    if (i != placement_.self) (void)transport_->send(placement_.names[i], e, runtime::never_block);
}

std::vector<link_traffic> node_runtime::data_links() const {
  std::vector<link_traffic> out;
  for (std::size_t i = 0; i < placement_.names.size(); ++i) {
    if (i == placement_.self) continue;
    out.push_back({placement_.names[placement_.self], placement_.names[i], sent_[i].messages.load(),
                   sent_[i].bytes.load()});
  }
  return out;
}

void node_runtime::on_envelope(const std::string& peer, runtime::envelope&& e) {
  // Everything goes through the gateway actor in arrival order: a peer's `ready` must not overtake
  // the subscriptions it sent before it, nor `quit` the data.
  caf::anon_send(gateway_, remote_atom::value, peer, std::make_shared<runtime::envelope>(std::move(e)));
}

void node_runtime::peer_ready(const std::string& peer) {
  std::lock_guard lock(ready_mutex_);
  peers_ready_.insert(peer);
  if (peers_ready_.size() + 1 == placement_.names.size()) state_.set_cluster_ready();
}

void node_runtime::peer_quit(int exit_code, bool urgent) {
  quitting_ = true;  // do not echo it back
  state_.request_quit(exit_code, urgent);
}

void node_runtime::on_peer_up(const std::string& peer) {
  state_.log("node " + placement_.names[placement_.self], "link to `" + peer + "` is up");
  for (std::size_t i = 0; i < placement_.names.size(); ++i)
    if (placement_.names[i] == peer) sent_[i].failing = false;
  if (!announced_) return;
  // A peer that comes back has lost our subscriptions: send them again (replicas ignore known ids).
  // This runs on the I/O thread, where send() does not block.
  for (const auto& s : state_.routing().local_subscriptions()) {
    runtime::envelope e;
    e.kind = static_cast<std::uint16_t>(wire_kind::subscribe);
    e.sender = state_.tree().path(s.subscriber);
    e.topic = s.filter;
    e.extra = {number(s.id)};
    (void)transport_->send(peer, std::move(e));
  }
  runtime::envelope ready;
  ready.kind = static_cast<std::uint16_t>(wire_kind::ready);
  (void)transport_->send(peer, std::move(ready));
}

node_index node_runtime::index_of(const std::string& peer) const {
  for (std::size_t i = 0; i < placement_.names.size(); ++i)
    if (placement_.names[i] == peer) return static_cast<node_index>(i);
  return placement_.self;
}

bool node_runtime::link_full(node_index node) const {
  return node != placement_.self && transport_ && transport_->window_full(placement_.names[node]);
}

void node_runtime::resume_when_credit(node_index node, caf::actor who) {
  pauses_.fetch_add(1, std::memory_order_relaxed);
  waiters_.add(node, std::move(who));
  // The credit may have come back between the publisher's check and its registration.
  if (!link_full(node)) waiters_.release(node);
}

void node_runtime::release_publishers() { waiters_.close(); }

void node_runtime::on_credit(const std::string& peer) {
  auto node = index_of(peer);
  if (!link_full(node)) waiters_.release(node);
}

void node_runtime::log_summary() {
  std::string line = "links:";
  for (std::size_t i = 0; i < placement_.names.size(); ++i) {
    if (i == placement_.self) continue;
    auto s = transport_->stats(placement_.names[i]);
    line += " " + placement_.names[i] + " (sent " + number(s.messages_sent) + ", received " +
            number(s.messages_received) + ", max outstanding " + number(s.max_outstanding) + ", max undelivered " +
            number(s.max_undelivered) + ")";
  }
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  line += "; publisher pauses " + number(pauses_.load()) + "; peak RSS " + number(u.ru_maxrss / 1024) + " MiB";
  state_.log("node " + placement_.names[placement_.self], line);
}

// Requests go straight to the target's node (not along the tree: they are point to point), as
// `request` envelopes: sender = requester path, topic = method, extra = {target path, id, timeout ms}.
// The target's gateway asks the target actor like a local requester would and sends a `reply`
// envelope back: extra = {id, "" | "timeout" | "failed", error text}, payload = the reply.
result<void> node_runtime::send_request(vertex_id requester, vertex_id target, const std::string& method,
                                        const payload& data, std::chrono::milliseconds timeout, std::uint64_t id,
                                        caf::actor reply_to, std::size_t block_at) {
  const auto& tree = state_.tree();
  const node_index node = placement_.node_of[target];
  runtime::envelope e;
  e.kind = static_cast<std::uint16_t>(wire_kind::request);
  e.sender = tree.path(requester);
  e.topic = method;
  e.extra = {tree.path(target), number(id), number(static_cast<std::uint64_t>(timeout.count()))};
  e.payload = runtime::shared_bytes(data.owner(), data.bytes().data(), data.size());
  {
    std::lock_guard lock(requests_mutex_);
    requests_[id] = {std::move(reply_to), node};
  }
  auto r = transport_->send(placement_.names[node], std::move(e), block_at);
  if (!r) forget_request(id);
  return r;
}

void node_runtime::forget_request(std::uint64_t id) {
  std::lock_guard lock(requests_mutex_);
  requests_.erase(id);
}

void node_runtime::serve_request(caf::event_based_actor* gateway, const std::string& peer, runtime::envelope& e) {
  if (e.extra.size() != 3) return state_.log("node", "malformed request envelope from `" + peer + "`");
  auto reply = [this, peer, id = e.extra[1]](std::string code, std::string text, const payload& data) {
    runtime::envelope r;
    r.kind = static_cast<std::uint16_t>(wire_kind::reply);
    r.extra = {id, std::move(code), std::move(text)};
    r.payload = runtime::shared_bytes(data.owner(), data.bytes().data(), data.size());
    (void)transport_->send(peer, std::move(r), runtime::never_block);  // bounded by the requests
  };
  const std::string& path = e.extra[0];
  auto target = state_.tree().find(path);
  if (!target) return reply("failed", target.error().message, {});
  if (!is_local(*target)) return reply("failed", "`" + path + "` is not on node `" + placement_.names[placement_.self] + "`", {});
  auto actor = state_.actor_of(*target);
  if (!actor) return reply("failed", "`" + path + "` is not running", {});
  std::chrono::milliseconds timeout{0};
  try {
    timeout = std::chrono::milliseconds(std::stoll(e.extra[2]));
  } catch (const std::exception&) {
    return reply("failed", "malformed timeout `" + e.extra[2] + "`", {});
  }
  gateway->request(actor, caf::duration{timeout}, request_atom::value, e.topic, payload::copy_of(e.payload.span()))
      .then([reply](std::string& err, payload& data) { err.empty() ? reply("", "", data) : reply("failed", err, {}); },
            [reply, timeout](caf::error& err) {
              if (err == caf::sec::request_timeout)
                reply("timeout", "no reply within " + std::to_string(timeout.count()) + " ms", {});
              else
                reply("failed", to_string(err), {});
            });
}

void node_runtime::take_reply(runtime::envelope& e) {
  if (e.extra.size() != 3) return state_.log("node", "malformed reply envelope");
  std::uint64_t id = 0;
  try {
    id = std::stoull(e.extra[0]);
  } catch (const std::exception&) {
    return state_.log("node", "malformed reply envelope (id `" + e.extra[0] + "`)");
  }
  caf::actor to;
  {
    std::lock_guard lock(requests_mutex_);
    auto it = requests_.find(id);
    if (it == requests_.end()) return;  // the requester gave up (its own timeout) or is gone
    to = std::move(it->second.reply_to);
    requests_.erase(it);
  }
  caf::anon_send(to, reply_atom::value, id, e.extra[1], e.extra[2], payload::copy_of(e.payload.span()));
}

void node_runtime::fail_requests_to(node_index node, const std::string& why) {
  std::vector<std::pair<std::uint64_t, caf::actor>> failed;
  {
    std::lock_guard lock(requests_mutex_);
    std::erase_if(requests_, [&](auto& r) {
      if (r.second.node != node) return false;
      failed.emplace_back(r.first, std::move(r.second.reply_to));
      return true;
    });
  }
  for (auto& [id, to] : failed) caf::anon_send(to, reply_atom::value, id, std::string("failed"), why, payload{});
}

void node_runtime::on_peer_down(const std::string& peer, const std::string& reason) {
  state_.log("node " + placement_.names[placement_.self], "lost node `" + peer + "`: " + reason);
  fail_requests_to(index_of(peer), "node `" + peer + "` lost: " + reason);
  waiters_.release(index_of(peer));  // their sends now fail fast instead of waiting
  // Supervision event: every local component with a child on the lost node hears about it.
  node_index lost = 0;
  for (std::size_t i = 0; i < placement_.names.size(); ++i)
    if (placement_.names[i] == peer) lost = static_cast<node_index>(i);
  const auto& tree = state_.tree();
  for (vertex_id v = 1; v < tree.size(); ++v) {
    if (placement_.node_of[v] != lost || !is_local(tree.parent(v))) continue;
    state_.notify_child_lost(tree.parent(v), tree.path(v), "node `" + peer + "` lost: " + reason);
  }
}

}  // namespace banyan::detail
