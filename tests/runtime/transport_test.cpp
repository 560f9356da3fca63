// Links between transports in one process over ipc:// (and one over tcp): order, batching,
// credits, heartbeat loss, reconnection, option validation.
#include "helpers.hpp"

#include "failure_detector.hpp"

#include <atomic>
#include <thread>

namespace banyan::runtime::test {
namespace {

struct pair_fixture {
  temp_dir dir;
  recorder ra, rb;
  std::unique_ptr<transport> a, b;

  transport_options options(const std::string& self, const std::string& other) {
    transport_options o;
    o.self = self;
    o.bind_endpoint = dir.ipc(self);
    o.peers = {{other, dir.ipc(other), ""}};
    o.heartbeat_timeout = 1000ms;
    return o;
  }
  void start(transport_options oa, transport_options ob) {
    auto ta = transport::start(std::move(oa), ra.make());
    ASSERT_TRUE(ta.has_value()) << ta.error().what();
    auto tb = transport::start(std::move(ob), rb.make());
    ASSERT_TRUE(tb.has_value()) << tb.error().what();
    a = std::move(*ta);
    b = std::move(*tb);
    ASSERT_TRUE(a->wait_until_up("b", 10s).has_value());
    ASSERT_TRUE(b->wait_until_up("a", 10s).has_value());
  }
};

TEST(Transport, DeliversInSendOrderWithConsecutiveSequenceNumbers) {
  pair_fixture f;
  f.start(f.options("a", "b"), f.options("b", "a"));
  constexpr std::uint64_t n = 20000;
  for (std::uint64_t i = 0; i < n; ++i) ASSERT_TRUE(f.a->send("b", make_envelope(i, 8 + i % 100)).has_value());
  ASSERT_TRUE(f.rb.wait([&] { return f.rb.got["a"].size() == n; }));
  std::lock_guard lk(f.rb.mu);
  const auto& got = f.rb.got["a"];
  for (std::uint64_t i = 0; i < n; ++i) {
    ASSERT_EQ(got[i].sequence, i + 1);
    ASSERT_EQ(index_of(got[i]), i);
    ASSERT_EQ(got[i].payload.size(), 8 + i % 100);
    ASSERT_EQ(got[i].topic, "t/" + std::to_string(i % 7));
    ASSERT_EQ(got[i].sender, 1u);
  }
  EXPECT_EQ(f.rb.order_errors, 0u);
  const auto s = f.a->stats("b");
  EXPECT_EQ(s.messages_sent, n);
  EXPECT_EQ(f.b->stats("a").messages_received, n);
  EXPECT_EQ(f.b->stats("a").sequence_gaps, 0u);
  EXPECT_EQ(f.b->rejects().total(), 0u);
}

TEST(Transport, CarriesEveryEnvelopeFieldUnchanged) {
  pair_fixture f;
  f.start(f.options("a", "b"), f.options("b", "a"));
  envelope e;
  e.kind = 7;
  e.sender = 0xfffffffeu;  // any 32-bit vertex but `none`
  e.scope = 0;
  e.topic = "net/carry";
  e.target = "/chip/regs";
  e.text = std::string(300, 'x');
  e.id = ~0ull;
  e.origin_sequence = 1ull << 40;
  e.entry = 3;
  e.from = 0;
  e.code = -7;
  e.timeout_ms = 250;
  e.urgent = true;
  e.payload = shared_bytes::copy_of(std::string("\0binary\xff", 8));
  ASSERT_TRUE(f.a->send("b", e).has_value());
  envelope empty;  // no payload at all
  ASSERT_TRUE(f.a->send("b", empty).has_value());
  ASSERT_TRUE(f.rb.wait([&] { return f.rb.got["a"].size() == 2; }));
  std::lock_guard lk(f.rb.mu);
  const envelope& g = f.rb.got["a"][0];
  EXPECT_EQ(g.kind, 7);
  EXPECT_EQ(g.sender, e.sender);
  EXPECT_EQ(g.scope, e.scope);
  EXPECT_EQ(g.topic, e.topic);
  EXPECT_EQ(g.target, e.target);
  EXPECT_EQ(g.text, e.text);
  EXPECT_EQ(g.id, e.id);
  EXPECT_EQ(g.origin_sequence, e.origin_sequence);
  EXPECT_EQ(g.entry, 3u);
  EXPECT_EQ(g.from, 0u);
  EXPECT_EQ(g.code, -7);
  EXPECT_EQ(g.timeout_ms, 250u);
  EXPECT_TRUE(g.urgent);
  EXPECT_EQ(g.payload.text(), e.payload.text());
  const envelope& unset = f.rb.got["a"][1];
  EXPECT_TRUE(unset.payload.empty());
  EXPECT_EQ(unset.entry, no_vertex_field);
  EXPECT_EQ(unset.from, no_vertex_field);
  EXPECT_FALSE(unset.urgent);
}

// While a's I/O thread is held inside a callback, the main thread queues 500 envelopes; once it is
// released they leave in batches of exactly max_batch.
TEST(Transport, CoalescesQueuedEnvelopesIntoBatchesOfAtMostMaxBatch) {
  pair_fixture f;
  auto oa = f.options("a", "b");
  oa.max_batch = 100;
  gate held;
  f.ra.on_envelope_hook = [&](const std::string&, const envelope&) { held.pass(); };
  f.start(oa, f.options("b", "a"));
  ASSERT_TRUE(f.b->send("a", make_envelope(0)).has_value());
  ASSERT_TRUE(held.wait_reached(10s));
  for (std::uint64_t i = 0; i < 500; ++i) ASSERT_TRUE(f.a->send("b", make_envelope(i)).has_value());
  held.release();
  ASSERT_TRUE(f.rb.wait([&] { return f.rb.got["a"].size() == 500; }));
  f.a->flush();  // the sender counts a batch once it is written; the receiver may be faster
  EXPECT_EQ(f.a->stats("b").batches_sent, 5u);
  EXPECT_EQ(f.b->stats("a").batches_received, 5u);
}

// b's application holds its first delivery; a may then have exactly `credit_window` envelopes
// outstanding, and the next send waits until b delivers.
TEST(Transport, SendBlocksWhenTheCreditWindowIsFullUntilTheReceiverDelivers) {
  pair_fixture f;
  auto oa = f.options("a", "b");
  oa.credit_window = 32;
  gate held;
  f.rb.on_envelope_hook = [&](const std::string&, const envelope&) { held.pass(); };
  f.start(oa, f.options("b", "a"));
  for (std::uint64_t i = 0; i < 32; ++i) ASSERT_TRUE(f.a->send("b", make_envelope(i)).has_value());
  std::atomic<bool> sent{false};
  std::thread extra([&] {
    EXPECT_TRUE(f.a->send("b", make_envelope(32)).has_value());
    sent = true;
  });
  while (f.a->stats("b").credit_waits == 0) std::this_thread::yield();  // the 33rd send is waiting
  EXPECT_FALSE(sent.load());
  EXPECT_EQ(f.a->stats("b").max_outstanding, 32u);
  held.release();
  extra.join();
  EXPECT_TRUE(sent.load());
  ASSERT_TRUE(f.rb.wait([&] { return f.rb.got["a"].size() == 33; }));
  EXPECT_LE(f.a->stats("b").max_outstanding, 32u);
}

// Credit follows the receipt, not the hand-over: an application that keeps receipts until its work
// is done holds its senders at the window, however fast its callback returns.
TEST(Transport, CreditReturnsWhenTheLastCopyOfAReceiptIsReleased) {
  pair_fixture f;
  auto oa = f.options("a", "b");
  oa.credit_window = 16;
  f.rb.hold_receipts = true;
  f.start(oa, f.options("b", "a"));
  for (std::uint64_t i = 0; i < 16; ++i) ASSERT_TRUE(f.a->send("b", make_envelope(i)).has_value());
  ASSERT_TRUE(f.rb.wait([&] { return f.rb.count["a"] == 16; }));
  EXPECT_TRUE(f.a->window_full("b"));
  std::atomic<bool> sent{false};
  std::thread extra([&] {
    EXPECT_TRUE(f.a->send("b", make_envelope(16)).has_value());
    sent = true;
  });
  while (f.a->stats("b").credit_waits == 0) std::this_thread::yield();  // the 17th send is waiting
  EXPECT_FALSE(sent.load());
  EXPECT_EQ(f.b->stats("a").max_undelivered, 16u);
  std::vector<std::shared_ptr<const void>> receipts;
  {
    std::lock_guard lk(f.rb.mu);
    receipts.swap(f.rb.receipts);
  }
  auto copy = receipts;  // a second copy: credit only when the last one goes
  receipts.clear();
  EXPECT_FALSE(sent.load());
  copy.clear();
  extra.join();
  EXPECT_TRUE(sent.load());
  ASSERT_TRUE(f.rb.wait([&] { return f.rb.count["a"] == 17; }));
  EXPECT_EQ(f.a->stats("b").lost_on_down, 0u);
}

// never_block accepts envelopes beyond the window (for forwarders bounded by their own credit);
// window_full() and on_credit tell a cooperative sender when to go on.
TEST(Transport, NeverBlockSendsGoBeyondTheWindowAndOnCreditSaysWhenItReopens) {
  pair_fixture f;
  auto oa = f.options("a", "b");
  oa.credit_window = 16;
  f.rb.hold_receipts = true;
  f.start(oa, f.options("b", "a"));
  for (std::uint64_t i = 0; i < 100; ++i) ASSERT_TRUE(f.a->send("b", make_envelope(i), never_block).has_value());
  ASSERT_TRUE(f.rb.wait([&] { return f.rb.count["a"] == 100; }));
  EXPECT_EQ(f.a->stats("b").max_outstanding, 100u);
  EXPECT_EQ(f.a->stats("b").credit_waits, 0u);
  EXPECT_TRUE(f.a->window_full("b"));
  EXPECT_EQ(f.ra.locked(f.ra.credits, "b"), 0);
  {
    std::lock_guard lk(f.rb.mu);
    f.rb.receipts.clear();
  }
  // Grants come in steps (each quarter window released); on_credit fires after each is applied.
  ASSERT_TRUE(f.ra.wait([&] { return f.ra.credits["b"] > 0 && !f.a->window_full("b"); }, 10s));
}

// A peer that stalls past the heartbeat timeout (its I/O thread held) is declared stalled, not lost,
// and then heard again: nothing is dropped, the link goes on in the same sessions, and both
// directions work with consistent numbering and credit (each more than a window's worth, so a
// stuck credit would hang the sends).
TEST(Heartbeat, AStalledPeerHeardAgainGoesOnWithoutLossInBothDirections) {
  pair_fixture f;
  auto oa = f.options("a", "b");
  oa.heartbeat_timeout = 200ms;
  oa.credit_window = 16;
  auto ob = f.options("b", "a");
  ob.heartbeat_timeout = 10s;
  ob.credit_window = 16;
  gate stall;
  f.rb.on_envelope_hook = [&](const std::string&, const envelope& e) {
    if (index_of(e) == 5) stall.pass();  // b's I/O thread stalls: no heartbeats, no reading
  };
  f.start(oa, ob);
  for (std::uint64_t i = 0; i < 6; ++i) ASSERT_TRUE(f.a->send("b", make_envelope(i)).has_value());
  ASSERT_TRUE(f.ra.wait([&] { return f.ra.stalls["b"] == 1; }, 5s));
  EXPECT_TRUE(f.a->stats("b").stalled);
  // Sends to a stalled peer queue (within the window) instead of failing.
  for (std::uint64_t i = 6; i < 16; ++i) ASSERT_TRUE(f.a->send("b", make_envelope(i)).has_value());
  stall.release();
  ASSERT_TRUE(f.ra.wait([&] { return f.ra.resumes["b"] == 1; }, 5s));
  EXPECT_EQ(f.ra.locked(f.ra.downs, "b"), 0);
  EXPECT_EQ(f.ra.locked(f.ra.ups, "b"), 1);
  EXPECT_EQ(f.rb.locked(f.rb.downs, "a"), 0);  // b never gave the link up
  for (std::uint64_t i = 100; i < 164; ++i) ASSERT_TRUE(f.a->send("b", make_envelope(i)).has_value());
  for (std::uint64_t i = 200; i < 264; ++i) ASSERT_TRUE(f.b->send("a", make_envelope(i)).has_value());
  ASSERT_TRUE(f.rb.wait([&] { return f.rb.count["a"] == 16 + 64; }));
  ASSERT_TRUE(f.ra.wait([&] { return f.ra.count["b"] == 64; }));
  std::lock_guard lk(f.rb.mu);
  for (std::uint64_t i = 0; i < 16; ++i) EXPECT_EQ(index_of(f.rb.got["a"][i]), i);
  EXPECT_EQ(f.rb.got["a"][16].sequence, 17u);  // the same send session goes on
  EXPECT_EQ(index_of(f.rb.got["a"].back()), 163u);
  EXPECT_EQ(f.rb.order_errors, 0u);
  EXPECT_EQ(f.b->stats("a").sequence_gaps, 0u);
  EXPECT_EQ(f.a->stats("b").sequence_gaps, 0u);
  EXPECT_EQ(f.a->stats("b").sessions, 1u);
  EXPECT_EQ(f.a->stats("b").lost_on_down, 0u);
}

// A fast sender and a slow receiver: memory stays bounded by the window, nothing is lost.
TEST(Transport, FastSenderSlowReceiverStaysWithinTheWindowAndLosesNothing) {
  pair_fixture f;
  auto oa = f.options("a", "b");
  oa.credit_window = 64;
  oa.max_batch = 16;
  f.rb.keep = false;
  f.rb.on_envelope_hook = [](const std::string&, const envelope&) {
    const auto until = std::chrono::steady_clock::now() + 20us;  // a slow consumer, simulated
    while (std::chrono::steady_clock::now() < until) {
    }
  };
  f.start(oa, f.options("b", "a"));
  constexpr std::uint64_t n = 20000;
  for (std::uint64_t i = 0; i < n; ++i) ASSERT_TRUE(f.a->send("b", make_envelope(i, 256)).has_value());
  ASSERT_TRUE(f.rb.wait([&] { return f.rb.count["a"] == n; }, 60s));
  const auto s = f.a->stats("b");
  EXPECT_LE(s.max_outstanding, 64u);
  EXPECT_GT(s.credit_waits, 0u);
  EXPECT_EQ(s.lost_on_down, 0u);
  EXPECT_EQ(f.rb.order_errors, 0u);
}

TEST(Transport, ThreeNodesDeliverEveryMessageInPerPairOrder) {
  temp_dir dir;
  const std::vector<std::string> names{"n0", "n1", "n2"};
  recorder rec[3];
  std::unique_ptr<transport> t[3];
  for (int i = 0; i < 3; ++i) {
    transport_options o;
    o.self = names[i];
    o.bind_endpoint = dir.ipc(names[i]);
    for (int j = 0; j < 3; ++j) {
      if (j != i) o.peers.push_back({names[j], dir.ipc(names[j]), ""});
    }
    rec[i].keep = false;
    auto r = transport::start(o, rec[i].make());
    ASSERT_TRUE(r.has_value()) << r.error().what();
    t[i] = std::move(*r);
  }
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      if (j != i) {
        ASSERT_TRUE(t[i]->wait_until_up(names[j], 10s).has_value());
      }
    }
  }
  constexpr std::uint64_t per_link = 1000000 / 6 + 1;  // 6 links, 1,000,002 messages in all
  std::vector<std::thread> senders;
  for (int i = 0; i < 3; ++i) {
    senders.emplace_back([&, i] {
      envelope e = make_envelope(0, 16);
      for (std::uint64_t k = 0; k < per_link; ++k) {
        for (int j = 0; j < 3; ++j) {
          if (j != i) {
            ASSERT_TRUE(t[i]->send(names[j], e).has_value());
          }
        }
      }
    });
  }
  for (auto& s : senders) s.join();
  for (auto& node : t) node->flush();  // every send is written (and counted) before we look
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(rec[i].wait(
        [&] {
          std::uint64_t c = 0;
          for (auto& [p, n] : rec[i].count) c += n;
          return c == 2 * per_link;
        },
        120s))
        << names[i];
    EXPECT_EQ(rec[i].order_errors, 0u) << names[i];
    for (int j = 0; j < 3; ++j) {
      if (j == i) continue;
      const auto s = t[i]->stats(names[j]);
      EXPECT_EQ(s.messages_received, per_link);
      EXPECT_EQ(s.messages_sent, per_link);
      EXPECT_EQ(s.sequence_gaps, 0u);
    }
  }
}

TEST(Heartbeat, PeerStoppedIsReportedWithinTheTimeoutAndSendsThenFail) {
  pair_fixture f;
  auto oa = f.options("a", "b");
  oa.heartbeat_timeout = 300ms;
  auto ob = f.options("b", "a");
  ob.heartbeat_timeout = 300ms;
  f.start(oa, ob);
  const auto t0 = std::chrono::steady_clock::now();
  f.b->stop();
  ASSERT_TRUE(f.ra.wait([&] { return f.ra.downs["b"] == 1; }, 5s));
  const auto took = std::chrono::steady_clock::now() - t0;
  // Found within the threshold the detector reported, plus half a timeout for the I/O thread's
  // check to come round on a loaded machine (not a wall constant: the threshold grows with jitter).
  const auto threshold = reported_threshold(f.ra.locked(f.ra.down_reasons, "b"));
  ASSERT_TRUE(threshold.has_value()) << f.ra.locked(f.ra.down_reasons, "b");
  EXPECT_LT(took, *threshold + oa.heartbeat_timeout / 2)
      << "detected after " << std::chrono::duration<double>(took).count() << " s, threshold " << threshold->count()
      << " ms";
  EXPECT_TRUE(f.ra.logged("peer `b` lost"));
  auto r = f.a->send("b", make_envelope(1));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, errc::peer_lost);
  EXPECT_EQ(f.a->stats("b").send_failures, 1u);
}

TEST(Heartbeat, LinkRecoversWithAFreshSessionWhenThePeerReturns) {
  pair_fixture f;
  auto oa = f.options("a", "b");
  oa.heartbeat_timeout = 300ms;
  auto ob = f.options("b", "a");
  ob.heartbeat_timeout = 300ms;
  f.start(oa, ob);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(f.a->send("b", make_envelope(i)).has_value());
  ASSERT_TRUE(f.rb.wait([&] { return f.rb.got["a"].size() == 10; }));
  f.b->stop();
  ASSERT_TRUE(f.ra.wait([&] { return f.ra.downs["b"] == 1; }, 5s));
  f.b.reset();
  recorder rb2;
  auto tb = transport::start(ob, rb2.make());
  ASSERT_TRUE(tb.has_value()) << tb.error().what();
  ASSERT_TRUE(f.ra.wait([&] { return f.ra.ups["b"] == 2; }, 10s));
  ASSERT_TRUE((*tb)->wait_until_up("a", 10s).has_value());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(f.a->send("b", make_envelope(100 + i)).has_value());
  ASSERT_TRUE(rb2.wait([&] { return rb2.got["a"].size() == 5; }));
  std::lock_guard lk(rb2.mu);
  EXPECT_EQ(rb2.got["a"][0].sequence, 1u);  // a new session starts at 1
  EXPECT_EQ(index_of(rb2.got["a"][4]), 104u);
  EXPECT_EQ(f.a->stats("b").sessions, 2u);
}

TEST(Transport, WorksOverTcpLoopbackWithAnEphemeralPort) {
  recorder ra, rb;
  transport_options ob;
  ob.self = "b";
  ob.bind_endpoint = "tcp://127.0.0.1:*";
  ob.peers = {{"a", "tcp://127.0.0.1:1", ""}};  // replaced below once a's port is known
  // b binds first so a can connect to it; a binds an ephemeral port and b learns it by restarting.
  transport_options oa;
  oa.self = "a";
  oa.bind_endpoint = "tcp://127.0.0.1:*";
  auto probe = transport::start(ob, rb.make());
  ASSERT_TRUE(probe.has_value()) << probe.error().what();
  const std::string b_ep = (*probe)->bound_endpoint();
  oa.peers = {{"b", b_ep, ""}};
  auto ta = transport::start(oa, ra.make());
  ASSERT_TRUE(ta.has_value()) << ta.error().what();
  (*probe)->stop();
  probe->reset();
  ob.bind_endpoint = b_ep;
  ob.peers = {{"a", (*ta)->bound_endpoint(), ""}};
  auto tb = transport::start(ob, rb.make());
  ASSERT_TRUE(tb.has_value()) << tb.error().what();
  ASSERT_TRUE((*ta)->wait_until_up("b", 10s).has_value());
  ASSERT_TRUE((*tb)->wait_until_up("a", 10s).has_value());
  for (int i = 0; i < 100; ++i) ASSERT_TRUE((*ta)->send("b", make_envelope(i, 4096)).has_value());
  ASSERT_TRUE(rb.wait([&] { return rb.got["a"].size() == 100; }));
  EXPECT_EQ(rb.order_errors, 0u);
}

TEST(Transport, RejectsInvalidOptionsNamingTheFault) {
  auto fails_with = [](transport_options o, const std::string& needle) {
    auto r = transport::start(std::move(o), {});
    ASSERT_FALSE(r.has_value()) << needle;
    EXPECT_EQ(r.error().code, errc::invalid_argument);
    EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
  };
  temp_dir dir;
  transport_options base;
  base.self = "a";
  base.bind_endpoint = dir.ipc("a");
  auto o = base;
  o.self = "";
  fails_with(o, "`self`");
  o = base;
  o.bind_endpoint = "http://x";
  fails_with(o, "bind endpoint `http://x`");
  o = base;
  o.peers = {{"b", "", ""}};
  fails_with(o, "`b`): no endpoint");
  o = base;
  o.peers = {{"b", dir.ipc("b"), ""}, {"c", dir.ipc("b"), ""}};
  fails_with(o, "duplicate endpoint");
  o = base;
  o.peers = {{"b", dir.ipc("b"), ""}, {"b", dir.ipc("c"), ""}};
  fails_with(o, "duplicate node name");
  o = base;
  o.curve_secret_key = "short";
  o.curve_public_key = "short";
  fails_with(o, "CURVE keys");
  o = base;
  o.credit_window = 0;
  fails_with(o, "credit_window");
}

TEST(Transport, SendToAnUnknownPeerIsAnError) {
  temp_dir dir;
  transport_options o;
  o.self = "a";
  o.bind_endpoint = dir.ipc("a");
  auto t = transport::start(o, {});
  ASSERT_TRUE(t.has_value());
  auto r = (*t)->send("nobody", make_envelope(0));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, errc::invalid_argument);
  EXPECT_NE(r.error().message.find("`nobody`"), std::string::npos);
}

TEST(Transport, BindingAnEndpointInUseIsAnIoError) {
  temp_dir dir;
  transport_options o;
  o.self = "a";
  o.bind_endpoint = "tcp://127.0.0.1:*";
  auto t = transport::start(o, {});
  ASSERT_TRUE(t.has_value());
  o.self = "b";
  o.bind_endpoint = (*t)->bound_endpoint();
  auto t2 = transport::start(o, {});
  ASSERT_FALSE(t2.has_value());
  EXPECT_EQ(t2.error().code, errc::io);
  EXPECT_NE(t2.error().message.find(o.bind_endpoint), std::string::npos);
}

// The failure detector: regular heartbeats keep the threshold at its base; late and irregular ones
// raise it (mean + 5.6 standard deviations past the period), never beyond the cap.
TEST(FailureDetector, RegularHeartbeatsKeepTheBaseAndJitterRaisesTheThreshold) {
  using clock = std::chrono::steady_clock;
  detail::failure_detector regular(200ms, 800ms, 4000ms), jittery(200ms, 800ms, 4000ms), dead(200ms, 800ms, 4000ms);
  clock::time_point t{};
  for (int i = 0; i < 64; ++i) regular.heard(t += 200ms + std::chrono::milliseconds(i % 3));
  EXPECT_EQ(regular.threshold(), 800ms);
  t = {};
  for (int i = 0; i < 64; ++i) jittery.heard(t += (i % 4 == 0 ? 900ms : 100ms));
  EXPECT_GT(jittery.threshold(), 1500ms);
  EXPECT_LE(jittery.threshold(), 4000ms);
  t = {};
  for (int i = 0; i < 64; ++i) dead.heard(t += (i % 2 ? 3000ms : 10ms));
  EXPECT_EQ(dead.threshold(), 4000ms);
  dead.reset();
  EXPECT_EQ(dead.threshold(), 800ms);
}

}  // namespace
}  // namespace banyan::runtime::test
