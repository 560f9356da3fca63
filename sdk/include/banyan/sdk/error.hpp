// The SDK's error codes. Errors are `banyan::error` values (banyan/base/error.hpp); errors of the
// modules below (broker, runtime, partitioner) reach the app with their own codes unchanged.
//
// An app may register codes of its own with BANYAN_ERROR_ENUM and return them from a service handler:
// in one process the requester sees them as they are; across nodes a handler error arrives as
// request_failed with the handler's message.
#pragma once

#include "banyan/base/result.hpp"

namespace banyan::sdk {

enum class errc {
  no_such_component,  // a request to a path that names no component, or one that is not running
  invalid_payload,    // a payload that fails Cap'n Proto validation
  timeout,            // a request that got no reply in time
  request_failed,     // the callee failed or refused the request (unknown method, handler error)
  invalid_argument,   // a malformed command line, deployment or option
  io,                 // a file (key, deployment) that cannot be read
};

const char* to_string(errc code);

}  // namespace banyan::sdk

BANYAN_ERROR_ENUM(banyan::sdk::errc, "sdk");
