// Power cuts at seeded random points of random workloads, through the fault-injection file layer:
// recovery must find exactly a prefix of the committed transactions.
#include "banyan/store/fault_file_system.hpp"
#include "banyan/store/store.hpp"

#include "helpers.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <random>

namespace banyan::store {
namespace {

using namespace std::chrono_literals;
using test::string_of;

std::uint64_t base_seed() {
  if (const char* s = std::getenv("BANYAN_STORE_SEED")) return std::strtoull(s, nullptr, 10);
  return 20261203;
}

std::vector<std::byte> random_bytes(std::mt19937_64& rng, std::size_t n) {
  std::vector<std::byte> out(n);
  for (auto& b : out) b = static_cast<std::byte>(rng());
  return out;
}

TEST(FaultFileSystem, PowerCutKeepsSyncedBytesAndTearsTheLastUnsyncedWrite) {
  for (std::uint64_t seed = 1; seed <= 50; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    auto fs = std::make_shared<fault_file_system>();
    ASSERT_TRUE(fs->make_dirs("d").has_value());
    auto synced = fs->create("d/synced");
    ASSERT_TRUE(synced.has_value());
    ASSERT_TRUE((*synced)->append(test::bytes_of("durable")).has_value());
    ASSERT_TRUE((*synced)->sync().has_value());
    ASSERT_TRUE((*synced)->append(test::bytes_of("lost")).has_value());
    auto torn = fs->create("d/torn");
    ASSERT_TRUE(torn.has_value());
    ASSERT_TRUE((*torn)->append(test::bytes_of("ab")).has_value());
    ASSERT_TRUE((*torn)->sync().has_value());
    ASSERT_TRUE(fs->sync_dir("d").has_value());
    ASSERT_TRUE((*torn)->append(test::bytes_of("0123456789")).has_value());  // the last write
    auto unsynced_name = fs->create("d/never-synced-name");
    ASSERT_TRUE(unsynced_name.has_value());
    fs->power_cut(rng);
    EXPECT_EQ(string_of(*fs->read("d/synced")), "durable");
    const std::string t = string_of(*fs->read("d/torn"));
    EXPECT_EQ(t, std::string("ab0123456789").substr(0, t.size()));
    EXPECT_GE(t.size(), 2u);
    EXPECT_FALSE(fs->read("d/never-synced-name").has_value());
    EXPECT_FALSE((*synced)->append(test::bytes_of("x")).has_value()) << "handles die with the power";
  }
}

TEST(FaultFileSystem, OperationsAfterTheFreezePointFail) {
  auto fs = std::make_shared<fault_file_system>();
  ASSERT_TRUE(fs->make_dirs("d").has_value());
  fs->freeze_after(1);
  ASSERT_TRUE(fs->create("d/a").has_value());
  auto b = fs->create("d/b");
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().code, errc::io);
  EXPECT_NE(b.error().message.find("d/b"), std::string::npos);
}

// One store life on `fs`: open (recovering what is there), commit random transactions, crash after
// `k` file operations. `model` holds the committed transactions by id (index id - 1) and is cut to
// what recovery found.
struct round_result {
  txn_id acknowledged = 0;  // the highest id wait_durable confirmed before the crash
  txn_id committed = 0;
};

const std::vector<std::string> names = {"model", "optimizer", "manifest", "rng"};

TEST(StoreCrash, RecoveryFindsAPrefixOfCommittedTransactionsAtEveryCrashPoint) {
  const std::uint64_t seed0 = base_seed();
  const int points = 1000;
  int crashes = 0, prefixes = 0, mid_write = 0;
  for (int point = 0; point < points; ++point) {
    const std::uint64_t seed = seed0 + static_cast<std::uint64_t>(point);
    SCOPED_TRACE("seed " + std::to_string(seed) + " (rerun: BANYAN_STORE_SEED=" + std::to_string(seed) + ")");
    std::mt19937_64 rng(seed);
    auto fs = std::make_shared<fault_file_system>();
    std::vector<std::map<std::string, std::vector<std::byte>>> model;  // committed, by id - 1
    options o = test::test_options();
    o.fs = fs;
    o.keep_last = 1 + rng() % 3;
    if (rng() % 2) o.floor_bytes = o.ceiling_bytes = 4096;  // a tiny buffer: commits wait for the writer
    for (int round = 0; round < 2; ++round) {
      const std::uint64_t ops_before = fs->operations();
      const int txns = 2 + static_cast<int>(rng() % 10);
      const std::uint64_t k = rng() % (static_cast<std::uint64_t>(txns) * 14 + 4);
      fs->freeze_after(k);
      round_result r;
      {
        auto s = blob_store::open("ckpt", o);
        if (s.has_value()) {
          for (int i = 0; i < txns; ++i) {
            transaction t;
            std::map<std::string, std::vector<std::byte>> written;
            const int blobs = 1 + static_cast<int>(rng() % 3);
            for (int b = 0; b < blobs; ++b) {
              const auto& name = names[rng() % names.size()];
              auto bytes = random_bytes(rng, rng() % 3000);
              written[name] = bytes;
              t.put(name, std::move(bytes));
            }
            auto id = (*s)->commit(std::move(t));
            if (!id.has_value()) break;  // the writer stopped at the crash
            ASSERT_EQ(*id, model.size() + 1);
            model.push_back(std::move(written));
            r.committed = *id;
            if (rng() % 3 == 0 && (*s)->wait_durable(*id, 60s).has_value()) r.acknowledged = *id;
          }
          // Whatever the writer does, it ends: everything durable, or a failure.
          auto flushed = (*s)->flush(60s);
          if (!flushed.has_value()) {
            ASSERT_NE(flushed.error().code, errc::timeout) << flushed.error().what();
          }
          if (flushed.has_value()) r.acknowledged = r.committed;
        }
      }
      if (fs->operations() - ops_before > k) ++mid_write;
      fs->power_cut(rng, rng() % 2 == 0);
      ++crashes;

      auto s = blob_store::open("ckpt", o);
      ASSERT_TRUE(s.has_value()) << s.error().what();
      const txn_id last = (*s)->durable_id();
      ASSERT_GE(last, r.acknowledged) << "a transaction confirmed durable was lost";
      ASSERT_LE(last, model.size()) << "a transaction never committed appeared";
      const auto ids = (*s)->durable_transactions();
      ASSERT_TRUE(ids.empty() || ids.back() == last);
      for (txn_id want = last > o.keep_last ? last - o.keep_last + 1 : 1; want <= last; ++want)
        ASSERT_TRUE(std::find(ids.begin(), ids.end(), want) != ids.end())
            << "transaction " << want << " missing below " << last;
      // The state is exactly transactions 1..last applied in order.
      std::map<std::string, std::pair<txn_id, std::vector<std::byte>>> expected;
      for (txn_id id = 1; id <= last; ++id)
        for (const auto& [name, bytes] : model[id - 1]) expected[name] = {id, bytes};
      const auto blobs = (*s)->blobs();
      ASSERT_EQ(blobs.size(), expected.size());
      for (const auto& info : blobs) {
        ASSERT_TRUE(expected.contains(info.name)) << info.name;
        EXPECT_EQ(info.txn, expected[info.name].first) << info.name;
        auto bytes = (*s)->read(info.name);
        ASSERT_TRUE(bytes.has_value()) << bytes.error().what();
        ASSERT_TRUE(*bytes == expected[info.name].second) << "blob `" << info.name << "` differs";
      }
      ++prefixes;
      model.resize(last);
    }
  }
  std::printf(
      "crash points: %d (%d in the middle of the writer's work), recoveries to a prefix: %d (seeds %llu..%llu)\n",
      crashes, mid_write, prefixes, static_cast<unsigned long long>(seed0),
      static_cast<unsigned long long>(seed0 + points - 1));
  EXPECT_EQ(prefixes, crashes);
  EXPECT_GE(crashes, 1000);
}

}  // namespace
}  // namespace banyan::store
