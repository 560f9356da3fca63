#include "component_actor.hpp"

#include "node.hpp"

#include "banyan/base/log.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

namespace banyan::detail {

namespace {

std::string describe(std::exception_ptr eptr) {
  try {
    std::rethrow_exception(eptr);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

// The context handed to the user's component: a thin facade over the actor, so the user's API and
// CAF's member names (send, request, quit, ...) never collide.
class actor_context final : public context {
 public:
  explicit actor_context(component_actor& self) : self_(self) {}

  const std::string& path() const override { return self_.state().tree().path(self_.vertex()); }
  vertex_id id() const override { return self_.vertex(); }
  const component_tree& tree() const override { return self_.state().tree(); }
  routing_mode mode() const override { return self_.state().options().mode; }
  result<subscription_id> subscribe(std::string_view filter, handler on_message) override {
    return self_.subscribe(filter, std::move(on_message));
  }
  bool unsubscribe(subscription_id id) override { return self_.unsubscribe(id); }
  result<void> publish(std::string_view topic, const payload& data, const scope& where) override {
    return self_.publish(topic, data, where);
  }
  void serve(std::string method, service handler) override { self_.serve(std::move(method), std::move(handler)); }
  void request(std::string_view path, std::string method, const payload& data, std::chrono::milliseconds timeout,
               reply_handler on_reply) override {
    self_.send_request(path, std::move(method), data, timeout, std::move(on_reply));
  }
  void post(std::function<void()> fn) override { self_.post_task(std::move(fn)); }
  void after(std::chrono::milliseconds delay, std::function<void()> fn) override {
    self_.post_after(delay, std::move(fn));
  }
  poster cross_thread_poster() override {
    // A weak address: resolving it fails once the actor is gone; anon_send is safe from any thread.
    return [addr = self_.address()](std::function<void()> fn) {
      auto target = caf::actor_cast<caf::actor>(addr);
      if (!target) return false;
      caf::anon_send(target, post_atom::value, task{std::move(fn)});
      return true;
    };
  }
  void quit(int exit_code) override { self_.state().done().request_quit(exit_code); }
  void log(std::string_view line) override { log::info(path(), line); }
  void report_memory(std::uint64_t bytes) override { self_.state().loads().set_memory(self_.vertex(), bytes); }
  void checkpoint() override { self_.checkpoint(); }
  result<void> monitor(std::string_view path, down_handler on_down) override {
    return self_.watch(path, std::move(on_down));
  }
  void stop() override {
    self_.post_task([s = &self_] { s->stop_self(); });
  }
  result<void> start_child(std::string_view name) override { return self_.start_dynamic(name); }
  result<void> stop_child(std::string_view name) override { return self_.stop_dynamic(name); }

 private:
  component_actor& self_;
};

}  // namespace

component_actor::component_actor(caf::actor_config& cfg, std::shared_ptr<run_state> state, vertex_id v,
                                 caf::actor_addr parent, bool initial)
    : caf::event_based_actor(cfg),
      state_(std::move(state)),
      vertex_(v),
      parent_(std::move(parent)),
      initial_(initial),
      routes_(state_->front(), /*by_reference=*/true) {}

component_actor::~component_actor() = default;

// A call into the component's code: one message of its load. Its time is counted by resume().
template <class F>
void component_actor::counted(F&& f) {
  f();
  ++calls_;
}

// One run of the actor over a batch of its messages (at most the scheduler's max-throughput). The
// per-message bookkeeping is settled once per batch: the component's CPU load is the time its actor
// runs (its handlers and the middleware's work for them: two clock reads per batch, not per
// handler), its message count, and the deliveries it took off its backlog (flow control).
caf::resumable::resume_result component_actor::resume(caf::execution_unit* unit, std::size_t max_throughput) {
  run_state* const state = state_.get();  // the actor, and so its state, outlive this call
  const vertex_id v = vertex_;
  const auto begin = std::chrono::steady_clock::now();
  const auto result = caf::event_based_actor::resume(unit, max_throughput);
  auto& loads = state->loads();
  loads.busy(
      v, static_cast<std::uint64_t>(
             std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - begin).count()));
  if (calls_ != 0) loads.handled(v, std::exchange(calls_, 0));
  // An ended incarnation's backlog is forgotten (local_flow::reset), perhaps already.
  if (delivered_ != 0 && result != resume_result::done) state->flow().handled(v, std::exchange(delivered_, 0));
  return result;
}

caf::behavior component_actor::make_behavior() {
  set_exception_handler([this](caf::scheduled_actor*, std::exception_ptr& eptr) -> caf::error {
    std::string what = describe(eptr);
    log::error(state_->tree().path(vertex_), "failed: " + what);
    if (user_ && ctx_) {
      try {
        counted([&] { user_->on_failure(*ctx_, what); });
      } catch (const std::exception& e) {
        log::error(state_->tree().path(vertex_), std::string("on_failure threw: ") + e.what());
      } catch (...) {
        log::error(state_->tree().path(vertex_), "on_failure threw");
      }
    }
    stop_remote_children();
    return caf::make_error(caf::sec::runtime_error, what);
  });
  set_exit_handler([this](caf::exit_msg& msg) { on_exit_message(msg); });
  // A child we stopped unlinks from us when it handles our exit message, so its end comes as a
  // down message (children are monitored too); whichever of the two comes first counts.
  set_down_handler([this](caf::down_msg& msg) { on_child_gone(msg.source, msg.reason); });
  // In the directory before on_start runs: what is published to us once we subscribed must reach
  // us, and a component with its own thread runs on_start before its supervisor (which registers
  // us too, after the spawn) may have got that far. Unregistered when this incarnation ends,
  // unless a new one replaced it already.
  state_->set_actor(vertex_, caf::actor_cast<caf::actor>(this));
  attach_functor([state = state_, v = vertex_, self = caf::actor_cast<caf::actor_addr>(this),
                  moved = moved_](const caf::error& reason) {
    if (state->actors().get(v).address() == self) state->set_actor(v, caf::actor{});
    if (moved->load()) return;  // it moved to another node: not an end (its monitors go on there)
    const bool failed = reason && reason != caf::exit_reason::user_shutdown && reason != caf::exit_reason::normal;
    const std::string why = failed ? reason_text(reason) : std::string("stopped");
    for (const auto& [watcher, id] : state->watching().of(v)) {
      if (auto w = caf::actor_cast<caf::actor>(watcher))
        caf::anon_send(w, mondown_atom::value, id, state->tree().path(v), why);
    }
    if (auto* node = state->node())
      for (const auto& w : state->watching().remote_of(v)) node->send_down(v, w.node, w.watcher, w.id, why);
  });
  start();
  behavior_ready_ = true;
  main_ = caf::message_handler{
      [this](deliver_atom, const local_delivery& d, const payload& data) {
        deliver(*d.info, data, d.sequence, d.index, false);
      },
      [](unroute_atom, const std::shared_ptr<const route_info>&) {},  // freed with the message when it is the last
      [this](deliver_atom, const std::shared_ptr<const routed_message>& m, std::uint32_t index) {
        deliver(*m->info, m->data, m->sequence, index, true);
      },
      [](resume_atom) {},  // a late wake-up (the pause already ended)
      [](sync_atom) {},    // a live move's barrier: every message before it has been handled
      [this](moveout_atom) { return move_out(); },
      [this](childmove_atom, vertex_id child_vertex, node_id to, std::uint64_t generation) {
        child_moved(child_vertex, to, generation);
      },
      [this](post_atom, const task& t) { counted(t.fn); },
      [this](request_atom, const std::string& method, const payload& data,
             vertex_id requester) -> caf::result<std::string, payload> {
        std::string err;
        payload reply;
        counted([&] {
          auto it = services_.find(method);
          if (it == services_.end()) {
            err = "`" + state_->tree().path(vertex_) + "` serves no method `" + method + "`";
            return;
          }
          auto r = it->second(data);
          if (r) reply = std::move(*r);
          else err = r.error().what();
        });
        state_->requests().record(vertex_, requester, reply.size());  // the profile's request traffic
        return {std::move(err), std::move(reply)};
      },
      [this](started_atom, vertex_id child_vertex) {
        if (shutting_down_ || starting_ == none || children_[starting_].vertex != child_vertex) return;
        starting_ = none;
        spawn_next();
      },
      [this](rstarted_atom, vertex_id child_vertex, std::uint64_t generation) {
        if (shutting_down_ || starting_ == none) return;
        const child& c = children_[starting_];
        if (!c.remote || c.vertex != child_vertex || c.generation != generation) return;
        starting_ = none;
        spawn_next();
      },
      [this](mondown_atom, std::uint64_t id, const std::string& path, const std::string& reason) {
        auto it = monitors_.find(id);
        if (it != monitors_.end()) counted([&] { it->second(path, reason); });
      },
      [this](nodelost_atom, node_id lost, const std::string& reason) {
        // Every component on the lost node ended with it (Erlang's `noconnection`); it will report
        // nothing more, so each monitor of one fires once, here, and is gone.
        std::vector<std::pair<std::uint64_t, vertex_id>> fired;
        for (auto it = remote_watched_.begin(); it != remote_watched_.end();) {
          if (state_->where().node_of(it->second) == lost) {
            fired.emplace_back(*it);
            it = remote_watched_.erase(it);
          } else {
            ++it;
          }
        }
        std::sort(fired.begin(), fired.end());  // in the order the monitors were made
        for (const auto& [id, v] : fired) {
          auto handler = monitors_.find(id);
          if (handler == monitors_.end()) continue;
          auto on_down = std::move(handler->second);
          monitors_.erase(handler);
          counted([&] { on_down(state_->tree().path(v), reason); });
        }
      },
      [this](restart_atom) {
        backing_off_ = false;
        if (!shutting_down_) spawn_next();
      },
      [this](rfailed_atom, vertex_id child_vertex, std::uint64_t generation, const std::string& reason) {
        on_remote_failure(child_vertex, generation, reason);
      },
      [this](rstopped_atom, vertex_id child_vertex, std::uint64_t generation) {
        on_remote_stopped(child_vertex, generation);
      },
      [this](ready_atom) {
        resume();  // paused by a live move's freeze (a full link pauses it again at its next publish)
        // Monitors first: a watched component's end caused by a held request is then reported.
        for (const auto& [watched, id] : std::exchange(held_monitors_, {}))
          state_->node()->send_monitor(vertex_, watched, id);
        // Then held dynamic starts: their node starts them before it serves our held requests.
        release_held_dynamic();
        flush_held();
        flush_held_requests();
        for (auto& again : std::exchange(frozen_requests_, {})) again();
      },
      [this](joined_atom, node_id) { release_held_dynamic(); },
      [this](lost_atom, const std::string& child_path, const std::string& reason) {
        log::warning(state_->tree().path(vertex_), "child `" + child_path + "` lost: " + reason);
        counted([&] { user_->on_child_failure(*ctx_, child_path, reason); });
        // Its node is gone: nothing can restart it there. Later siblings still start. A dynamic
        // child may be started again: when its node is back (start_child holds it until then).
        for (std::size_t i = 0; i < children_.size(); ++i) {
          if (!children_[i].remote || state_->tree().path(children_[i].vertex) != child_path) continue;
          children_[i].remote_up = false;
          if (state_->spec_of(children_[i].vertex).is_dynamic()) {
            children_[i].active = false;
            state_->forget_subtree(children_[i].vertex, /*lost=*/true);  // its subscriptions went with it
          }
          if (starting_ == i && !shutting_down_) {
            starting_ = none;
            spawn_next();
          }
        }
      },
      [this](undeliv_atom, const std::string& node, std::uint64_t count, const std::string& reason) {
        counted([&] { user_->on_undelivered(*ctx_, node, count, reason); });
      },
      [this](shutdown_atom, bool urgent) { begin_shutdown(urgent); },
      [this](reply_atom, std::uint64_t id, const std::string& code, const std::string& text, const payload& data) {
        if (code.empty()) return finish_remote_request(id, data);
        finish_remote_request(id, error{code == "timeout" ? sdk::errc::timeout : sdk::errc::request_failed, text});
      },
      [this](expire_atom, std::uint64_t id, std::int64_t ms) {
        if (!remote_requests_.count(id)) return;
        state_->node()->forget_request(id);
        finish_remote_request(id, error{sdk::errc::timeout, "no reply within " + std::to_string(ms) + " ms"});
      },
  };
  return main_;
}

void component_actor::deliver(const route_info& info, const payload& data, std::uint64_t sequence, std::uint32_t index,
                              bool remote) {
  const auto& target = info.plan->targets()[index];
  delivery d(info.topic, state_->tree().path(info.publisher), data, sequence);
  in_remote_delivery_ = remote;
  for (auto id : target.subscriptions) {
    auto it = handlers_.find(id);
    if (it != handlers_.end()) counted([&] { it->second(d); });
  }
  in_remote_delivery_ = false;
  // Taken off the backlog when this run of the actor ends (resume), or every 64 deliveries in a long
  // one (an own-thread actor runs until its mailbox is empty), so its publishers are not held back.
  if (++delivered_ == 64) state_->flow().handled(vertex_, std::exchange(delivered_, 0));
}

void component_actor::begin_shutdown(bool urgent) {
  shutting_down_ = true;
  urgent_ = urgent;
  pending_.clear();
  shutdown_next();
}

// Publishing to a component with a full backlog, or past a node link's credit window, pauses the
// actor after the current message: it stops *originating* work — its own posted tasks and timers,
// and requests it serves, stay queued in order — and goes on handling everything that reacts to
// others (deliveries, replies, supervision, shutdown), until whoever it waits for says `resume`.
// Reactions never wait, so paused actors cannot wait for each other, and no thread is blocked.
bool component_actor::pause() {
  if (paused_ || !behavior_ready_ || shutting_down_) return false;
  paused_ = true;
  become(caf::keep_behavior, caf::message_handler{
                                 [this](resume_atom) { resume(); },
                                 [](post_atom, const task&) -> caf::result<void> { return caf::skip; },
                                 [](request_atom, const std::string&, const payload&,
                                    vertex_id) -> caf::result<std::string, payload> { return caf::skip; },
                             }
                                 .or_else(main_));
  return true;
}

void component_actor::resume() {
  if (!paused_) return;
  paused_ = false;
  unbecome();
}

void component_actor::on_exit() {
  routes_.clear();
  handlers_.clear();
  services_.clear();
  monitors_.clear();
  held_monitors_.clear();
  remote_watched_.clear();
  held_dynamic_.clear();
  remote_requests_.clear();
  held_.clear();
  held_requests_.clear();
  frozen_requests_.clear();
  filters_.clear();
  adopt_.clear();
  children_.clear();
  ctx_.reset();
  user_.reset();
}

void component_actor::start() {
  const spec& s = state_->spec_of(vertex_);
  user_ = s.make()();
  ctx_ = std::make_unique<actor_context>(*this);
  auto arrival = state_->node() ? state_->arrivals().take(vertex_) : std::nullopt;
  if (arrival) {
    // Arrived by a live move: the incarnation that left goes on here (move_out).
    arrived_ = true;
    if (arrival->snapshot) counted([&] { user_->restore(*ctx_, payload::copy_of(*arrival->snapshot)); });
    sequence_ = arrival->sequence;
    adopt_ = std::move(arrival->subscriptions);
    for (auto& h : arrival->held) held_.push_back({std::move(h.topic), h.scope, payload::copy_of(h.data)});
  } else if (s.keeps_state()) {
    if (auto kept = state_->kept().get(vertex_)) counted([&] { user_->restore(*ctx_, *kept); });
  }
  const auto& kids = state_->tree().children(vertex_);
  children_.clear();
  for (auto v : kids) {
    children_.push_back({v, caf::actor{}});
    children_.back().remote = !state_->is_local(v);
    children_.back().active = !state_->spec_of(v).is_dynamic();
  }
  // A start_child from on_start marks the child: it starts with the others, in declaration order.
  in_on_start_ = true;
  counted([&] { user_->on_start(*ctx_); });
  in_on_start_ = false;
  // Subscriptions of the incarnation that left that this one did not make again end with it.
  for (const auto& [id, filter] : std::exchange(adopt_, {})) {
    state_->routing().unsubscribe(id);
    state_->node()->broadcast_unsubscribe(id);
  }
  for (std::size_t i = 0; i < children_.size(); ++i) {
    const bool held = std::find(held_dynamic_.begin(), held_dynamic_.end(), i) != held_dynamic_.end();
    if (children_[i].active && !held) pending_.push_back(i);  // a held one starts when every node is ready
  }
  spawn_next();
}

result<void> component_actor::watch(std::string_view path, banyan::context::down_handler on_down) {
  auto v = state_->tree().find(path);
  if (!v) return v.error();
  const std::uint64_t id = state_->watching().next_id();
  monitors_.emplace(id, std::move(on_down));
  if (state_->is_local(*v)) {
    state_->watching().add(*v, caf::actor_cast<caf::actor_addr>(this), id);
  } else {
    remote_watched_.emplace(id, *v);  // its node's loss ends it too (nodelost_atom)
    if (state_->cluster_ready()) {
      state_->node()->send_monitor(vertex_, *v, id);  // its node tells us of each end (`down`)
    } else {
      held_monitors_.emplace_back(*v, id);  // the links may not be up yet: sent with ready_atom
    }
  }
  return {};
}

std::size_t component_actor::dynamic_child(std::string_view name) const {
  for (std::size_t i = 0; i < children_.size(); ++i) {
    const spec& s = state_->spec_of(children_[i].vertex);
    if (s.name() == name && s.is_dynamic()) return i;
  }
  return none;
}

error component_actor::no_dynamic_child(std::string_view name) const {
  return error{sdk::errc::invalid_argument,
               "`" + std::string(name) + "` is no dynamic child of `" + state_->tree().path(vertex_) + "`"};
}

result<void> component_actor::start_dynamic(std::string_view name) {
  const std::size_t i = dynamic_child(name);
  if (i == none) return no_dynamic_child(name);
  child& c = children_[i];
  if (c.active)
    return error{sdk::errc::invalid_argument, "start_child `" + std::string(name) + "`: it is running already"};
  if (shutting_down_)
    return error{sdk::errc::invalid_argument,
                 "start_child `" + std::string(name) + "`: `" + state_->tree().path(vertex_) + "` is stopping"};
  c.active = true;
  if (c.remote && (!state_->cluster_ready() || !state_->node()->node_ready(state_->where().node_of(c.vertex)))) {
    // Its node is not linked yet (the start), has not joined yet (`join: later`) or is lost: asked
    // when it is ready (ready_atom, joined_atom).
    held_dynamic_.push_back(i);
    return {};
  }
  if (in_on_start_) return {};  // start() starts it after on_start, with the others
  state_->forget_subtree(c.vertex);
  pending_.push_back(i);
  std::sort(pending_.begin(), pending_.end());
  pending_.erase(std::unique(pending_.begin(), pending_.end()), pending_.end());
  spawn_next();
  return {};
}

void component_actor::release_held_dynamic() {
  if (!state_->cluster_ready()) return;
  auto* node = state_->node();
  std::erase_if(held_dynamic_, [&](std::size_t i) {
    if (!children_[i].active) return true;
    if (!node->node_ready(state_->where().node_of(children_[i].vertex))) return false;  // still waiting for it
    state_->forget_subtree(children_[i].vertex);
    pending_.push_back(i);
    return true;
  });
  std::sort(pending_.begin(), pending_.end());
  pending_.erase(std::unique(pending_.begin(), pending_.end()), pending_.end());
  if (!shutting_down_ && !pending_.empty()) spawn_next();
}

result<void> component_actor::stop_dynamic(std::string_view name) {
  const std::size_t i = dynamic_child(name);
  if (i == none) return no_dynamic_child(name);
  child& c = children_[i];
  if (!c.active) return error{sdk::errc::invalid_argument, "stop_child `" + std::string(name) + "`: it is not running"};
  c.active = false;
  pending_.erase(std::remove(pending_.begin(), pending_.end(), i), pending_.end());
  held_dynamic_.erase(std::remove(held_dynamic_.begin(), held_dynamic_.end(), i), held_dynamic_.end());
  if (starting_ == i) starting_ = none;  // its later siblings do not wait for it
  stop_child(c);
  state_->forget_subtree(c.vertex);                          // this node's part; a remote child's node forgets its own
  if (starting_ == none && !pending_.empty()) spawn_next();  // siblings that waited for it
  return {};
}

void component_actor::stop_self() {
  if (!shutting_down_) begin_shutdown(false);
}

void component_actor::spawn_next() {
  if (backing_off_) return;
  while (starting_ == none && !pending_.empty()) {
    const std::size_t i = pending_.front();
    // Its old incarnation is still stopping (and taking its snapshot): go on at its exit.
    if (children_[i].actor) return;
    pending_.erase(pending_.begin());
    if (spawn_child(i)) starting_ = i;
  }
  if (starting_ != none) return;
  if (!children_.empty()) counted([&] { user_->on_children_started(*ctx_); });
  if (!reported_started_) {
    reported_started_ = true;
    if (arrived_) state_->node()->arrived(vertex_);  // the move's end waits for its subtree
    if (auto parent = caf::actor_cast<caf::actor>(parent_)) send(parent, started_atom::value, vertex_);
    else state_->done().root_started();
  }
}

bool component_actor::spawn_child(std::size_t i) {
  child& c = children_[i];
  c.stopping = false;
  if (c.remote) {
    c.remote_up = true;
    // In the run's first start each node starts its own part of the tree (generation 1), in
    // parallel; a restart asks the child's node and waits for its start, as for a local child.
    // A dynamic child (or one under a dynamic ancestor) is never started by its node itself.
    if (initial_ && c.generation == 1 && !state_->under_dynamic(c.vertex)) return false;
    c.generation = state_->node()->next_generation(c.vertex);
    state_->node()->send_child(wire_kind::child_start, c.vertex, c.generation);
    return true;
  }
  // A dynamic child's subtree is not started by other nodes on their own: it asks for its remote children.
  auto a = spawn_component(*this, state_, c.vertex, address(), initial_ && !state_->under_dynamic(c.vertex));
  // Tests of a child that runs before its supervisor gets here (its own thread): this long first.
  if (const char* delay = std::getenv("BANYAN_TEST_DELAY_REGISTRATION_MS"); delay && *delay)
    std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(delay)));
  state_->set_actor(c.vertex, a);
  link_to(a);
  monitor(a);
  c.actor = a;
  return true;
}

void component_actor::stop_child(child& c) {
  if (c.remote) {
    if (c.remote_up) state_->node()->send_child(wire_kind::child_stop, c.vertex, c.generation);
    c.remote_up = false;
    return;
  }
  if (!c.actor || c.stopping) return;
  // The handle stays until its exit arrives: its new incarnation starts only then (OTP's
  // synchronous termination), after the old one has taken its snapshot.
  c.stopping = true;
  send_exit(c.actor, caf::exit_reason::user_shutdown);
}

void component_actor::checkpoint() {
  if (!user_ || !ctx_ || !state_->spec_of(vertex_).keeps_state()) return;
  std::optional<payload> snapshot;
  counted([&] { snapshot = user_->snapshot(*ctx_); });
  if (snapshot) state_->kept().put(vertex_, std::move(*snapshot));
}

void component_actor::stop_remote_children() {
  for (auto& c : children_)
    if (c.remote) stop_child(c);
}

std::optional<component_actor::ended_child> component_actor::remote_child_ended(vertex_id child_vertex,
                                                                                std::uint64_t generation) {
  auto it = std::find_if(children_.begin(), children_.end(),
                         [&](const child& c) { return c.remote && c.vertex == child_vertex; });
  if (it == children_.end() || !it->remote_up || it->generation != generation)
    return std::nullopt;  // stopped or replaced already
  const std::size_t i = static_cast<std::size_t>(it - children_.begin());
  it->remote_up = false;
  const bool was_starting = starting_ == i;
  if (was_starting) starting_ = none;
  if (shutting_down_) return std::nullopt;
  return ended_child{i, was_starting};
}

void component_actor::on_remote_failure(vertex_id child_vertex, std::uint64_t generation, const std::string& reason) {
  if (auto ended = remote_child_ended(child_vertex, generation))
    supervise(ended->index, reason, true, ended->was_starting);
}

void component_actor::on_remote_stopped(vertex_id child_vertex, std::uint64_t generation) {
  auto ended = remote_child_ended(child_vertex, generation);
  if (!ended) return;
  // As for a local child that called ctx.stop(): only a permanent one is restarted.
  if (state_->spec_of(child_vertex).restart() == restart_type::permanent)
    return supervise(ended->index, "stopped", false);
  if (state_->spec_of(child_vertex).is_dynamic())
    children_[ended->index].active = false;  // start_child may start it again
  if (ended->was_starting) spawn_next();
}

void component_actor::on_exit_message(caf::exit_msg& msg) {
  if (msg.source == parent_) {
    // Stopped in good health (its supervisor restarts it, or failed itself): keep its state.
    try {
      checkpoint();
    } catch (const std::exception& e) {
      log::error(state_->tree().path(vertex_), std::string("snapshot failed: ") + e.what());
    }
    stop_remote_children();
    quit(msg.reason);  // our supervisor stopped or failed: the whole subtree goes with it
    return;
  }
  on_child_gone(msg.source, msg.reason);
}

void component_actor::on_child_gone(const caf::actor_addr& source, const caf::error& reason) {
  auto it = std::find_if(children_.begin(), children_.end(),
                         [&](const child& c) { return c.actor && c.actor.address() == source; });
  if (it == children_.end()) return;  // an incarnation we already replaced, or its second notice
  std::size_t i = static_cast<std::size_t>(it - children_.begin());
  bool failed = reason && reason != caf::exit_reason::user_shutdown && reason != caf::exit_reason::normal;
  children_[i].actor = caf::actor{};
  const bool was_starting = starting_ == i;
  if (was_starting) starting_ = none;
  if (shutting_down_) {
    shutdown_next();
    return;
  }
  if (children_[i].stopping) {
    if (starting_ == none && !pending_.empty() && pending_.front() == i) spawn_next();
    return;
  }
  if (!failed) {
    // Ended by ctx.stop(): a permanent child is restarted, others stay down.
    if (state_->spec_of(children_[i].vertex).restart() == restart_type::permanent) supervise(i, "stopped", false);
    else if (state_->spec_of(children_[i].vertex).is_dynamic())
      children_[i].active = false;  // start_child may start it again
    return;
  }
  supervise(i, reason_text(reason), true, was_starting);
}

void component_actor::supervise(std::size_t i, const std::string& reason, bool failure, bool was_starting) {
  const auto& tree = state_->tree();
  const std::string& child_path = tree.path(children_[i].vertex);
  if (failure) counted([&] { user_->on_child_failure(*ctx_, child_path, reason); });
  auto type_of = [&](std::size_t j) { return state_->spec_of(children_[j].vertex).restart(); };
  if (type_of(i) == restart_type::temporary) {
    log::warning(tree.path(vertex_), "`" + child_path + "` is temporary: not restarted");
    if (state_->spec_of(children_[i].vertex).is_dynamic())
      children_[i].active = false;   // start_child may start it again
    if (was_starting) spawn_next();  // its later siblings start without it
    return;
  }
  const supervision& policy = state_->spec_of(vertex_).policy();
  auto now = std::chrono::steady_clock::now();
  restarts_.push_back(now);
  while (!restarts_.empty() && now - restarts_.front() > policy.within) restarts_.pop_front();
  if (static_cast<int>(restarts_.size()) > policy.max_restarts) {
    std::string why = "child `" + child_path + "` failed " + std::to_string(restarts_.size()) +
                      (restarts_.size() == 1 ? " time" : " times") + " within " +
                      std::to_string(policy.within.count()) + " ms (limit " + std::to_string(policy.max_restarts) +
                      "); giving up and escalating";
    log::error(tree.path(vertex_), why);
    stop_remote_children();
    quit(caf::make_error(caf::sec::runtime_error, why));
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
    state_->forget_subtree(children_[j].vertex);  // this node's part; a remote child's node forgets its own
    if (j == i || (children_[j].active && type_of(j) != restart_type::temporary)) pending_.push_back(j);
    else if (state_->spec_of(children_[j].vertex).is_dynamic()) children_[j].active = false;  // stays down
  }
  if (starting_ >= first && starting_ < last) starting_ = none;
  std::sort(pending_.begin(), pending_.end());
  pending_.erase(std::unique(pending_.begin(), pending_.end()), pending_.end());
  if (policy.backoff.count() > 0) {
    auto delay = policy.backoff;
    for (std::size_t k = 1; k < restarts_.size() && delay < policy.max_backoff; ++k) delay *= 2;
    delay = std::min(delay, policy.max_backoff);
    backing_off_ = true;
    delayed_send(caf::actor_cast<caf::actor>(this), delay, restart_atom::value);
    return;
  }
  spawn_next();
}

void component_actor::shutdown_next() {
  // Remote children are stopped by their own nodes (each node shuts down its part of the tree).
  for (std::size_t j = children_.size(); j-- > 0;) {
    if (children_[j].actor) {
      if (!children_[j].stopping) {
        children_[j].stopping = true;
        if (urgent_) send<caf::message_priority::high>(children_[j].actor, shutdown_atom::value, true);
        else send(children_[j].actor, shutdown_atom::value, false);
      }
      return;  // wait for its exit before stopping the next one
    }
  }
  counted([&] { user_->on_stop(*ctx_); });
  quit(caf::exit_reason::normal);
}

result<subscription_id> component_actor::subscribe(std::string_view filter, banyan::context::handler on_message) {
  for (auto it = adopt_.begin(); it != adopt_.end(); ++it) {
    if (it->second != filter) continue;
    // Taken over from the incarnation that left: every node's replica has it already.
    const subscription_id id = it->first;
    adopt_.erase(it);
    handlers_.emplace(id, std::move(on_message));
    filters_.emplace(id, std::string(filter));
    return id;
  }
  auto id = state_->routing().subscribe(vertex_, filter);
  if (!id) return id;
  handlers_.emplace(*id, std::move(on_message));
  filters_.emplace(*id, std::string(filter));
  if (state_->node()) state_->node()->broadcast_subscribe(*id, vertex_, std::string(filter));
  return id;
}

bool component_actor::unsubscribe(subscription_id id) {
  if (handlers_.erase(id) == 0) return false;
  filters_.erase(id);
  state_->routing().unsubscribe(id);
  if (state_->node()) state_->node()->broadcast_unsubscribe(id);
  return true;
}

result<void> component_actor::publish(std::string_view topic_text, const payload& data, const scope& where) {
  if (auto* node = state_->node(); node && data.size() > node->max_payload_bytes()) {
    // Refused whatever the route, so that the app sees the same on every deployment.
    return error{runtime::errc::payload_too_large,
                 "publish `" + std::string(topic_text) + "`: a payload of " + std::to_string(data.size()) +
                     " bytes is larger than --max-payload (" + std::to_string(node->max_payload_bytes()) + " bytes)"};
  }
  auto scope_vertex = where.resolve(state_->tree(), vertex_);
  if (!scope_vertex) return scope_vertex.error();
  if (!state_->cluster_ready()) {
    // Hold it (in order) until every node has started; errors are still reported now.
    auto t = topic::parse(topic_text);
    if (!t) return t.error();
    held_.push_back({t->str(), *scope_vertex, data});
    // A live move's freeze: stop originating work until the thaw (as for a full link), so a
    // publisher's loop does not pile up held messages while the deployment waits.
    if (state_->frozen()) pause();
    return {};
  }
  if (!held_.empty()) flush_held();
  auto info = routes_.get(topic_text, vertex_, *scope_vertex, vertex_, no_vertex);
  if (!info) return info.error();
  // An error says which node the message did not reach (it is gone); local targets have it.
  return send_on(**info, data);
}

result<void> component_actor::send_on(const std::shared_ptr<const route_info>& info, const payload& data) {
  result<void> out;
  std::uint64_t sequence = ++sequence_;
  if (!info->local.empty()) {
    // Each target's message carries the payload and the route (by address: routes_ keeps it, see
    // local_delivery); no envelope to allocate per publish (a message from another node has one,
    // for its delivery receipt).
    for (auto i : info->local) {
      if (!info->targets[i]) continue;
      state_->flow().queued(info->plan->targets()[i].component);
      send(info->targets[i], deliver_atom::value, local_delivery{info.get(), sequence, i}, data);
    }
    for (auto i : info->local) {
      const vertex_id target = info->plan->targets()[i].component;
      if (target != vertex_ && state_->flow().congested(target)) {
        if (pause()) state_->flow().resume_when_drained(target, caf::actor_cast<caf::actor>(this));
        break;
      }
    }
  }
  if (!info->hops.empty()) {
    // A failure (the node is lost) is counted and logged once per outage by the node runtime.
    // Past the window the actor pauses (see pause()); only far past it, outside a handler for a
    // message from another node, does it block its thread.
    auto* node = state_->node();
    const std::size_t block_at = in_remote_delivery_ ? runtime::never_block : node_runtime::publisher_block_at;
    for (const auto& h : info->hops) {
      auto r = node->forward(h, info->topic, vertex_, info->scope, sequence, data, {}, block_at);
      if (!r && out) {
        out = error{r.error().code, "publish `" + info->topic + "`: not delivered to node `" +
                                        node->deployment().names[h.node] + "` (nor beyond it): " + r.error().message};
      }
    }
    for (const auto& h : info->hops) {
      if (node->link_full(h.node)) {
        if (pause()) node->resume_when_credit(h.node, caf::actor_cast<caf::actor>(this));
        break;
      }
    }
  }
  info->plan->record(data.size());
  return out;
}

void component_actor::flush_held() {
  while (!held_.empty()) {
    auto h = std::move(held_.front());
    held_.pop_front();
    // A held publish already returned; a node lost meanwhile is counted and logged by the node.
    if (auto info = routes_.get(h.topic, vertex_, h.scope, vertex_, no_vertex)) (void)send_on(**info, h.data);
  }
}

void component_actor::serve(std::string method, banyan::context::service handler) {
  services_[std::move(method)] = std::move(handler);
}

void component_actor::send_request(std::string_view path, std::string method, const payload& data,
                                   std::chrono::milliseconds timeout, banyan::context::reply_handler on_reply) {
  auto fail = [this, &on_reply](error e) {
    post_task([on_reply = std::move(on_reply), e = std::move(e)] { on_reply(e); });
  };
  auto v = state_->tree().find(path);
  if (!v) return fail(v.error());
  if (state_->frozen() && state_->is_local(*v)) {
    // A live move froze the deployment: the target may be leaving. Made again when it thaws, where
    // the target runs then (as a remote request made meanwhile is held and sent then).
    frozen_requests_.push_back([this, p = std::string(path), method = std::move(method), data, timeout,
                                on_reply = std::move(on_reply)]() mutable {
      send_request(p, std::move(method), data, timeout, std::move(on_reply));
    });
    return;
  }
  if (!state_->is_local(*v)) return send_remote_request(*v, std::move(method), data, timeout, std::move(on_reply));
  auto target = state_->actors().get(*v);
  if (!target) return fail(error{sdk::errc::request_failed, "`" + std::string(path) + "` is not running"});
  std::string what = "request `" + method + "` to `" + std::string(path) + "`";
  state_->requests().record(vertex_, *v, data.size());  // the profile's request traffic
  request(target, caf::duration{timeout}, request_atom::value, std::move(method), data, vertex_)
      .then(
          [this, on_reply, what](std::string& err, payload& reply) {
            counted([&] {
              if (err.empty()) on_reply(std::move(reply));
              else on_reply(error{sdk::errc::request_failed, what + ": " + err});
            });
          },
          [this, on_reply, what, timeout](caf::error& e) {
            counted([&] {
              if (e == caf::sec::request_timeout)
                on_reply(
                    error{sdk::errc::timeout, what + ": no reply within " + std::to_string(timeout.count()) + " ms"});
              else
                on_reply(error{sdk::errc::request_failed,
                               what + ": " + reason_text(e)});  // the callee's what(), not CAF's rendering
            });
          });
}

void component_actor::send_remote_request(vertex_id target, std::string method, const payload& data,
                                          std::chrono::milliseconds timeout, banyan::context::reply_handler on_reply) {
  auto* node = state_->node();
  const std::uint64_t id = node->next_request_id();
  std::string what = "request `" + method + "` to `" + state_->tree().path(target) + "`";
  if (data.size() > node->max_payload_bytes()) {
    error e{runtime::errc::payload_too_large, what + ": a payload of " + std::to_string(data.size()) +
                                                  " bytes is larger than --max-payload (" +
                                                  std::to_string(node->max_payload_bytes()) + " bytes)"};
    return post_task([on_reply = std::move(on_reply), e = std::move(e)] { on_reply(e); });
  }
  if (!state_->cluster_ready()) {
    // Made during the cluster's start: held, in order, until every node is ready (as publishes are),
    // so it behaves as in one process. Its timeout runs from now.
    remote_requests_[id] = {std::move(on_reply), std::move(what)};
    held_requests_.push_back({id, target, std::move(method), data, timeout});
    delayed_send(caf::actor_cast<caf::actor>(this), timeout, expire_atom::value, id,
                 static_cast<std::int64_t>(timeout.count()));
    return;
  }
  if (!held_requests_.empty()) flush_held_requests();
  remote_requests_[id] = {std::move(on_reply), std::move(what)};
  delayed_send(caf::actor_cast<caf::actor>(this), timeout, expire_atom::value, id,
               static_cast<std::int64_t>(timeout.count()));
  transmit_request({id, target, std::move(method), data, timeout});
}

void component_actor::transmit_request(const held_request& r) {
  state_->requests().record(vertex_, r.target, r.data.size());  // the profile's request traffic
  const std::size_t block_at = in_remote_delivery_ ? runtime::never_block : node_runtime::publisher_block_at;
  auto sent = state_->node()->send_request(vertex_, r.target, r.method, r.data, r.timeout, r.id,
                                           caf::actor_cast<caf::actor>(this), block_at);
  // Reported later, never from inside ctx.request() (as in one process).
  if (!sent)
    post_task(
        [this, id = r.id, e = error{sdk::errc::request_failed, sent.error().what()}] { finish_remote_request(id, e); });
}

void component_actor::flush_held_requests() {
  while (!held_requests_.empty()) {
    auto r = std::move(held_requests_.front());
    held_requests_.pop_front();
    if (remote_requests_.count(r.id)) transmit_request(r);  // else it timed out while held
  }
}

void component_actor::finish_remote_request(std::uint64_t id, result<payload> outcome) {
  auto it = remote_requests_.find(id);
  if (it == remote_requests_.end()) return;  // answered or expired already
  auto r = std::move(it->second);
  remote_requests_.erase(it);
  if (!outcome) outcome = error{outcome.error().code, r.what + ": " + outcome.error().message};
  counted([&] { r.on_reply(std::move(outcome)); });
}

std::shared_ptr<vertex_state> component_actor::move_out() {
  auto out = std::make_shared<vertex_state>();
  out->vertex = vertex_;
  const std::string& path = state_->tree().path(vertex_);
  try {
    std::optional<payload> snapshot;
    counted([&] { snapshot = user_->snapshot(*ctx_); });
    if (snapshot) out->snapshot.emplace(reinterpret_cast<const char*>(snapshot->bytes().data()), snapshot->size());
  } catch (const std::exception& e) {
    log::error(path, std::string("snapshot for a move failed: ") + e.what() + "; it starts afresh on its new node");
  }
  out->sequence = sequence_;
  for (const auto& [id, filter] : filters_) out->subscriptions.emplace_back(id, filter);
  std::sort(out->subscriptions.begin(), out->subscriptions.end());  // in the order they were made
  for (auto& h : held_) {
    out->held.push_back({std::move(h.topic), h.scope,
                         std::string(reinterpret_cast<const char*>(h.data.bytes().data()), h.data.size())});
  }
  held_.clear();
  if (const auto n = held_requests_.size() + frozen_requests_.size())
    log::warning(path,
                 std::to_string(n) + " request(s) made while the deployment was frozen end with this incarnation");
  moved_->store(true);
  // Idle until its supervisor (or the gateway) ends it: nothing reaches it while the deployment is
  // frozen, and nothing it still had queued (timers, posted work) runs.
  become(caf::message_handler{[this](movequit_atom) { quit(caf::exit_reason::user_shutdown); }});
  // Dropped without an error (caf::drop's error would end the actor as a failure).
  set_default_handler(
      [](caf::scheduled_actor*, caf::message_view&) -> caf::result<caf::message> { return caf::message{}; });
  return out;
}

void component_actor::child_moved(vertex_id child_vertex, node_id to, std::uint64_t generation) {
  auto it = std::find_if(children_.begin(), children_.end(), [&](const child& c) { return c.vertex == child_vertex; });
  if (it == children_.end()) return;
  if (to == state_->where().self()) {
    // It arrived here: a local child from now on, started from the state it brought.
    it->remote = false;
    it->remote_up = false;
    it->stopping = false;
    auto a = spawn_component(*this, state_, it->vertex, address(), false);
    state_->set_actor(it->vertex, a);
    link_to(a);
    monitor(a);
    it->actor = a;
    return;
  }
  // It left: its incarnation here ends quietly; its new node hosts it under `generation`.
  if (it->actor) send(it->actor, movequit_atom::value);
  it->actor = caf::actor{};
  it->remote = true;
  it->remote_up = true;
  it->generation = generation;
}

void component_actor::post_task(std::function<void()> fn) {
  send(caf::actor_cast<caf::actor>(this), post_atom::value, task{std::move(fn)});
}

void component_actor::post_after(std::chrono::milliseconds delay, std::function<void()> fn) {
  delayed_send(caf::actor_cast<caf::actor>(this), delay, post_atom::value, task{std::move(fn)});
}

}  // namespace banyan::detail
