// Bad input sent by a raw ZeroMQ DEALER to a node's port: garbage, truncated, oversized, wrong
// version, unknown sender, stale, a sequence gap. Each is counted and logged, and the node keeps
// serving. The raw peer speaks wire version 3 by hand: it claims the name `b` in every frame and
// completes the handshake by naming the node's incarnation (`target`).
#include "helpers.hpp"

#include "envelope.capnp.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <zmq.h>

#include <algorithm>
#include <cstring>
#include <random>

namespace banyan::runtime::test {
namespace {

using bytes = std::vector<char>;

// A chunk's place (envelope::chunk); all zero: not a chunk.
struct chunk_at {
  std::uint64_t of = 0, total = 0, offset = 0;
};

bytes frame_bytes(std::uint16_t version, std::uint64_t incarnation, std::uint64_t target,
                  const std::vector<std::pair<std::uint64_t, std::uint32_t>>& envs /* sequence, payload size */,
                  const std::string& sender = "b", const std::vector<chunk_at>& chunks = {}) {
  capnp::MallocMessageBuilder mb;
  auto f = mb.initRoot<wire::Frame>();
  f.setVersion(version);
  f.setIncarnation(incarnation);
  f.setTarget(target);
  f.setSender(sender);
  f.setSession(1);
  f.setWindow(1024);
  f.setWindowBytes(1 << 20);
  f.setMaxFrame(1 << 20);
  f.setMaxPayload(1 << 20);
  auto list = f.initEnvelopes(static_cast<unsigned>(envs.size()));
  for (unsigned i = 0; i < envs.size(); ++i) {
    list[i].setTopic("t");
    list[i].setSequence(envs[i].first);
    list[i].setPayloadSize(envs[i].second);
    f.setSent(std::max<std::uint64_t>(f.getSent(), envs[i].first));
  }
  std::size_t n = 0;
  for (const auto& c : chunks) n += c.of != 0;
  if (n != 0) {
    auto list = f.initChunks(static_cast<unsigned>(n));
    unsigned at = 0;
    for (unsigned i = 0; i < chunks.size(); ++i) {
      if (chunks[i].of == 0) continue;
      list[at].setEnvelope(i);
      list[at].setOf(chunks[i].of);
      list[at].setTotal(chunks[i].total);
      list[at++].setOffset(chunks[i].offset);
    }
  }
  auto words = capnp::messageToFlatArray(mb);
  auto b = words.asChars();
  return bytes(b.begin(), b.end());
}

// A raw DEALER (with routing id `id`, which means nothing to a node), and a raw ROUTER bound where
// node `b` should be, so the test can read the node's frames (and learn its incarnation).
struct raw_peer {
  void* ctx = zmq_ctx_new();
  void* dealer = nullptr;
  void* router = nullptr;
  raw_peer(const std::string& id, const std::string& connect_to, const std::string& bind_at) {
    dealer = zmq_socket(ctx, ZMQ_DEALER);
    int zero = 0;
    zmq_setsockopt(dealer, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(dealer, ZMQ_ROUTING_ID, id.data(), id.size());
    zmq_connect(dealer, connect_to.c_str());
    if (!bind_at.empty()) {
      router = zmq_socket(ctx, ZMQ_ROUTER);
      zmq_setsockopt(router, ZMQ_LINGER, &zero, sizeof zero);
      zmq_bind(router, bind_at.c_str());
    }
  }
  ~raw_peer() {
    zmq_close(dealer);
    if (router) zmq_close(router);
    zmq_ctx_term(ctx);
  }
  void send(const std::vector<bytes>& parts) {
    for (std::size_t i = 0; i < parts.size(); ++i) {
      zmq_send(dealer, parts[i].data(), parts[i].size(), i + 1 < parts.size() ? ZMQ_SNDMORE : 0);
    }
  }
  // The incarnation in the next frame the node sends to `b` (bounded wait).
  std::uint64_t node_incarnation() { return next_frame().first; }
  // The next frame the node sends to `b`: its incarnation and its `resendFrom` (bounded wait).
  std::pair<std::uint64_t, std::uint64_t> next_frame() {
    zmq_pollitem_t it{router, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&it, 1, 10000) != 1) return {0, 0};
    std::vector<bytes> parts;
    for (int more = 1; more;) {
      zmq_msg_t m;
      zmq_msg_init(&m);
      zmq_msg_recv(&m, router, 0);
      auto* d = static_cast<char*>(zmq_msg_data(&m));
      parts.emplace_back(d, d + zmq_msg_size(&m));
      more = zmq_msg_more(&m);
      zmq_msg_close(&m);
    }
    if (parts.size() != 3) return {0, 0};
    std::vector<capnp::word> w(parts[1].size() / 8);
    std::memcpy(w.data(), parts[1].data(), w.size() * 8);
    capnp::FlatArrayMessageReader r(kj::arrayPtr(w.data(), w.size()));
    auto f = r.getRoot<wire::Frame>();
    return {f.getIncarnation(), f.getResendFrom()};
  }
};

struct node_fixture {
  temp_dir dir;
  recorder rec;
  std::unique_ptr<transport> node;
  node_fixture() {
    transport_options o;
    o.self = "a";
    o.bind_endpoint = dir.ipc("a");
    o.peers = {{"b", dir.ipc("b"), ""}};
    o.max_frame_bytes = 64 << 10;
    o.max_payload_bytes = o.max_batch_bytes = 32 << 10;
    auto t = transport::start(o, rec.make());
    EXPECT_TRUE(t.has_value());
    node = std::move(*t);
  }
  // Waits until the counter read by `get` reaches `n` (bounded). Log lines wake the wait, but the
  // log is rate-limited, so the counter is also re-read every 20 ms.
  template <class Get>
  bool counted(Get get, std::uint64_t n) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (rec.wait([&] { return get(node->rejects()) >= n; }, 20ms)) return true;
    }
    return false;
  }
};

TEST(BadFrames, GarbageIsCountedLoggedAndTheNodeKeepsServing) {
  node_fixture f;
  raw_peer raw("b", f.dir.ipc("a"), f.dir.ipc("b"));
  const std::uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 20; ++i) {
    bytes junk(8 + rng() % 2000);
    for (auto& c : junk) c = static_cast<char>(rng());
    junk[0] = junk[1] = junk[2] = junk[3] = char(0x7f);  // a segment count no frame of ours has
    raw.send({junk, junk});
  }
  raw.send({bytes{'x'}});                          // one frame instead of two
  raw.send({bytes{'x'}, bytes{'y'}, bytes{'z'}});  // three
  ASSERT_TRUE(f.counted([](const reject_stats& r) { return r.garbage; }, 22));
  EXPECT_EQ(f.node->rejects().garbage, 22u);
  EXPECT_TRUE(f.rec.logged("rejected garbage frame from connection "));
  {
    std::lock_guard lk(f.rec.mu);
    const auto lines = std::count_if(f.rec.logs.begin(), f.rec.logs.end(), [](const std::string& l) {
      return l.find("rejected garbage") != std::string::npos;
    });
    EXPECT_EQ(lines, 10) << "the first 10 rejections per reason are logged, then powers of ten";
  }
  // Still serving: a well-formed data frame is delivered.
  const auto inc = raw.node_incarnation();
  ASSERT_NE(inc, 0u);
  raw.send({frame_bytes(wire_version, 42, inc, {{1, 3}}), bytes{'a', 'b', 'c'}});
  ASSERT_TRUE(f.rec.wait([&] { return f.rec.got["b"].size() == 1; }));
  EXPECT_EQ(f.rec.got["b"][0].payload.text(), "abc");
}

TEST(BadFrames, TruncatedHeadersAndPayloadsAreCounted) {
  node_fixture f;
  raw_peer raw("b", f.dir.ipc("a"), f.dir.ipc("b"));
  const auto inc = raw.node_incarnation();
  auto good = frame_bytes(wire_version, 42, inc, {{1, 3}, {2, 5}});
  raw.send({bytes(good.begin(), good.begin() + good.size() / 2), bytes(8)});  // header cut in half
  raw.send({bytes(good.begin(), good.begin() + 4), bytes(8)});                // less than one word
  raw.send({good, bytes(5)});                                                 // payloads need 8 bytes
  ASSERT_TRUE(f.counted([](const reject_stats& r) { return r.truncated; }, 3));
  EXPECT_EQ(f.node->rejects().truncated, 3u);
  EXPECT_TRUE(f.rec.logged("rejected truncated frame"));
  raw.send({good, bytes(8, 'p')});
  ASSERT_TRUE(f.rec.wait([&] { return f.rec.got["b"].size() == 2; }));
  EXPECT_EQ(f.node->rejects().total(), 3u);
}

TEST(BadFrames, OversizedFramesAreCounted) {
  node_fixture f;
  raw_peer raw("b", f.dir.ipc("a"), f.dir.ipc("b"));
  const auto inc = raw.node_incarnation();
  raw.send({frame_bytes(wire_version, 42, inc, {{1, 100000}}), bytes(100000)});  // limit is 64 KiB
  ASSERT_TRUE(f.counted([](const reject_stats& r) { return r.oversized; }, 1));
  EXPECT_TRUE(f.rec.logged("rejected oversized frame"));
  raw.send({frame_bytes(wire_version, 42, inc, {{1, 1}}), bytes(1)});
  ASSERT_TRUE(f.rec.wait([&] { return f.rec.got["b"].size() == 1; }));
}

TEST(BadFrames, EnvelopesOfAnotherWireVersionAreCounted) {
  node_fixture f;
  raw_peer raw("b", f.dir.ipc("a"), f.dir.ipc("b"));
  const auto inc = raw.node_incarnation();
  raw.send({frame_bytes(wire_version + 1, 42, inc, {{1, 1}}), bytes(1)});
  raw.send({frame_bytes(0, 42, inc, {{1, 1}}), bytes(1)});
  ASSERT_TRUE(f.counted([](const reject_stats& r) { return r.version; }, 2));
  EXPECT_TRUE(f.rec.logged("wire version " + std::to_string(wire_version + 1) + ", this node speaks " +
                           std::to_string(wire_version)));
  EXPECT_EQ(f.rec.locked(f.rec.ups, "b"), 0);  // a frame of another version does not open a session
  raw.send({frame_bytes(wire_version, 42, inc, {{1, 1}}), bytes(1)});
  ASSERT_TRUE(f.rec.wait([&] { return f.rec.got["b"].size() == 1; }));
}

TEST(BadFrames, UnknownSendersAndStaleDataAreCounted) {
  node_fixture f;
  raw_peer stranger("x", f.dir.ipc("a"), "");
  stranger.send({frame_bytes(wire_version, 42, 0, {}, "mallory"), bytes()});
  ASSERT_TRUE(f.counted([](const reject_stats& r) { return r.unknown_peer; }, 1));
  EXPECT_TRUE(f.rec.logged("from `mallory` (connection "));
  EXPECT_TRUE(f.rec.logged("not a peer of this node"));
  raw_peer raw("b", f.dir.ipc("a"), f.dir.ipc("b"));
  const auto inc = raw.node_incarnation();
  raw.send({frame_bytes(wire_version, 42, inc, {}), bytes()});  // the handshake: `b` is up
  ASSERT_TRUE(f.rec.wait([&] { return f.rec.ups["b"] == 1; }));
  raw.send({frame_bytes(wire_version, 42, inc + 1, {{1, 1}}), bytes(1)});  // for another incarnation
  ASSERT_TRUE(f.counted([](const reject_stats& r) { return r.stale; }, 1));
  EXPECT_EQ(f.rec.locked(f.rec.count, "b"), 0u);
}

// Envelope 3 arrives without 2: it is not delivered out of order; the node asks for everything from
// 2 again (in the `resendFrom` of its frames), and delivers 2 and 3 once they come.
TEST(BadFrames, ASequenceGapIsLoggedAndRepairedByAResend) {
  node_fixture f;
  raw_peer raw("b", f.dir.ipc("a"), f.dir.ipc("b"));
  const auto inc = raw.node_incarnation();
  raw.send({frame_bytes(wire_version, 42, inc, {{1, 0}}), bytes()});
  raw.send({frame_bytes(wire_version, 42, inc, {{3, 0}}), bytes()});
  ASSERT_TRUE(f.rec.wait([&] { return f.rec.logged_locked("sequence 2 missing"); }));
  EXPECT_EQ(f.rec.locked(f.rec.count, "b"), 1u);
  EXPECT_EQ(f.node->stats("b").sequence_gaps, 1u);
  bool asked = false;
  for (int i = 0; i < 50 && !asked; ++i) asked = raw.next_frame().second == 2;
  EXPECT_TRUE(asked) << "the node's frames ask for a resend from 2";
  raw.send({frame_bytes(wire_version, 42, inc, {{2, 0}, {3, 0}}), bytes()});
  ASSERT_TRUE(f.rec.wait([&] { return f.rec.count["b"] == 3; }));
  EXPECT_EQ(f.rec.order_errors, 0u);
  EXPECT_EQ(f.node->stats("b").duplicates, 1u);  // the first 3, ahead of the gap
}

// Chunks of a large payload out of place: each is refused with a reason, counted and logged; the
// payload it belonged to is dropped, and what comes after is delivered as usual.
TEST(BadFrames, ChunksOutOfPlaceAreCountedAndTheLinkGoesOn) {
  node_fixture f;  // max_payload_bytes: 32 KiB
  raw_peer raw("b", f.dir.ipc("a"), f.dir.ipc("b"));
  const auto inc = raw.node_incarnation();
  auto send = [&](std::uint64_t seq, const std::string& body, chunk_at c) {
    raw.send({frame_bytes(wire_version, 42, inc, {{seq, static_cast<std::uint32_t>(body.size())}}, "b", {c}),
              bytes(body.begin(), body.end())});
  };
  send(1, "abc", {1, 6, 0});  // a payload of 6 bytes in two chunks: delivered once, whole
  send(2, "def", {1, 6, 3});
  ASSERT_TRUE(f.rec.wait([&] { return f.rec.got["b"].size() == 1; }));
  EXPECT_EQ(f.rec.locked(f.rec.got, "b")[0].payload.text(), "abcdef");
  send(3, "ghi", {3, 100, 0});      // a payload starts...
  send(4, "jkl", {3, 100, 10});     // ...and a chunk skips ahead: refused, the payload dropped
  send(5, "mno", {3, 100, 3});      // ...so the next has nothing to go on
  send(6, "pqr", {6, 1 << 20, 0});  // larger than this node's max_payload_bytes
  send(7, "stu", {5, 9, 0});        // a first chunk that does not name itself
  send(8, "vwx", {8, 3, 0});        // a "chunk" that is its whole payload
  ASSERT_TRUE(f.counted([](const reject_stats& r) { return r.chunks; }, 5));
  EXPECT_TRUE(f.rec.logged("out of place (3 bytes had arrived)"));
  EXPECT_TRUE(f.rec.logged("no payload is being assembled from that sequence"));
  EXPECT_TRUE(f.rec.logged("larger than max_payload_bytes"));
  EXPECT_TRUE(f.rec.logged("a first chunk must name its own sequence"));
  EXPECT_TRUE(f.rec.logged("a first chunk must hold part of its payload"));
  send(9, "yz", {});  // the link goes on
  ASSERT_TRUE(f.rec.wait([&] { return f.rec.got["b"].size() == 2; }));
  EXPECT_EQ(f.rec.locked(f.rec.got, "b")[1].payload.text(), "yz");
  EXPECT_EQ(f.node->rejects().chunks, 5u);
  EXPECT_EQ(f.node->rejects().total(), 5u);
}

}  // namespace
}  // namespace banyan::runtime::test
