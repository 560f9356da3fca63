// How the SDK fills runtime::envelope on node links: one table for both ends (node.cpp writes,
// gateway.cpp reads). Private to the SDK.
//
//   kind         sender          scope        topic    extra                                     payload
//   data         publisher path  scope path   topic    {entry vertex, from vertex | "", sequence} message
//   subscribe    subscriber      -            filter   {subscription id}                         -
//   unsubscribe  -               -            -        {subscription id}                         -
//   ready        -               -            -        {}                                        -
//   quit         -               -            -        {exit code, "urgent" | ""}                -
//   request      requester path  -            method   {target path, request id, timeout ms}     request
//   reply        -               -            -        {request id, "" | "timeout" | "failed", error text}  reply
//
// Numbers travel as decimal text in `extra` (a known debt: DESIGN.md wants typed schema fields; it
// needs a wire version bump). A malformed number throws std::invalid_argument / std::out_of_range
// from number_at(); the gateway logs and drops such an envelope.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace banyan::detail {

enum class wire_kind : std::uint16_t {
  data = 1, subscribe = 2, unsubscribe = 3, ready = 4, quit = 5, request = 6, reply = 7
};

inline std::string wire_number(std::uint64_t v) { return std::to_string(v); }
// extra[i] as a number; 0 when absent.
inline std::uint64_t number_at(const std::vector<std::string>& extra, std::size_t i) {
  return i < extra.size() ? std::stoull(extra[i]) : 0ull;
}

}  // namespace banyan::detail
