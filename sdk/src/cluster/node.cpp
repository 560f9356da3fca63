#include "node.hpp"

#include "actor_protocol.hpp"
#include "node_wire.hpp"
#include "run_state.hpp"

#include "banyan/base/log.hpp"

#include <nlohmann/json.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <map>
#include <thread>

namespace banyan::detail {

node_runtime::node_runtime(run_state& state, resolved_deployment d)
    : state_(state),
      deployment_(std::move(d)),
      sent_(new counters[deployment_.names.size()]),
      generations_(new std::atomic<std::uint64_t>[deployment_.node_of.size()]) {
  for (std::size_t v = 0; v < deployment_.node_of.size(); ++v) generations_[v] = 1;
}

node_runtime::~node_runtime() { stop(); }

bool node_runtime::is_local(vertex_id v) const { return state_.is_local(v); }

std::uint64_t node_runtime::digest_of(const resolved_deployment& d, const component_tree& tree, routing_mode mode) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a over every field, each ended by a 0xff byte
  auto add = [&](std::string_view text) {
    for (unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
    h = (h ^ 0xffu) * 1099511628211ULL;
  };
  for (vertex_id v = 0; v < tree.size(); ++v) add(tree.path(v));
  for (std::size_t i = 0; i < d.names.size(); ++i) {
    add(d.names[i]);
    add(d.endpoints[i]);
    add(i < d.curve_public.size() ? d.curve_public[i] : "");
  }
  for (auto n : d.node_of) add(std::to_string(n));
  add(std::to_string(static_cast<int>(mode)));
  return h == 0 ? 1 : h;  // 0 means "not checked"
}

std::string node_runtime::start_error() const {
  std::lock_guard lock(start_error_mutex_);
  return start_error_;
}

result<void> node_runtime::start(caf::actor_system& system, const run_options& options) {
  gateway_ = spawn_gateway(system, &state_, this);
  start_timeout_ = options.start_timeout;
  heartbeat_timeout_ = options.heartbeat_timeout;
  max_payload_bytes_ = options.max_payload_bytes;
  runtime::transport_options o;
  o.self = deployment_.names[deployment_.self];
  o.bind_endpoint = deployment_.endpoints[deployment_.self];
  o.heartbeat_timeout = options.heartbeat_timeout;
  o.give_up_after = std::max(options.give_up_after, options.heartbeat_timeout);
  o.credit_window = credit_window;
  // Envelope text (paths, topic) comes on top of the payload. A larger payload than a chunk travels
  // in chunks, so frames stay small whatever the limit.
  o.max_payload_bytes = options.max_payload_bytes + (64 << 10);
  o.digest = digest_of(deployment_, state_.tree(), options.mode);
  o.curve_public_key = deployment_.curve_public[deployment_.self];
  o.curve_secret_key = deployment_.curve_secret[deployment_.self];
  // Who must be up before this node announces itself: every node that starts the deployment; for a
  // node that joins a running one (`join: later`, --join), only the root's node.
  const bool joining = options.join || late(deployment_.self);
  required_.assign(deployment_.names.size(), false);
  for (std::size_t i = 0; i < deployment_.names.size(); ++i) {
    if (i == deployment_.self) continue;
    required_[i] = joining ? i == deployment_.node_of[0] : !late(static_cast<node_id>(i));
  }
  ready_.assign(deployment_.names.size(), false);
  lost_.assign(deployment_.names.size(), false);
  refused_back_.assign(deployment_.names.size(), false);
  refused_.assign(deployment_.names.size(), false);
  for (std::size_t i = 0; i < deployment_.names.size(); ++i) {
    if (i == deployment_.self) continue;
    o.peers.push_back({deployment_.names[i], deployment_.endpoints[i], deployment_.curve_public[i], required_[i]});
    if (!deployment_.curve_public[i].empty()) o.authorized_keys.push_back(deployment_.curve_public[i]);
  }
  runtime::callbacks cbs;
  cbs.on_envelope = [this](const std::string& peer, runtime::envelope&& e) { on_envelope(peer, std::move(e)); };
  cbs.on_peer_up = [this](const std::string& peer) { on_peer_up(peer); };
  cbs.on_peer_returned = [this](const std::string& peer) { on_peer_returned(peer); };
  cbs.on_peer_down = [this](const std::string& peer, const std::string& reason) { on_peer_down(peer, reason); };
  cbs.on_credit = [this](const std::string& peer) { on_credit(peer); };
  cbs.on_undelivered = [this](const std::string& peer, std::vector<runtime::envelope>&& lost,
                              const std::string& reason) { on_undelivered(peer, lost, reason); };
  auto t = runtime::transport::start(std::move(o), std::move(cbs));
  if (!t) return t.error();
  transport_ = std::move(*t);
  return {};
}

void node_runtime::announce_ready() {
  // The transport names each missing peer every few seconds meanwhile. Waited for in slices, so a
  // signal (the run ending) is noticed.
  const auto until = std::chrono::steady_clock::now() + start_timeout_;
  while (!state_.done().ending()) {
    auto up = transport_->wait_until_all_up(std::chrono::milliseconds(200));
    if (up) break;
    const bool incompatible = up.error().code == runtime::errc::incompatible_peer;
    if (!incompatible && std::chrono::steady_clock::now() < until) continue;
    if (incompatible) {
      // Stay one heartbeat timeout longer: our frames (with our digest) reach the peer meanwhile,
      // so it refuses us as clearly instead of waiting for us until its start timeout.
      const auto linger = std::chrono::steady_clock::now() + heartbeat_timeout_;
      while (!state_.done().ending() && std::chrono::steady_clock::now() < linger)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a deliberate linger, checking for the run's end
    }
    std::string why = up.error().message;
    if (!incompatible) {  // "...: `n2` (endpoint), ..." after the time of this last slice
      const auto at = why.find(" ms: ");
      why = "node `" + self_name() + "`: peers not up " + std::to_string(start_timeout_.count() / 1000) +
            " s after start (--start-timeout): " + (at == std::string::npos ? why : why.substr(at + 5));
    }
    log::error(self_name(), why);
    {
      std::lock_guard lock(start_error_mutex_);
      start_error_ = why;
    }
    state_.done().request_quit(2, /*urgent=*/true);
    return;
  }
  if (state_.done().ending()) return;
  announced_ = true;
  for (const auto& s : state_.routing().local_subscriptions()) broadcast_subscribe(s.id, s.subscriber, s.filter);
  runtime::envelope ready;
  ready.kind = static_cast<std::uint16_t>(wire_kind::ready);
  send_to_all(ready);
  log::info(self_name(), "started; waiting for every peer to be ready");
  check_cluster_ready();  // they may all have been ready before us
}

void node_runtime::stop() {
  release_publishers();
  if (transport_ && !stopped_.exchange(true)) log_summary();
  for (std::size_t i = 0; i < deployment_.names.size(); ++i)
    if (auto n = sent_[i].failed.exchange(0))
      log::warning(self_name(),
                   std::to_string(n) + " messages for `" + deployment_.names[i] + "` could not be sent (node lost)");
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
  for (std::size_t i = 0; i < deployment_.names.size(); ++i) {
    if (i == deployment_.self) continue;
    auto r = transport_->send(deployment_.names[i], e, runtime::never_block);
    // A node that may join later hears it all when it comes up (on_peer_up); so does a lost one
    // that comes back.
    bool lost = false;
    {
      std::lock_guard lock(ready_mutex_);
      lost = lost_[i];
    }
    if (!r && required_[i] && !lost) log::warning(self_name(), r.error().what());
  }
}

result<void> node_runtime::forward(const hop& h, const std::string& topic, vertex_id publisher, vertex_id scope,
                                   std::uint64_t sequence, const payload& data, std::shared_ptr<const void> receipt,
                                   std::size_t block_at) {
  runtime::envelope e;
  e.kind = static_cast<std::uint16_t>(wire_kind::data);
  e.sender = publisher;
  e.scope = scope;
  e.topic = topic;
  e.entry = h.entry;
  e.from = h.from == no_vertex ? runtime::no_vertex_field : h.from;
  e.origin_sequence = sequence;
  e.payload = runtime::shared_bytes(data.owner(), data.bytes().data(), data.size());
  e.receipt = std::move(receipt);
  auto r = transport_->send(deployment_.names[h.node], std::move(e), block_at);
  if (r) {
    sent_[h.node].messages.fetch_add(1, std::memory_order_relaxed);
    sent_[h.node].bytes.fetch_add(data.size(), std::memory_order_relaxed);
  } else {
    sent_[h.node].failed.fetch_add(1, std::memory_order_relaxed);
    // One line per outage, not one per message; the count is in the final log line.
    if (!sent_[h.node].failing.exchange(true))
      log::warning(self_name(),
                   "messages for `" + deployment_.names[h.node] + "` are not delivered: " + r.error().what());
  }
  return r;
}

void node_runtime::broadcast_subscribe(subscription_id id, vertex_id subscriber, const std::string& filter) {
  if (!announced_) return;  // the snapshot sent with `ready` carries it
  runtime::envelope e;
  e.kind = static_cast<std::uint16_t>(wire_kind::subscribe);
  e.sender = subscriber;
  e.topic = filter;
  e.id = id;
  send_to_all(e);
}

void node_runtime::broadcast_unsubscribe(subscription_id id) {
  if (!announced_) return;
  runtime::envelope e;
  e.kind = static_cast<std::uint16_t>(wire_kind::unsubscribe);
  e.id = id;
  send_to_all(e);
}

void node_runtime::broadcast_quit(int exit_code, bool urgent) {
  if (quitting_.exchange(true) || !transport_) return;
  runtime::envelope e;
  e.kind = static_cast<std::uint16_t>(wire_kind::quit);
  e.code = exit_code;
  e.urgent = urgent;
  // Never waits for credit: a slow peer must not hold up the stop (nor this thread, the run's main).
  for (std::size_t i = 0; i < deployment_.names.size(); ++i)
    if (i != deployment_.self) (void)transport_->send(deployment_.names[i], e, runtime::never_block);
}

void node_runtime::host_roots() { caf::anon_send(gateway_, host_atom::value); }

void node_runtime::arrived(vertex_id v) { caf::anon_send(gateway_, arrived_atom::value, v); }

std::string node_runtime::assignment_json() const {
  const auto& tree = state_.tree();
  const auto& where = state_.where().node_of();
  nlohmann::json a = nlohmann::json::object();
  for (vertex_id v = 0; v < tree.size(); ++v)
    if (v == 0 || where[v] != where[tree.parent(v)]) a[tree.path(v)] = deployment_.names[where[v]];
  return nlohmann::json{{"assignments", a}}.dump();
}

void node_runtime::when_started(std::function<void()> then) {
  {
    std::lock_guard lock(started_mutex_);
    if (!started_) return when_started_.push_back(std::move(then));
  }
  then();
}

void node_runtime::started() {
  // The gateway releases what it held (early data, its hosted roots' reports) when the last peer's
  // `ready` reaches it; when this node was the last to announce itself, it hears it here.
  caf::anon_send(gateway_, ready_atom::value);
  std::vector<std::function<void()>> waiting;
  {
    std::lock_guard lock(started_mutex_);
    started_ = true;
    waiting.swap(when_started_);
  }
  for (auto& then : waiting) then();
}

void node_runtime::request_change(change kind, std::string path, std::string arg,
                                  std::function<void(std::string)> answer) {
  std::uint64_t token;
  {
    std::lock_guard lock(answers_mutex_);
    token = next_answer_++;
    answers_.emplace(token, std::move(answer));
  }
  switch (kind) {
    case change::move: return caf::anon_send(gateway_, move_atom::value, std::move(path), std::move(arg), token);
    case change::wake: return caf::anon_send(gateway_, wake_atom::value, std::move(path), std::move(arg), token);
    case change::sleep: {
      // The keep-alive in milliseconds (control_channel.cpp checked it is a number); empty: none.
      const std::int64_t keep = arg.empty() ? 0 : std::stoll(arg);
      return caf::anon_send(gateway_, sleep_atom::value, std::move(path), keep, token);
    }
  }
}

void node_runtime::answer_move(std::uint64_t token, std::string answer) {
  std::function<void(std::string)> f;
  {
    std::lock_guard lock(answers_mutex_);
    auto it = answers_.find(token);
    if (it == answers_.end()) return;
    f = std::move(it->second);
    answers_.erase(it);
  }
  f(std::move(answer));
}

void node_runtime::send_control(node_id to, runtime::envelope e) {
  if (to == deployment_.self || !transport_) return;
  if (auto r = transport_->send(deployment_.names[to], std::move(e), runtime::never_block); !r)
    log::warning(self_name(), "move: " + r.error().what());
}

routing_mode node_runtime::mode() const { return state_.options().mode; }

void node_runtime::shutdown_hosted(bool urgent) {
  if (urgent) caf::anon_send<caf::message_priority::high>(gateway_, shutdown_atom::value, true);
  else caf::anon_send(gateway_, shutdown_atom::value, false);
}

void node_runtime::send_child(wire_kind kind, vertex_id child, std::uint64_t generation, std::string text) {
  const auto& tree = state_.tree();
  const bool to_child = kind == wire_kind::child_start || kind == wire_kind::child_stop;
  const node_id to = state_.where().node_of(to_child ? child : tree.parent(child));
  runtime::envelope e;
  e.kind = static_cast<std::uint16_t>(kind);
  e.target = tree.path(child);
  e.id = generation;
  e.text = text.size() > max_error_text_bytes ? text.substr(0, max_error_text_bytes) : std::move(text);
  auto r = transport_->send(deployment_.names[to], std::move(e), runtime::never_block);
  if (r) return;
  log::warning(self_name(), "supervision of `" + tree.path(child) + "`: " + r.error().what());
  // A start that cannot reach the child's node fails the child at once when no failover will place
  // it elsewhere (refused), so its supervisor goes on as for any failure instead of waiting for
  // ever. While a failover may still come, the start waits for it: its go restarts the child there.
  if (kind != wire_kind::child_start) return;
  {
    std::lock_guard lock(ready_mutex_);
    if (!refused_[to]) return;
  }
  if (auto parent = state_.actors().get(tree.parent(child)))
    caf::anon_send(parent, rfailed_atom::value, child, generation,
                   "cannot start on node `" + deployment_.names[to] + "`: " + r.error().what());
}

void node_runtime::send_monitor(vertex_id watcher, vertex_id watched, std::uint64_t id, bool starting) {
  runtime::envelope e;
  e.kind = static_cast<std::uint16_t>(wire_kind::monitor);
  e.sender = watcher;
  e.target = state_.tree().path(watched);
  e.id = id;
  e.code = starting ? 1 : 0;
  auto r = transport_->send(deployment_.names[state_.where().node_of(watched)], std::move(e), runtime::never_block);
  if (!r) log::warning(self_name(), "monitor of `" + state_.tree().path(watched) + "`: " + r.error().what());
}

void node_runtime::send_down(vertex_id watched, std::uint32_t to, vertex_id watcher, std::uint64_t id,
                             std::string reason) {
  runtime::envelope e;
  e.kind = static_cast<std::uint16_t>(wire_kind::down);
  e.sender = watched;
  e.target = state_.tree().path(watcher);
  e.id = id;
  e.text = reason.size() > max_error_text_bytes ? reason.substr(0, max_error_text_bytes) : std::move(reason);
  (void)transport_->send(deployment_.names[to], std::move(e), runtime::never_block);
}

std::vector<link_traffic> node_runtime::data_links() const {
  std::vector<link_traffic> out;
  for (std::size_t i = 0; i < deployment_.names.size(); ++i) {
    if (i == deployment_.self) continue;
    out.push_back(
        {deployment_.names[deployment_.self], deployment_.names[i], sent_[i].messages.load(), sent_[i].bytes.load()});
  }
  return out;
}

void node_runtime::on_envelope(const std::string& peer, runtime::envelope&& e) {
  // An urgent `quit` (a signal's) stops this node ahead of what is queued, as it does the sender:
  // taken here, it does not wait for the gateway's turn behind components busy with a backlog.
  if (e.kind == static_cast<std::uint16_t>(wire_kind::quit) && e.urgent &&
      check(e, state_.tree(), index_of(peer)).empty())
    return peer_quit(peer, e.code, true, e.text);
  // Everything else goes through the gateway actor in arrival order: a peer's `ready` must not
  // overtake the subscriptions it sent before it, nor a graceful `quit` the data.
  caf::anon_send(gateway_, remote_atom::value, peer, std::make_shared<runtime::envelope>(std::move(e)));
}

bool node_runtime::peer_ready(const std::string& peer) {
  const node_id n = index_of(peer);
  bool again = false, back = false;
  {
    std::lock_guard lock(ready_mutex_);
    if (refused_back_[n]) return false;  // told to end (refuse_returning)
    again = ready_[n];                   // a second `ready` of one link (announce_ready's and on_peer_up's)
    ready_[n] = true;
    back = lost_[n];
    if (back && !again) refused_[n] = false;  // taken back: starts go there again
  }
  const bool joined = !again && state_.cluster_ready();  // ready after the start: it joined (or came back)
  check_cluster_ready();
  if (!joined) return false;
  // A node that joins sees the others' readies after its own start too: only a late or a returning
  // node is news.
  if (late(n) || back) log::info(self_name(), "node `" + peer + "` joined" + (back ? " again" : ""));
  // Dynamic children waiting for that node start now (their gates release them: joined_atom).
  for (const auto& a : state_.actors().running()) caf::anon_send(a, joined_atom::value, n);
  return back;
}

void node_runtime::check_cluster_ready() {
  // Not before this node has announced itself: until then its peers hold what it sends them, and a
  // child it starts on a peer could not report back (the start of the local subtree would wait for it).
  if (!announced_) return;
  bool all = true;
  {
    std::lock_guard lock(ready_mutex_);
    for (std::size_t i = 0; i < ready_.size(); ++i) all = all && (ready_[i] || !required_[i]);
  }
  if (all) state_.set_cluster_ready();
}

bool node_runtime::node_ready(node_id n) const {
  if (n == deployment_.self) return true;
  std::lock_guard lock(ready_mutex_);
  return ready_[n];
}

void node_runtime::refuse_starts_on(node_id n) {
  std::lock_guard lock(ready_mutex_);
  refused_[n] = true;
}

void node_runtime::peer_quit(const std::string& peer, int exit_code, bool urgent, const std::string& reason) {
  if (!quitting_.exchange(true)) {  // do not echo it back; say it once
    const std::string line = reason.empty()
                                 ? "node `" + peer + "` ended the run with exit code " + std::to_string(exit_code)
                                 : "node `" + peer + "` told this node to end (exit code " + std::to_string(exit_code) +
                                       "): " + log::escape(reason);
    if (exit_code != 0) log::error(self_name(), line);
    else log::info(self_name(), line);
  }
  state_.done().request_quit(exit_code, urgent);
}

void node_runtime::on_peer_up(const std::string& peer) {
  // The transport logs the link's coming up itself (one line per link, not two).
  for (std::size_t i = 0; i < deployment_.names.size(); ++i)
    if (deployment_.names[i] == peer) sent_[i].failing = false;
  if (!announced_) return;
  if (refuse_returning(peer)) return;
  // A peer that comes back has lost our subscriptions: send them again (replicas ignore known ids).
  // This runs on the I/O thread, where send() does not block.
  for (const auto& s : state_.routing().local_subscriptions()) {
    runtime::envelope e;
    e.kind = static_cast<std::uint16_t>(wire_kind::subscribe);
    e.sender = s.subscriber;
    e.topic = s.filter;
    e.id = s.id;
    (void)transport_->send(peer, std::move(e));
  }
  runtime::envelope ready;
  ready.kind = static_cast<std::uint16_t>(wire_kind::ready);
  (void)transport_->send(peer, std::move(ready));
}

void node_runtime::on_peer_returned(const std::string& peer) {
  const node_id n = index_of(peer), root = state_.where().node_of(0);
  // Before this node announced itself, or the root's node back (the others cannot decide): as ever.
  if (!announced_ || n == root) return on_peer_up(peer);
  if (root != state_.where().self()) {
    // The root's node tells it to end; until then it gets neither our subscriptions nor `ready`.
    log::warning(self_name(), "node `" + peer + "` is heard again after it was given up; the root's node `" +
                                  deployment_.names[root] + "` tells it to end");
    return;
  }
  // What it ran was reported lost (restarted or failed over elsewhere, or given up by its
  // supervisors): taken back, it would run it a second time.
  log::error(self_name(), "node `" + peer +
                              "` is heard again after it was given up (it was stopped or cut off, not restarted): what "
                              "it ran was reported lost, so it is not taken back; it is told to end (restart it to "
                              "join again)");
  tell_to_end(n, "node `" + self_name() +
                     "` gave this node up (nothing heard from it for too long: it was stopped or cut off), and what it "
                     "ran was reported lost; it ends (restart it to join again)");
}

void node_runtime::tell_to_end(node_id n, std::string why) {
  {
    std::lock_guard lock(ready_mutex_);
    refused_back_[n] = true;  // its `ready` is not news: it ends
  }
  runtime::envelope e;
  e.kind = static_cast<std::uint16_t>(wire_kind::quit);
  e.code = 2;
  if (why.size() > max_error_text_bytes) why.resize(max_error_text_bytes);
  e.text = std::move(why);
  (void)transport_->send(deployment_.names[n], std::move(e), runtime::never_block);
}

bool node_runtime::refuse_returning(const std::string& peer) {
  const node_id n = index_of(peer);
  if (state_.where().node_of(0) != state_.where().self()) return false;  // the root's node decides failovers
  {
    std::lock_guard lock(ready_mutex_);
    if (!lost_[n]) return false;
  }
  // Its deployment still gives it components that a failover placed elsewhere: it would start them
  // a second time. It is not taken back; it ends (its replacement joins as a new node).
  const auto& where = state_.where().node_of();
  for (vertex_id v = 0; v < state_.tree().size(); ++v) {
    if (deployment_.node_of[v] != n || where[v] == n) continue;
    log::error(self_name(), "node `" + peer + "` came back, but its components failed over while it was lost (`" +
                                state_.tree().path(v) + "` runs on `" + deployment_.names[where[v]] +
                                "`): refused, it is told to end; start a replacement under another name (`join: "
                                "later`) and move subtrees onto it");
    tell_to_end(n, "node `" + self_name() +
                       "` does not take this node back: its components failed over while it "
                       "was lost (`" +
                       state_.tree().path(v) + "` runs on `" + deployment_.names[where[v]] +
                       "`); start a replacement under another name (`join: later`)");
    return true;
  }
  std::lock_guard lock(ready_mutex_);
  refused_back_[n] = false;  // taken back
  return false;
}

node_id node_runtime::index_of(const std::string& peer) const {
  for (std::size_t i = 0; i < deployment_.names.size(); ++i)
    if (deployment_.names[i] == peer) return static_cast<node_id>(i);
  return deployment_.self;
}

bool node_runtime::link_full(node_id node) const {
  return node != deployment_.self && transport_ && transport_->window_full(deployment_.names[node]);
}

void node_runtime::resume_when_credit(node_id node, caf::actor who) {
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

std::uint64_t node_runtime::count_refused(node_id peer, const std::string& kind) {
  std::lock_guard lock(refused_mutex_);
  return ++refused_by_[{peer, kind}];
}

std::map<std::pair<node_id, std::string>, std::uint64_t> node_runtime::refused_counts() const {
  std::lock_guard lock(refused_mutex_);
  return refused_by_;
}

void node_runtime::log_summary() {
  std::string line = "links:";
  for (std::size_t i = 0; i < deployment_.names.size(); ++i) {
    if (i == deployment_.self) continue;
    auto s = transport_->stats(deployment_.names[i]);
    line += " " + deployment_.names[i] + " (sent " + std::to_string(s.messages_sent) + ", received " +
            std::to_string(s.messages_received) + ", max outstanding " + std::to_string(s.max_outstanding) + " (" +
            std::to_string(s.max_outstanding_bytes) + " bytes), max undelivered " + std::to_string(s.max_undelivered) +
            ")";
  }
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  line += "; publisher pauses " + std::to_string(pauses_.load()) + "; peak RSS " + std::to_string(u.ru_maxrss / 1024) +
          " MiB";
  if (auto n = undelivered_.load()) line += "; " + std::to_string(n) + " messages undelivered (nodes lost)";
  {
    std::lock_guard lock(refused_mutex_);
    std::string refused;
    for (const auto& [key, n] : refused_by_)
      refused +=
          (refused.empty() ? "" : ", ") + deployment_.names[key.first] + " " + key.second + " " + std::to_string(n);
    if (!refused.empty()) line += "; refused (not the sender's to send): " + refused;
  }
  // The text names the node too: `banyan launch` users and tests read this line on its own.
  log::info(self_name(), "summary of node " + self_name() + ": " + line);
}

// Requests go straight to the target's node (not along the tree: they are point to point), as
// `request` envelopes (node_wire.hpp). The target's gateway asks the target actor like a local
// requester would and sends a `reply` envelope back.
result<void> node_runtime::send_request(vertex_id requester, vertex_id target, const std::string& method,
                                        const payload& data, std::chrono::milliseconds timeout, std::uint64_t id,
                                        caf::actor reply_to, std::size_t block_at) {
  const auto& tree = state_.tree();
  const node_id node = state_.where().node_of(target);
  runtime::envelope e;
  e.kind = static_cast<std::uint16_t>(wire_kind::request);
  e.sender = requester;
  e.topic = method;
  e.target = tree.path(target);
  e.id = id;
  e.timeout_ms = static_cast<std::uint32_t>(std::clamp<std::int64_t>(timeout.count(), 1, max_request_timeout_ms));
  e.payload = runtime::shared_bytes(data.owner(), data.bytes().data(), data.size());
  {
    std::lock_guard lock(requests_mutex_);
    requests_[id] = {std::move(reply_to), node, target};
  }
  auto r = transport_->send(deployment_.names[node], std::move(e), block_at);
  if (!r) forget_request(id);
  return r;
}

void node_runtime::forget_request(std::uint64_t id) {
  std::lock_guard lock(requests_mutex_);
  requests_.erase(id);
}

void node_runtime::send_reply(const std::string& peer, std::uint64_t id, reply_code code, std::string text,
                              const payload& data) {
  runtime::envelope r;
  r.kind = static_cast<std::uint16_t>(wire_kind::reply);
  r.id = id;
  r.code = static_cast<std::int32_t>(code);
  if (code != reply_code::ok)
    r.text = text.size() > max_error_text_bytes ? text.substr(0, max_error_text_bytes) : std::move(text);
  r.payload = runtime::shared_bytes(data.owner(), data.bytes().data(), data.size());
  (void)transport_->send(peer, std::move(r), runtime::never_block);  // bounded by the requests
}

bool node_runtime::reply_expected_from(std::uint64_t id, node_id from) const {
  std::lock_guard lock(requests_mutex_);
  auto it = requests_.find(id);
  if (it == requests_.end()) return true;  // answered or given up: take_reply drops it, changing nothing
  const auto& where = state_.where();
  return it->second.node == from || where.node_of(it->second.target) == from ||
         where.previous_node_of(it->second.target) == from;
}

void node_runtime::take_reply(runtime::envelope& e) {
  const std::uint64_t id = e.id;  // the gateway checked the envelope (node_wire.hpp)
  caf::actor to;
  {
    std::lock_guard lock(requests_mutex_);
    auto it = requests_.find(id);
    if (it == requests_.end()) return;  // the requester gave up (its own timeout) or is gone
    to = std::move(it->second.reply_to);
    requests_.erase(it);
  }
  // The requester's actor protocol names the outcome as text ("", "timeout", "failed"); the wire
  // carries the code.
  const auto code = static_cast<reply_code>(e.code);
  std::string outcome = code == reply_code::ok ? "" : code == reply_code::timeout ? "timeout" : "failed";
  caf::anon_send(to, reply_atom::value, id, std::move(outcome), std::move(e.text),
                 payload::view_of(e.payload.owner(), e.payload.data(), e.payload.size()));
}

void node_runtime::fail_requests_to(node_id node, const std::string& why) {
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

// What a gone peer will never deliver (the transport hands it back before on_peer_down): one log
// line with the totals, and each publisher told how many of its messages were lost, on this node or
// (copies this node was forwarding) on another (tell_publisher). Requests are failed by on_peer_down.
// Runs on the I/O thread: only sends messages.
void node_runtime::on_undelivered(const std::string& peer, std::vector<runtime::envelope>& lost,
                                  const std::string& reason) {
  std::map<vertex_id, std::uint64_t> by_publisher;
  std::uint64_t data = 0, forwarded = 0, control = 0;
  const auto& tree = state_.tree();
  for (const auto& e : lost) {
    if (static_cast<wire_kind>(e.kind) != wire_kind::data) {
      ++control;
      continue;
    }
    ++data;
    const vertex_id who = e.sender;  // we wrote it: a vertex of the tree
    ++by_publisher[who];
    if (!is_local(who)) ++forwarded;
  }
  if (lost.empty()) return;
  std::string line = "node `" + peer + "` lost with " + std::to_string(data) + " messages undelivered";
  for (const auto& [v, n] : by_publisher)
    if (is_local(v)) line += ", " + std::to_string(n) + " from " + tree.path(v);
  if (forwarded) line += ", " + std::to_string(forwarded) + " forwarded from other nodes (their publishers are told)";
  if (control) line += " (and " + std::to_string(control) + " control envelopes)";
  log::error(self_name(), line + ": " + reason);
  for (const auto& [v, n] : by_publisher) tell_publisher(v, peer, n, reason);
  undelivered_.fetch_add(data, std::memory_order_relaxed);
}

void node_runtime::tell_publisher(vertex_id publisher, const std::string& lost, std::uint64_t count,
                                  const std::string& reason) {
  if (is_local(publisher)) {
    if (auto a = state_.actors().get(publisher))
      caf::anon_send<caf::message_priority::high>(a, undeliv_atom::value, lost, count, reason);
    return;
  }
  const std::string& home = deployment_.names[state_.where().node_of(publisher)];
  if (home == lost) return;  // gone with its publisher
  runtime::envelope e;
  e.kind = static_cast<std::uint16_t>(wire_kind::undelivered);
  e.sender = publisher;
  e.target = lost;
  e.id = count;
  const std::string why = "forwarded by `" + self_name() + "`: " + reason;
  e.text = why.size() > max_error_text_bytes ? why.substr(0, max_error_text_bytes) : why;
  // Never waits: one envelope per lost batch (or per failed forward), bounded by the data it reports.
  if (auto r = transport_->send(home, std::move(e), runtime::never_block); !r)
    log::warning(self_name(), "could not tell `" + home + "` of " + std::to_string(count) +
                                  " undelivered messages: " + r.error().what());
}

void node_runtime::on_peer_down(const std::string& peer, const std::string& reason) {
  log::error(self_name(), "lost node `" + peer + "`: " + reason);
  {
    std::lock_guard lock(ready_mutex_);
    ready_[index_of(peer)] = false;  // until it comes back and says ready again
    lost_[index_of(peer)] = true;
  }
  fail_requests_to(index_of(peer), "node `" + peer + "` lost: " + reason);
  waiters_.release(index_of(peer));  // their sends now fail fast instead of waiting
  // Supervision event: every local component with a child on the lost node hears about it.
  node_id lost = 0;
  for (std::size_t i = 0; i < deployment_.names.size(); ++i)
    if (deployment_.names[i] == peer) lost = static_cast<node_id>(i);
  // What ran there, read before the gateway hears of the loss: a failover (the gateway's) changes
  // where() next.
  const auto& tree = state_.tree();
  const std::vector<node_id> where = state_.where().node_of();
  std::vector<vertex_id> gone;
  for (vertex_id v = 0; v < tree.size(); ++v)
    if (where[v] == lost) gone.push_back(v);
  for (vertex_id v : gone) {
    if (v == 0 || where[tree.parent(v)] != state_.where().self()) continue;
    if (auto a = state_.actors().get(tree.parent(v)))
      caf::anon_send(a, lost_atom::value, tree.path(v), lost, "node `" + peer + "` lost: " + reason);
  }
  // Monitors: every local component that watches one on the lost node hears of its end.
  for (vertex_id v = 0; v < tree.size(); ++v) {
    if (where[v] != state_.where().self()) continue;
    if (auto a = state_.actors().get(v))
      caf::anon_send(a, nodelost_atom::value, lost, "node `" + peer + "` lost: " + reason, gone);
  }
  caf::anon_send(gateway_, peerlost_atom::value, lost);  // a move it took part in ends; a failover begins
  // The root's node coordinates and the root's state has nowhere to come from: without it the run
  // cannot go on (nor end by itself: its `quit`, if it sent one, was lost with it).
  if (lost == where[0] && !quitting_.exchange(true)) {
    log::error(self_name(), "the root's node `" + peer + "` is lost, so the run cannot go on; this node ends");
    state_.done().request_quit(1, /*urgent=*/true);
  }
}

}  // namespace banyan::detail
