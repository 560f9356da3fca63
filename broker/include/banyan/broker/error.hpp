// The broker's error codes. Errors are `banyan::error` values (banyan/base/error.hpp); every message
// names the input and says where it is wrong ("topic `a/#/b`: `#` must be the last level").
#pragma once

#include "banyan/base/result.hpp"

namespace banyan::broker {

enum class errc {
  invalid_topic,      // a topic or topic filter that does not parse
  invalid_scope,      // a scope that is not an ancestor of the publisher
  no_such_component,  // a path or vertex that names no component
  invalid_argument,   // any other malformed input (a component name, a routing mode)
  io,                 // a file that cannot be read or written
  invalid_profile,    // a profile that does not parse, is not a profile, or does not merge
};

const char* to_string(errc code);

}  // namespace banyan::broker

BANYAN_ERROR_ENUM(banyan::broker::errc, "broker");
