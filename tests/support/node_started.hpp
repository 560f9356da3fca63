// Whether a node's cluster start is over, asked over its control channel (the SDK's
// sdk/src/cluster/control_channel.hpp, `ID started`) instead of read from its log: tests that start
// nodes by hand give each one a BANYAN_CONTROL endpoint and ask it.
#pragma once

#include <zmq.h>

#include <chrono>
#include <string>
#include <vector>

namespace banyan::test {

// The control endpoint of node `name` in `folder` (an ipc:// socket file there).
inline std::string control_endpoint(const std::string& folder, const std::string& name) {
  return "ipc://" + folder + "/" + name + ".ctl";
}

// Asks the node at `endpoint` one control request (`kind`, e.g. `started` or `profile`) and returns
// the frames of its reply after the ID; empty when it has not answered within `limit`.
inline std::vector<std::string> control_request(const std::string& endpoint, const std::string& kind,
                                                std::chrono::milliseconds limit) {
  void* context = zmq_ctx_new();
  void* dealer = zmq_socket(context, ZMQ_DEALER);
  const int zero = 0;
  zmq_setsockopt(dealer, ZMQ_LINGER, &zero, sizeof zero);
  // Connecting before the node has bound is fine: ZeroMQ sends the request once it has.
  bool answered = zmq_connect(dealer, endpoint.c_str()) == 0 && zmq_send(dealer, "1", 1, ZMQ_SNDMORE) == 1 &&
                  zmq_send(dealer, kind.data(), kind.size(), 0) == static_cast<int>(kind.size());
  if (answered) {
    zmq_pollitem_t item{dealer, 0, ZMQ_POLLIN, 0};
    answered = zmq_poll(&item, 1, static_cast<long>(limit.count())) == 1;
  }
  std::vector<std::string> frames;
  while (answered) {  // ID, then the reply's frames
    zmq_msg_t frame;
    zmq_msg_init(&frame);
    if (zmq_msg_recv(&frame, dealer, 0) < 0) break;
    frames.emplace_back(static_cast<const char*>(zmq_msg_data(&frame)), zmq_msg_size(&frame));
    const bool more = zmq_msg_more(&frame);
    zmq_msg_close(&frame);
    if (!more) break;
  }
  zmq_close(dealer);
  zmq_ctx_term(context);
  if (!frames.empty()) frames.erase(frames.begin());  // the ID
  return frames;
}

// True once the node at `endpoint` answers `started` (every node of its deployment has been ready),
// false when it has not within `limit`. What the node prints meanwhile stays in its pipe (a start
// prints a few lines); the caller reads it afterwards.
inline bool node_started(const std::string& endpoint, std::chrono::milliseconds limit) {
  const auto reply = control_request(endpoint, "started", limit);
  return !reply.empty() && reply.back().find("\"started\":true") != std::string::npos;
}

}  // namespace banyan::test
