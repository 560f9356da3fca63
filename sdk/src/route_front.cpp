#include "route_front.hpp"

#include "actor_protocol.hpp"

#include <functional>
#include <utility>

namespace banyan::detail {

std::shared_ptr<const route_info> route_front::make(const topic& t, vertex_id publisher, vertex_id scope,
                                                    vertex_id entry, vertex_id from) const {
  auto info = std::make_shared<route_info>();
  // The versions are read first: a change while this route is built makes it stale at once.
  info->routing_version = routing_.version();
  info->directory_version = actors_.version();
  info->locality_version = where_.version();
  info->topic = t.str();
  info->publisher = publisher;
  info->scope = scope;
  info->plan = routing_.plan(publisher, scope, t);
  info->targets.reserve(info->plan->targets().size());
  // A component asleep has no actor to deliver to, also while it wakes (its new actor starts before
  // what was held for it goes to it): its messages go to the gateway's hold (gateway_sleep.cpp).
  for (const auto& target : info->plan->targets())
    info->targets.push_back(where_.asleep(target.component) ? caf::actor{} : actors_.get(target.component));
  if (where_.multi_node()) {
    auto region = plan_region(routing_.tree(), *info->plan, where_.node_of(), routing_.mode(), entry, from);
    info->local = std::move(region.local_targets);
    info->hops = std::move(region.hops);
  } else {
    for (std::uint32_t i = 0; i < info->targets.size(); ++i) info->local.push_back(i);
  }
  return info;
}

std::size_t route_cache::hash::operator()(const key_view& k) const {
  std::size_t h = std::hash<std::string_view>{}(k.topic);
  for (vertex_id v : {k.publisher, k.scope, k.entry, k.from}) h = h * 0x9e3779b97f4a7c15ull + v;
  return h;
}

result<const std::shared_ptr<const route_info>*> route_cache::get(std::string_view topic_text, vertex_id publisher,
                                                                  vertex_id scope, vertex_id entry, vertex_id from) {
  const key_view k{topic_text, publisher, scope, entry, from};
  if (last_ && equal{}(last_->first, k) && front_->current(*last_->second)) return &last_->second;
  auto it = routes_.find(k);
  if (it == routes_.end() || !front_->current(*it->second)) {
    auto t = topic::parse(topic_text);
    if (!t) return t.error();
    auto info = front_->make(*t, publisher, scope, entry, from);
    if (it != routes_.end()) retire(std::exchange(it->second, std::move(info)));
    else it = routes_.emplace(key{std::string(topic_text), publisher, scope, entry, from}, std::move(info)).first;
  }
  last_ = &*it;
  return &it->second;
}

void route_cache::clear() {
  for (auto& [key, info] : routes_) retire(std::move(info));
  routes_.clear();
  last_ = nullptr;
}

// Behind every delivery that used it (one sender's messages to one actor arrive in order): the
// last target to handle its `unroute` frees it; a target that is gone drops it with its mailbox.
void route_cache::retire(std::shared_ptr<const route_info> info) const {
  if (!by_reference_) return;
  for (auto i : info->local)
    if (info->targets[i]) caf::anon_send(info->targets[i], unroute_atom::value, info);
}

}  // namespace banyan::detail
