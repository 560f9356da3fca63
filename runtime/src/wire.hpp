// Encoding and checking of link frames (schema/envelope.capnp). Private to the transport.
#pragma once

#include "banyan/runtime/transport.hpp"

#include <zmq.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace banyan::runtime::detail {

// Every field of a Frame but its envelopes (schema/envelope.capnp says what each means).
struct frame_header {
  std::uint64_t incarnation = 0, target = 0, delivered = 0;
  std::uint32_t window = 0, session = 0, ack_session = 0;
  std::string sender;
  std::uint64_t received = 0, sent = 0, resend_from = 0;
  bool suspect = false, control = false;
  std::uint64_t window_bytes = 0, max_frame = 0, digest = 0, max_payload = 0;
};

// Builds the two ZeroMQ frames of one message: the Cap'n Proto header and the payload bytes of
// every envelope back to back. `header` and `blob` must be uninitialised zmq_msg_t.
void encode(const frame_header& h, std::span<const envelope* const> batch, zmq_msg_t* header, zmq_msg_t* blob);

enum class verdict { ok, garbage, truncated, oversized, version };
const char* to_string(verdict v);

struct decoded {
  verdict v = verdict::ok;
  std::string detail;  // why, for the log line
  frame_header h;
  std::vector<envelope> envelopes;  // payloads point into `blob`, which the decoder takes over
};

// Checks and decodes one received message (frames after the ROUTER's identity frame). On success
// the payload frame is moved into a shared owner that every envelope's payload refers to. Checked
// here: the frame count, sizes against `max_frame_bytes`, the segment table, the version, that the
// payload sizes add up to the payload frame exactly, a sender name of 1..255 bytes, and that a
// control frame carries no envelopes and a data frame's envelopes have consecutive sequences.
decoded decode(std::span<zmq_msg_t> frames, std::size_t max_frame_bytes);

}  // namespace banyan::runtime::detail
