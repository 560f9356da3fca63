// Shared pieces of the fault suite (tests/faults/): node processes (fault_node, exec'd, so a test
// may start them at any time), a loopback TCP proxy that can blackhole or cut connections, and
// waits on a process's output with a deadline. Everything is loopback-only and bounded.
#pragma once

#include "../runtime/helpers.hpp"

#include "banyan/base/process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

namespace banyan::runtime::test {

// A fault_node process; its stdout is captured (stderr, the transport's log, is merged into it).
struct node_process {
  process proc;
  static node_process start(const std::vector<std::string>& args) {
    std::vector<std::string> argv{FAULT_NODE};
    argv.insert(argv.end(), args.begin(), args.end());
    auto p = process::spawn(argv, {.out = output_mode::capture, .err = output_mode::merge});
    if (!p) throw std::runtime_error(p.error().what());
    return {std::move(*p)};
  }
  // Reads output until it contains `text` (true) or `limit` passes (false).
  bool wait_for(const std::string& text, std::chrono::milliseconds limit = 20s) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (proc.output().find(text) == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      if (left.count() <= 0 || (proc.closed() && proc.status())) return proc.output().find(text) != std::string::npos;
      proc.read(left);
    }
    return true;
  }
  // The exit code, or -1 when it did not exit within `limit` (or died of a signal).
  int wait_exit(std::chrono::milliseconds limit = 60s) {
    auto st = proc.wait(limit);
    if (!st) return -1;
    return st->signal ? -1 : st->code;
  }
  const std::string& output() const { return proc.output(); }
};

// A loopback TCP proxy in front of one tcp:// endpoint. blackhole() makes every connection open now
// swallow what it carries (both ways) without closing; later connections are forwarded again.
// cut() closes every open connection at once (data in flight is lost).
class tcp_proxy {
 public:
  explicit tcp_proxy(const std::string& target) {
    const auto colon = target.rfind(':');
    target_port_ = static_cast<std::uint16_t>(std::stoi(target.substr(colon + 1)));
    listen_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listen_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(listen_, 64);
    socklen_t len = sizeof a;
    ::getsockname(listen_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error("pipe");
    thread_ = std::thread([this] { run(); });
  }
  ~tcp_proxy() {
    stop_ = true;
    poke();
    thread_.join();
    for (auto& c : conns_) close_pair(c);
    ::close(listen_);
    ::close(wake_[0]);
    ::close(wake_[1]);
  }
  std::string endpoint() const { return "tcp://127.0.0.1:" + std::to_string(port_); }
  void blackhole() {
    blackhole_ = true;
    poke();
    wait_applied();
  }
  void cut() {
    cut_ = true;
    poke();
    wait_applied();
  }
  int accepted() const { return accepted_.load(); }
  // Bytes swallowed by blackholed connections so far.
  std::uint64_t swallowed() const { return swallowed_.load(); }

 private:
  struct pair {
    int client = -1, server = -1;
    bool dark = false;
  };
  void poke() {
    char c = 1;
    [[maybe_unused]] auto n = ::write(wake_[1], &c, 1);
  }
  void wait_applied() {
    while (blackhole_ || cut_) std::this_thread::yield();  // the proxy thread applies it within one poll
  }
  static void close_pair(pair& c) {
    if (c.client >= 0) ::close(c.client);
    if (c.server >= 0) ::close(c.server);
    c.client = c.server = -1;
  }
  void run() {
    std::vector<pollfd> fds;
    char buf[65536];
    while (!stop_) {
      if (blackhole_) {
        for (auto& c : conns_) c.dark = true;
        blackhole_ = false;
      }
      if (cut_) {
        for (auto& c : conns_) close_pair(c);
        conns_.clear();
        cut_ = false;
      }
      fds.clear();
      fds.push_back({listen_, POLLIN, 0});
      fds.push_back({wake_[0], POLLIN, 0});
      for (auto& c : conns_) {
        fds.push_back({c.client, POLLIN, 0});
        fds.push_back({c.server, POLLIN, 0});
      }
      ::poll(fds.data(), fds.size(), 100);
      if (fds[1].revents & POLLIN) {
        while (::read(wake_[0], buf, sizeof buf) > 0) {
        }
      }
      if (fds[0].revents & POLLIN) {
        int client = ::accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
        if (client >= 0) {
          int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
          sockaddr_in a{};
          a.sin_family = AF_INET;
          a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
          a.sin_port = htons(target_port_);
          if (::connect(server, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
            conns_.push_back({client, server, false});
            ++accepted_;
          } else {
            ::close(client);
            ::close(server);
          }
        }
      }
      std::vector<pair> keep;
      for (std::size_t i = 0; i < conns_.size(); ++i) {
        auto& c = conns_[i];
        bool open = true;
        for (int side = 0; side < 2 && open; ++side) {
          const auto& f = fds[2 + 2 * i + side];
          if (!(f.revents & (POLLIN | POLLHUP | POLLERR))) continue;
          const int from = side == 0 ? c.client : c.server, to = side == 0 ? c.server : c.client;
          const auto n = ::read(from, buf, sizeof buf);
          if (n <= 0) {
            open = false;
            break;
          }
          if (c.dark) {
            swallowed_ += static_cast<std::uint64_t>(n);
            continue;
          }
          for (ssize_t off = 0; off < n;) {
            const auto w = ::send(to, buf + off, static_cast<std::size_t>(n - off), MSG_NOSIGNAL);
            if (w <= 0) {
              open = false;
              break;
            }
            off += w;
          }
        }
        if (open) {
          keep.push_back(c);
        } else {
          close_pair(c);
        }
      }
      conns_.swap(keep);
    }
  }

  int listen_ = -1, wake_[2] = {-1, -1};
  std::uint16_t port_ = 0, target_port_ = 0;
  std::vector<pair> conns_;  // the proxy thread's
  std::atomic<bool> stop_{false}, blackhole_{false}, cut_{false};
  std::atomic<int> accepted_{0};
  std::atomic<std::uint64_t> swallowed_{0};
  std::thread thread_;
};

// Polls `pred` (every millisecond) until it holds or `limit` passes; for conditions nothing
// signals (a counter inside a transport).
template <class Pred>
bool poll_until(Pred pred, std::chrono::milliseconds limit = 20s) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

inline transport_options node_options(const std::string& self, const std::string& bind, std::vector<peer_config> peers,
                                      std::chrono::milliseconds heartbeat = 300ms) {
  transport_options o;
  o.self = self;
  o.bind_endpoint = bind;
  o.peers = std::move(peers);
  o.heartbeat_timeout = heartbeat;
  return o;
}

}  // namespace banyan::runtime::test
