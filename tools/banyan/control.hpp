// The control socket of a running `banyan launch`: where `banyan profile --from DEPLOYMENT` finds the
// launch of that deployment on this machine, and what they say to each other (docs/runtime.md,
// "Live profile").
//
// Protocol (ZeroMQ REQ/REP, one request at a time): the request is one frame, `profile`. The reply
// is three frames: a JSON status ({"error": TEXT} on failure, else {"nodes": [...], "total_s": S,
// "window_s": S}), then the merged profile since the run started and the merged profile of the
// window since the previous request to this launch (since the start for the first), both as JSON
// profile text (docs/formats.md); on failure the two profile frames are empty.
// `reconfigure` (`banyan reconfigure`) is two frames, `reconfigure` and the new deployment's
// absolute path; the reply is one JSON frame: {"moves": [each move's figures], "deployment": PATH}
// plus "error" (and "refused": true when nothing was tried) on failure.
// `status` (`banyan status`) is one frame, or two with a wait in milliseconds: the reply, once every
// node's cluster start is over or the wait has passed, is one JSON frame: {"started": BOOL, "nodes":
// [{"name": NODE, "state": "started"|"starting"|"ended"}...]}.
//
// The launch in turn reaches each of its nodes through the node's control channel (the SDK's
// sdk/src/cluster/control_channel.hpp): node_controls below, one DEALER per node on the endpoint the node
// was given in BANYAN_CONTROL.
#pragma once

#include "banyan/base/result.hpp"

#include <zmq.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace banyan::cli {

// The launch's side of its nodes' control channels. Requests are `KIND ARGS...` (`profile`, `move
// PATH NODE`); each gets an id, and a reply is matched to its request by it, so a reply that comes
// after its requester gave up is dropped rather than taken for the next one's.
// Thread-safety: one thread (the launch's loop). Never blocks: reply() looks, it does not wait.
class node_controls {
 public:
  // The endpoint node `name` is to bind (an ipc:// socket in `folder`), connected to at once: what
  // is asked before the node binds it waits in ZeroMQ's queue.
  std::string add(const std::string& name, const std::filesystem::path& folder);
  // Sends one request to node `name`; returns its id.
  std::uint64_t ask(const std::string& name, const std::vector<std::string>& request);
  // The reply to request `id` of node `name` (the frames after the id) if it has come. Replies to
  // other requests found on the way are kept for them while they are unanswered (several requests
  // may be on their way to one node), and dropped for those their askers gave up (forget).
  std::optional<std::vector<std::string>> reply(const std::string& name, std::uint64_t id);
  // The asker of `id` gave up on it: a reply that comes later is dropped.
  void forget(std::uint64_t id);

 private:
  std::set<std::uint64_t> unanswered_;
  std::map<std::uint64_t, std::vector<std::string>> early_;  // replies read before their asker asked
  zmq::context_t context_;
  std::map<std::string, zmq::socket_t> sockets_;
  std::uint64_t next_id_ = 1;
};

// The socket file of the launch of `deployment`: /tmp/banyan-<hash of its absolute, normalized path>.ctl,
// so every spelling of the same file finds the same launch.
std::string control_socket_path(const std::string& deployment);
inline std::string control_endpoint(const std::string& deployment) {
  return "ipc://" + control_socket_path(deployment);
}
// True when something listens on that socket file. False for a missing file, and for one a launch
// killed with SIGKILL left behind (ZeroMQ would wait on it for ever).
bool control_socket_listens(const std::string& path);
// The control socket of the launch of `deployment`, or of the only launch running on this machine
// when `deployment` is empty; an error says why there is none (or which to choose).
result<std::string> launch_socket(const std::string& deployment);

}  // namespace banyan::cli
