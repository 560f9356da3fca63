// Disk full, EIO, a read-only folder, a folder deleted under the writer: a clear error naming the
// file, the watermark still right, nothing durable lost, later commits fail instead of hanging.
#include "banyan/base/process.hpp"
#include "banyan/store/fault_file_system.hpp"
#include "banyan/store/store.hpp"

#include "helpers.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace banyan::store {
namespace {

using namespace std::chrono_literals;
using test::bytes_of;
using test::string_of;
using test::temp_dir;

// Commits `model` = `text`; returns the id.
txn_id commit_model(blob_store& s, const std::string& text) {
  transaction t;
  t.put("model", bytes_of(text));
  auto id = s.commit(std::move(t));
  EXPECT_TRUE(id.has_value()) << id.error().what();
  return id.has_value() ? *id : 0;
}

// After a failure at transaction 2: the error names `file`, the watermark is 1, later commits fail
// with the same error, and transaction 1 reads back.
void expect_stopped_after_one(blob_store& s, errc code, const std::string& file) {
  auto waited = s.wait_durable(2, 30s);
  ASSERT_FALSE(waited.has_value());
  EXPECT_EQ(waited.error().code, code) << waited.error().what();
  EXPECT_NE(waited.error().message.find(file), std::string::npos) << waited.error().what();
  EXPECT_NE(waited.error().message.find("durable up to transaction 1"), std::string::npos) << waited.error().what();
  EXPECT_EQ(s.durable_id(), 1u);
  ASSERT_TRUE(s.failure().has_value());
  transaction later;
  later.put("model", bytes_of("later"));
  auto refused = s.commit(std::move(later));
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, code);
  EXPECT_EQ(string_of(*s.read("model")), "one");
}

TEST(StoreFaults, DiskFullIsAnErrorNamingTheFileAndKeepsWhatIsDurable) {
  auto fs = std::make_shared<fault_file_system>();
  options o = test::test_options();
  o.fs = fs;
  {
    auto s = blob_store::open("ckpt", o);
    ASSERT_TRUE(s.has_value());
    commit_model(**s, "one");
    ASSERT_TRUE((*s)->flush(30s).has_value());
    fs->capacity(200);  // the first file takes about 50 bytes; the next needs 1000
    commit_model(**s, std::string(1000, 'x'));
    expect_stopped_after_one(**s, errc::no_space, "ckpt/txn-00000000000000000002.tmp");
  }
  fs->capacity(std::nullopt);
  auto s = blob_store::open("ckpt", o);
  ASSERT_TRUE(s.has_value()) << s.error().what();
  EXPECT_EQ((*s)->durable_id(), 1u);
  EXPECT_EQ(string_of(*(*s)->read("model")), "one");
}

class StoreFaultsEio : public ::testing::TestWithParam<fault_file_system::op> {};

TEST_P(StoreFaultsEio, AnIoErrorStopsTheWriterWithTheWatermarkRight) {
  auto fs = std::make_shared<fault_file_system>();
  options o = test::test_options();
  o.fs = fs;
  {
    auto s = blob_store::open("ckpt", o);
    ASSERT_TRUE(s.has_value());
    commit_model(**s, "one");
    ASSERT_TRUE((*s)->flush(30s).has_value());
    fs->fail_next(GetParam(), errc::io);
    commit_model(**s, "two");
    const bool names_folder = GetParam() == fault_file_system::op::sync_dir;
    expect_stopped_after_one(**s, errc::io, names_folder ? "`ckpt`" : "ckpt/txn-00000000000000000002.tmp");
  }
  auto s = blob_store::open("ckpt", o);
  ASSERT_TRUE(s.has_value()) << s.error().what();
  // A failed folder fsync comes after the rename: transaction 2 may be whole on disk, and is then
  // found (a prefix either way); every other failure leaves transaction 1 the last.
  const txn_id last = (*s)->durable_id();
  if (GetParam() == fault_file_system::op::sync_dir) {
    EXPECT_EQ(last, 2u);
    EXPECT_EQ(string_of(*(*s)->read("model")), "two");
  } else {
    EXPECT_EQ(last, 1u);
    EXPECT_EQ(string_of(*(*s)->read("model")), "one");
  }
}

INSTANTIATE_TEST_SUITE_P(EachFileOperation, StoreFaultsEio,
                         ::testing::Values(fault_file_system::op::create, fault_file_system::op::append,
                                           fault_file_system::op::sync, fault_file_system::op::rename,
                                           fault_file_system::op::sync_dir),
                         [](const auto& info) {
                           switch (info.param) {
                             case fault_file_system::op::create: return std::string("create");
                             case fault_file_system::op::append: return std::string("append");
                             case fault_file_system::op::sync: return std::string("fsync");
                             case fault_file_system::op::rename: return std::string("rename");
                             case fault_file_system::op::sync_dir: return std::string("fsync_dir");
                             default: return std::string("other");
                           }
                         });

TEST(StoreFaults, AFolderDeletedUnderTheWriterIsAnErrorNamingTheFile) {
  temp_dir root;
  const std::string dir = root / "ckpt";
  auto s = blob_store::open(dir, test::test_options());
  ASSERT_TRUE(s.has_value()) << s.error().what();
  commit_model(**s, "one");
  ASSERT_TRUE((*s)->flush(30s).has_value());
  std::filesystem::remove_all(dir);
  commit_model(**s, "two");
  auto waited = (*s)->wait_durable(2, 30s);
  ASSERT_FALSE(waited.has_value());
  EXPECT_EQ(waited.error().code, errc::io);
  EXPECT_NE(waited.error().message.find(dir + "/txn-00000000000000000002.tmp"), std::string::npos)
      << waited.error().what();
  EXPECT_NE(waited.error().message.find("No such file or directory"), std::string::npos) << waited.error().what();
  EXPECT_EQ((*s)->durable_id(), 1u);
  transaction later;
  later.put("model", bytes_of("three"));
  EXPECT_FALSE((*s)->commit(std::move(later)).has_value());
}

TEST(StoreFaults, AReadOnlyFolderIsAnErrorNamingTheFile) {
  temp_dir root;
  const std::string dir = root / "ckpt";
  auto s = blob_store::open(dir, test::test_options());
  ASSERT_TRUE(s.has_value()) << s.error().what();
  commit_model(**s, "one");
  ASSERT_TRUE((*s)->flush(30s).has_value());
  ASSERT_EQ(::chmod(dir.c_str(), 0555), 0);
  {
    // Root (CAP_DAC_OVERRIDE) writes through a mode of 0555: then this test cannot see the fault.
    const std::string probe = dir + "/probe";
    const bool writable = std::ofstream(probe).good();
    std::filesystem::remove(probe);
    if (writable) {
      ::chmod(dir.c_str(), 0755);
      GTEST_SKIP() << "running with CAP_DAC_OVERRIDE (uid " << ::geteuid()
                   << "): chmod 0555 does not stop writes, so a read-only folder cannot be made here";
    }
  }
  commit_model(**s, "two");
  auto waited = (*s)->wait_durable(2, 30s);
  ::chmod(dir.c_str(), 0755);
  ASSERT_FALSE(waited.has_value());
  EXPECT_EQ(waited.error().code, errc::io);
  EXPECT_NE(waited.error().message.find(dir + "/txn-00000000000000000002.tmp"), std::string::npos)
      << waited.error().what();
  EXPECT_NE(waited.error().message.find("Permission denied"), std::string::npos) << waited.error().what();
  EXPECT_EQ((*s)->durable_id(), 1u);
  EXPECT_EQ(string_of(*(*s)->read("model")), "one");
}

TEST(StoreFaults, ASmallRealTmpfsFillsUpWithNoSpace) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a small tmpfs needs root (uid " << ::geteuid() << ")";
  temp_dir root;
  const std::string dir = root / "small";
  std::filesystem::create_directories(dir);
  auto mounted = run_process({"mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", dir});
  if (!mounted.has_value() || !mounted->status.success())
    GTEST_SKIP() << "cannot mount a tmpfs here: "
                 << (mounted.has_value() ? mounted->err + mounted->out : mounted.error().what());
  struct unmount {
    std::string dir;
    ~unmount() { (void)run_process({"umount", dir}); }
  } guard{dir};
  {
    auto s = blob_store::open(dir, test::test_options());
    ASSERT_TRUE(s.has_value()) << s.error().what();
    commit_model(**s, "one");
    ASSERT_TRUE((*s)->flush(30s).has_value());
    commit_model(**s, std::string(1 << 20, 'x'));
    expect_stopped_after_one(**s, errc::no_space, dir + "/txn-00000000000000000002.tmp");
  }
  auto s = blob_store::open(dir, test::test_options());
  ASSERT_TRUE(s.has_value()) << s.error().what();
  EXPECT_EQ((*s)->durable_id(), 1u);
}

}  // namespace
}  // namespace banyan::store
