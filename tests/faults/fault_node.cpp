// fault_node: one transport node in its own process, for the fault suite (tests/faults/). It sends
// --count envelopes to --send-to (if any), receives from every peer, and exits once it has sent
// everything, had it all delivered and received --expect envelopes in order:
//   0  done; prints `DONE sent S received R`
//   1  a received envelope out of order or twice (prints `ORDER ...`)
//   2  bad arguments
//   3  --deadline passed first (prints `TIMEOUT ...`)
//   4  the transport did not start (prints the error)
//   5  a send failed (prints `SEND ...`): with --allow-send-failures it goes on instead
// It prints `UP <peer>`, `STALLED <peer>`, `RESUMED <peer>`, `DOWN <peer>` as they happen, so a test
// can wait for them on its output. --hold-us makes it a slow receiver (each receipt is kept that
// long by a releasing thread).
#include "banyan/runtime/transport.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace rt = banyan::runtime;
using namespace std::chrono_literals;

namespace {

struct args {
  rt::transport_options o;
  std::string send_to;
  std::uint64_t count = 0, expect = 0, payload = 8;
  std::uint64_t hold_us = 0;
  std::uint64_t deadline_s = 60;
  bool allow_send_failures = false;
};

bool parse(int argc, char** argv, args& a) {
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--allow-send-failures") {
      a.allow_send_failures = true;
      continue;
    }
    if (i + 1 >= argc) return false;
    const std::string v = argv[++i];
    if (k == "--self") a.o.self = v;
    else if (k == "--bind") a.o.bind_endpoint = v;
    else if (k == "--peer") {  // name=endpoint
      const auto eq = v.find('=');
      if (eq == std::string::npos) return false;
      a.o.peers.push_back({v.substr(0, eq), v.substr(eq + 1), ""});
    } else if (k == "--send-to") a.send_to = v;
    else if (k == "--count") a.count = std::stoull(v);
    else if (k == "--expect") a.expect = std::stoull(v);
    else if (k == "--payload") a.payload = std::stoull(v);
    else if (k == "--hold-us") a.hold_us = std::stoull(v);
    else if (k == "--deadline-s") a.deadline_s = std::stoull(v);
    else if (k == "--heartbeat-ms") a.o.heartbeat_timeout = std::chrono::milliseconds(std::stoll(v));
    else if (k == "--give-up-ms") a.o.give_up_after = std::chrono::milliseconds(std::stoll(v));
    else if (k == "--window") a.o.credit_window = std::stoull(v);
    else return false;
  }
  return !a.o.self.empty() && !a.o.bind_endpoint.empty();
}

void say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  args a;
  if (!parse(argc, argv, a)) {
    std::fprintf(stderr,
                 "usage: fault_node --self N --bind EP [--peer N=EP]... [--send-to N --count C] [--expect E] ...\n");
    return 2;
  }
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, std::uint64_t> last;  // per peer: last sequence (reset when a new link comes up)
  std::uint64_t received = 0;
  bool order_error = false;
  std::deque<std::pair<std::chrono::steady_clock::time_point, std::shared_ptr<const void>>> held;
  bool stopping = false;

  rt::callbacks cb;
  cb.on_envelope = [&](const std::string& peer, rt::envelope&& e) {
    std::lock_guard lk(mu);
    if (e.sequence != last[peer] + 1) {
      order_error = true;
      say("ORDER from " + peer + ": " + std::to_string(e.sequence) + " after " + std::to_string(last[peer]));
    }
    last[peer] = e.sequence;
    ++received;
    if (a.hold_us)
      held.emplace_back(std::chrono::steady_clock::now() + std::chrono::microseconds(a.hold_us), std::move(e.receipt));
    cv.notify_all();
  };
  cb.on_peer_up = [&](const std::string& peer) {
    std::lock_guard lk(mu);
    last[peer] = 0;
    say("UP " + peer);
  };
  cb.on_peer_stalled = [&](const std::string& peer, const std::string&) { say("STALLED " + peer); };
  cb.on_peer_resumed = [&](const std::string& peer) { say("RESUMED " + peer); };
  cb.on_peer_down = [&](const std::string& peer, const std::string& why) { say("DOWN " + peer + ": " + why); };
  cb.on_log = [](rt::log_level, const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  auto t = rt::transport::start(a.o, cb);
  if (!t) {
    say(t.error().what());
    return 4;
  }
  // The slow receiver: releases each receipt `hold_us` after it arrived.
  std::thread releaser([&] {
    std::unique_lock lk(mu);
    while (!stopping) {
      if (held.empty()) {
        cv.wait_for(lk, 10ms);
        continue;
      }
      auto [when, r] = std::move(held.front());
      held.pop_front();
      lk.unlock();
      std::this_thread::sleep_until(when);  // simulated work, not a wait for a condition
      r.reset();
      lk.lock();
    }
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(a.deadline_s);
  int code = 0;
  std::uint64_t sent = 0;
  if (!a.send_to.empty()) {
    if (!(*t)->wait_until_up(a.send_to, std::chrono::seconds(a.deadline_s))) code = 3;
    std::vector<std::byte> body(std::max<std::uint64_t>(a.payload, 8));
    for (std::uint64_t i = 0; i < a.count && code == 0; ++i) {
      for (int b = 0; b < 8; ++b) body[b] = std::byte((i >> (8 * b)) & 0xff);
      rt::envelope e;
      e.kind = 1;
      e.topic = "fault";
      e.payload = rt::shared_bytes(std::vector<std::byte>(body));
      auto r = (*t)->send(a.send_to, std::move(e));
      if (!r) {
        say("SEND " + std::to_string(i) + ": " + r.error().what());
        if (!a.allow_send_failures) code = 5;
      } else {
        ++sent;
      }
    }
  }
  // Done when everything sent is delivered and everything expected arrived.
  while (code == 0) {
    const auto s = a.send_to.empty() ? rt::link_stats{} : (*t)->stats(a.send_to);
    {
      std::unique_lock lk(mu);
      if (order_error) code = 1;
      else if (received >= a.expect && s.outstanding == 0) break;
      else if (std::chrono::steady_clock::now() > deadline) {
        say("TIMEOUT received " + std::to_string(received) + " of " + std::to_string(a.expect) + ", outstanding " +
            std::to_string(s.outstanding));
        code = 3;
      } else {
        cv.wait_for(lk, 20ms);  // woken by each delivery; the sender's acknowledgements are polled
      }
    }
  }
  {
    std::lock_guard lk(mu);
    stopping = true;
    if (code == 0) say("DONE sent " + std::to_string(sent) + " received " + std::to_string(received));
  }
  releaser.join();
  (*t)->flush();
  (*t)->stop();
  return code;
}
