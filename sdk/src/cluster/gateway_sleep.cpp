// Hibernate and wake (docs/runtime.md, "Hibernate and wake"): the gateway's part.
//
// A sleep is a live move (gateway_move.cpp) whose states stay on this node: the deployment pauses,
// the subtree's actors hand over their states and end, and the node keeps the states; the subtree
// stays assigned here and keeps its subscriptions, so every node goes on routing its messages here.
// Its components have no actors now, and locality::asleep() says why: whatever reaches one of them
// (a message from this node or another, a request) comes to this gateway, which holds it in arrival
// order and wakes the subtree, as Knative's activator does.
//
// A wake here starts the subtree from its states while the deployment runs on: senders still go to
// the hold (a route treats an asleep component as having no actor). Once it has started, a short
// pause (the switch-over) hands it the held work, ahead of anything sent after the thaw. A wake on
// another node is a live move whose states come from here (a wake with held work wakes here first,
// then moves). Nothing that reached a sleeping subtree is lost or refused; the time each piece
// waited is measured (the profile's `held` timing of its target). Pauses are one at a time across
// the deployment: whoever starts one first takes the lease the root's node grants.
#include "actor_protocol.hpp"
#include "gateway.hpp"
#include "node.hpp"
#include "run_state.hpp"

#include "banyan/base/log.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <tuple>

namespace banyan::detail {
namespace {

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

void gateway_actor::start_sleep(const std::string& path, std::chrono::milliseconds keep, std::uint64_t answer) {
  const auto& tree = state_->tree();
  const node_id self = state_->where().self();
  auto refuse = [&](const std::string& why) { refuse_change("sleep", path, answer, why); };
  if (move_ || failover_ || !failovers_waiting_.empty()) {
    waiting_moves_.push_back({path, {}, answer, 's', keep});
    return;
  }
  auto v = tree.find(path);
  if (!v) return refuse(v.error().what());
  if (*v == 0) return refuse("the tree's root does not sleep");
  for (auto u : subtree_of(tree, *v)) {
    if (!state_->is_local(u))
      return refuse("`" + path + "` is not wholly on node `" + node_->self_name() + "`: `" + tree.path(u) +
                    "` runs on `" + node_->name_of(state_->where().node_of(u)) + "`");
  }
  if (auto z = sleeping_.find(*v); z != sleeping_.end() && z->second.starting) {
    // Waking (on demand): it goes back to sleep once it is up.
    waiting_moves_.push_back({path, {}, answer, 's', keep});
    return;
  }
  if (sleeping_.count(*v)) {
    // Asleep already: the keep-alive is the only change.
    keep_alive_.erase(*v);
    if (keep.count() > 0) keep_alive_[*v].idle = keep;
    const nlohmann::json a = {{"path", path}, {"slept", true}, {"components", 0}, {"already", true}};
    return node_->answer_move(answer, a.dump());
  }
  if (sleeping_root_of(*v) != no_vertex) return refuse("it is part of a subtree asleep already");
  if (!state_->actors().get(*v)) return refuse("`" + path + "` is not running");
  if (state_->frozen()) {  // another node's pause: after its thaw
    waiting_moves_.push_back({path, {}, answer, 's', keep});
    return;
  }
  if (!state_->cluster_ready()) return refuse("the deployment is not ready (still starting)");
  keep_alive_.erase(*v);
  if (keep.count() > 0) keep_alive_[*v].idle = keep;
  if (!take_lease({path, {}, answer, 's', keep})) return;
  move_.emplace();
  move_->epoch = (std::uint64_t(self) << 48) | next_epoch_++;
  move_->root = *v;
  move_->from = move_->to = self;
  move_->answer = answer;
  move_->sleep = true;
  move_->began = std::chrono::steady_clock::now();
  send_freeze();
  delayed_send(this, pause_limit(), movelimit_atom::value, move_->epoch);
  freeze(move_->epoch, self);
}

// Every actor of the subtree has handed over its state and gone idle (hand_over encoded the states
// into move_->shipped): they stay here.
void gateway_actor::put_to_sleep() {
  const auto& tree = state_->tree();
  const vertex_id root = move_->root;
  sleeper z;
  z.states = std::move(move_->shipped);
  z.since = std::chrono::steady_clock::now();
  // Its supervisor lets the incarnation go without starting another: a local parent marks the
  // child asleep; for a hosted root, this gateway drops it (its remote supervisor still sees it
  // here, where it wakes when asked).
  const vertex_id parent = tree.parent(root);
  if (state_->is_local(parent)) {
    if (auto p = state_->actors().get(parent)) anon_send(p, childsleep_atom::value, root);
  } else if (auto* h = hosted_of(root)) {
    z.generation = h->generation;
    if (h->actor) anon_send(h->actor, movequit_atom::value);
    std::erase_if(hosted_, [&](const hosted& x) { return x.vertex == root; });
    state_->done().root_left();
  }
  // No route may lead to the idle incarnations from the thaw on: their messages come here.
  for (auto u : subtree_of(tree, root)) state_->set_actor(u, caf::actor{});
  state_->where().sleep(tree, root, true);
  sleeping_.emplace(root, std::move(z));
  for (node_id n = 0; n < node_->deployment().names.size(); ++n)
    send_move(n, static_cast<std::uint16_t>(move_step::thaw));
  end_move(move_->aborted);
}

void gateway_actor::start_wake(const std::string& path, const std::string& to_name, std::uint64_t answer) {
  const auto& tree = state_->tree();
  const node_id self = state_->where().self();
  auto refuse = [&](const std::string& why) { refuse_change("wake", path, answer, why); };
  auto v = tree.find(path);
  if (!v) return refuse(v.error().what());
  auto z = sleeping_.find(*v);
  if (z == sleeping_.end()) {
    if (!answer) return;  // an on-demand wake that a supervisor's restart made moot
    // Awake already: a wake to another node is a move; one to here is no change.
    if (!to_name.empty() && to_name != node_->self_name() && state_->is_local(*v))
      return start_move(path, to_name, answer);
    const nlohmann::json a = {{"path", path}, {"woke", true}, {"already", true}};
    return node_->answer_move(answer, a.dump());
  }
  if (z->second.starting) {
    // On its way up here: this wake is that one (its answer comes with it).
    if (answer && !z->second.answer) z->second.answer = answer;
    else if (answer)
      node_->answer_move(answer, nlohmann::json{{"path", path}, {"woke", true}, {"already", true}}.dump());
    if (z->second.started) switch_over(*v);  // waited for a move or a failover
    return;
  }
  if (state_->actors().get(*v)) {
    // Its supervisor started it afresh while it slept (a restart of its parent): the held work
    // goes to that incarnation, and the states it slept with are dropped, as a restart drops them.
    z->second.waking = true;
    auto held = std::move(z->second.held);
    sleeping_.erase(z);
    state_->where().sleep(tree, *v, false);
    const auto [count, longest] = hand_on(std::move(held));
    const nlohmann::json a = {
        {"path", path}, {"woke", true}, {"held", count}, {"held_wait_ms", longest}, {"restarted", true}};
    return node_->answer_move(answer, a.dump());
  }
  if (move_ || failover_ || !failovers_waiting_.empty()) {
    z->second.waking = true;
    waiting_moves_.push_back({path, to_name, answer, 'w', {}});
    return;
  }
  node_id to = self;
  if (!to_name.empty()) {
    const auto& names = node_->deployment().names;
    auto found = std::find(names.begin(), names.end(), to_name);
    if (found == names.end()) return refuse("no node `" + to_name + "` in the deployment");
    to = static_cast<node_id>(found - names.begin());
    if (to != self && node_->mode() != routing_mode::hier) return refuse("a wake on another node needs hier routing");
    if (to != self && !node_->node_ready(to)) return refuse("node `" + to_name + "` is not ready");
  }
  if (!state_->cluster_ready()) {
    // A node rejoining: the wake waits for the deployment to be ready again.
    delayed_send(this, std::chrono::milliseconds(100), wake_atom::value, path, to_name, answer);
    return;
  }
  if (to != self && !z->second.held.empty()) {
    // Held work is delivered here, in order; the subtree moves on after it.
    waiting_moves_.insert(waiting_moves_.begin(), {path, to_name, answer, 'm', {}});
    to = self;
    answer = 0;
  }
  // An explicit wake (a plan's) holds the subtree awake until the next sleep; an on-demand one
  // lets its keep-alive put it back to sleep.
  if (auto k = keep_alive_.find(*v); k != keep_alive_.end()) {
    k->second.watching = answer == 0;
    k->second.seen = 0;
    k->second.last_change = std::chrono::steady_clock::now();
    if (k->second.watching && !keep_alive_ticking_) {
      keep_alive_ticking_ = true;
      send(this, keepalive_atom::value);
    }
  }
  z->second.waking = true;
  z->second.answer = answer;
  z->second.wake_began = std::chrono::steady_clock::now();
  log::info(node_->self_name(), "waking `" + path + "` on `" + node_->name_of(to) + "`" +
                                    (z->second.held.empty() ? std::string()
                                                            : " (" + std::to_string(z->second.held.size()) +
                                                                  " held message(s) and request(s))"));
  if (to == self) return start_here(*v);
  if (!take_lease({path, to_name, answer, 'w', {}})) return;
  move_.emplace();
  move_->epoch = (std::uint64_t(self) << 48) | next_epoch_++;
  move_->root = *v;
  move_->from = self;
  move_->to = to;
  move_->answer = answer;
  move_->wake = true;
  move_->generation = z->second.generation;
  move_->began = z->second.wake_began;
  send_freeze();
  delayed_send(this, pause_limit(), movelimit_atom::value, move_->epoch);
  freeze(move_->epoch, self);
}

void gateway_actor::start_here(vertex_id root) {
  auto& z = sleeping_.at(root);
  auto states = decode(z.states, state_->tree(), root);
  z.starting = true;
  if (states) {
    state_->arrivals().put(std::move(*states));
  } else {
    // Nothing can start it from these: it starts afresh, as after a failure without a checkpoint.
    log::error(node_->self_name(),
               "wake of `" + state_->tree().path(root) + "`: " + states.error().what() + "; it starts afresh");
  }
  start_arrived(root, z.generation);
}

void gateway_actor::switch_over(vertex_id root) {
  auto& z = sleeping_.at(root);
  if (move_ || failover_ || !failovers_waiting_.empty()) {
    waiting_moves_.push_back({state_->tree().path(root), {}, 0, 'w', {}});
    return;
  }
  if (!take_lease({state_->tree().path(root), {}, 0, 'w', {}})) return;
  const node_id self = state_->where().self();
  move_.emplace();
  move_->epoch = (std::uint64_t(self) << 48) | next_epoch_++;
  move_->root = root;
  move_->from = move_->to = self;
  move_->answer = std::exchange(z.answer, 0);
  move_->wake = true;
  move_->began = std::chrono::steady_clock::now();
  move_->state_bytes = z.states.size();
  send_freeze();
  delayed_send(this, pause_limit(), movelimit_atom::value, move_->epoch);
  freeze(move_->epoch, self);
}

// Every node is quiet: a subtree woken here gets what was held for it and every node thaws; one
// woken on another node goes there as a moved subtree does.
void gateway_actor::wake_out() {
  const vertex_id root = move_->root;
  auto z = sleeping_.find(root);
  if (z == sleeping_.end()) return hand_over({});
  const node_id self = state_->where().self();
  move_->state_bytes = z->second.states.size();
  if (move_->to == self) {
    release_sleeper(root);
    for (node_id n = 0; n < node_->deployment().names.size(); ++n)
      send_move(n, static_cast<std::uint16_t>(move_step::thaw));
    return end_move(move_->aborted);
  }
  auto decoded = decode(z->second.states, state_->tree(), root);
  std::vector<std::shared_ptr<vertex_state>> states;
  if (decoded)
    for (auto& s : *decoded) states.push_back(std::make_shared<vertex_state>(std::move(s)));
  state_->where().sleep(state_->tree(), root, false);
  sleeping_.erase(z);
  hand_over(std::move(states));
  // Supervision asked of it while it slept goes to its new node (it starts there first: the move
  // thaws once it runs there).
  std::erase_if(deferred_commands_, [&](auto& command) {
    if (command.second.target != state_->tree().path(root)) return false;
    node_->send_control(move_->to, std::move(command.second));
    return true;
  });
}

void gateway_actor::release_sleeper(vertex_id root) {
  auto z = sleeping_.find(root);
  if (z == sleeping_.end()) return;
  auto held = std::move(z->second.held);
  // A wake is a start of the subtree (from the wake's ask until it serves): the profile's `start`.
  const double wake_ms = ms_since(z->second.wake_began);
  state_->loads().timed(root, timing_kind::start, wake_ms / 1000.0);
  move_->wake_ms = wake_ms;
  sleeping_.erase(z);
  state_->where().sleep(state_->tree(), root, false);
  std::tie(move_->held, move_->held_wait_ms) = hand_on(std::move(held));
  // Supervision asked of it while it slept goes on now that it runs.
  auto commands = std::move(deferred_commands_);
  deferred_commands_.clear();
  for (auto& [peer, e] : commands) on_child_command(peer, e);
}

std::pair<std::size_t, double> gateway_actor::hand_on(std::vector<held_delivery> held) {
  double longest = 0;
  for (auto& d : held) {
    const double waited = ms_since(d.since);
    longest = std::max(longest, waited);
    state_->loads().timed(d.target, timing_kind::held, waited / 1000.0);
    auto actor = state_->actors().get(d.target);
    switch (d.what) {
      case held_delivery::kind::data:
        if (!actor) continue;  // not started with its subtree (a dynamic child): not for it now
        state_->flow().queued(d.target);
        anon_send(actor, deliver_atom::value, std::move(d.message), d.index);
        break;
      case held_delivery::kind::remote_request: serve_request(d.peer, d.request); break;
      case held_delivery::kind::local_request: {
        const vertex_id target = d.target;
        on_hold_request(target, std::move(d));
        break;
      }
    }
  }
  return {held.size(), longest};
}

vertex_id gateway_actor::sleeping_root_of(vertex_id v) const {
  if (sleeping_.empty()) return no_vertex;
  for (;; v = state_->tree().parent(v)) {
    if (sleeping_.count(v)) return v;
    if (v == 0) return no_vertex;
  }
}

void gateway_actor::hold(held_delivery d) {
  if (d.what == held_delivery::kind::data && !state_->where().asleep(d.target)) {
    // It woke meanwhile: on to it, behind what was held (handed over before the thaw). (While it
    // wakes, its new actor runs already but still gets nothing before the held work.)
    if (auto actor = state_->actors().get(d.target)) {
      state_->flow().queued(d.target);
      return anon_send(actor, deliver_atom::value, std::move(d.message), d.index);
    }
  }
  const vertex_id root = sleeping_root_of(d.target);
  if (root == no_vertex) return;  // stopped, not asleep: as for any stopped target
  auto& z = sleeping_[root];
  d.since = std::chrono::steady_clock::now();
  z.held.push_back(std::move(d));
  if (z.waking) return;
  // After the handler that holds it (a thaw replaying what it held may be running): woken then.
  z.waking = true;
  send(this, wake_atom::value, state_->tree().path(root), std::string(), std::uint64_t{0});
}

void gateway_actor::on_hold_request(vertex_id target, held_delivery d) {
  auto actor = state_->actors().get(target);
  if (!actor) {
    if (sleeping_root_of(target) != no_vertex) {
      d.target = target;
      return hold(std::move(d));
    }
    d.promise.deliver(std::string("`" + state_->tree().path(target) + "` is not running"), payload{});
    return;
  }
  auto promise = d.promise;
  request(actor, caf::infinite, request_atom::value, std::move(d.method), std::move(d.data), d.requester)
      .then([promise](std::string& err, payload& reply) mutable { promise.deliver(std::move(err), std::move(reply)); },
            [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
}

void gateway_actor::wake_failed(vertex_id root) {
  auto z = sleeping_.find(root);
  if (z == sleeping_.end()) return;
  z->second.waking = false;
  // What waits for it is still held: the next try comes when the deployment may pause again.
  if (!z->second.held.empty())
    delayed_send(this, std::chrono::milliseconds(100), wake_atom::value, state_->tree().path(root), std::string(),
                 std::uint64_t{0});
}

void gateway_actor::log_sleep_or_wake(double pause_ms) {
  const std::string path = state_->tree().path(move_->root);
  char line[240];
  if (move_->sleep) {
    std::snprintf(line, sizeof line, ": %zu component(s), %llu bytes of state kept; the deployment paused %.1f ms",
                  move_->components, static_cast<unsigned long long>(move_->state_bytes), pause_ms);
    log::info(node_->self_name(), "`" + path + "` is asleep" + line);
  } else {
    std::snprintf(line, sizeof line,
                  " in %.1f ms (%llu bytes of state; the deployment paused %.1f ms); %zu held message(s) and "
                  "request(s) handed on",
                  move_->wake_ms > 0 ? move_->wake_ms : pause_ms, static_cast<unsigned long long>(move_->state_bytes),
                  pause_ms, move_->held);
    std::string text = "woke `" + path + "` on `" + node_->name_of(move_->to) + "`" + line;
    if (move_->held) {
      std::snprintf(line, sizeof line, ", the longest waited %.1f ms", move_->held_wait_ms);
      text += line;
    }
    log::info(node_->self_name(), text);
  }
  if (!move_->without_state.empty())
    log::warning(node_->self_name(), "`" + path + "`: " + std::to_string(move_->without_state.size()) +
                                         " component(s) gave no state (snapshot() returned nothing) and start afresh");
}

bool gateway_actor::take_lease(waiting_move then) {
  if (lease_held_) return true;
  waiting_moves_.push_back(std::move(then));
  if (lease_asked_) return false;
  lease_asked_ = true;
  const node_id root = state_->where().node_of(0), self = state_->where().self();
  if (root == self) on_lease(self, move_step::lease, ++lease_request_);
  else send_step(root, move_step::lease, ++lease_request_);
  return false;
}

void gateway_actor::give_lease_back() {
  if (!lease_held_) return;
  lease_held_ = false;
  const node_id root = state_->where().node_of(0), self = state_->where().self();
  if (root == self) on_lease(self, move_step::release, lease_request_);
  else send_step(root, move_step::release, lease_request_);  // (an envelope's id is never 0)
}

void gateway_actor::send_step(node_id to, move_step step, std::uint64_t id) {
  runtime::envelope e;
  e.kind = static_cast<std::uint16_t>(wire_kind::move);
  e.code = static_cast<std::int32_t>(step);
  e.id = id;
  node_->send_control(to, std::move(e));
}

void gateway_actor::on_lease(node_id from, move_step step, std::uint64_t id) {
  const node_id self = state_->where().self();
  auto grant = [&](node_id to, std::uint64_t request) {
    lease_holder_ = to;
    if (to == self) return lease_granted();
    send_step(to, move_step::granted, request);
  };
  switch (step) {
    case move_step::lease:
      if (lease_holder_) lease_queue_.emplace_back(from, id);
      else grant(from, id);
      return;
    case move_step::release:
      if (lease_holder_ != from) return;
      lease_holder_.reset();
      if (lease_queue_.empty()) return;
      {
        const auto [next, request] = lease_queue_.front();
        lease_queue_.erase(lease_queue_.begin());
        grant(next, request);
      }
      return;
    case move_step::granted:
      if (lease_asked_ && id == lease_request_) lease_granted();
      return;
    default: return;
  }
}

void gateway_actor::lease_granted() {
  lease_asked_ = false;
  lease_held_ = true;
  // Still in the pause of the lease's previous holder (its thaw is on its way over another link
  // than the grant): what waits starts at that thaw.
  if (!move_) run_waiting();
}

// What waited for a pause to end or for the lease: each is tried once, in order, until one starts
// a pause (the rest waits for its end); a lease nothing here uses goes back at once, or nobody
// else could pause again.
void gateway_actor::run_waiting() {
  for (std::size_t n = waiting_moves_.size(); n > 0 && !move_ && !failover_; --n) {
    auto next = std::move(waiting_moves_.front());
    waiting_moves_.erase(waiting_moves_.begin());
    start_next(std::move(next));
  }
  if (!move_) give_lease_back();
}

// In use: some component assigned here is not asleep (a node that hosts nothing is not in use).
void gateway_actor::count_node_time() {
  const auto now = std::chrono::steady_clock::now();
  if (in_use_) in_use_seconds_ += std::chrono::duration<double>(now - in_use_since_).count();
  in_use_since_ = now;
  const auto& where = state_->where();
  in_use_ = false;
  for (vertex_id v = 0; v < state_->tree().size() && !in_use_; ++v)
    in_use_ = where.node_of(v) == where.self() && !where.asleep(v);
}

// Subtrees woken on demand with a keep-alive go back to sleep once they have handled no message
// for that long. Looked at every tenth of the shortest keep-alive while one is awake on demand.
void gateway_actor::check_keep_alive() {
  keep_alive_ticking_ = false;
  auto shortest = std::chrono::milliseconds::max();
  const auto now = std::chrono::steady_clock::now();
  std::vector<vertex_id> idle;
  for (auto& [root, k] : keep_alive_) {
    if (!k.watching) continue;
    if (sleeping_.count(root)) {  // still waking: its idle time starts once it serves
      k.seen = 0;
      k.last_change = now;
      shortest = std::min(shortest, k.idle);
      continue;
    }
    std::uint64_t seen = 0;
    for (auto u : subtree_of(state_->tree(), root)) seen += state_->loads().messages(u);
    if (seen != k.seen) {
      k.seen = seen;
      k.last_change = now;
    } else if (now - k.last_change >= k.idle) {
      idle.push_back(root);
      continue;
    }
    shortest = std::min(shortest, k.idle);
  }
  for (auto root : idle) {
    keep_alive_[root].watching = false;
    start_sleep(state_->tree().path(root), keep_alive_[root].idle, 0);
  }
  if (shortest != std::chrono::milliseconds::max()) {
    keep_alive_ticking_ = true;
    delayed_send(this, std::max(std::chrono::milliseconds(5), shortest / 10), keepalive_atom::value);
  }
}

}  // namespace banyan::detail
