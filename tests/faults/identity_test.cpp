// Link identity: no newcomer takes over a live peer's link, and liveness is two-way.
// The attacks that stalled a cluster: a DEALER claiming a node's routing id, a forged heartbeat
// with another incarnation, an authorised CURVE key claiming another node's name, and a link that
// one side hears and the other does not.
#include "faults.hpp"

#include "banyan/runtime/curve.hpp"
#include "envelope.capnp.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <zmq.h>

#include <cstring>
#include <random>

namespace banyan::runtime::test {
namespace {

// A heartbeat frame claiming `name`, as a stranger would forge it.
std::vector<char> forged_heartbeat(const std::string& name, std::uint64_t incarnation, std::uint64_t target,
                                   std::uint64_t digest = 0) {
  capnp::MallocMessageBuilder mb;
  auto f = mb.initRoot<wire::Frame>();
  f.setVersion(wire_version);
  f.setDigest(digest);
  f.setIncarnation(incarnation);
  f.setTarget(target);
  f.setSender(name);
  f.setSession(1);
  f.setControl(true);
  f.setSuspect(true);  // and it pretends not to hear the node, too
  auto words = capnp::messageToFlatArray(mb);
  auto b = words.asChars();
  return {b.begin(), b.end()};
}

struct raw_dealer {
  void* ctx = zmq_ctx_new();
  void* s = nullptr;
  raw_dealer(const std::string& routing_id, const std::string& endpoint, const curve_keypair* keys = nullptr,
             const std::string& server_key = "") {
    s = zmq_socket(ctx, ZMQ_DEALER);
    int zero = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    if (!routing_id.empty()) zmq_setsockopt(s, ZMQ_ROUTING_ID, routing_id.data(), routing_id.size());
    if (keys) {
      zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, server_key.c_str(), 40);
      zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, keys->public_key.c_str(), 40);
      zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, keys->secret_key.c_str(), 40);
    }
    zmq_connect(s, endpoint.c_str());
  }
  ~raw_dealer() {
    zmq_close(s);
    zmq_ctx_term(ctx);
  }
  void send(const std::vector<char>& header) {
    zmq_send(s, header.data(), header.size(), ZMQ_SNDMORE);
    zmq_send(s, "", 0, 0);
  }
};

// a streams to b while strangers claim to be a at b's port; b must keep hearing a, lose nothing,
// and never take a for stalled or gone.
void stream_while(transport& a, recorder& rb, std::uint64_t n, const std::function<void(std::uint64_t)>& during) {
  for (std::uint64_t i = 0; i < n; ++i) {
    ASSERT_TRUE(a.send("b", make_envelope(i)).has_value());
    if (i % 5000 == 0) during(i);
  }
  ASSERT_TRUE(rb.wait([&] { return rb.count["a"] == n; }, 60s));
}

TEST(Identity, AStrangerWithAPeersRoutingIdOrAForgedHeartbeatCannotTakeOverItsLink) {
  temp_dir dir;
  recorder ra, rb;
  rb.keep = false;
  auto a = transport::start(node_options("a", dir.ipc("a"), {{"b", dir.ipc("b"), ""}}, 1000ms), ra.make());
  auto b = transport::start(node_options("b", dir.ipc("b"), {{"a", dir.ipc("a"), ""}}, 1000ms), rb.make());
  ASSERT_TRUE(a && b);
  ASSERT_TRUE((*a)->wait_until_up("b", 10s) && (*b)->wait_until_up("a", 10s));
  std::vector<std::unique_ptr<raw_dealer>> strangers;
  std::mt19937_64 rng(22);
  constexpr std::uint64_t n = 60000;
  stream_while(**a, rb, n, [&](std::uint64_t i) {
    // A DEALER with routing id `a` that sends nothing (ZMQ_ROUTER_HANDOVER gave it a's route), then
    // forged heartbeats: a random incarnation, and even one that names b's real incarnation (which
    // a stranger cannot know, but a live link must hold against it too).
    strangers.push_back(std::make_unique<raw_dealer>("a", dir.ipc("b")));
    if (i >= 10000) strangers.back()->send(forged_heartbeat("a", rng() | 1, 0));
    if (i >= 20000) strangers.back()->send(forged_heartbeat("a", rng() | 1, rng()));
  });
  EXPECT_EQ(rb.order_errors, 0u);
  EXPECT_EQ(rb.locked(rb.stalls, "a"), 0);
  EXPECT_EQ(rb.locked(rb.downs, "a"), 0);
  EXPECT_EQ(rb.locked(rb.ups, "a"), 1);
  EXPECT_EQ((*b)->stats("a").sequence_gaps, 0u);
  // The forged frames that named b's real incarnation... could not: b never told them. Those with
  // another target are hellos (ignored); none of them bound the name.
  EXPECT_EQ((*b)->stats("a").sessions, 1u);
}

// A stranger claims to be a, with another deployment's digest, before a has started and while it
// runs: no handshake, so no claim is believed. Nobody logs "runs another deployment", a and b link
// up and exchange exactly.
TEST(Identity, AForgedDigestWithoutAHandshakeIsNoNews) {
  temp_dir dir;
  recorder ra, rb;
  rb.keep = false;
  auto ob = node_options("b", dir.ipc("b"), {{"a", dir.ipc("a"), ""}}, 1000ms);
  ob.digest = 0x1111;
  auto b = transport::start(ob, rb.make());
  ASSERT_TRUE(b);
  raw_dealer stranger("", dir.ipc("b"));
  std::mt19937_64 rng(37);
  for (int i = 0; i < 50; ++i) stranger.send(forged_heartbeat("a", rng() | 1, i % 2 ? rng() : 0, 0x2222));
  auto oa = node_options("a", dir.ipc("a"), {{"b", dir.ipc("b"), ""}}, 1000ms);
  oa.digest = 0x1111;
  auto a = transport::start(oa, ra.make());
  ASSERT_TRUE(a);
  ASSERT_TRUE((*a)->wait_until_up("b", 10s).has_value());
  ASSERT_TRUE((*b)->wait_until_up("a", 10s).has_value());
  for (std::uint64_t i = 0; i < 1000; ++i) {
    ASSERT_TRUE((*a)->send("b", make_envelope(i)).has_value());
    if (i % 100 == 0) stranger.send(forged_heartbeat("a", rng() | 1, 0, 0x2222));
  }
  ASSERT_TRUE(rb.wait([&] { return rb.count["a"] == 1000; }));
  EXPECT_EQ(rb.order_errors, 0u);
  EXPECT_EQ((*b)->rejects().mismatch, 0u);
  EXPECT_FALSE(rb.logged("runs another deployment"));
  EXPECT_EQ(rb.locked(rb.ups, "a"), 1);
  EXPECT_EQ(rb.locked(rb.downs, "a"), 0);
}

TEST(Identity, AForgedFrameNamingTheNodesIncarnationIsRefusedWhileThePeerIsLive) {
  temp_dir dir;
  recorder ra, rb;
  rb.keep = false;
  auto a = transport::start(node_options("a", dir.ipc("a"), {{"b", dir.ipc("b"), ""}}, 1000ms), ra.make());
  // b's incarnation as an attacker that could read it would: from the frames b sends to a's port.
  void* ctx = zmq_ctx_new();
  void* spy = zmq_socket(ctx, ZMQ_ROUTER);
  int zero = 0;
  zmq_setsockopt(spy, ZMQ_LINGER, &zero, sizeof zero);
  ASSERT_EQ(zmq_bind(spy, dir.ipc("spy").c_str()), 0);
  auto b = transport::start(
      node_options("b", dir.ipc("b"), {{"a", dir.ipc("a"), ""}, {"spyee", dir.ipc("spy"), ""}}, 1000ms), rb.make());
  ASSERT_TRUE(a && b);
  ASSERT_TRUE((*b)->wait_until_up("a", 10s) && (*a)->wait_until_up("b", 10s));
  std::uint64_t b_incarnation = 0;
  {
    zmq_pollitem_t it{spy, 0, ZMQ_POLLIN, 0};
    ASSERT_EQ(zmq_poll(&it, 1, 10000), 1);
    std::vector<zmq_msg_t> parts(3);
    for (auto& m : parts) {
      zmq_msg_init(&m);
      zmq_msg_recv(&m, spy, 0);
    }
    std::vector<capnp::word> w(zmq_msg_size(&parts[1]) / 8);
    std::memcpy(w.data(), zmq_msg_data(&parts[1]), w.size() * 8);
    capnp::FlatArrayMessageReader r(kj::arrayPtr(w.data(), w.size()));
    b_incarnation = r.getRoot<wire::Frame>().getIncarnation();
    for (auto& m : parts) zmq_msg_close(&m);
  }
  raw_dealer stranger("", dir.ipc("b"));
  stranger.send(forged_heartbeat("a", 12345, b_incarnation));
  ASSERT_TRUE(rb.wait([&] { return rb.logged_locked("rejected impostor frame from `a`"); }, 10s));
  EXPECT_EQ((*b)->rejects().impostor, 1u);
  for (std::uint64_t i = 0; i < 1000; ++i) ASSERT_TRUE((*a)->send("b", make_envelope(i)).has_value());
  ASSERT_TRUE(rb.wait([&] { return rb.count["a"] == 1000; }));
  EXPECT_EQ(rb.locked(rb.ups, "a"), 1);
  EXPECT_EQ(rb.locked(rb.downs, "a"), 0);
  b->reset();
  zmq_close(spy);
  zmq_ctx_term(ctx);
}

// c holds a key that b authorises (c is b's peer), and claims to be a: refused as an impostor, and
// a's link to b goes on untouched.
TEST(Identity, AnAuthorisedCurveKeyClaimingAnotherNodesNameIsRefused) {
  temp_dir dir;
  const auto ka = *generate_curve_keypair(), kb = *generate_curve_keypair(), kc = *generate_curve_keypair();
  auto curve = [&](transport_options o, const curve_keypair& mine, std::vector<const curve_keypair*> peers) {
    o.curve_public_key = mine.public_key;
    o.curve_secret_key = mine.secret_key;
    for (std::size_t i = 0; i < o.peers.size(); ++i) {
      o.peers[i].curve_public_key = peers[i]->public_key;
      o.authorized_keys.push_back(peers[i]->public_key);
    }
    return o;
  };
  recorder ra, rb;
  rb.keep = false;
  auto a =
      transport::start(curve(node_options("a", dir.ipc("a"), {{"b", dir.ipc("b"), ""}}, 1000ms), ka, {&kb}), ra.make());
  auto b = transport::start(
      curve(node_options("b", dir.ipc("b"), {{"a", dir.ipc("a"), ""}, {"c", dir.ipc("c"), ""}}, 1000ms), kb,
            {&ka, &kc}),
      rb.make());
  ASSERT_TRUE(a.has_value()) << a.error().what();
  ASSERT_TRUE(b.has_value()) << b.error().what();
  ASSERT_TRUE((*a)->wait_until_up("b", 10s) && (*b)->wait_until_up("a", 10s));
  std::vector<std::unique_ptr<raw_dealer>> c_claims;
  stream_while(**a, rb, 30000, [&](std::uint64_t) {
    // No routing id of its own: ZeroMQ refuses a second connection with a routing id already in
    // use (the first would be the only one heard), and each claim is to be heard and refused.
    c_claims.push_back(std::make_unique<raw_dealer>("", dir.ipc("b"), &kc, kb.public_key));
    c_claims.back()->send(forged_heartbeat("a", 777, 0));
  });
  // Each claim is refused and logged (fewer than 10, so none is left out of the log).
  ASSERT_TRUE(rb.wait(
      [&] {
        return static_cast<std::size_t>(std::count_if(rb.logs.begin(), rb.logs.end(), [](const std::string& l) {
                 return l.find("its CURVE key belongs to `c`") != std::string::npos;
               })) == c_claims.size();
      },
      10s))
      << (*b)->rejects().impostor << " of " << c_claims.size();
  EXPECT_EQ((*b)->rejects().impostor, c_claims.size());
  EXPECT_EQ(rb.order_errors, 0u);
  EXPECT_EQ(rb.locked(rb.stalls, "a"), 0);
  EXPECT_EQ(rb.locked(rb.downs, "a"), 0);
}

// a's connections to b go dark (a proxy swallows them without closing): b no longer hears a, but a
// still hears b. b says so in its frames; a reconnects, and everything a sent arrives exactly once.
TEST(Liveness, ANodeThatIsHeardButNotHearingReconnectsAndLosesNothing) {
  temp_dir dir;
  recorder ra, rb;
  rb.keep = false;
  auto ob = node_options("b", "tcp://127.0.0.1:*", {{"a", dir.ipc("a"), ""}});
  auto b = transport::start(ob, rb.make());
  ASSERT_TRUE(b.has_value()) << b.error().what();
  tcp_proxy proxy((*b)->bound_endpoint());
  auto a = transport::start(node_options("a", dir.ipc("a"), {{"b", proxy.endpoint(), ""}}, 300ms), ra.make());
  ASSERT_TRUE(a.has_value()) << a.error().what();
  ASSERT_TRUE((*a)->wait_until_up("b", 10s) && (*b)->wait_until_up("a", 10s));
  constexpr std::uint64_t n = 20000;
  for (std::uint64_t i = 0; i < n / 2; ++i) ASSERT_TRUE((*a)->send("b", make_envelope(i)).has_value());
  proxy.blackhole();
  for (std::uint64_t i = n / 2; i < n; ++i) ASSERT_TRUE((*a)->send("b", make_envelope(i)).has_value());
  ASSERT_TRUE(rb.wait([&] { return rb.count["a"] == n; }, 30s)) << rb.count["a"];
  EXPECT_EQ(rb.order_errors, 0u);
  EXPECT_GE((*a)->stats("b").reconnects, 1u);
  EXPECT_TRUE(ra.logged("reconnecting to peer `b`: it has not heard us"));
  EXPECT_EQ(ra.locked(ra.downs, "b"), 0);
  EXPECT_EQ(rb.locked(rb.downs, "a"), 0);
  EXPECT_EQ((*a)->stats("b").lost_on_down, 0u);
}

}  // namespace
}  // namespace banyan::runtime::test
