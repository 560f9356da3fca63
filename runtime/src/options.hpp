// Validation of transport_options: every error names the option or peer at fault. Private.
#pragma once

#include "banyan/runtime/transport.hpp"

namespace banyan::runtime::detail {

// errc::invalid_argument naming the fault: names (1..255 bytes, unique), endpoints (tcp://host:port
// with a port of 1..65535, or `*` to bind; ipc://path; inproc:// is refused, it cannot reach another
// node), windows and sizes (max_payload_bytes + 64 <= max_frame_bytes, max_batch_bytes <=
// max_frame_bytes), timeouts, CURVE keys (40 Z85 characters; the public key must be the secret
// key's), authorised keys.
result<void> validate(const transport_options& o);

}  // namespace banyan::runtime::detail
