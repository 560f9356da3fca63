#include "supervisor.hpp"

#include "actor_protocol.hpp"
#include "component_actor.hpp"
#include "outbound_gate.hpp"

#include "banyan/base/log.hpp"

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace banyan::detail {

supervisor::supervisor(component_actor& self, outbound_gate& gate, bool initial)
    : self_(self), gate_(gate), state_(self.state()), vertex_(self.vertex()), initial_(initial) {}

void supervisor::prepare() {
  children_.clear();
  for (auto v : state_.tree().children(vertex_)) {
    children_.push_back({v, caf::actor{}});
    children_.back().remote = !state_.is_local(v);
    children_.back().active = !state_.spec_of(v).is_dynamic();
  }
  in_on_start_ = true;
}

void supervisor::start_children() {
  in_on_start_ = false;
  for (std::size_t i = 0; i < children_.size(); ++i)
    if (children_[i].active && !children_[i].waiting) pending_.push_back(i);  // a held one starts when released
  spawn_next();
}

std::size_t supervisor::dynamic_child(std::string_view name) const {
  for (std::size_t i = 0; i < children_.size(); ++i) {
    const spec& s = state_.spec_of(children_[i].vertex);
    if (s.name() == name && s.is_dynamic()) return i;
  }
  return none;
}

error supervisor::no_dynamic_child(std::string_view name) const {
  return error{sdk::errc::invalid_argument,
               "`" + std::string(name) + "` is no dynamic child of `" + state_.tree().path(vertex_) + "`"};
}

result<void> supervisor::start_dynamic(std::string_view name) {
  const std::size_t i = dynamic_child(name);
  if (i == none) return no_dynamic_child(name);
  child& c = children_[i];
  if (c.active)
    return error{sdk::errc::invalid_argument, "start_child `" + std::string(name) + "`: it is running already"};
  if (shutting_down_)
    return error{sdk::errc::invalid_argument,
                 "start_child `" + std::string(name) + "`: `" + state_.tree().path(vertex_) + "` is stopping"};
  c.active = true;
  c.waiting = true;
  // A remote child's node may not be linked yet (the start), may not have joined yet (`join:
  // later`) or may be lost: the gate holds the start until that node is ready.
  gate_.start_when_ready(c.vertex, [this, i] { release(i); });
  return {};
}

void supervisor::release(std::size_t i) {
  child& c = children_[i];
  if (!c.waiting) return;  // stopped (or released) meanwhile
  c.waiting = false;
  if (!c.active || in_on_start_) return;  // start_children() starts it after on_start, with the others
  state_.forget_subtree(c.vertex);
  queue(i);
  if (!shutting_down_) spawn_next();
}

void supervisor::queue(std::size_t i) {
  pending_.push_back(i);
  std::sort(pending_.begin(), pending_.end());
  pending_.erase(std::unique(pending_.begin(), pending_.end()), pending_.end());
}

result<void> supervisor::stop_dynamic(std::string_view name) {
  const std::size_t i = dynamic_child(name);
  if (i == none) return no_dynamic_child(name);
  child& c = children_[i];
  if (!c.active) return error{sdk::errc::invalid_argument, "stop_child `" + std::string(name) + "`: it is not running"};
  c.active = false;
  c.waiting = false;
  pending_.erase(std::remove(pending_.begin(), pending_.end(), i), pending_.end());
  if (starting_ == i) starting_ = none;  // its later siblings do not wait for it
  stop_child(c);
  state_.forget_subtree(c.vertex);                           // this node's part; a remote child's node forgets its own
  if (starting_ == none && !pending_.empty()) spawn_next();  // siblings that waited for it
  return {};
}

void supervisor::spawn_next() {
  if (backing_off_) return;
  // A failover is being applied here (its lost states may not be restored yet, nor its assignment
  // taken everywhere): the next start waits for its go.
  if (!pending_.empty() && gate_.starts_held()) {
    if (!held_by_gate_) {
      held_by_gate_ = true;
      gate_.start_when_ready(vertex_, [this] {
        held_by_gate_ = false;
        if (!shutting_down_) spawn_next();
      });
    }
    return;
  }
  while (starting_ == none && !pending_.empty()) {
    const std::size_t i = pending_.front();
    // Its old incarnation is still stopping (and taking its snapshot): go on at its exit.
    if (children_[i].actor) return;
    pending_.erase(pending_.begin());
    if (spawn_child(i)) starting_ = i;
  }
  if (starting_ == none) self_.children_started();
}

bool supervisor::spawn_child(std::size_t i) {
  child& c = children_[i];
  c.stopping = false;
  c.spawned = std::chrono::steady_clock::now();
  c.remote = !state_.is_local(c.vertex);  // where it runs now: a failover may have placed it here
  c.lost = false;                         // a lost incarnation is replaced: a later failover's news is old
  if (c.remote) {
    c.remote_up = true;
    // In the run's first start each node starts its own part of the tree (generation 1), in
    // parallel; a restart asks the child's node and waits for its start, as for a local child.
    // A dynamic child (or one under a dynamic ancestor) is never started by its node itself.
    if (initial_ && c.generation == 1 && !state_.under_dynamic(c.vertex)) return false;
    c.generation = gate_.start_child(c.vertex);
    return true;
  }
  // A dynamic child's subtree is not started by other nodes on their own: it asks for its remote children.
  spawn_local(c, initial_ && !state_.under_dynamic(c.vertex));
  return true;
}

void supervisor::spawn_local(child& c, bool initial) {
  auto a = spawn_component(self_, self_.shared_state(), c.vertex, self_.address(), initial);
  // Tests of a child that runs before its supervisor gets here (its own thread): this long first.
  if (const char* delay = std::getenv("BANYAN_TEST_DELAY_REGISTRATION_MS"); delay && *delay)
    std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(delay)));
  state_.set_actor(c.vertex, a);
  self_.link_to(a);
  self_.monitor(a);
  c.actor = a;
}

void supervisor::stop_child(child& c) {
  if (c.remote) {
    // Placed here by a failover since it started there: that incarnation went with its node.
    if (c.remote_up && !state_.is_local(c.vertex)) gate_.stop_child(c.vertex, c.generation);
    c.remote_up = false;
    return;
  }
  if (!c.actor || c.stopping) return;
  // The handle stays until its exit arrives: its new incarnation starts only then (OTP's
  // synchronous termination), after the old one has taken its snapshot.
  c.stopping = true;
  self_.send_exit(c.actor, caf::exit_reason::user_shutdown);
}

void supervisor::stop_remote_children() {
  for (auto& c : children_)
    if (c.remote) stop_child(c);
}

void supervisor::child_started(vertex_id child_vertex) {
  if (shutting_down_ || starting_ == none || children_[starting_].vertex != child_vertex) return;
  timed_start(children_[starting_]);
  starting_ = none;
  spawn_next();
}

void supervisor::remote_child_started(vertex_id child_vertex, std::uint64_t generation) {
  if (shutting_down_ || starting_ == none) return;
  const child& c = children_[starting_];
  if (!c.remote || c.vertex != child_vertex || c.generation != generation) return;
  timed_start(c);
  starting_ = none;
  spawn_next();
}

void supervisor::timed_start(const child& c) {
  state_.loads().timed(c.vertex, timing_kind::start,
                       std::chrono::duration<double>(std::chrono::steady_clock::now() - c.spawned).count());
}

std::size_t supervisor::remote_child_ended(vertex_id child_vertex, std::uint64_t generation, bool& was_starting) {
  auto it = std::find_if(children_.begin(), children_.end(),
                         [&](const child& c) { return c.remote && c.vertex == child_vertex; });
  if (it == children_.end() || !it->remote_up || it->generation != generation) return none;  // stopped or replaced
  const std::size_t i = static_cast<std::size_t>(it - children_.begin());
  it->remote_up = false;
  was_starting = starting_ == i;
  if (was_starting) starting_ = none;
  return shutting_down_ ? none : i;
}

void supervisor::remote_child_failed(vertex_id child_vertex, std::uint64_t generation, const std::string& reason) {
  bool was_starting = false;
  const std::size_t i = remote_child_ended(child_vertex, generation, was_starting);
  if (i != none) supervise(i, reason, true, was_starting);
}

void supervisor::remote_child_stopped(vertex_id child_vertex, std::uint64_t generation) {
  bool was_starting = false;
  const std::size_t i = remote_child_ended(child_vertex, generation, was_starting);
  if (i != none) ended_normally(i, was_starting);
}

void supervisor::ended_normally(std::size_t i, bool was_starting) {
  const spec& s = state_.spec_of(children_[i].vertex);
  if (s.restart() == restart_type::permanent) return supervise(i, "stopped", false);
  if (s.is_dynamic()) children_[i].active = false;  // start_child may start it again
  if (was_starting) spawn_next();                   // its later siblings start without it
}

void supervisor::child_gone(const caf::actor_addr& source, const caf::error& reason) {
  auto it = std::find_if(children_.begin(), children_.end(),
                         [&](const child& c) { return c.actor && c.actor.address() == source; });
  if (it == children_.end()) return;  // an incarnation we already replaced, or its second notice
  const std::size_t i = static_cast<std::size_t>(it - children_.begin());
  const bool failed = reason && reason != caf::exit_reason::user_shutdown && reason != caf::exit_reason::normal;
  children_[i].actor = caf::actor{};
  const bool was_starting = starting_ == i;
  if (was_starting) starting_ = none;
  if (shutting_down_) return shutdown_next();
  if (children_[i].stopping) {
    if (starting_ == none && !pending_.empty() && pending_.front() == i) spawn_next();
    return;
  }
  if (!failed) return ended_normally(i, was_starting);
  supervise(i, reason_text(reason), true, was_starting);
}

void supervisor::child_lost(const std::string& child_path, node_id lost, const std::string& reason) {
  auto found = std::find_if(children_.begin(), children_.end(),
                            [&](const child& c) { return c.remote && state_.tree().path(c.vertex) == child_path; });
  if (found == children_.end() || state_.where().node_of(found->vertex) != lost) return;  // failed over already
  if (!found->remote_up) return;  // not running there (a dynamic child not started): nothing was lost
  log::warning(state_.tree().path(vertex_), "child `" + child_path + "` lost: " + reason);
  self_.call_user([&](component& user, context& ctx) { user.on_child_failure(ctx, child_path, reason); });
  // Its node is gone: nothing can restart it there; a failover may place it on a survivor
  // (children_failed_over). Later siblings still start. A dynamic child may be started again: the
  // gate holds its start until its node is back or a failover has placed it on a survivor.
  for (std::size_t i = 0; i < children_.size(); ++i) {
    child& c = children_[i];
    if (!c.remote || state_.tree().path(c.vertex) != child_path) continue;
    c.lost = c.remote_up;  // it was running: a failover restarts it
    c.remote_up = false;
    if (state_.spec_of(c.vertex).is_dynamic()) {
      c.active = false;
      state_.forget_subtree(c.vertex, /*lost=*/true);  // its subscriptions went with it
    }
    if (starting_ == i && !shutting_down_) {
      starting_ = none;
      spawn_next();
    }
  }
}

void supervisor::remote_child_back(vertex_id child_vertex) {
  auto it = std::find_if(children_.begin(), children_.end(),
                         [&](const child& c) { return c.remote && c.vertex == child_vertex; });
  // Asked for a start since it came back (that incarnation counts), or stopping.
  if (it == children_.end() || it->remote_up || shutting_down_) return;
  const auto i = static_cast<std::size_t>(it - children_.begin());
  log::info(state_.tree().path(vertex_),
            "child `" + state_.tree().path(child_vertex) + "` runs again: its node came back and started it afresh");
  it->lost = false;
  it->remote_up = true;
  it->generation = 1;  // its node's first, as at the run's start: what it reports from now on
  const auto waiting = std::find(pending_.begin(), pending_.end(), i);
  if (waiting == pending_.end()) return;
  pending_.erase(waiting);  // the restart it waited for: it runs
  if (starting_ == none) spawn_next();
}

void supervisor::children_failed_over(const std::vector<vertex_id>& vertices, const std::vector<std::string>& reasons) {
  // Each lost child now runs where() says. Its lost incarnation needs no stop: it is gone.
  std::vector<std::size_t> up;  // those running when their node went, in start order
  std::vector<bool> told(children_.size(), false);
  std::vector<const std::string*> reason_of(children_.size(), nullptr);
  for (std::size_t k = 0; k < vertices.size(); ++k) {
    auto it = std::find_if(children_.begin(), children_.end(), [&](const child& c) { return c.vertex == vertices[k]; });
    if (it == children_.end()) continue;
    child& c = *it;
    const auto i = static_cast<std::size_t>(it - children_.begin());
    told[i] = c.lost;                           // child_lost reported the failure already
    const bool was_up = c.lost || c.remote_up;  // running on the lost node when it went
    c.lost = false;
    c.remote = !state_.is_local(c.vertex);
    c.remote_up = false;
    reason_of[i] = &reasons[k];
    if (shutting_down_ || !was_up) continue;  // not running: its next start goes to its new node
    if (!told[i])
      log::warning(state_.tree().path(vertex_), "child `" + state_.tree().path(c.vertex) + "` lost: " + reasons[k]);
    if (state_.spec_of(c.vertex).is_dynamic()) {
      // Started on demand (ctx.start_child), often for the node it runs on (an elastic worker): it
      // stays down, as its loss said; start_child starts it again, where it now belongs. Told
      // before (child_lost ended it), it may be active again: a start_child since, which the gate
      // holds and then starts on its new node.
      if (told[i]) continue;
      self_.call_user(
          [&](component& user, context& ctx) { user.on_child_failure(ctx, state_.tree().path(c.vertex), reasons[k]); });
      c.active = false;
      continue;
    }
    up.push_back(i);
  }
  std::sort(up.begin(), up.end());
  // The children lost together failed at one moment, by one cause: that counts once against the
  // intensity limit (a crash loop is what the limit is for). Under one_for_one each is restarted;
  // under one_for_all and rest_for_one the first one's restart restarts the others too (OTP's
  // supervisor takes the exits of the siblings it restarts with it). The user hears of each loss.
  const auto strategy = state_.spec_of(vertex_).policy().strategy;
  for (std::size_t n = 0; n < up.size(); ++n) {
    const std::size_t i = up[n];
    if (n > 0 && strategy != restart_strategy::one_for_one) {
      if (!told[i])
        self_.call_user([&](component& user, context& ctx) {
          user.on_child_failure(ctx, state_.tree().path(children_[i].vertex), *reason_of[i]);
        });
      continue;
    }
    const bool was_starting = starting_ == i;
    if (was_starting) starting_ = none;
    supervise(i, *reason_of[i], /*failure=*/!told[i], was_starting, /*counts=*/n == 0);
  }
}

void supervisor::supervise(std::size_t i, const std::string& reason, bool failure, bool was_starting, bool counts) {
  const auto& tree = state_.tree();
  const std::string& child_path = tree.path(children_[i].vertex);
  if (failure) self_.call_user([&](component& user, context& ctx) { user.on_child_failure(ctx, child_path, reason); });
  auto type_of = [&](std::size_t j) { return state_.spec_of(children_[j].vertex).restart(); };
  if (type_of(i) == restart_type::temporary) {
    log::warning(tree.path(vertex_), "`" + child_path + "` is temporary: not restarted");
    if (state_.spec_of(children_[i].vertex).is_dynamic())
      children_[i].active = false;   // start_child may start it again
    if (was_starting) spawn_next();  // its later siblings start without it
    return;
  }
  const supervision& policy = state_.spec_of(vertex_).policy();
  auto now = std::chrono::steady_clock::now();
  if (counts) restarts_.push_back(now);
  while (!restarts_.empty() && now - restarts_.front() > policy.within) restarts_.pop_front();
  if (static_cast<int>(restarts_.size()) > policy.max_restarts) {
    std::string why = "child `" + child_path + "` failed " + std::to_string(restarts_.size()) +
                      (restarts_.size() == 1 ? " time" : " times") + " within " +
                      std::to_string(policy.within.count()) + " ms (limit " + std::to_string(policy.max_restarts) +
                      "); giving up and escalating";
    log::error(tree.path(vertex_), why);
    stop_remote_children();
    self_.quit(caf::make_error(caf::sec::runtime_error, why));
    return;
  }
  std::size_t first = i, last = i + 1;
  switch (policy.strategy) {
    case restart_strategy::one_for_one: break;
    case restart_strategy::one_for_all:
      first = 0;
      last = children_.size();
      break;
    case restart_strategy::rest_for_one: last = children_.size(); break;
  }
  log::warning(tree.path(vertex_),
               "restarting `" + child_path + "`" +
                   (last - first > 1 ? " and " + std::to_string(last - first - 1) + " sibling(s)" : "") + " (" +
                   reason + ")");
  // Stop the others in reverse start order, forget everything the old incarnations subscribed, then
  // start the new incarnations in order.
  for (std::size_t j = last; j-- > first;)
    if (j != i && children_[j].active) stop_child(children_[j]);
  // From here on, remote children start only when asked (and are waited for).
  initial_ = false;
  for (std::size_t j = first; j < last; ++j) {
    state_.forget_subtree(children_[j].vertex);  // this node's part; a remote child's node forgets its own
    if (j == i || (children_[j].active && type_of(j) != restart_type::temporary)) pending_.push_back(j);
    else if (state_.spec_of(children_[j].vertex).is_dynamic()) children_[j].active = false;  // stays down
  }
  if (starting_ >= first && starting_ < last) starting_ = none;
  std::sort(pending_.begin(), pending_.end());
  pending_.erase(std::unique(pending_.begin(), pending_.end()), pending_.end());
  if (policy.backoff.count() > 0) {
    auto delay = policy.backoff;
    for (std::size_t k = 1; k < restarts_.size() && delay < policy.max_backoff; ++k) delay *= 2;
    delay = std::min(delay, policy.max_backoff);
    backing_off_ = true;
    self_.delayed_send(caf::actor_cast<caf::actor>(&self_), delay, restart_atom::value);
    return;
  }
  spawn_next();
}

void supervisor::backoff_over() {
  backing_off_ = false;
  if (!shutting_down_) spawn_next();
}

void supervisor::child_moved(vertex_id child_vertex, node_id to, std::uint64_t generation) {
  auto it = std::find_if(children_.begin(), children_.end(), [&](const child& c) { return c.vertex == child_vertex; });
  if (it == children_.end()) return;
  if (to == state_.where().self()) {
    // It arrived here: a local child from now on, started from the state it brought.
    it->remote = false;
    it->remote_up = false;
    it->stopping = false;
    spawn_local(*it, false);
    return;
  }
  // It left: its incarnation here ends quietly; its new node hosts it under `generation`.
  if (it->actor) self_.send(it->actor, movequit_atom::value);
  it->actor = caf::actor{};
  it->remote = true;
  it->remote_up = true;
  it->generation = generation;
}

void supervisor::child_asleep(vertex_id child_vertex) {
  auto it = std::find_if(children_.begin(), children_.end(), [&](const child& c) { return c.vertex == child_vertex; });
  if (it == children_.end()) return;
  if (it->actor) self_.send(it->actor, movequit_atom::value);
  it->actor = caf::actor{};
}

void supervisor::begin_shutdown(bool urgent) {
  shutting_down_ = true;
  urgent_ = urgent;
  pending_.clear();
  shutdown_next();
}

void supervisor::shutdown_next() {
  // Remote children are stopped by their own nodes (each node shuts down its part of the tree).
  for (std::size_t j = children_.size(); j-- > 0;) {
    child& c = children_[j];
    if (!c.actor) continue;
    if (!c.stopping) {
      c.stopping = true;
      if (urgent_) self_.send<caf::message_priority::high>(c.actor, shutdown_atom::value, true);
      else self_.send(c.actor, shutdown_atom::value, false);
    }
    return;  // wait for its exit before stopping the next one
  }
  self_.call_user([](component& user, context& ctx) { user.on_stop(ctx); });
  self_.quit(caf::exit_reason::normal);
}

void supervisor::clear() {
  children_.clear();
  pending_.clear();
}

}  // namespace banyan::detail
