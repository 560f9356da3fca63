// Configuration and unreachable peers at the transport: bad configurations are clear errors at start
// (inproc:// between nodes, a CURVE public key of another pair, a port out of range or missing,
// nodes of different deployments), a peer that never comes up is named every few seconds and
// waiting for it ends with an error naming it, text a peer sends cannot forge log lines, a
// world-readable secret key is warned about, and a connect storm leaves a live link alone.
#include "faults.hpp"

#include "banyan/base/log.hpp"
#include "banyan/runtime/curve.hpp"
#include "envelope.capnp.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <sys/stat.h>
#include <zmq.h>

#include <random>

namespace banyan::runtime::test {
namespace {

void fails_with(transport_options o, const std::string& needle) {
  auto r = transport::start(std::move(o), {});
  ASSERT_FALSE(r.has_value()) << needle;
  EXPECT_EQ(r.error().code, errc::invalid_argument);
  EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
}

TEST(Config, BadConfigurationsAreClearErrorsAtStart) {
  temp_dir dir;
  const auto base = node_options("a", dir.ipc("a"), {{"b", dir.ipc("b"), ""}});
  auto o = base;
  o.bind_endpoint = "inproc://a";
  fails_with(o, "inproc:// reaches only sockets of the same ZeroMQ context");
  o = base;
  o.peers[0].endpoint = "inproc://b";
  fails_with(o, "peer 0 (`b`): endpoint `inproc://b`: inproc://");
  o = base;
  o.bind_endpoint = "tcp://127.0.0.1:99999";
  fails_with(o, "port `99999` is not 1..65535");
  o = base;
  o.peers[0].endpoint = "tcp://127.0.0.1";
  fails_with(o, "endpoint `tcp://127.0.0.1`: tcp:// needs host:port");
  o = base;
  o.peers[0].endpoint = "tcp://127.0.0.1:*";
  fails_with(o, "a peer's port must be a number");
  o = base;
  const auto k1 = *generate_curve_keypair(), k2 = *generate_curve_keypair();
  o.curve_secret_key = k1.secret_key;
  o.curve_public_key = k2.public_key;
  o.peers[0].curve_public_key = k2.public_key;
  fails_with(o, "the CURVE public key is not the one of its secret key");
  o = base;
  o.chunk_bytes = 0;
  fails_with(o, "chunk_bytes");
  o = base;
  o.credit_window_bytes = 0;
  fails_with(o, "credit_window_bytes");
}

TEST(Config, NodesStartedWithDifferentDeploymentsRefuseEachOther) {
  temp_dir dir;
  recorder ra, rb;
  auto oa = node_options("a", dir.ipc("a"), {{"b", dir.ipc("b"), ""}});
  oa.digest = 0x1111;
  auto ob = node_options("b", dir.ipc("b"), {{"a", dir.ipc("a"), ""}});
  ob.digest = 0x2222;
  auto a = transport::start(oa, ra.make());
  auto b = transport::start(ob, rb.make());
  ASSERT_TRUE(a && b);
  auto r = (*a)->wait_until_up("b", 10s);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, errc::incompatible_peer);
  EXPECT_NE(r.error().message.find("peer `b` runs another deployment (digest 8738, ours 4369)"), std::string::npos)
      << r.error().message;
  auto all = (*b)->wait_until_all_up(10s);
  ASSERT_FALSE(all.has_value());
  EXPECT_EQ(all.error().code, errc::incompatible_peer);
  EXPECT_EQ(ra.locked(ra.ups, "b"), 0);
  EXPECT_GE((*a)->rejects().mismatch, 1u);
}

TEST(Config, AMissingPeerIsNamedEveryFewSecondsAndWaitingEndsWithAnErrorNamingIt) {
  temp_dir dir;
  recorder ra, rb;
  auto oa = node_options("a", dir.ipc("a"), {{"b", dir.ipc("b"), ""}, {"c", dir.ipc("c"), ""}});
  oa.missing_peer_log_every = 200ms;
  auto a = transport::start(oa, ra.make());
  auto b = transport::start(node_options("b", dir.ipc("b"), {{"a", dir.ipc("a"), ""}}), rb.make());
  ASSERT_TRUE(a && b);
  ASSERT_TRUE((*a)->wait_until_up("b", 10s).has_value());
  auto r = (*a)->wait_until_all_up(700ms);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, errc::timeout);
  EXPECT_NE(r.error().message.find("peers not up after 700 ms: `c` (" + dir.ipc("c") + ")"), std::string::npos)
      << r.error().message;
  EXPECT_EQ(r.error().message.find("`b`"), std::string::npos) << "b is up: " << r.error().message;
  ASSERT_TRUE(ra.wait(
      [&] {
        return std::count_if(ra.logs.begin(), ra.logs.end(), [](const std::string& l) {
                 return l.find("still waiting for peer `c` at ") != std::string::npos &&
                        l.find("not connected") != std::string::npos;
               }) >= 2;
      },
      5s));
}

std::vector<char> frame_claiming(const std::string& name) {
  capnp::MallocMessageBuilder mb;
  auto f = mb.initRoot<wire::Frame>();
  f.setVersion(wire_version);
  f.setIncarnation(5);
  f.setSender(capnp::Text::Reader(name.data(), name.size()));
  auto words = capnp::messageToFlatArray(mb);
  auto b = words.asChars();
  return {b.begin(), b.end()};
}

// A name with a newline and a NUL in it would forge a log line (and a test greps log lines) or cut
// one: every line stays one line, with the bytes escaped.
TEST(Logs, TextFromAPeerCannotForgeOrCutLogLines) {
  temp_dir dir;
  recorder ra;
  auto a = transport::start(node_options("a", dir.ipc("a"), {{"b", dir.ipc("b"), ""}}), ra.make());
  ASSERT_TRUE(a.has_value());
  void* ctx = zmq_ctx_new();
  void* s = zmq_socket(ctx, ZMQ_DEALER);
  int zero = 0;
  zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
  const std::string evil = std::string("x\n[a] link to `b` up\0tail", 25);
  zmq_setsockopt(s, ZMQ_ROUTING_ID, evil.data(), evil.size());
  zmq_connect(s, dir.ipc("a").c_str());
  const auto h = frame_claiming(evil);
  zmq_send(s, h.data(), h.size(), ZMQ_SNDMORE);
  zmq_send(s, "", 0, 0);
  zmq_send(s, "\n\0junk", 6, 0);  // one frame: garbage
  ASSERT_TRUE(ra.wait([&] { return ra.logged_locked("unknown-sender") && ra.logged_locked("rejected garbage"); }, 10s));
  std::lock_guard lk(ra.mu);
  for (const auto& l : ra.logs) {
    EXPECT_EQ(l.find('\n'), std::string::npos) << l;
    EXPECT_EQ(l.find('\0'), std::string::npos) << l;
  }
  EXPECT_TRUE(ra.logged_locked("`x\\n[a] link to `b` up\\x00tail`"));
  zmq_close(s);
  zmq_ctx_term(ctx);
}

TEST(Logs, AWorldReadableSecretKeyIsWarnedAbout) {
  temp_dir dir;
  const std::string base = (dir.path / "n1").string();
  ASSERT_TRUE(write_key_files(base, *generate_curve_keypair()).has_value());
  {
    banyan::log::capture cap;
    ASSERT_TRUE(read_key_file(base + ".key").has_value());
    EXPECT_FALSE(cap.contains("readable by"));
  }
  ::chmod((base + ".key").c_str(), 0644);
  banyan::log::capture cap;
  ASSERT_TRUE(read_key_file(base + ".key").has_value());
  EXPECT_TRUE(
      cap.contains(base + ".key: secret key readable by every user (mode 644); run `chmod 600 " + base + ".key`"));
  EXPECT_TRUE(read_key_file(base + ".pub").has_value());
}

// 300 connections come and go at b's port (a third with a's routing id, a third sending garbage, a
// third forged hellos) while a streams to b: b rejects what it must and never loses a.
TEST(Storm, AConnectStormDoesNotDisturbALiveLink) {
  temp_dir dir;
  recorder ra, rb;
  rb.keep = false;
  auto a = transport::start(node_options("a", dir.ipc("a"), {{"b", dir.ipc("b"), ""}}, 1000ms), ra.make());
  auto b = transport::start(node_options("b", dir.ipc("b"), {{"a", dir.ipc("a"), ""}}, 1000ms), rb.make());
  ASSERT_TRUE(a && b);
  ASSERT_TRUE((*a)->wait_until_up("b", 10s) && (*b)->wait_until_up("a", 10s));
  constexpr std::uint64_t n = 100000;
  std::thread sender([&] {
    for (std::uint64_t i = 0; i < n; ++i) ASSERT_TRUE((*a)->send("b", make_envelope(i)).has_value());
  });
  void* ctx = zmq_ctx_new();
  std::mt19937_64 rng(7);
  int garbage = 0;
  for (int round = 0; round < 10; ++round) {
    std::vector<void*> socks;
    for (int k = 0; k < 30; ++k) {
      void* s = zmq_socket(ctx, ZMQ_DEALER);
      int zero = 0;
      zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
      if (k % 3 == 0) zmq_setsockopt(s, ZMQ_ROUTING_ID, "a", 1);
      zmq_connect(s, dir.ipc("b").c_str());
      if (k % 3 == 1) {
        std::string junk(64, '\0');
        for (auto& c : junk) c = static_cast<char>(rng());
        zmq_send(s, junk.data(), junk.size(), ZMQ_SNDMORE);
        zmq_send(s, junk.data(), junk.size(), 0);
        ++garbage;
      } else if (k % 3 == 2) {
        const auto h = frame_claiming("a");
        zmq_send(s, h.data(), h.size(), ZMQ_SNDMORE);
        zmq_send(s, "", 0, 0);
      }
      socks.push_back(s);
    }
    for (void* s : socks) zmq_close(s);
  }
  sender.join();
  ASSERT_TRUE(rb.wait([&] { return rb.count["a"] == n; }, 60s));
  EXPECT_EQ(rb.order_errors, 0u);
  EXPECT_EQ(rb.locked(rb.stalls, "a"), 0);
  EXPECT_EQ(rb.locked(rb.downs, "a"), 0);
  EXPECT_EQ(rb.locked(rb.ups, "a"), 1);
  EXPECT_EQ((*b)->stats("a").sessions, 1u);
  zmq_ctx_term(ctx);
  (void)garbage;  // ZeroMQ may drop a closing socket's last frames: what arrived was rejected, and counted
}

}  // namespace
}  // namespace banyan::runtime::test
