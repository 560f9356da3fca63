// The runtime's error codes. Errors are `banyan::error` values (banyan/base/error.hpp) whose message
// names the node, peer or option at fault ("node `n0`: cannot bind `tcp://127.0.0.1:99999`").
#pragma once

#include "banyan/base/result.hpp"

namespace banyan::runtime {

enum class errc {
  invalid_argument,  // a bad option, endpoint or key; an unknown peer
  io,                // a socket or file operation failed; a peer is down
  timeout,           // a peer did not come up in time
};

const char* to_string(errc code);

}  // namespace banyan::runtime

BANYAN_ERROR_ENUM(banyan::runtime::errc, "runtime");
