#include "options.hpp"

#include "banyan/base/log.hpp"
#include "banyan/runtime/curve.hpp"

#include <zmq.h>

#include <charconv>
#include <set>

namespace banyan::runtime::detail {
namespace {

result<void> invalid(const std::string& what) { return error{errc::invalid_argument, what}; }

// Empty when `e` is a usable endpoint, else why not.
std::string endpoint_fault(const std::string& e, bool bind) {
  if (e.rfind("inproc://", 0) == 0) {
    return "inproc:// reaches only sockets of the same ZeroMQ context, never another node; use tcp:// or ipc://";
  }
  if (e.rfind("ipc://", 0) == 0) return e.size() > 6 ? "" : "ipc:// needs a path";
  if (e.rfind("tcp://", 0) != 0) return "not tcp://host:port or ipc://path";
  const std::string rest = e.substr(6);
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0) return "tcp:// needs host:port";
  const std::string port = rest.substr(colon + 1);
  if (port == "*") return bind ? "" : "a peer's port must be a number, not `*`";
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc{} || end != port.data() + port.size() || value < 1 || value > 65535) {
    return "port `" + banyan::log::escape(port) + "` is not 1..65535";
  }
  return "";
}

}  // namespace

result<void> validate(const transport_options& o) {
  if (o.self.empty()) return invalid("transport options: `self` (this node's name) is empty");
  const std::string node = "node `" + banyan::log::escape(o.self) + "`: ";
  if (o.self.size() > 255) return invalid(node + "name longer than 255 bytes");
  if (auto why = endpoint_fault(o.bind_endpoint, true); !why.empty()) {
    return invalid(node + "bind endpoint `" + banyan::log::escape(o.bind_endpoint) + "`: " + why);
  }
  if (o.credit_window == 0) return invalid(node + "credit_window must be at least 1");
  if (o.credit_window_bytes == 0) return invalid(node + "credit_window_bytes must be at least 1");
  if (o.max_batch == 0) return invalid(node + "max_batch must be at least 1");
  if (o.max_batch_bytes == 0) return invalid(node + "max_batch_bytes must be at least 1");
  if (o.max_payload_bytes == 0) return invalid(node + "max_payload_bytes must be at least 1");
  if (o.chunk_bytes == 0) return invalid(node + "chunk_bytes must be at least 1");
  if (o.max_batch_bytes > o.max_frame_bytes) {
    return invalid(node + "max_batch_bytes (" + std::to_string(o.max_batch_bytes) +
                   ") must be at most max_frame_bytes (" + std::to_string(o.max_frame_bytes) + ")");
  }
  if (o.heartbeat_timeout < std::chrono::milliseconds(10))
    return invalid(node + "heartbeat_timeout must be at least 10 ms");
  if (o.give_up_after < o.heartbeat_timeout) return invalid(node + "give_up_after must be at least heartbeat_timeout");
  if (o.missing_peer_log_every <= std::chrono::milliseconds(0))
    return invalid(node + "missing_peer_log_every must be positive");
  const bool curve = !o.curve_secret_key.empty() || !o.curve_public_key.empty();
  if (curve) {
    if (!is_z85_key(o.curve_secret_key) || !is_z85_key(o.curve_public_key)) {
      return invalid(node + "CURVE keys must both be 40 Z85 characters (secret " +
                     std::to_string(o.curve_secret_key.size()) + ", public " +
                     std::to_string(o.curve_public_key.size()) + " characters)");
    }
    char derived[41] = {};
    if (zmq_curve_public(derived, o.curve_secret_key.c_str()) != 0) {
      return invalid(node + "cannot derive the public key from the CURVE secret key (ZeroMQ without CURVE?)");
    }
    if (o.curve_public_key != derived) {
      return invalid(
          node + "the CURVE public key is not the one of its secret key (the key files are of two different pairs)");
    }
  }
  std::set<std::string> names{o.self}, endpoints{o.bind_endpoint};
  for (std::size_t i = 0; i < o.peers.size(); ++i) {
    const auto& p = o.peers[i];
    const std::string where = "peer " + std::to_string(i) + " (`" + banyan::log::escape(p.name) + "`)";
    if (p.name.empty()) return invalid("peer " + std::to_string(i) + ": empty name");
    if (p.name.size() > 255) return invalid(where + ": name longer than 255 bytes");
    if (!names.insert(p.name).second) return invalid(where + ": duplicate node name");
    if (p.endpoint.empty()) return invalid(where + ": no endpoint");
    if (auto why = endpoint_fault(p.endpoint, false); !why.empty()) {
      return invalid(where + ": endpoint `" + banyan::log::escape(p.endpoint) + "`: " + why);
    }
    if (!endpoints.insert(p.endpoint).second) return invalid(where + ": duplicate endpoint `" + p.endpoint + "`");
    if (curve && !is_z85_key(p.curve_public_key)) {
      return invalid(where + ": CURVE is on but its public key is missing or not 40 Z85 characters");
    }
  }
  for (std::size_t i = 0; i < o.authorized_keys.size(); ++i) {
    if (!is_z85_key(o.authorized_keys[i]))
      return invalid("authorized key " + std::to_string(i) + ": not 40 Z85 characters");
  }
  return {};
}

}  // namespace banyan::runtime::detail
