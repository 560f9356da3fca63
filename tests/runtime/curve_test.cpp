// CURVE: authorised peers link and exchange envelopes; a peer whose key is not authorised is
// rejected at the handshake and logged. Key files round-trip.
#include "helpers.hpp"

#include "banyan/runtime/curve.hpp"

#include <fstream>

namespace banyan::runtime::test {
namespace {

struct keyed {
  curve_keypair k = *generate_curve_keypair();
};

transport_options curve_options(const temp_dir& dir, const std::string& self, const keyed& mine,
                                const std::vector<std::pair<std::string, const keyed*>>& peers,
                                const std::vector<const keyed*>& allowed) {
  transport_options o;
  o.self = self;
  o.bind_endpoint = dir.ipc(self);
  o.curve_public_key = mine.k.public_key;
  o.curve_secret_key = mine.k.secret_key;
  for (auto& [name, key] : peers) o.peers.push_back({name, dir.ipc(name), key->k.public_key});
  for (auto* a : allowed) o.authorized_keys.push_back(a->k.public_key);
  o.heartbeat_timeout = 500ms;
  return o;
}

TEST(Curve, AuthorisedPeersLinkAndExchangeEnvelopes) {
  temp_dir dir;
  keyed ka, kb;
  recorder ra, rb;
  auto a = transport::start(curve_options(dir, "a", ka, {{"b", &kb}}, {&kb}), ra.make());
  auto b = transport::start(curve_options(dir, "b", kb, {{"a", &ka}}, {&ka}), rb.make());
  ASSERT_TRUE(a.has_value()) << a.error().what();
  ASSERT_TRUE(b.has_value()) << b.error().what();
  ASSERT_TRUE((*a)->wait_until_up("b", 10s).has_value());
  ASSERT_TRUE((*b)->wait_until_up("a", 10s).has_value());
  for (int i = 0; i < 100; ++i) ASSERT_TRUE((*a)->send("b", make_envelope(i)).has_value());
  ASSERT_TRUE(rb.wait([&] { return rb.got["a"].size() == 100; }));
  EXPECT_EQ(rb.order_errors, 0u);
  EXPECT_EQ((*a)->rejects().auth, 0u);
  EXPECT_EQ((*b)->rejects().auth, 0u);
}

// c is a configured peer of a, but a does not authorise c's key: c's handshakes are refused and
// logged, a never sees c, and a keeps serving b.
TEST(Curve, APeerWithoutAnAuthorisedKeyIsRejectedAndLogged) {
  temp_dir dir;
  keyed ka, kb, kc;
  recorder ra, rb, rc;
  auto a = transport::start(curve_options(dir, "a", ka, {{"b", &kb}, {"c", &kc}}, {&kb}), ra.make());
  auto b = transport::start(curve_options(dir, "b", kb, {{"a", &ka}}, {&ka}), rb.make());
  auto c = transport::start(curve_options(dir, "c", kc, {{"a", &ka}}, {&ka}), rc.make());
  ASSERT_TRUE(a.has_value() && b.has_value() && c.has_value());
  ASSERT_TRUE(ra.wait([&] { return ra.logged_locked("refused CURVE handshake from"); }, 10s));
  EXPECT_TRUE(ra.logged(kc.k.public_key + " is not authorised (handshakes refused)"));
  EXPECT_GE((*a)->rejects().auth, 1u);
  ASSERT_TRUE((*a)->wait_until_up("b", 10s).has_value());
  EXPECT_EQ(ra.locked(ra.ups, "c"), 0);
  EXPECT_FALSE((*a)->stats("c").up);
  EXPECT_EQ(ra.locked(ra.count, "c"), 0u);
}

// a is told the wrong public key for b: a's DEALER never completes its handshake with b, and b's
// frames reaching a are refused, because the key they were authenticated with is not b's key in a's
// configuration (a ROUTER would otherwise trust whatever name a DEALER claims).
TEST(Curve, APeerWhoseKeyIsNotTheOneConfiguredForItsNameIsRefused) {
  temp_dir dir;
  keyed ka, kb, wrong;
  recorder ra, rb;
  auto a = transport::start(curve_options(dir, "a", ka, {{"b", &wrong}}, {&kb}), ra.make());
  auto b = transport::start(curve_options(dir, "b", kb, {{"a", &ka}}, {&ka}), rb.make());
  ASSERT_TRUE(a.has_value() && b.has_value());
  ASSERT_TRUE(ra.wait([&] { return ra.logged_locked("rejected impersonating frame from `b`"); }, 10s));
  EXPECT_GE((*a)->rejects().impostor, 1u);
  EXPECT_FALSE((*a)->stats("b").up);
  EXPECT_EQ(ra.locked(ra.ups, "b"), 0);
  EXPECT_EQ(rb.locked(rb.ups, "a"), 0);
}

TEST(Curve, KeyFilesRoundTripAndBadFilesNameTheFault) {
  temp_dir dir;
  const auto keys = *generate_curve_keypair();
  EXPECT_TRUE(is_z85_key(keys.public_key));
  EXPECT_TRUE(is_z85_key(keys.secret_key));
  const std::string base = (dir.path / "n1").string();
  ASSERT_TRUE(write_key_files(base, keys).has_value());
  EXPECT_EQ(*read_key_file(base + ".pub"), keys.public_key);
  EXPECT_EQ(*read_key_file(base + ".key"), keys.secret_key);
  EXPECT_EQ(std::filesystem::status(base + ".key").permissions() & std::filesystem::perms::others_read,
            std::filesystem::perms::none);
  auto again = write_key_files(base, keys);
  ASSERT_FALSE(again.has_value());
  EXPECT_NE(again.error().message.find("exists"), std::string::npos);
  std::ofstream(base + ".bad") << "not-a-key\n";
  auto bad = read_key_file(base + ".bad");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find(base + ".bad line 1"), std::string::npos);
  EXPECT_FALSE(read_key_file(base + ".missing").has_value());
}

}  // namespace
}  // namespace banyan::runtime::test
