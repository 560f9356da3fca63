// What a component can do: its view of the tree, the broker and its own actor.
//
// A context belongs to one component incarnation and may be used only from inside that component's
// hooks and handlers (the actor's thread of control), never from other threads; other threads reach
// the component through cross_thread_poster().
#pragma once

#include "banyan/broker/error.hpp"
#include "banyan/broker/routing.hpp"
#include "banyan/broker/scope.hpp"
#include "banyan/sdk/payload.hpp"

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

namespace banyan {

// One message as its subscriber sees it. Valid only during the handler call; copy data() to keep it.
class delivery {
 public:
  delivery(const std::string& topic, const std::string& sender, const payload& data, std::uint64_t sequence)
      : topic_(topic), sender_(sender), data_(data), sequence_(sequence) {}
  const std::string& topic() const { return topic_; }
  // Path of the publishing component.
  const std::string& sender() const { return sender_; }
  const payload& data() const { return data_; }
  std::span<const std::byte> bytes() const { return data_.bytes(); }
  // Per-publisher sequence number, starting at 1; a subscriber sees each publisher's messages in order.
  std::uint64_t sequence() const { return sequence_; }

 private:
  const std::string& topic_;
  const std::string& sender_;
  const payload& data_;
  std::uint64_t sequence_;
};

class context {
 public:
  using handler = std::function<void(const delivery&)>;
  using reply_handler = std::function<void(result<payload>)>;
  using service = std::function<result<payload>(const payload&)>;

  virtual ~context() = default;

  virtual const std::string& path() const = 0;
  virtual vertex_id id() const = 0;
  virtual const component_tree& tree() const = 0;
  virtual routing_mode mode() const = 0;

  // Subscribes to every topic matching `filter`; applies to every message published after it returns.
  virtual result<subscription_id> subscribe(std::string_view filter, handler on_message) = 0;
  // Typed subscription: payloads are validated as `Schema` first; an invalid one goes to `on_invalid`
  // (by default: logged) with an error naming the topic and the reason, and never to `on_message`.
  template <class Schema, class F>
  result<subscription_id> subscribe(std::string_view filter, F on_message,
                                    std::function<void(const error&)> on_invalid = {}) {
    return subscribe(filter,
                     [this, on_message = std::move(on_message), on_invalid = std::move(on_invalid)](const delivery& d) {
                       auto ok = read_as<Schema>(d.data(), "topic `" + d.topic() + "` from `" + d.sender() + "`",
                                                 [&](typename Schema::Reader r) { on_message(r, d); });
                       if (!ok) on_invalid ? on_invalid(ok.error()) : log(ok.error().what());
                     });
  }
  virtual bool unsubscribe(subscription_id id) = 0;

  // Publishes to every matching subscriber inside `where` (an ancestor of this component, or itself).
  // Errors: a malformed topic, a scope that is not an ancestor. Nothing is sent on error.
  virtual result<void> publish(std::string_view topic, const payload& data, const scope& where = scope::root()) = 0;
  result<void> publish(std::string_view topic, std::string_view bytes, const scope& where = scope::root()) {
    return publish(topic, payload::copy_of(bytes), where);
  }
  template <class Schema, class Fill>
  result<void> publish(std::string_view topic, Fill&& fill, const scope& where = scope::root()) {
    return publish(topic, payload::build<Schema>(std::forward<Fill>(fill)), where);
  }

  // Answers requests for `method`. A handler error goes back to the requester as request_failed.
  virtual void serve(std::string method, service handler) = 0;
  // Sends a request to the component at `path`; `on_reply` gets the reply, or an error: timeout,
  // no_such_component, or request_failed (unknown method, handler error, callee failed).
  virtual void request(std::string_view path, std::string method, const payload& data,
                       std::chrono::milliseconds timeout, reply_handler on_reply) = 0;

  // Typed services (Cap'n Proto). The request is validated as `Request` first: an invalid one is
  // refused (the requester gets request_failed naming the method and the invalid_payload reason)
  // and `handler` is not called. `handler(Request::Reader, Reply::Builder) -> result<void>` fills
  // the reply, or returns an error that reaches the requester as with serve() above. Readers and
  // builders are valid only during the call.
  template <class Request, class Reply, class F>
  void serve(std::string method, F handler) {
    std::string what = "request `" + method + "` to `" + path() + "`";
    serve(std::move(method), [handler = std::move(handler), what](const payload& in) -> result<payload> {
      result<void> outcome;
      payload reply;
      auto valid = read_as<Request>(in, what, [&](typename Request::Reader request) {
        reply = payload::build<Reply>([&](typename Reply::Builder b) { outcome = handler(request, b); });
      });
      if (!valid) return valid.error();
      if (!outcome) return outcome.error();
      return reply;
    });
  }
  // A typed request: `on_reply(result<Reply::Reader>)` gets the reply (valid during the call) or the
  // error request() would give; a reply that fails validation as `Reply` is an invalid_payload
  // error naming the method and the callee. Build the request with payload::build<Request>.
  template <class Reply, class F>
  void request(std::string_view path, std::string method, const payload& data, std::chrono::milliseconds timeout,
               F on_reply) {
    std::string what = "reply to `" + method + "` from `" + std::string(path) + "`";
    request(path, std::move(method), data, timeout,
            reply_handler([on_reply = std::move(on_reply), what](result<payload> r) mutable {
              using reader = typename Reply::Reader;
              if (!r) return on_reply(result<reader>(r.error()));
              auto valid = read_as<Reply>(*r, what, [&](reader reply) { on_reply(result<reader>(reply)); });
              if (!valid) on_reply(result<reader>(valid.error()));
            }));
  }
  // Plain-text helpers: the payload's bytes as a string, both ways.
  void serve_text(std::string method, std::function<result<std::string>(std::string_view)> handler) {
    serve(std::move(method), [handler = std::move(handler)](const payload& in) -> result<payload> {
      auto out = handler(std::string_view(reinterpret_cast<const char*>(in.bytes().data()), in.size()));
      if (!out) return out.error();
      return payload::copy_of(std::string_view(*out));
    });
  }
  // Sends `text` as a request; `on_reply` gets the reply's bytes as a string, or request()'s error.
  void request_text(std::string_view path, std::string method, std::string_view text, std::chrono::milliseconds timeout,
                    std::function<void(result<std::string>)> on_reply) {
    request(path, std::move(method), payload::copy_of(text), timeout,
            reply_handler([on_reply = std::move(on_reply)](result<payload> r) {
              if (!r) return on_reply(r.error());
              on_reply(std::string(reinterpret_cast<const char*>(r->bytes().data()), r->size()));
            }));
  }

  // Runs `fn` later as a message to this component (keeps long work in short, interleaved steps).
  virtual void post(std::function<void()> fn) = 0;
  // Runs `fn` as a message to this component once `delay` has passed (a timer).
  virtual void after(std::chrono::milliseconds delay, std::function<void()> fn) = 0;
  // The one way in from other threads (a worker thread handing back a result): a handle that posts a
  // function to this incarnation from any thread, to run in it like post(). It returns false, and
  // drops the function, once this incarnation has ended (a restart is a new incarnation: take a new
  // handle in its on_start). Copyable; it does not keep the component alive. A function that arrives
  // while the incarnation is stopping is dropped as post()'s would be.
  using poster = std::function<bool(std::function<void()>)>;
  virtual poster cross_thread_poster() = 0;

  // Monitors the component at `path` (Erlang's monitor): `on_down(path, reason)` runs in this
  // component each time an incarnation of it ends — `reason` is the failure's text, or `stopped`
  // for an orderly end (ctx.stop(), a supervisor stopping it, the run's shutdown). Lasts for this
  // incarnation. Works alike when `path` runs on another node (its node sends the news). When that
  // node is lost, `on_down` runs once with reason "node `N` lost: ..." and the monitor ends (as
  // Erlang's noconnection). Errors: no_such_component.
  using down_handler = std::function<void(const std::string& path, const std::string& reason)>;
  virtual result<void> monitor(std::string_view path, down_handler on_down) = 0;
  // Ends this component normally: its children stop, then its on_stop runs. Its supervisor restarts
  // it only if it is restart_type::permanent (app.hpp's spec::restart), on whichever node it runs.
  virtual void stop() = 0;
  // Dynamic children (spec::dynamic): starts this composite's child `name` now (after the children
  // starting already; its subtree starts as a restart's does), or stops it in order (children first,
  // then its on_stop; its monitors hear `stopped`; not restarted). Either node may host it.
  // A child whose node is not ready — a node with `join: later` that has not joined yet, or one that
  // was lost — starts when that node joins (or comes back); until then it counts as running. A
  // dynamic child lost with its node is reported (on_child_failure) and stops counting as running,
  // so start_child may ask for it again.
  // Errors: invalid_argument when `name` is no dynamic child of this component, or is already
  // running (start_child) or not running (stop_child).
  virtual result<void> start_child(std::string_view name) = 0;
  virtual result<void> stop_child(std::string_view name) = 0;
  // Ends banyan::run with `exit_code` after an orderly shutdown of the whole tree.
  virtual void quit(int exit_code = 0) = 0;
  // Writes one line to the run's log, prefixed with this component's path.
  virtual void log(std::string_view line) = 0;
  // Takes a snapshot (component::snapshot) now and keeps it as the state a restart restores, if
  // this component was added with keep_state(); otherwise does nothing.
  virtual void checkpoint() = 0;
  // Reports this component's memory footprint for the profile.
  virtual void report_memory(std::uint64_t bytes) = 0;
};

}  // namespace banyan
