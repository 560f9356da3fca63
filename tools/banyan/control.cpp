#include "control.hpp"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>

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

}  // namespace banyan::cli
