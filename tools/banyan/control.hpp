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
#pragma once

#include <string>

namespace banyan::cli {

// The socket file of the launch of `deployment`: /tmp/banyan-<hash of its absolute, normalized path>.ctl,
// so every spelling of the same file finds the same launch.
std::string control_socket_path(const std::string& deployment);
inline std::string control_endpoint(const std::string& deployment) { return "ipc://" + control_socket_path(deployment); }
// True when something listens on that socket file. False for a missing file, and for one a launch
// killed with SIGKILL left behind (ZeroMQ would wait on it for ever).
bool control_socket_listens(const std::string& path);

}  // namespace banyan::cli
