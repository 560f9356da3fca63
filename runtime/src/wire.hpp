// Encoding and checking of link frames (schema/envelope.capnp). Private to the transport.
#pragma once

#include "banyan/runtime/transport.hpp"

#include <zmq.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace banyan::runtime::detail {

struct frame_header {
  std::uint64_t incarnation = 0, target = 0, delivered = 0;
  std::uint32_t window = 0, session = 0, ack_session = 0;
};

// Builds the two ZeroMQ frames of one message: the Cap'n Proto header and the payload bytes of
// every envelope back to back. `header` and `blob` must be uninitialised zmq_msg_t.
void encode(const frame_header& h, std::span<const envelope> batch, zmq_msg_t* header, zmq_msg_t* blob);

enum class verdict { ok, garbage, truncated, oversized, version };
const char* to_string(verdict v);

struct decoded {
  verdict v = verdict::ok;
  std::string detail;  // why, for the log line
  frame_header h;
  std::vector<envelope> envelopes;  // payloads point into `blob`, which the decoder takes over
};

// Checks and decodes one received message (frames after the ROUTER's identity frame). On success
// the payload frame is moved into a shared owner that every envelope's payload refers to.
decoded decode(std::span<zmq_msg_t> frames, std::size_t max_frame_bytes);

}  // namespace banyan::runtime::detail
