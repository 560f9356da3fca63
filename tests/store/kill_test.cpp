// kill -9 at random moments of a child that commits in a loop: recovery finds a prefix that
// includes every transaction the child saw durable.
#include "banyan/base/process.hpp"
#include "banyan/store/store.hpp"

#include "helpers.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <random>

namespace banyan::store {
namespace {

using namespace std::chrono_literals;
using test::string_of;

// Transaction `id`'s model blob: its size and bytes follow from the id alone, so the parent can
// check what the child wrote.
std::vector<std::byte> model_bytes(txn_id id) {
  std::mt19937_64 rng(id);
  std::vector<std::byte> out(1 + (id * 7919) % 200'000);
  for (auto& b : out) b = static_cast<std::byte>(rng());
  return out;
}

// The child: commits `model` and `manifest` in a loop, waits for every `every`-th, prints
// "durable <id>" once it is.
int child_main(const std::string& dir, std::uint64_t seed) {
  options o = test::test_options();
  o.floor_bytes = o.ceiling_bytes = 1 << 20;
  auto s = blob_store::open(dir, o);
  if (!s.has_value()) {
    const std::string line = "open failed: " + s.error().what() + "\n";
    (void)!::write(2, line.data(), line.size());
    return 2;
  }
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 100'000; ++i) {
    const txn_id next = (*s)->stats().last_committed + 1;
    transaction t;
    t.put("model", model_bytes(next));
    t.put("manifest", std::to_string(next));
    auto id = (*s)->commit(std::move(t));
    if (!id.has_value() || *id != next) return 3;
    if (rng() % 4 == 0) {
      if (!(*s)->wait_durable(*id, 60s).has_value()) return 4;
      const std::string line = "durable " + std::to_string(*id) + "\n";
      if (::write(1, line.data(), line.size()) != static_cast<ssize_t>(line.size())) return 5;
    }
  }
  return 0;
}

TEST(StoreKillNine, RecoveryAfterKillNineIsAPrefixWithEveryTransactionSeenDurable) {
  std::uint64_t seed = 7;
  if (const char* s = std::getenv("BANYAN_STORE_SEED")) seed = std::strtoull(s, nullptr, 10);
  SCOPED_TRACE("seed " + std::to_string(seed) + " (rerun: BANYAN_STORE_SEED=" + std::to_string(seed) + ")");
  std::mt19937_64 rng(seed);
  test::temp_dir root;
  const std::string dir = root / "ckpt";
  const int kills = 12;
  txn_id highest_recovered = 0;
  for (int k = 0; k < kills; ++k) {
    // Killed after it reported this many durable transactions, plus whatever it did meanwhile.
    const int reports = 1 + static_cast<int>(rng() % 8);
    const std::uint64_t child_seed = rng();
    auto child = process::spawn_function("store-child", [&] { return child_main(dir, child_seed); },
                                         {.out = output_mode::capture, .err = output_mode::capture});
    ASSERT_TRUE(child.has_value()) << child.error().what();
    txn_id seen_durable = 0;
    int seen = 0;
    const auto deadline = std::chrono::steady_clock::now() + 120s;
    while (seen < reports && !child->status().has_value()) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the child reported nothing in time";
      child->read(1s);
      for (const auto& line : child->take_lines()) {
        ASSERT_EQ(line.rfind("durable ", 0), 0u) << line;
        seen_durable = std::stoull(line.substr(8));
        ++seen;
      }
    }
    ASSERT_FALSE(child->status().has_value()) << "the child ended by itself: " << child->output(process::stream::err);
    const auto killed = child->kill();
    ASSERT_EQ(killed.signal, SIGKILL);

    auto s = blob_store::open(dir, test::test_options());
    ASSERT_TRUE(s.has_value()) << s.error().what();
    const txn_id last = (*s)->durable_id();
    ASSERT_GE(last, seen_durable) << "kill " << k << ": a transaction reported durable was lost";
    ASSERT_GE(last, highest_recovered) << "kill " << k << ": recovery went backwards";
    highest_recovered = last;
    const auto ids = (*s)->durable_transactions();
    ASSERT_FALSE(ids.empty());
    ASSERT_EQ(ids.back(), last);
    if (last >= 2) {  // keep_last = 2: the one before is there too
      ASSERT_GE(ids.size(), 2u);
      ASSERT_EQ(ids[ids.size() - 2], last - 1);
    }
    auto model = (*s)->read("model");
    ASSERT_TRUE(model.has_value()) << model.error().what();
    ASSERT_TRUE(*model == model_bytes(last)) << "kill " << k << ": transaction " << last << "'s model differs";
    EXPECT_EQ(string_of(*(*s)->read("manifest")), std::to_string(last));
  }
  std::printf("kill -9: %d kills, recovered up to transaction %llu, every recovery a prefix\n", kills,
              static_cast<unsigned long long>(highest_recovered));
}

}  // namespace
}  // namespace banyan::store
