// Stopped, killed and restarted nodes, with real processes: a node
// SIGSTOPped past the heartbeat timeout loses nothing and the run completes with exact counts; a
// node stopped past give_up_after, or killed with SIGKILL, hands every pending envelope back to its
// sender (on_undelivered) and later sends fail; a restarted node is a new link that exchanges
// exactly. The node processes are fault_node (tests/faults/fault_node.cpp).
#include "faults.hpp"

#include <signal.h>

namespace banyan::runtime::test {
namespace {

constexpr auto heartbeat = 300ms;

struct cluster {
  temp_dir dir;
  recorder ra;
  std::unique_ptr<transport> a;

  std::vector<std::string> node_b(std::uint64_t count_to_a, std::uint64_t expect, std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"--self",         "b",
                                  "--bind",         dir.ipc("b"),
                                  "--peer",         "a=" + dir.ipc("a"),
                                  "--heartbeat-ms", std::to_string(heartbeat.count()),
                                  "--expect",       std::to_string(expect)};
    if (count_to_a) args.insert(args.end(), {"--send-to", "a", "--count", std::to_string(count_to_a)});
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  void start_a(std::chrono::milliseconds give_up = 30s) {
    ra.keep = false;
    auto o = node_options("a", dir.ipc("a"), {{"b", dir.ipc("b"), ""}}, heartbeat);
    o.give_up_after = give_up;
    auto t = transport::start(o, ra.make());
    ASSERT_TRUE(t.has_value()) << t.error().what();
    a = std::move(*t);
  }
};

// b and a stream to each other; b is stopped until a has found it stalled and for another heartbeat
// timeout besides (what the probe did for 3 s), while a's sender keeps going (it waits at the
// window). Continued, both runs complete: every envelope once, in order, none handed back.
TEST(Stall, ASigstoppedNodeLosesNothingAndTheRunCompletesWithExactCounts) {
  cluster c;
  constexpr std::uint64_t n = 100000;
  c.start_a();
  auto b = node_process::start(c.node_b(n, n));
  ASSERT_TRUE(c.a->wait_until_up("b", 10s).has_value()) << b.output();
  std::thread sender([&] {
    for (std::uint64_t i = 0; i < n; ++i) ASSERT_TRUE(c.a->send("b", make_envelope(i, 32)).has_value()) << i;
  });
  ASSERT_TRUE(c.ra.wait([&] { return c.ra.count["b"] >= n / 10; }, 30s));
  b.proc.signal(SIGSTOP);
  const auto stopped = std::chrono::steady_clock::now();
  ASSERT_TRUE(c.ra.wait([&] { return c.ra.stalls["b"] >= 1; }, 10s));
  const auto detected = std::chrono::steady_clock::now() - stopped;
  // Stay stopped one more heartbeat timeout (the sender is blocked at the window meanwhile).
  c.ra.wait([] { return false; }, heartbeat);
  EXPECT_TRUE(c.a->stats("b").stalled);
  b.proc.signal(SIGCONT);
  const auto continued = std::chrono::steady_clock::now();
  ASSERT_TRUE(c.ra.wait([&] { return c.ra.resumes["b"] >= 1; }, 10s));
  const auto recovered = std::chrono::steady_clock::now() - continued;
  sender.join();
  EXPECT_EQ(b.wait_exit(60s), 0) << b.output();
  EXPECT_NE(b.output().find("DONE sent " + std::to_string(n) + " received " + std::to_string(n)), std::string::npos)
      << b.output();
  ASSERT_TRUE(c.ra.wait([&] { return c.ra.count["b"] == n; }, 30s));
  EXPECT_EQ(c.ra.order_errors, 0u);
  EXPECT_EQ(c.ra.locked(c.ra.downs, "b"), 0);
  EXPECT_EQ(c.a->stats("b").lost_on_down, 0u);
  std::printf("SIGSTOP: stall found after %.2f s (heartbeat timeout %.1f s); link working again %.3f s after SIGCONT\n",
              std::chrono::duration<double>(detected).count(), std::chrono::duration<double>(heartbeat).count(),
              std::chrono::duration<double>(recovered).count());
}

// Stopped for longer than give_up_after: the peer is gone; every envelope a had queued or not yet
// seen delivered comes back through on_undelivered, and sent = delivered + handed back.
TEST(Stall, APeerStalledPastGiveUpIsGoneAndEveryPendingEnvelopeIsHandedBack) {
  cluster c;
  c.start_a(1200ms);
  auto b = node_process::start(c.node_b(0, ~0ull >> 1, {"--hold-us", "200"}));
  ASSERT_TRUE(c.a->wait_until_up("b", 10s).has_value()) << b.output();
  for (std::uint64_t i = 0; i < 200; ++i) ASSERT_TRUE(c.a->send("b", make_envelope(i)).has_value());
  b.proc.signal(SIGSTOP);
  std::uint64_t accepted = 200;
  for (std::uint64_t i = 200; i < 3000 && c.a->send("b", make_envelope(i)).has_value(); ++i) ++accepted;
  ASSERT_TRUE(c.ra.wait([&] { return c.ra.downs["b"] == 1; }, 10s));
  const auto s = c.a->stats("b");
  std::lock_guard lk(c.ra.mu);
  const auto& back = c.ra.undelivered["b"];
  EXPECT_EQ(back.size(), s.lost_on_down);
  EXPECT_GT(back.size(), 0u);
  // What came back is the tail of what was accepted, in send order.
  for (std::size_t i = 0; i < back.size(); ++i) EXPECT_EQ(index_of(back[i]), accepted - back.size() + i);
  b.proc.kill();
}

// kill -9 of a node with envelopes pending for it: reported within the failure detector's threshold,
// everything pending is handed back, later sends fail with peer_lost (and blocked senders wake).
TEST(Crash, KillNineHandsBackEveryPendingEnvelopeAndIsReportedQuickly) {
  cluster c;
  c.start_a();
  auto b = node_process::start(c.node_b(0, ~0ull >> 1, {"--hold-us", "1000"}));
  ASSERT_TRUE(c.a->wait_until_up("b", 10s).has_value()) << b.output();
  std::atomic<std::uint64_t> accepted{0};
  std::atomic<bool> failed{false};
  std::thread sender([&] {  // blocks at the window, then fails when b is gone
    for (std::uint64_t i = 0; i < 100000; ++i) {
      auto r = c.a->send("b", make_envelope(i));
      if (!r) {
        EXPECT_EQ(r.error().code, errc::peer_lost) << r.error().what();
        failed = true;
        return;
      }
      ++accepted;
    }
  });
  ASSERT_TRUE(poll_until([&] { return c.a->stats("b").credit_waits > 0; }, 10s));
  const auto t0 = std::chrono::steady_clock::now();
  b.proc.kill();
  ASSERT_TRUE(c.ra.wait([&] { return c.ra.downs["b"] == 1; }, 5s));
  const auto took = std::chrono::steady_clock::now() - t0;
  sender.join();
  EXPECT_TRUE(failed.load());
  // Within the threshold a's detector reported (it grows with the jitter a loaded machine adds), plus
  // half a timeout for the I/O thread's check to come round.
  const auto threshold = reported_threshold(c.ra.locked(c.ra.down_reasons, "b"));
  ASSERT_TRUE(threshold.has_value()) << c.ra.locked(c.ra.down_reasons, "b");
  EXPECT_LT(took, *threshold + heartbeat / 2)
      << std::chrono::duration<double>(took).count() << " s, threshold " << threshold->count() << " ms";
  const auto s = c.a->stats("b");
  EXPECT_EQ(c.ra.locked(c.ra.stalls, "b"), 0) << "a closed connection is gone at once, not stalled";
  std::lock_guard lk(c.ra.mu);
  EXPECT_EQ(c.ra.undelivered["b"].size(), s.lost_on_down);
  EXPECT_EQ(index_of(c.ra.undelivered["b"].back()), accepted - 1);
  std::printf(
      "kill -9 reported after %.3f s (threshold %.3f s, heartbeat timeout %.1f s); %llu pending envelopes handed "
      "back\n",
      std::chrono::duration<double>(took).count(), std::chrono::duration<double>(*threshold).count(),
      std::chrono::duration<double>(heartbeat).count(), static_cast<unsigned long long>(s.lost_on_down));
}

// b is killed and started again: a new incarnation, a new link (on_peer_up again, sequence 1), and
// the new b exchanges exactly with a.
TEST(Crash, ARestartedNodeIsANewLinkAndExchangesExactly) {
  cluster c;
  c.start_a();
  auto b = node_process::start(c.node_b(1000, 0));
  ASSERT_TRUE(c.a->wait_until_up("b", 10s).has_value()) << b.output();
  ASSERT_TRUE(c.ra.wait([&] { return c.ra.count["b"] == 1000; }, 10s));
  b.proc.kill();
  ASSERT_TRUE(c.ra.wait([&] { return c.ra.downs["b"] == 1; }, 5s));
  constexpr std::uint64_t n = 20000;
  auto b2 = node_process::start(c.node_b(n, n));
  ASSERT_TRUE(c.ra.wait([&] { return c.ra.ups["b"] == 2; }, 10s)) << b2.output();
  for (std::uint64_t i = 0; i < n; ++i) ASSERT_TRUE(c.a->send("b", make_envelope(i)).has_value());
  EXPECT_EQ(b2.wait_exit(60s), 0) << b2.output();
  ASSERT_TRUE(c.ra.wait([&] { return c.ra.count["b"] == 1000 + n; }, 30s));
  EXPECT_EQ(c.ra.order_errors, 0u);
  EXPECT_EQ(c.a->stats("b").sessions, 2u);
}

}  // namespace
}  // namespace banyan::runtime::test
