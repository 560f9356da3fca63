// Checkpoints on the store: what is saved reads back bit for bit, several checkpoints saved together
// are one transaction, a synchronous store is durable when save() returns, and a failed write is an
// error naming the file while the durable step stays right.
#include "banyan/nn/checkpoint_store.hpp"

#include <banyan/store/fault_file_system.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

namespace banyan::nn {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

checkpoint make(std::uint64_t step, std::size_t floats, float base) {
  checkpoint ck{"gpt_stage", {4, 8, 2}, step, {}, {}, {}, {}};
  for (std::size_t i = 0; i < floats; ++i) {
    ck.params.push_back(base + static_cast<float>(i));
    ck.m.push_back(base * 0.5f + static_cast<float>(i));
    ck.v.push_back(static_cast<float>(i) / (base + 1.0f));
  }
  return ck;
}

void expect_same(const checkpoint& a, const checkpoint& b) {
  EXPECT_EQ(a.model, b.model);
  EXPECT_EQ(a.config, b.config);
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.params, b.params);
  EXPECT_EQ(a.m, b.m);
  EXPECT_EQ(a.v, b.v);
}

class CheckpointStore : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("banyan_checkpoint_store_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    auto be = make_backend({.name = "cpu", .threads = 1});
    ASSERT_TRUE(be) << be.error().message;
    be_ = std::move(be).value();
  }
  void TearDown() override { fs::remove_all(dir_); }
  // `ck` saved as a trainer saves its state: its tensors downloaded from the (cpu) backend.
  result<store::txn_id> save(checkpoint_store& s, const std::string& name, const checkpoint& ck) {
    return s.save_state(name, ck, *be_, ck.params.data(), ck.m.data(), ck.v.data(), ck.params.size());
  }
  fs::path dir_;
  std::unique_ptr<backend> be_;
};

TEST_F(CheckpointStore, SavedCheckpointsReadBackBitForBitFromAnotherReader) {
  auto store = checkpoint_store::open(dir_);
  ASSERT_TRUE(store) << store.error().message;
  const checkpoint first = make(10, 1000, 1.0f), second = make(20, 1000, 2.0f);
  ASSERT_TRUE(save(**store, "state", first));
  ASSERT_TRUE(save(**store, "state", second));
  ASSERT_TRUE((*store)->flush(30s));
  EXPECT_EQ((*store)->durable_step(), 20);
  const auto st = (*store)->stats();
  EXPECT_EQ(st.stall_ms.size(), 2u);
  EXPECT_GT(st.bytes, 2 * 12000u);
  // Read while the writer still has the folder open: a read-only view.
  auto back = read_checkpoint(dir_, "state");
  ASSERT_TRUE(back) << back.error().message;
  expect_same(*back, second);
  EXPECT_TRUE(has_checkpoint(dir_, "state"));
  EXPECT_FALSE(has_checkpoint(dir_, "other"));
  EXPECT_FALSE(has_checkpoint(dir_ / "none", "state"));
}

TEST_F(CheckpointStore, CheckpointsSavedTogetherAreOneTransaction) {
  auto store = checkpoint_store::open(dir_);
  ASSERT_TRUE(store) << store.error().message;
  const checkpoint s0 = make(4, 300, 1.0f), s1 = make(4, 500, 7.0f);
  // As a pipeline's composite: stages encoded elsewhere, committed together.
  store::transaction txn = (*store)->begin();
  for (const auto& [name, ck] : {std::pair{"stage0", &s0}, std::pair{"stage1", &s1}}) {
    auto bytes = encode_checkpoint(*ck, name, false);
    ASSERT_TRUE(bytes) << bytes.error().message;
    txn.put(name, std::span<const std::byte>(*bytes));
  }
  auto id = (*store)->save(std::move(txn), 4);
  ASSERT_TRUE(id) << id.error().message;
  ASSERT_TRUE((*store)->flush(30s));
  auto reader = store::blob_reader::open(dir_.string());
  ASSERT_TRUE(reader) << reader.error().message;
  const auto blobs = reader->blobs();
  ASSERT_EQ(blobs.size(), 2u);
  EXPECT_EQ(blobs[0].txn, *id);
  EXPECT_EQ(blobs[1].txn, *id);
  auto b1 = read_checkpoint(dir_, "stage1");
  ASSERT_TRUE(b1) << b1.error().message;
  expect_same(*b1, s1);
}

TEST_F(CheckpointStore, ASynchronousSaveIsDurableWhenItReturns) {
  auto store = checkpoint_store::open(dir_, {.synchronous = true});
  ASSERT_TRUE(store) << store.error().message;
  ASSERT_TRUE(save(**store, "state", make(3, 100, 1.0f)));
  EXPECT_EQ((*store)->durable_step(), 3);  // no flush()
  EXPECT_EQ((*store)->stats().store.bytes_buffered, 0u);
}

TEST_F(CheckpointStore, AFullDiskIsAnErrorNamingTheFileAndTheDurableStepStays) {
  auto faults = std::make_shared<store::fault_file_system>();
  auto store = checkpoint_store::open("ckpt", {.fs = faults});
  ASSERT_TRUE(store) << store.error().message;
  ASSERT_TRUE(save(**store, "state", make(1, 100, 1.0f)));
  ASSERT_TRUE((*store)->flush(30s));
  faults->capacity(3000);  // room for the first checkpoint, far too little for the next
  ASSERT_TRUE(save(**store, "state", make(2, 1000, 2.0f)));  // buffered: the disk is not touched yet
  auto flushed = (*store)->flush(30s);
  ASSERT_FALSE(flushed);
  EXPECT_EQ(flushed.error().code, store::errc::no_space) << flushed.error().message;
  EXPECT_NE(flushed.error().message.find("ckpt/txn-"), std::string::npos) << flushed.error().message;
  EXPECT_EQ((*store)->durable_step(), 1);
  auto later = save(**store, "state", make(3, 10, 3.0f));
  ASSERT_FALSE(later);  // refused at once, not hung
  EXPECT_EQ(later.error().code, store::errc::no_space);
}

TEST_F(CheckpointStore, AFileWhereTheFolderShouldBeIsRefused) {
  fs::create_directories(dir_);
  const fs::path file = dir_ / "run.ckpt";
  ASSERT_TRUE(save_checkpoint(file, make(1, 10, 1.0f)));
  auto store = checkpoint_store::open(file);
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, errc::invalid_argument);
  EXPECT_NE(store.error().message.find("is a file"), std::string::npos) << store.error().message;
  auto read = read_checkpoint(file, "state");
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().code, errc::io);
}

}  // namespace
}  // namespace banyan::nn
