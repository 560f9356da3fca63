#include "banyan/store/store.hpp"

#include "helpers.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace banyan::store {
namespace {

using namespace std::chrono_literals;
using test::bytes_of;
using test::string_of;
using test::temp_dir;
using test::test_options;

TEST(Store, CommittedBlobsAreDurableAndReadBackAfterReopen) {
  temp_dir dir;
  {
    auto s = blob_store::open(dir.path(), test_options());
    ASSERT_TRUE(s.has_value()) << s.error().what();
    transaction t1;
    t1.put("model", bytes_of("weights-1"));
    t1.put("optimizer", bytes_of("adam-1"));
    t1.put("manifest", std::string_view("{\"step\": 100}"));
    auto id1 = (*s)->commit(std::move(t1));
    ASSERT_TRUE(id1.has_value()) << id1.error().what();
    EXPECT_EQ(*id1, 1u);
    transaction t2;
    t2.put("model", bytes_of("weights-2"));
    auto id2 = (*s)->commit(std::move(t2));
    ASSERT_TRUE(id2.has_value());
    EXPECT_EQ(*id2, 2u);
    ASSERT_TRUE((*s)->wait_durable(2, 10s).has_value());
    EXPECT_EQ((*s)->durable_id(), 2u);
    auto model = (*s)->read("model");
    ASSERT_TRUE(model.has_value()) << model.error().what();
    EXPECT_EQ(string_of(*model), "weights-2");
  }
  auto s = blob_store::open(dir.path(), test_options());
  ASSERT_TRUE(s.has_value()) << s.error().what();
  EXPECT_EQ((*s)->durable_id(), 2u);
  EXPECT_EQ((*s)->durable_transactions(), (std::vector<txn_id>{1, 2}));
  EXPECT_EQ((*s)->blobs(), (std::vector<blob_info>{{"manifest", 1, 13}, {"model", 2, 9}, {"optimizer", 1, 6}}));
  EXPECT_EQ(string_of(*(*s)->read("optimizer")), "adam-1");
  EXPECT_EQ(string_of(*(*s)->read("model")), "weights-2");
  // Ids go on after the recovered ones.
  transaction t3;
  t3.put("model", bytes_of("weights-3"));
  EXPECT_EQ(*(*s)->commit(std::move(t3)), 3u);
}

TEST(Store, KeepsTheLastTransactionsAndEachNamesLatestVersionOnly) {
  temp_dir dir;
  auto o = test_options();
  o.keep_last = 2;
  {
    auto s = blob_store::open(dir.path(), o);
    ASSERT_TRUE(s.has_value());
    transaction first;
    first.put("config", bytes_of("only once"));
    ASSERT_TRUE((*s)->commit(std::move(first)).has_value());
    for (int i = 0; i < 10; ++i) {
      transaction t;
      t.put("model", bytes_of("weights-" + std::to_string(i)));
      ASSERT_TRUE((*s)->commit(std::move(t)).has_value());
    }
    ASSERT_TRUE((*s)->flush(10s).has_value());
  }  // closing waits for the writer, whose last compaction follows the last transaction
  // Transaction 1 still holds `config`'s only version; 10 and 11 are the last two.
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) files += e.is_regular_file();
  EXPECT_EQ(files, 3u);
  auto s = blob_store::open(dir.path(), o);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ((*s)->durable_transactions(), (std::vector<txn_id>{1, 10, 11}));
  EXPECT_EQ(string_of(*(*s)->read("config")), "only once");
  EXPECT_EQ(string_of(*(*s)->read("model")), "weights-9");
}

TEST(Store, ACorruptTransactionFileIsAnErrorNamingIt) {
  temp_dir dir;
  {
    auto s = blob_store::open(dir.path(), test_options());
    ASSERT_TRUE(s.has_value());
    transaction t;
    t.put("model", bytes_of("weights"));
    ASSERT_TRUE((*s)->commit(std::move(t)).has_value());
    ASSERT_TRUE((*s)->flush(10s).has_value());
  }
  const std::string file = dir / "txn-00000000000000000001.dat";
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('X');
  }
  auto s = blob_store::open(dir.path(), test_options());
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().code, errc::corrupt);
  EXPECT_NE(s.error().message.find(file), std::string::npos) << s.error().message;
}

TEST(Store, LeftoverTemporaryFilesAreRemovedOnOpen) {
  temp_dir dir;
  { std::ofstream(dir / "txn-00000000000000000001.tmp") << "half a transaction"; }
  auto s = blob_store::open(dir.path(), test_options());
  ASSERT_TRUE(s.has_value()) << s.error().what();
  EXPECT_EQ((*s)->durable_id(), 0u);
  EXPECT_FALSE(std::filesystem::exists(dir / "txn-00000000000000000001.tmp"));
}

TEST(Store, BadOptionsAndUnknownIdsAreErrors) {
  temp_dir dir;
  auto o = test_options();
  o.floor_bytes = 10;
  o.ceiling_bytes = 5;
  auto bad = blob_store::open(dir.path(), o);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, errc::invalid_argument);
  auto s = blob_store::open(dir.path(), test_options());
  ASSERT_TRUE(s.has_value());
  auto never = (*s)->wait_durable(7, 1ms);
  ASSERT_FALSE(never.has_value());
  EXPECT_EQ(never.error().code, errc::invalid_argument);
  auto missing = (*s)->read("nothing");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, errc::invalid_argument);
}

TEST(Store, ALaterPutOfTheSameNameReplacesTheEarlierOne) {
  transaction t;
  t.put("a", bytes_of("12345"));
  t.put("a", bytes_of("12"));
  EXPECT_EQ(t.bytes(), 2u);
  ASSERT_EQ(t.blobs().size(), 1u);
}

}  // namespace
}  // namespace banyan::store
