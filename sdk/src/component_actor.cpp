#include "component_actor.hpp"

#include "cluster/node.hpp"

#include "banyan/base/log.hpp"

#include <algorithm>
#include <chrono>

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
      gate_(make_gate(*this)),
      supervisor_(*this, *gate_, initial),
      routes_(state_->front(), /*by_reference=*/true) {}

component_actor::~component_actor() = default;

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
    supervisor_.stop_remote_children();
    return caf::make_error(caf::sec::runtime_error, what);
  });
  set_exit_handler([this](caf::exit_msg& msg) { on_exit_message(msg); });
  // A child we stopped unlinks from us when it handles our exit message, so its end comes as a
  // down message (children are monitored too); whichever of the two comes first counts.
  set_down_handler([this](caf::down_msg& msg) { supervisor_.child_gone(msg.source, msg.reason); });
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
    state->tell_watchers(v, failed ? reason_text(reason) : std::string("stopped"));
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
        supervisor_.child_moved(child_vertex, to, generation);
      },
      [this](childsleep_atom, vertex_id child_vertex) { supervisor_.child_asleep(child_vertex); },
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
      [this](started_atom, vertex_id child_vertex) { supervisor_.child_started(child_vertex); },
      [this](rstarted_atom, vertex_id child_vertex, std::uint64_t generation) {
        supervisor_.remote_child_started(child_vertex, generation);
      },
      [this](mondown_atom, std::uint64_t id, const std::string& path, const std::string& reason) {
        auto it = monitors_.find(id);
        if (it != monitors_.end()) counted([&] { it->second(path, reason); });
      },
      [this](nodelost_atom, node_id, const std::string& reason, const std::vector<vertex_id>& gone) {
        // Every monitor of a component the lost node ran fires, here, and goes on.
        for (const auto& lost : gate_->monitors_lost_with(gone)) {
          auto handler = monitors_.find(lost.first);
          if (handler != monitors_.end()) counted([&] { handler->second(state_->tree().path(lost.second), reason); });
        }
      },
      [this](restart_atom) { supervisor_.backoff_over(); },
      [this](rfailed_atom, vertex_id child_vertex, std::uint64_t generation, const std::string& reason) {
        supervisor_.remote_child_failed(child_vertex, generation, reason);
      },
      [this](rstopped_atom, vertex_id child_vertex, std::uint64_t generation) {
        supervisor_.remote_child_stopped(child_vertex, generation);
      },
      [this](ready_atom) {
        resume();  // paused by a live move's freeze (a full link pauses it again at its next publish)
        gate_->open();
      },
      [this](joined_atom, node_id) { gate_->open(); },
      [this](lost_atom, const std::string& child_path, node_id lost, const std::string& reason) {
        supervisor_.child_lost(child_path, lost, reason);
      },
      [this](rback_atom, vertex_id child) { supervisor_.remote_child_back(child); },
      [this](failover_atom, const std::vector<vertex_id>& children, const std::vector<std::string>& reasons) {
        supervisor_.children_failed_over(children, reasons);
      },
      [this](undeliv_atom, const std::string& node, std::uint64_t count, const std::string& reason) {
        counted([&] { user_->on_undelivered(*ctx_, node, count, reason); });
      },
      [this](shutdown_atom, bool urgent) { supervisor_.begin_shutdown(urgent); },
      [this](reply_atom, std::uint64_t id, const std::string& code, const std::string& text, const payload& data) {
        if (code.empty()) return gate_->answer(id, data);
        gate_->answer(id, error{code == "timeout" ? sdk::errc::timeout : sdk::errc::request_failed, text});
      },
      [this](expire_atom, std::uint64_t id, std::int64_t ms) { gate_->expire(id, std::chrono::milliseconds{ms}); },
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

// Publishing to a component with a full backlog, or past a node link's credit window, pauses the
// actor after the current message: it stops *originating* work — its own posted tasks and timers,
// and requests it serves, stay queued in order — and goes on handling everything that reacts to
// others (deliveries, replies, supervision, shutdown), until whoever it waits for says `resume`.
// Reactions never wait, so paused actors cannot wait for each other, and no thread is blocked.
bool component_actor::pause() {
  if (paused_ || !behavior_ready_ || supervisor_.shutting_down()) return false;
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
  filters_.clear();
  adopt_.clear();
  supervisor_.clear();
  gate_->clear();
  ctx_.reset();
  user_.reset();
}

void component_actor::start() {
  const spec& s = state_->spec_of(vertex_);
  user_ = s.make()();
  ctx_ = std::make_unique<actor_context>(*this);
  if (auto arrival = gate_->arrive()) {
    // Arrived by a live move: the incarnation that left goes on here (move_out).
    arrived_ = true;
    if (arrival->snapshot) counted([&] { user_->restore(*ctx_, payload::copy_of(*arrival->snapshot)); });
    sequence_ = arrival->sequence;
    adopt_ = std::move(arrival->subscriptions);
  } else if (s.keeps_state()) {
    if (auto kept = state_->kept().get(vertex_)) counted([&] { user_->restore(*ctx_, *kept); });
  }
  // The root of a subtree arriving (a move, a wake) whose arriving incarnation failed: its
  // restart ends the arrival instead (what waits for the subtree goes to it).
  if (!arrived_ && state_->arrivals().arriving(vertex_)) arrived_ = true;
  supervisor_.prepare();
  counted([&] { user_->on_start(*ctx_); });
  // Subscriptions of the incarnation that left that this one did not make again end with it.
  for (const auto& [id, filter] : std::exchange(adopt_, {})) {
    state_->routing().unsubscribe(id);
    gate_->unsubscribed(id);
  }
  supervisor_.start_children();
}

void component_actor::children_started() {
  if (!state_->tree().children(vertex_).empty()) counted([&] { user_->on_children_started(*ctx_); });
  if (reported_started_) return;
  reported_started_ = true;
  if (arrived_) gate_->arrived();  // the move's end waits for its subtree
  if (auto parent = caf::actor_cast<caf::actor>(parent_)) send(parent, started_atom::value, vertex_);
  else state_->done().root_started();
}

result<void> component_actor::watch(std::string_view path, banyan::context::down_handler on_down) {
  auto v = state_->tree().find(path);
  if (!v) return v.error();
  const std::uint64_t id = state_->watching().next_id();
  monitors_.emplace(id, std::move(on_down));
  gate_->monitor(*v, id);
  return {};
}

void component_actor::stop_self() {
  if (!supervisor_.shutting_down()) supervisor_.begin_shutdown(false);
}

void component_actor::checkpoint() {
  if (!user_ || !ctx_ || !state_->spec_of(vertex_).keeps_state()) return;
  std::optional<payload> snapshot;
  counted([&] { snapshot = user_->snapshot(*ctx_); });
  if (!snapshot) return;
  if (auto* durable = state_->durable()) durable->put(state_->tree().path(vertex_), *snapshot);
  state_->kept().put(vertex_, std::move(*snapshot));
}

void component_actor::on_exit_message(caf::exit_msg& msg) {
  if (msg.source == parent_) {
    // Stopped in good health (its supervisor restarts it, or failed itself): keep its state.
    try {
      checkpoint();
    } catch (const std::exception& e) {
      log::error(state_->tree().path(vertex_), std::string("snapshot failed: ") + e.what());
    }
    supervisor_.stop_remote_children();
    quit(msg.reason);  // our supervisor stopped or failed: the whole subtree goes with it
    return;
  }
  supervisor_.child_gone(msg.source, msg.reason);
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
  gate_->subscribed(*id, std::string(filter));
  return id;
}

bool component_actor::unsubscribe(subscription_id id) {
  if (handlers_.erase(id) == 0) return false;
  filters_.erase(id);
  state_->routing().unsubscribe(id);
  gate_->unsubscribed(id);
  return true;
}

result<void> component_actor::publish(std::string_view topic_text, const payload& data, const scope& where) {
  auto scope_vertex = where.resolve(state_->tree(), vertex_);
  if (!scope_vertex) return scope_vertex.error();
  return gate_->publish(topic_text, *scope_vertex, data);
}

result<void> component_actor::route(std::string_view topic_text, vertex_id scope, const payload& data) {
  auto info = routes_.get(topic_text, vertex_, scope, vertex_, no_vertex);
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
      if (!info->targets[i]) {
        hold_for_sleeper(info, i, sequence, data);
        continue;
      }
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
  if (!info->hops.empty()) out = gate_->forward(*info, sequence, data);
  info->plan->record(data.size());
  return out;
}

// A local target without an actor is either stopped (the message is not for it) or asleep: then
// the gateway holds the message and wakes its subtree (gateway_sleep.cpp).
void component_actor::hold_for_sleeper(const std::shared_ptr<const route_info>& info, std::uint32_t index,
                                       std::uint64_t sequence, const payload& data) {
  if (!state_->where().asleep(info->plan->targets()[index].component)) return;
  auto message = std::make_shared<const routed_message>(routed_message{info, data, sequence, nullptr});
  send(state_->node()->gateway(), hold_atom::value, std::move(message), index);
}

void component_actor::serve(std::string method, banyan::context::service handler) {
  services_[std::move(method)] = std::move(handler);
}

void component_actor::send_request(std::string_view path, std::string method, const payload& data,
                                   std::chrono::milliseconds timeout, banyan::context::reply_handler on_reply) {
  auto v = state_->tree().find(path);
  if (!v) return post_task([on_reply = std::move(on_reply), e = v.error()] { on_reply(e); });
  // The profile's reply time of the target: from here until its reply is back.
  gate_->request(*v, std::move(method), data, timeout,
                 [on_reply = std::move(on_reply), loads = &state_->loads(), target = *v,
                  sent = std::chrono::steady_clock::now()](result<payload> r) {
                   if (r)
                     loads->timed(target, timing_kind::reply,
                                  std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count());
                   on_reply(std::move(r));
                 });
}

void component_actor::request_here(vertex_id v, std::string method, const payload& data,
                                   std::chrono::milliseconds timeout, banyan::context::reply_handler on_reply) {
  const std::string& path = state_->tree().path(v);
  auto target = state_->actors().get(v);
  // Asleep: the gateway holds it, wakes the subtree and hands it on (gateway_sleep.cpp); the
  // timeout runs from now.
  const bool asleep = !target && state_->where().asleep(v);
  if (!target && !asleep) {
    return post_task([on_reply = std::move(on_reply),
                      e = error{sdk::errc::request_failed, "`" + path + "` is not running"}] { on_reply(e); });
  }
  std::string what = "request `" + method + "` to `" + path + "`";
  state_->requests().record(vertex_, v, data.size());  // the profile's request traffic
  auto then = [this, on_reply, what, timeout](auto handle) {
    handle.then(
        [this, on_reply, what](std::string& err, payload& reply) {
          counted([&] {
            if (err.empty()) on_reply(std::move(reply));
            else on_reply(error{sdk::errc::request_failed, what + ": " + err});
          });
        },
        [this, on_reply, what, timeout](caf::error& e) { on_request_error(on_reply, what, timeout, e); });
  };
  if (asleep)
    then(request(state_->node()->gateway(), caf::duration{timeout}, hold_atom::value, std::move(method), data, vertex_,
                 v));
  else then(request(target, caf::duration{timeout}, request_atom::value, std::move(method), data, vertex_));
}

void component_actor::on_request_error(const banyan::context::reply_handler& on_reply, const std::string& what,
                                       std::chrono::milliseconds timeout, const caf::error& e) {
  counted([&] {
    if (e == caf::sec::request_timeout)
      on_reply(error{sdk::errc::timeout, what + ": no reply within " + std::to_string(timeout.count()) + " ms"});
    else on_reply(error{sdk::errc::request_failed, what + ": " + reason_text(e)});  // the callee's what(), not CAF's
  });
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
  gate_->leave(*out);
  moved_->store(true);
  // Idle until its supervisor (or the gateway) ends it: nothing reaches it while the deployment is
  // frozen, and nothing it still had queued (timers, posted work) runs. A pause (a full backlog or
  // link) ends here: its late `resume` must not unbecome the idle behaviour back into main_.
  if (paused_) {
    paused_ = false;
    unbecome();
  }
  become(caf::message_handler{[this](movequit_atom) { quit(caf::exit_reason::user_shutdown); }});
  // Dropped without an error (caf::drop's error would end the actor as a failure).
  set_default_handler(
      [](caf::scheduled_actor*, caf::message_view&) -> caf::result<caf::message> { return caf::message{}; });
  return out;
}

void component_actor::post_task(std::function<void()> fn) {
  send(caf::actor_cast<caf::actor>(this), post_atom::value, task{std::move(fn)});
}

void component_actor::post_after(std::chrono::milliseconds delay, std::function<void()> fn) {
  delayed_send(caf::actor_cast<caf::actor>(this), delay, post_atom::value, task{std::move(fn)});
}

}  // namespace banyan::detail
