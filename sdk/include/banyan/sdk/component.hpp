// Components: the user's code in the tree. Each component instance runs inside its own CAF actor, so
// its hooks and handlers never run concurrently with each other and need no locks.
//
// A `leaf` does work; a `composite` groups children, supervises them and is the broker for its
// subtree. Both may publish, subscribe and serve requests. A component object lives exactly as long as
// one incarnation of its actor: when supervision restarts it, a fresh object is built from the same
// constructor arguments and on_start runs again.
#pragma once

#include "banyan/sdk/context.hpp"

#include <chrono>
#include <optional>
#include <string>

namespace banyan {

class component {
 public:
  virtual ~component() = default;
  // Runs when the component starts (before its children start). Subscribe here.
  virtual void on_start(context&) {}
  // Runs on orderly shutdown, after all children have stopped. Not called after a failure.
  virtual void on_stop(context&) {}
  // The cleanup hook: runs in the failed incarnation right after its failure (an exception escaped
  // one of its hooks or handlers), before its supervisor hears of it: release what on_stop would
  // have (files, devices, locks). `reason` is the exception's what(). An exception escaping it is
  // logged and ignored. Not called for a composite's own escalation (it did not throw).
  virtual void on_failure(context&, const std::string& reason) { (void)reason; }
  // Runs in a composite once all its children have started (children start one at a time, in order),
  // and again each time a supervision restart has started all the restarted children, or
  // ctx.start_child has started a dynamic child.
  virtual void on_children_started(context&) {}
  // Runs in a composite when its child at `child_path` failed, before supervision acts on it.
  virtual void on_child_failure(context&, const std::string& child_path, const std::string& reason) {
    (void)child_path;
    (void)reason;
  }
  // Multi-node: `count` messages this component published were accepted for node `node` and will
  // never be delivered there, because that node is gone (its process died, it restarted, or it
  // stayed silent past the give-up time) with them pending. Every publish is delivered exactly once
  // or reported: here, or as an error from publish() once the node is known to be gone. (Requests
  // to a gone node get their reply handler's error instead.) The SDK has logged it already.
  virtual void on_undelivered(context&, const std::string& node, std::uint64_t count, const std::string& reason) {
    (void)node;
    (void)count;
    (void)reason;
  }

  // State across restarts (optional). For a component added with keep_state() (app.hpp), each new
  // incarnation gets restore() with the latest snapshot, before on_start. The SDK asks for a
  // snapshot when it stops the component in good health (a sibling's restart under one_for_all or
  // rest_for_one, its supervisor's restart) and whenever the component calls ctx.checkpoint(). A
  // failed incarnation cannot be asked, so its successor restores the last checkpoint taken before
  // the failure (none: no restore() call). Return nothing to keep no state. The state is bytes or a
  // Cap'n Proto struct (payload::copy_of, payload::build<Schema>, read_as<Schema>); it stays on the
  // component's node, where its restarts run, and with --state-dir (run_options::state_dir) it is
  // also made durable, so that a failover restarts the component on another node from the last one
  // (docs/runtime.md, "Failover"). Moving a component live uses the same pair, whether
  // or not it keeps state across restarts: one whose snapshot returns nothing starts afresh on its
  // new node, and the move warns naming it (docs/runtime.md, "Moving subtrees live").
  virtual std::optional<payload> snapshot(context&) { return std::nullopt; }
  virtual void restore(context&, const payload& state) { (void)state; }
};

class leaf : public component {};
class composite : public component {};

// How a composite treats a failed child (Erlang/OTP's strategies). A failure is an exception escaping
// any hook or handler of the child, or the child's own escalation.
enum class restart_strategy {
  one_for_one,   // restart only the failed child
  one_for_all,   // stop all other children, then restart all of them in order
  rest_for_one,  // stop the children started after the failed one, then restart those and it in order
};

// Per child (spec::restart): whether its supervisor restarts it (Erlang/OTP's restart types).
enum class restart_type {
  permanent,  // restarted after a failure and after ctx.stop() (the default)
  transient,  // restarted only after a failure
  temporary,  // never restarted: a failure is reported (on_child_failure) and the child stays down,
              // nor is it restarted with a failed sibling (one_for_all, rest_for_one); its own
              // failure restarts no sibling and does not count towards max_restarts
};

struct supervision {
  restart_strategy strategy = restart_strategy::one_for_one;
  // More than `max_restarts` restarts within `within` makes the composite give up and fail itself,
  // escalating to its parent; at the root, banyan::run returns non-zero.
  int max_restarts = 3;
  std::chrono::milliseconds within{5000};
  // Restart backoff: a restart waits `backoff` (0: none), doubled for each earlier restart still
  // within `within`, at most `max_backoff`. Meanwhile the composite handles its messages as usual.
  std::chrono::milliseconds backoff{0};
  std::chrono::milliseconds max_backoff{5000};
};

}  // namespace banyan
