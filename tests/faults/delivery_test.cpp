// Bounded, exactly-once delivery in one process: payloads up to the maximum arrive and larger
// ones are refused at send(); batches are bounded in bytes; credit is bounded in bytes; envelopes
// lost in transit (connections cut under load) are written again and arrive exactly once, in order.
#include "faults.hpp"

#include <fstream>
#include <limits>

namespace banyan::runtime::test {
namespace {

struct linked_pair {
  temp_dir dir;
  recorder ra, rb;
  std::unique_ptr<transport> a, b;
  linked_pair(transport_options oa, transport_options ob) {
    auto tb = transport::start(std::move(ob), rb.make());
    auto ta = transport::start(std::move(oa), ra.make());
    EXPECT_TRUE(ta.has_value() && tb.has_value());
    a = std::move(*ta);
    b = std::move(*tb);
    EXPECT_TRUE(a->wait_until_up("b", 10s) && b->wait_until_up("a", 10s));
  }
};

transport_options opts(const temp_dir& dir, const std::string& self, const std::string& other) {
  return node_options(self, dir.ipc(self), {{other, dir.ipc(other), ""}}, 1000ms);
}

TEST(Payloads, UpToTheMaximumArriveWholeAndAboveItSendIsAnError) {
  temp_dir dir;
  auto oa = opts(dir, "a", "b");
  auto ob = opts(dir, "b", "a");
  linked_pair f(oa, ob);
  const std::size_t max = oa.max_payload_bytes;  // the default: 16 MiB
  envelope probe = make_envelope(0);
  const std::size_t text = probe.topic.size();
  const std::vector<std::size_t> sizes{8, oa.max_batch_bytes - 1, oa.max_batch_bytes + 1, 4 << 20, max - text};
  for (std::size_t i = 0; i < sizes.size(); ++i)
    ASSERT_TRUE(f.a->send("b", make_envelope(i, sizes[i])).has_value()) << sizes[i];
  auto too_big = f.a->send("b", make_envelope(99, max - text + 1));
  ASSERT_FALSE(too_big.has_value());
  EXPECT_EQ(too_big.error().code, errc::payload_too_large);
  EXPECT_NE(too_big.error().message.find("larger than the limit of " + std::to_string(max) + " bytes"),
            std::string::npos)
      << too_big.error().message;
  ASSERT_TRUE(f.rb.wait([&] { return f.rb.got["a"].size() == sizes.size(); }, 30s));
  std::lock_guard lk(f.rb.mu);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(f.rb.got["a"][i].payload.size(), sizes[i]);
    EXPECT_EQ(index_of(f.rb.got["a"][i]), i);
  }
  EXPECT_EQ(f.b->rejects().total(), 0u);
  EXPECT_EQ(f.a->stats("b").send_failures, 1u);
}

// The probe that lost messages: 250 messages of 400,000 bytes from each of 3 nodes to each other
// (256 of them made one 100 MB frame, over the receiver's 64 MiB limit). Batches now close at
// max_batch_bytes, and the byte window holds a sender back long before memory grows.
TEST(Payloads, ThreeNodesExchangeManyLargePayloadsExactly) {
  temp_dir dir;
  const std::vector<std::string> names{"n0", "n1", "n2"};
  recorder rec[3];
  std::unique_ptr<transport> t[3];
  for (int i = 0; i < 3; ++i) {
    std::vector<peer_config> peers;
    for (int j = 0; j < 3; ++j)
      if (j != i) peers.push_back({names[j], dir.ipc(names[j]), ""});
    rec[i].keep = false;
    auto r = transport::start(node_options(names[i], dir.ipc(names[i]), peers, 1000ms), rec[i].make());
    ASSERT_TRUE(r.has_value()) << r.error().what();
    t[i] = std::move(*r);
  }
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      if (i != j) {
        ASSERT_TRUE(t[i]->wait_until_up(names[j], 10s).has_value());
      }
  constexpr std::uint64_t n = 250, size = 400000;
  std::vector<std::thread> senders;
  for (int i = 0; i < 3; ++i) {
    senders.emplace_back([&, i] {
      for (std::uint64_t k = 0; k < n; ++k)
        for (int j = 0; j < 3; ++j)
          if (j != i) {
            ASSERT_TRUE(t[i]->send(names[j], make_envelope(k, size)).has_value());
          }
    });
  }
  for (auto& s : senders) s.join();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(rec[i].wait(
        [&] {
          std::uint64_t c = 0;
          for (auto& [p, k] : rec[i].count) c += k;
          return c == 2 * n;
        },
        60s))
        << names[i];
    EXPECT_EQ(rec[i].order_errors, 0u);
    EXPECT_EQ(t[i]->rejects().total(), 0u);
    for (int j = 0; j < 3; ++j) {
      if (j == i) continue;
      const auto s = t[i]->stats(names[j]);
      EXPECT_EQ(s.messages_received, n);
      EXPECT_EQ(s.bytes_received, n * size);
      EXPECT_LE(s.max_outstanding_bytes, 16u << 20) << "the byte window";
      EXPECT_GE(s.batches_sent, n / 3) << "at most max_batch_bytes (1 MiB) per batch";
    }
  }
}

// 64 KiB payloads to a receiver that keeps every receipt a while (a slow subscriber): both ends stay
// within the byte window (with a message window that would allow 64 MiB), nothing is lost, and the
// receiver is never taken for stalled (heartbeats travel on their own connection).
// The bytes of payload `k`: a pattern that a misplaced or missing chunk would break.
std::byte pattern_byte(std::uint64_t k, std::uint64_t i) { return std::byte((i * 131 + (i >> 20) * 7 + k) & 0xff); }

shared_bytes patterned(std::uint64_t k, std::size_t size) {
  std::vector<std::byte> b(size);
  for (std::size_t i = 0; i < size; ++i) b[i] = pattern_byte(k, i);
  return shared_bytes(std::move(b));
}

bool has_pattern(std::uint64_t k, const shared_bytes& p) {
  for (std::size_t i = 0; i < p.size(); ++i)
    if (p.data()[i] != pattern_byte(k, i)) return false;
  return true;
}

// Whether this machine has `bytes` of memory available now (MemAvailable).
bool memory_allows(std::uint64_t bytes) {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  while (in >> key >> kib) {
    if (key == "MemAvailable:") return kib * 1024 >= bytes;
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return false;
}

// One large payload sent in chunks by one thread while another sends small envelopes on the same
// link: the small ones are not held behind it, the large one arrives whole, the byte window holds
// at the sender, and no heartbeat is missed.
void large_payload_while_traffic_flows(std::size_t size) {
  temp_dir dir;
  auto oa = opts(dir, "a", "b");
  auto ob = opts(dir, "b", "a");
  oa.max_payload_bytes = ob.max_payload_bytes = size + 4096;
  linked_pair f(oa, ob);
  std::size_t smalls_before = 0;  // small envelopes delivered before the large one
  {
    std::lock_guard lk(f.rb.mu);
    f.rb.on_envelope_hook = [&](const std::string&, const envelope& e) {
      if (e.payload.size() < size) return;
      std::lock_guard lk2(f.rb.mu);
      smalls_before = f.rb.count["a"];
    };
  }
  constexpr std::uint64_t small = 200;
  std::thread large([&] {
    envelope e = make_envelope(0);
    e.payload = patterned(0, size);
    ASSERT_TRUE(f.a->send("b", std::move(e)).has_value());
  });
  // The small ones start once the large one has begun to go out.
  ASSERT_TRUE(f.ra.wait([&] { return f.a->stats("b").messages_sent > 0; }, 30s));
  for (std::uint64_t i = 1; i <= small; ++i) ASSERT_TRUE(f.a->send("b", make_envelope(i)).has_value());
  large.join();
  ASSERT_TRUE(f.rb.wait([&] { return f.rb.count["a"] == small + 1; }, 120s));
  std::lock_guard lk(f.rb.mu);
  std::size_t large_ones = 0;
  for (const auto& e : f.rb.got["a"]) {
    if (e.payload.size() == size) {
      ++large_ones;
      EXPECT_TRUE(has_pattern(0, e.payload)) << "the payload arrived changed";
      EXPECT_EQ(e.topic, make_envelope(0).topic);
    } else {
      EXPECT_EQ(e.payload.size(), 8u);
    }
  }
  EXPECT_EQ(large_ones, 1u);
  EXPECT_GT(smalls_before, 0u) << "the small envelopes waited behind the large payload";
  const auto s = f.a->stats("b");
  EXPECT_LE(s.max_outstanding_bytes, oa.credit_window_bytes);
  EXPECT_EQ(s.messages_sent, small + (size + oa.chunk_bytes - 1) / oa.chunk_bytes);  // a chunk counts as one
  EXPECT_EQ(f.b->rejects().total(), 0u);
  EXPECT_EQ(f.ra.locked(f.ra.stalls, "b"), 0);
  EXPECT_EQ(f.rb.stalls["a"], 0);
  std::printf("%zu MiB in %llu chunks; %zu of %llu small envelopes arrived before it; at most %llu KiB outstanding\n",
              size >> 20, static_cast<unsigned long long>(s.messages_sent - small), smalls_before,
              static_cast<unsigned long long>(small), static_cast<unsigned long long>(s.max_outstanding_bytes >> 10));
}

TEST(Payloads, HalfAGigabyteArrivesWholeInChunksWhileOtherTrafficFlows) {
  large_payload_while_traffic_flows(std::size_t{512} << 20);
}

TEST(Payloads, TwoGigabytesArriveWholeIfMemoryAllows) {
  const std::size_t size = std::size_t{2} << 30;
  // The sender's payload and the receiver's copy, with room to spare.
  if (!memory_allows(3 * size)) GTEST_SKIP() << "less than 6 GiB of memory available (MemAvailable)";
  large_payload_while_traffic_flows(size);
}

// A peer that is gone hands back a chunked payload once, whole: the receiver delivers it only with
// its last chunk, whose receipt it still held.
TEST(Payloads, AChunkedPayloadNotDeliveredIsHandedBackWhole) {
  temp_dir dir;
  auto oa = opts(dir, "a", "b");
  auto ob = opts(dir, "b", "a");
  linked_pair f(oa, ob);
  {
    std::lock_guard lk(f.rb.mu);
    f.rb.hold_receipts = true;
  }
  const std::size_t size = 3 * oa.chunk_bytes + 5;
  envelope e = make_envelope(0);
  e.payload = patterned(7, size);
  ASSERT_TRUE(f.a->send("b", std::move(e)).has_value());
  ASSERT_TRUE(f.rb.wait([&] { return f.rb.count["a"] == 1; }, 30s));
  f.b->stop();  // its process ends with the receipt held: not delivered
  ASSERT_TRUE(f.ra.wait([&] { return !f.ra.undelivered["b"].empty(); }, 30s));
  std::lock_guard lk(f.ra.mu);
  ASSERT_EQ(f.ra.undelivered["b"].size(), 1u);
  const envelope& back = f.ra.undelivered["b"][0];
  EXPECT_EQ(back.payload.size(), size);
  EXPECT_TRUE(has_pattern(7, back.payload));
  EXPECT_EQ(back.chunk.of, 0u);
  EXPECT_EQ(back.topic, make_envelope(0).topic);
}

TEST(Memory, SixtyFourKiBPayloadsToASlowReceiverStayWithinTheByteWindow) {
  temp_dir dir;
  auto oa = opts(dir, "a", "b");
  oa.credit_window_bytes = 4 << 20;
  oa.heartbeat_timeout = 300ms;
  auto ob = opts(dir, "b", "a");
  ob.heartbeat_timeout = 300ms;
  linked_pair f(oa, ob);
  {
    std::lock_guard lk(f.rb.mu);  // the I/O thread reads them under this lock
    f.rb.hold_receipts = true;
    f.rb.keep = false;
  }
  std::atomic<bool> done{false};
  std::thread releaser([&] {  // a slow consumer: the 4 oldest receipts per millisecond (~250 MB/s)
    while (!done) {
      std::vector<std::shared_ptr<const void>> out;
      {
        std::unique_lock lk(f.rb.mu);
        f.rb.cv.wait_for(lk, 1ms, [&] { return done.load(); });  // the pace of the simulated work
        const std::size_t k = std::min<std::size_t>(4, f.rb.receipts.size());
        out.assign(f.rb.receipts.begin(), f.rb.receipts.begin() + static_cast<std::ptrdiff_t>(k));
        f.rb.receipts.erase(f.rb.receipts.begin(), f.rb.receipts.begin() + static_cast<std::ptrdiff_t>(k));
      }
    }
  });
  constexpr std::uint64_t n = 3000, size = 64 << 10;
  for (std::uint64_t i = 0; i < n; ++i) ASSERT_TRUE(f.a->send("b", make_envelope(i, size)).has_value());
  ASSERT_TRUE(f.rb.wait([&] { return f.rb.count["a"] == n; }, 60s));
  done = true;
  releaser.join();
  const auto s = f.a->stats("b");
  EXPECT_LE(s.max_outstanding_bytes, oa.credit_window_bytes);
  EXPECT_LE(f.b->stats("a").max_undelivered_bytes, oa.credit_window_bytes);
  EXPECT_GT(s.credit_waits, 0u);
  EXPECT_EQ(f.rb.order_errors, 0u);
  EXPECT_EQ(f.ra.locked(f.ra.stalls, "b"), 0);
  EXPECT_EQ(f.rb.locked(f.rb.stalls, "a"), 0);
  std::printf(
      "64 KiB x %llu to a slow receiver: at most %llu KiB outstanding at the sender, %llu KiB undelivered at the "
      "receiver\n",
      static_cast<unsigned long long>(n), static_cast<unsigned long long>(s.max_outstanding_bytes >> 10),
      static_cast<unsigned long long>(f.b->stats("a").max_undelivered_bytes >> 10));
}

// The connection from a to b swallows what a writes for a moment and is then cut (both ends
// closed), five times while a streams: ZeroMQ reconnects, what was in flight is gone, b finds the
// gap and a writes it again. Every envelope arrives once, in order, and no link is given up.
TEST(Retransmission, EnvelopesLostWhenConnectionsAreCutArriveExactlyOnceInOrder) {
  temp_dir dir;
  recorder ra, rb;
  rb.keep = false;
  auto b = transport::start(node_options("b", "tcp://127.0.0.1:*", {{"a", dir.ipc("a"), ""}}, 1000ms), rb.make());
  ASSERT_TRUE(b.has_value()) << b.error().what();
  tcp_proxy proxy((*b)->bound_endpoint());
  auto a = transport::start(node_options("a", dir.ipc("a"), {{"b", proxy.endpoint(), ""}}, 1000ms), ra.make());
  ASSERT_TRUE(a.has_value()) << a.error().what();
  ASSERT_TRUE((*a)->wait_until_up("b", 10s) && (*b)->wait_until_up("a", 10s));
  constexpr std::uint64_t n = 200000;
  std::thread sender([&] {
    for (std::uint64_t i = 0; i < n; ++i) ASSERT_TRUE((*a)->send("b", make_envelope(i, 64)).has_value());
  });
  for (int cut = 1; cut <= 5; ++cut) {
    ASSERT_TRUE(rb.wait([&] { return rb.count["a"] >= n * cut / 6; }, 30s));
    const auto before = proxy.swallowed();
    proxy.blackhole();
    ASSERT_TRUE(poll_until([&] { return proxy.swallowed() > before + 4096; }, 10s));
    proxy.cut();
  }
  sender.join();
  ASSERT_TRUE(rb.wait([&] { return rb.count["a"] == n; }, 30s)) << rb.count["a"];
  EXPECT_EQ(rb.order_errors, 0u);
  const auto s = (*a)->stats("b");
  EXPECT_EQ((*b)->stats("a").messages_received, n);
  EXPECT_EQ(s.lost_on_down, 0u);
  EXPECT_EQ(rb.locked(rb.downs, "a"), 0);
  EXPECT_GE(proxy.accepted(), 2 + 5);
  EXPECT_GE((*b)->stats("a").sequence_gaps, 1u);
  EXPECT_GT(s.resent, 0u);
  std::printf("5 cuts: %llu gaps found, %llu envelopes written again, %llu duplicates dropped\n",
              static_cast<unsigned long long>((*b)->stats("a").sequence_gaps),
              static_cast<unsigned long long>(s.resent), static_cast<unsigned long long>((*b)->stats("a").duplicates));
}

}  // namespace
}  // namespace banyan::runtime::test
