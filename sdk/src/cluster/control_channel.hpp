// A node's control channel under `banyan launch` (docs/runtime.md, "Live profile"): the launch names
// an endpoint in BANYAN_CONTROL (`ipc://...`, one per node); the node binds a ZeroMQ ROUTER there
// and serves, on a thread of its own, each request as it comes. A request is a DEALER message
// `ID KIND ARGS...`; its reply starts with the same ID, so a requester that gave up on one can tell
// a late reply from the next:
//
//   profile             -> ID, the profile so far (JSON text, docs/formats.md), the node's link
//                          health (JSON: per link its state and counters; `{}` in one process)
//   started             -> ID, {"started":true} once every node of the deployment has been ready
//                          (the cluster start is over; at once in one process)
//   move PATH NODE      -> ID, the move's outcome (one JSON object) once the move is over; other
//                          requests are served meanwhile
//   where               -> ID, {"assignments": {path: node}}: where every component runs now as this
//                          node knows it (after live moves and failovers; the root's node decides
//                          failovers, so its answer is the deployment's)
//   anything else       -> ID, {"error": "..."}
//
// The launch writes nothing to the node's disk and the node reads no file: requests cannot be lost
// to a race with a rename, and the node waits on the socket instead of polling a folder.
//
// Thread-safety: open() and the destructor on banyan::run's thread. `profile` is called on the
// channel's thread and must be safe there (traffic_so_far and the node's counters are). A move's
// answer may come on any thread, also after the channel is gone (it is then dropped).
#pragma once

#include "banyan/base/result.hpp"

#include <functional>
#include <memory>
#include <string>
#include <utility>

namespace banyan::detail {

class node_runtime;

class control_channel {
 public:
  // The profile so far and the link health, both as JSON text.
  using profile_fn = std::function<std::pair<std::string, std::string>()>;
  // Binds `endpoint` and starts serving; `node` (null in one process) takes the move requests.
  // Errors name the endpoint.
  static result<std::unique_ptr<control_channel>> open(const std::string& endpoint, profile_fn profile,
                                                       node_runtime* node);
  ~control_channel();
  control_channel(const control_channel&) = delete;
  control_channel& operator=(const control_channel&) = delete;

  struct impl;

 private:
  explicit control_channel(std::unique_ptr<impl> i);
  std::unique_ptr<impl> impl_;
};

// The endpoint `banyan launch` gave this process (BANYAN_CONTROL), or empty.
std::string control_endpoint_from_environment();

}  // namespace banyan::detail
