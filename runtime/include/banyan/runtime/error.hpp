// The runtime's error codes. Errors are `banyan::error` values (banyan/base/error.hpp) whose message
// names the node, peer or option at fault ("node `n0`: cannot bind `tcp://127.0.0.1:99999`").
#pragma once

#include "banyan/base/result.hpp"

namespace banyan::runtime {

enum class errc {
  invalid_argument,   // a bad option, endpoint or key; an unknown peer
  io,                 // a socket or file operation failed; a peer is down
  timeout,            // a peer did not come up in time
  payload_too_large,  // an envelope above max_payload_bytes (refused by send, never dropped)
  peer_lost,          // the peer is gone (or was never up): what was sent to it is not delivered
  incompatible_peer,  // a peer runs another deployment (digest) or wire version
};

const char* to_string(errc code);

}  // namespace banyan::runtime

BANYAN_ERROR_ENUM(banyan::runtime::errc, "runtime");
