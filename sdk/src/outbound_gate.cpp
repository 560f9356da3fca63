#include "outbound_gate.hpp"

#include "component_actor.hpp"

#include "banyan/base/log.hpp"

namespace banyan::detail {

result<void> local_gate::publish(std::string_view topic, vertex_id scope, const payload& data) {
  return self_.route(topic, scope, data);
}

void local_gate::request(vertex_id target, std::string method, const payload& data, std::chrono::milliseconds timeout,
                         context::reply_handler on_reply) {
  self_.request_here(target, std::move(method), data, timeout, std::move(on_reply));
}

void local_gate::monitor(vertex_id watched, std::uint64_t id) {
  self_.state().watching().add(watched, self_.address(), id);
}

std::uint64_t local_gate::start_child(vertex_id child) {
  // Every component of a single-process run is local: its supervisor spawns it.
  log::error(self_.state().tree().path(child), "asked to start on another node, in a run without one");
  return 0;
}

}  // namespace banyan::detail
