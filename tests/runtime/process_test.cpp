// Several processes on loopback: a peer killed with SIGKILL is reported by the others within the
// failure detector's threshold (4/5 of the 1 s heartbeat timeout while its heartbeats were regular),
// and nothing hangs. The child is always reaped, also when an assertion fails.
#include "helpers.hpp"

#include "banyan/base/process.hpp"

#include <signal.h>

namespace banyan::runtime::test {
namespace {

// Runs node `b` in a forked child that streams envelopes to every peer until it is killed (the
// process's destructor kills and reaps it, also when an assertion fails). Forked before this test
// starts any thread.
banyan::result<banyan::process> fork_streaming_node(const transport_options& o) {
  return banyan::process::spawn_function("node b", [o]() -> int {
    auto t = transport::start(o, callbacks{.on_log = [](log_level, const std::string&) {}});
    if (!t.has_value()) return 3;
    for (std::uint64_t i = 0;; ++i) {
      for (const auto& p : o.peers) {
        if (!(*t)->send(p.name, make_envelope(i, 64)).has_value()) (void)(*t)->wait_until_up(p.name, 100ms);
      }
    }
  });
}

TEST(Process, KillNineOfOneNodeIsReportedByTheOthersWithinTheDetectorsThreshold) {
  temp_dir dir;
  auto options = [&](const std::string& self) {
    transport_options o;
    o.self = self;
    o.bind_endpoint = dir.ipc(self);
    for (const char* n : {"a", "b", "c"}) {
      if (self != n) o.peers.push_back({n, dir.ipc(n), ""});
    }
    o.heartbeat_timeout = 1000ms;
    return o;
  };
  auto child = fork_streaming_node(options("b"));
  ASSERT_TRUE(child.has_value()) << child.error().what();
  recorder ra, rc;
  ra.keep = rc.keep = false;
  auto a = transport::start(options("a"), ra.make());
  auto c = transport::start(options("c"), rc.make());
  ASSERT_TRUE(a.has_value() && c.has_value());
  ASSERT_TRUE((*a)->wait_until_up("b", 10s).has_value());
  ASSERT_TRUE((*c)->wait_until_up("b", 10s).has_value());
  ASSERT_TRUE(ra.wait([&] { return ra.count["b"] >= 1000; }));  // b is streaming to a
  ASSERT_TRUE(rc.wait([&] { return rc.count["b"] >= 1000; }));

  const auto t0 = std::chrono::steady_clock::now();
  child->signal(SIGKILL);
  ASSERT_TRUE(ra.wait([&] { return ra.downs["b"] == 1; }, 5s));
  const auto a_took = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(rc.wait([&] { return rc.downs["b"] == 1; }, 5s));
  const auto c_took = std::chrono::steady_clock::now() - t0;
  // Each found it within the threshold its detector reported (1000 ms x 4/5 while b's heartbeats were
  // regular, more if a loaded machine made them late), plus half a timeout for the I/O thread's check.
  const auto slack = options("a").heartbeat_timeout / 2;
  const auto a_threshold = reported_threshold(ra.locked(ra.down_reasons, "b"));
  const auto c_threshold = reported_threshold(rc.locked(rc.down_reasons, "b"));
  ASSERT_TRUE(a_threshold && c_threshold) << ra.locked(ra.down_reasons, "b") << "\n" << rc.locked(rc.down_reasons, "b");
  EXPECT_LT(a_took, *a_threshold + slack)
      << std::chrono::duration<double>(a_took).count() << " s, threshold " << a_threshold->count() << " ms";
  EXPECT_LT(c_took, *c_threshold + slack)
      << std::chrono::duration<double>(c_took).count() << " s, threshold " << c_threshold->count() << " ms";
  EXPECT_TRUE(ra.logged("peer `b` lost"));
  EXPECT_EQ(ra.order_errors, 0u);  // everything b got through arrived in order
  EXPECT_EQ((*a)->stats("b").sequence_gaps, 0u);
  // The survivors still talk to each other, and sends to the dead node fail instead of hanging.
  EXPECT_FALSE((*a)->send("b", make_envelope(0)).has_value());
  ASSERT_TRUE((*a)->send("c", make_envelope(7)).has_value());
  ASSERT_TRUE(rc.wait([&] { return rc.count["a"] == 1; }));
  auto status = child->wait(10s);
  ASSERT_TRUE(status.has_value()) << status.error().what();
  EXPECT_EQ(status->signal, SIGKILL);
}

}  // namespace
}  // namespace banyan::runtime::test
