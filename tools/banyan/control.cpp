#include "control.hpp"

#include "banyan/partitioner/error.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <glob.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace banyan::cli {

std::string control_socket_path(const std::string& deployment) {
  std::error_code ec;
  auto p = std::filesystem::weakly_canonical(std::filesystem::absolute(deployment), ec);
  const std::string key = ec ? std::filesystem::absolute(deployment).lexically_normal().string() : p.string();
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a: stable across builds and runs, unlike std::hash
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ULL;
  char name[64];
  std::snprintf(name, sizeof name, "/tmp/banyan-%016llx.ctl", static_cast<unsigned long long>(h));
  return name;
}

bool control_socket_listens(const std::string& path) {
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) return false;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  // ZeroMQ's REP accepts and then waits for its handshake; closing at once does it no harm.
  const bool ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

std::string node_controls::add(const std::string& name, const std::filesystem::path& folder) {
  std::string endpoint = "ipc://" + (folder / (name + ".ctl")).string();
  zmq::socket_t s(context_, zmq::socket_type::dealer);
  s.set(zmq::sockopt::linger, 0);
  s.connect(endpoint);
  sockets_.insert_or_assign(name, std::move(s));
  return endpoint;
}

std::uint64_t node_controls::ask(const std::string& name, const std::vector<std::string>& request) {
  const std::uint64_t id = next_id_++;
  auto& s = sockets_.at(name);
  const std::string id_text = std::to_string(id);
  // A node that has not bound yet: ZeroMQ queues the request (a DEALER's connect makes the pipe now).
  s.send(zmq::buffer(id_text), request.empty() ? zmq::send_flags::none : zmq::send_flags::sndmore);
  for (std::size_t i = 0; i < request.size(); ++i)
    s.send(zmq::buffer(request[i]), i + 1 < request.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
  unanswered_.insert(id);
  return id;
}

std::optional<std::vector<std::string>> node_controls::reply(const std::string& name, std::uint64_t id) {
  if (auto kept = early_.find(id); kept != early_.end()) {
    auto frames = std::move(kept->second);
    early_.erase(kept);
    unanswered_.erase(id);
    return frames;
  }
  auto& s = sockets_.at(name);
  while (true) {
    std::vector<std::string> frames;
    zmq::message_t m;
    if (!s.recv(m, zmq::recv_flags::dontwait)) return std::nullopt;
    frames.push_back(m.to_string());
    while (m.more() && s.recv(m)) frames.push_back(m.to_string());
    const std::uint64_t of = std::strtoull(frames.front().c_str(), nullptr, 10);
    frames.erase(frames.begin());
    if (of == id) {
      unanswered_.erase(id);
      return frames;
    }
    // Another request's, asked of the same node and not yet read (several may be on their way):
    // kept for it. A late reply to a request whose asker gave up is dropped.
    if (unanswered_.count(of)) early_.emplace(of, std::move(frames));
  }
}

void node_controls::forget(std::uint64_t id) {
  unanswered_.erase(id);
  early_.erase(id);
}

result<std::string> launch_socket(const std::string& deployment) {
  if (!deployment.empty()) {
    const std::string socket = control_socket_path(deployment);
    if (control_socket_listens(socket)) return socket;
    return error{partitioner::errc::io, "no launch of " + deployment + " is running (control socket " + socket + ")"};
  }
  glob_t g{};
  std::vector<std::string> live;
  if (::glob("/tmp/banyan-*.ctl", 0, nullptr, &g) == 0)
    for (std::size_t i = 0; i < g.gl_pathc; ++i)
      if (control_socket_listens(g.gl_pathv[i])) live.emplace_back(g.gl_pathv[i]);
  globfree(&g);
  if (live.size() == 1) return live.front();
  if (live.empty()) return error{partitioner::errc::io, "no banyan launch is running on this machine"};
  return error{partitioner::errc::io,
               std::to_string(live.size()) + " launches are running on this machine; say which with --from DEPLOYMENT"};
}

}  // namespace banyan::cli
