// The routing front: what one message means for this process — which local actors get it and which
// copies go to other nodes. The one place a route_info is built, for a local publish and for a
// message that arrives from another node alike. Private to the SDK.
//
// A route_info is immutable once built and shared by every delivery of the messages that use it.
// It snapshots the routing table's plan and the directory's actors, and records both versions:
// a route is current while none of them (nor the locality: a live move) moved (route_front::current), so a subscribe,
// an unsubscribe or a component (re)start applies to every message routed after it returns.
//
// Where a message enters this process: a local publish enters at its publisher; a message from
// another node at the `entry` vertex of its hop, over the tree edge from `from` (broker/placement.hpp).
// In a single process every target is local and there are no hops.
//
// Thread-safety: route_front only reads thread-safe parts and may be used from any thread; a
// route_cache belongs to one actor (a component actor caches its own publishes, the gateway what
// arrives from other nodes). Cost of a cache hit: a compare with the previous route (else one hash
// lookup), two atomic loads; of a miss:
// topic parsing, routing_table::plan, one directory lookup per target and (multi-node) plan_region.
#pragma once

#include "directory.hpp"
#include "locality.hpp"

#include "banyan/broker/placement.hpp"
#include "banyan/broker/routing.hpp"
#include "banyan/sdk/payload.hpp"

#include <caf/all.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace banyan::detail {

struct route_info {
  std::string topic;
  vertex_id publisher;
  vertex_id scope;
  std::shared_ptr<const route> plan;
  std::vector<caf::actor> targets;   // parallel to plan->targets(); invalid where not running here
  std::vector<std::uint32_t> local;  // indices of the targets this process delivers to
  std::vector<hop> hops;             // copies for other nodes (multi-node runs only)
  std::uint64_t routing_version;
  std::uint64_t directory_version;
  std::uint64_t locality_version;  // a live move changes where components run (locality.hpp)
};

// One delivery of a local publish, besides its payload. The route is held by address, without a
// reference count (whose atomic updates, by the publisher and by each target, cost more than the
// rest of a delivery's bookkeeping): the publisher's route_cache owns it, and when it drops it
// (stale, or the publisher ends) it sends the route to each local target after the deliveries that
// use it (`unroute`), so the last target to handle that message frees it.
struct local_delivery {
  const route_info* info;
  std::uint64_t sequence;  // per publisher, from 1
  std::uint32_t index;     // the target's, in info->plan->targets()
};

// A message from another node on its way to its local targets, shared by all of them (the
// payload is not copied).
struct routed_message {
  std::shared_ptr<const route_info> info;
  payload data;
  std::uint64_t sequence;  // per publisher, from 1
  // Set for a message from another node: its link's delivery receipt, released (credit to the
  // sending node) when every local target has handled the message and every forward was delivered.
  std::shared_ptr<const void> receipt;
};

class route_front {
 public:
  route_front(routing_table& routing, const directory& actors, const locality& where)
      : routing_(routing), actors_(actors), where_(where) {}

  // The route of `t` published by `publisher` into `scope`, entering this process at `entry` from
  // `from` (a local publish: entry = publisher, from = no_vertex).
  std::shared_ptr<const route_info> make(const topic& t, vertex_id publisher, vertex_id scope, vertex_id entry,
                                         vertex_id from) const;
  bool current(const route_info& r) const {
    return r.routing_version == routing_.version() && r.directory_version == actors_.version() &&
           r.locality_version == where_.version();
  }

 private:
  routing_table& routing_;
  const directory& actors_;
  const locality& where_;
};

// Routes kept by one actor, by (topic text, publisher, scope, entry, from); a stale route is rebuilt.
// `by_reference`: deliveries carry its routes by address (local_delivery), so a route it drops (stale, clear(),
// destruction) goes to its local targets behind them (unroute) instead of being freed here.
class route_cache {
 public:
  explicit route_cache(const route_front& front, bool by_reference = false)
      : front_(&front), by_reference_(by_reference) {}
  ~route_cache() { clear(); }
  route_cache(const route_cache&) = delete;
  route_cache& operator=(const route_cache&) = delete;

  // The current route, valid until the next get() or clear(); an invalid topic is an error
  // (errc::invalid_topic, naming the topic). The route of the previous call is checked first (a
  // publisher mostly publishes one topic after the other): no hashing then.
  result<const std::shared_ptr<const route_info>*> get(std::string_view topic, vertex_id publisher, vertex_id scope,
                                                       vertex_id entry, vertex_id from);
  void clear();

 private:
  struct key_view {
    std::string_view topic;
    vertex_id publisher, scope, entry, from;
  };
  struct key {
    std::string topic;
    vertex_id publisher, scope, entry, from;
    operator key_view() const { return {topic, publisher, scope, entry, from}; }
  };
  struct hash {
    using is_transparent = void;
    std::size_t operator()(const key_view& k) const;
    std::size_t operator()(const key& k) const { return (*this)(key_view(k)); }
  };
  struct equal {
    using is_transparent = void;
    bool operator()(const key_view& a, const key_view& b) const {
      return a.publisher == b.publisher && a.scope == b.scope && a.entry == b.entry && a.from == b.from &&
             a.topic == b.topic;
    }
  };

  void retire(std::shared_ptr<const route_info> info) const;

  using map = std::unordered_map<key, std::shared_ptr<const route_info>, hash, equal>;
  const route_front* front_;
  bool by_reference_;
  map routes_;
  map::value_type* last_ = nullptr;  // the previous call's entry (elements do not move in the map)
};

}  // namespace banyan::detail

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<const banyan::detail::routed_message>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<const banyan::detail::route_info>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(banyan::detail::local_delivery)
