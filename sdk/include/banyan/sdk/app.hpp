// An application: the component tree described in C++, and banyan::run that starts it.
//
//   banyan::app app{"chip"};                                   // root composite, path /chip
//   auto& alu = app.root().add_composite("alu", {banyan::restart_strategy::one_for_all, 3, 5s});
//   alu.add_leaf<adder>("add0", 32);                           // constructor arguments are copied and
//   return banyan::run(app, argc, argv);                       // reused for every restart
//
// An argument that is (or holds) a variable bound to one of the app's options (app.options().add) is
// not copied: it is read each time the component is built, so the component sees the value the
// command line gave although the tree was described before banyan::run parsed it.
#pragma once

#include "banyan/broker/profile.hpp"
#include "banyan/sdk/component.hpp"
#include "banyan/sdk/options.hpp"

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace banyan {

namespace detail {

// A component's constructor argument as a spec keeps it: a copy, or, when the argument is (or
// holds) a variable bound to a command-line option (options::add), that variable itself, read each
// time the component is built, so it sees the value the command line gave even though the tree was
// described before banyan::run parsed it.
template <class V>
class ctor_arg {
 public:
  template <class A>
  explicit ctor_arg(A&& a) {
    if constexpr (std::is_lvalue_reference_v<A>) {
      if (holds_option_variable(std::addressof(a), sizeof(V))) {
        live_ = std::addressof(a);
        return;
      }
    }
    copy_.emplace(std::forward<A>(a));
  }
  const V& get() const { return live_ ? *live_ : *copy_; }

 private:
  std::optional<V> copy_;
  const V* live_ = nullptr;
};

template <class T, class... Args>
std::function<std::unique_ptr<component>()> make_factory(Args&&... args) {
  return
      [held = std::tuple<ctor_arg<std::decay_t<Args>>...>(ctor_arg<std::decay_t<Args>>(std::forward<Args>(args))...)] {
        return std::apply([](const auto&... a) { return std::unique_ptr<component>(new T(a.get()...)); }, held);
      };
}

}  // namespace detail

// One component in the app description. References stay valid while the app lives.
class spec {
 public:
  using factory = std::function<std::unique_ptr<component>()>;

  // Adds a composite child called `name` that supervises its own children with `policy`. `T` is
  // your class derived from banyan::composite (banyan::composite itself by default); every
  // incarnation is built from copies of `args` taken now (an app option's variable is read when the
  // incarnation is built instead: see the top of this file). Returns the child's spec, to add to.
  template <class T = composite, class... Args>
  spec& add_composite(std::string name, supervision policy = {}, Args&&... args) {
    static_assert(std::is_base_of_v<composite, T>, "add_composite<T>: T must derive from banyan::composite");
    return add(std::move(name), true, policy, detail::make_factory<T>(std::forward<Args>(args)...));
  }
  // Adds a leaf child of class `T` (derived from banyan::leaf) called `name`; every incarnation is
  // built from copies of `args` taken now, so a variable passed here keeps the value it has at this
  // call, except an app option's variable (or a struct holding one), which is read when the
  // incarnation is built, after the command line was parsed. Returns the child's spec.
  template <class T, class... Args>
  spec& add_leaf(std::string name, Args&&... args) {
    static_assert(std::is_base_of_v<leaf, T>, "add_leaf<T>: T must derive from banyan::leaf");
    return add(std::move(name), false, {}, detail::make_factory<T>(std::forward<Args>(args)...));
  }

  // Restarts of this component restore its state (component::snapshot/restore). Returns *this.
  spec& keep_state(bool keep = true) {
    keep_state_ = keep;
    return *this;
  }
  bool keeps_state() const { return keep_state_; }
  // Runs this component on a thread of its own (a detached CAF actor) instead of the shared
  // scheduler's: for a component whose handlers block for long, or that binds its thread to a core
  // in on_start (per-core workers). Every hook and handler of every incarnation runs on that thread;
  // a thread per incarnation is the cost. Returns *this.
  spec& own_thread(bool own = true) {
    own_thread_ = own;
    return *this;
  }
  bool owns_thread() const { return own_thread_; }
  // How its supervisor treats its end (component.hpp). Returns *this.
  spec& restart(restart_type type) {
    restart_ = type;
    return *this;
  }
  restart_type restart() const { return restart_; }
  // A dynamic child: part of the tree (so profiles, the partitioner and deployments see it, and it
  // runs on the node the deployment gives it) but not started with its parent. The parent starts
  // it with ctx.start_child(name) and removes it with ctx.stop_child(name); while it runs it is
  // supervised as any child (its restart type, the parent's strategy). Returns *this.
  spec& dynamic(bool on = true) {
    dynamic_ = on;
    return *this;
  }
  bool is_dynamic() const { return dynamic_; }

  const std::string& name() const { return name_; }
  bool is_composite() const { return composite_; }
  const supervision& policy() const { return policy_; }
  const factory& make() const { return make_; }
  const std::deque<spec>& children() const { return children_; }

  spec(std::string name, bool is_composite, supervision policy, factory make)
      : name_(std::move(name)), composite_(is_composite), policy_(policy), make_(std::move(make)) {}

 private:
  spec& add(std::string name, bool is_composite, supervision policy, factory make);

  std::string name_;
  bool composite_;
  supervision policy_;
  factory make_;
  std::deque<spec> children_;  // deque: references to earlier children stay valid
  bool keep_state_ = false;
  bool own_thread_ = false;
  restart_type restart_ = restart_type::permanent;
  bool dynamic_ = false;
};

// How a run routes and what it reports. banyan::run(app, argc, argv) fills this from the command line.
struct run_options {
  routing_mode mode = routing_mode::hier;
  unsigned threads = 0;                      // CAF scheduler threads; 0 = the machine's cores
  std::string profile_path;                  // write the profile JSON here at the end
  bool report = false;                       // print the per-edge traffic table at the end
  std::chrono::milliseconds max_runtime{0};  // 0 = until quit(); else stop after this long (exit 0)
  // Multi-node: run as node `node` of the deployment file `deployment` (docs/formats.md), hosting
  // exactly the components assigned to it. Empty: everything in this process.
  std::string deployment;
  std::string node;
  // Multi-node: this node joins a deployment that is already running (`banyan launch --join`): it
  // waits at start only for the node of the tree's root, not for every node. A node with `join:
  // later` in the deployment joins this way whether or not this is set.
  bool join = false;
  std::chrono::milliseconds heartbeat_timeout{1000};  // a silent peer is stalled after this (docs/runtime.md)
  // A stalled peer still silent this long is given up like a dead one: what it ran is reported lost
  // and fails over (docs/runtime.md, "Failover"). At least heartbeat_timeout.
  std::chrono::milliseconds give_up_after{30000};
  // A node whose peers are not all up this long after its components started ends the run with an
  // error naming the missing ones (exit 2); while it waits, it names them every few seconds.
  std::chrono::milliseconds start_timeout{60000};
  // Multi-node: a publish (or request) whose payload is larger is refused with
  // runtime::errc::payload_too_large, whatever its route, so an app behaves alike on every deployment.
  std::size_t max_payload_bytes = 16 << 20;
  // Multi-node: every state a component keeps (keep_state()) is also made durable in
  // `<state_dir>/<node>`, so a failover restarts a lost component from its last durable state
  // (docs/runtime.md, "Failover"). The same folder for every node (a shared file system). Empty:
  // states stay in memory, and a failed-over component restarts fresh.
  std::string state_dir;
  // Multi-node without CURVE keys, on endpoints other nodes' machines can reach: allowed only when
  // set (`--insecure`). Without keys anyone who reaches an absent node's endpoint can take its place
  // (docs/runtime.md, "Threat model"); by default plain mode is for loopback and ipc endpoints.
  bool insecure = false;
};

struct run_result {
  int exit_code = 0;
  std::string error;  // why the run could not start (exit code 2), e.g. a bad deployment
  profile traffic;    // the run's profile (tree, loads, edge traffic)
};

class app {
 public:
  // An app whose root is a plain composite called `root_name` (its path is `/root_name`).
  explicit app(std::string root_name, supervision root_policy = {});
  // An app whose root is your own composite class `T`, built for every incarnation from copies of
  // `args` (option variables as above): `banyan::app app{"house", {}, std::in_place_type<house>, 3};`.
  template <class T, class... Args>
  app(std::string root_name, supervision root_policy, std::in_place_type_t<T>, Args&&... args)
      : root_(std::move(root_name), true, root_policy, detail::make_factory<T>(std::forward<Args>(args)...)),
        options_(root_.name()) {}

  spec& root() { return root_; }
  const spec& root() const { return root_; }
  // The app's own command-line options (options.hpp); banyan::run adds its own (--mode, --threads,
  // --run-for, ...) and parses argv, so --help shows both.
  banyan::options& options() { return options_; }

 private:
  spec root_;
  banyan::options options_;
};

// Runs the app in this process until a component calls quit(), the root fails, or SIGINT/SIGTERM.
// Returns the exit code: quit()'s code, 1 when supervision gave up at the root, 2 on bad arguments,
// 128+signal on a signal.
int run(app& application, int argc, char** argv);
run_result run(app& application, const run_options& options);

}  // namespace banyan
