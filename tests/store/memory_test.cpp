// The buffer's size follows the memory source and the shared budget; a full buffer makes commit
// wait (measured); taking budget makes the buffer flush, never drop.
#include "banyan/store/memory.hpp"
#include "banyan/store/fault_file_system.hpp"
#include "banyan/store/store.hpp"

#include "helpers.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <thread>

namespace banyan::store {
namespace {

using namespace std::chrono_literals;
using test::bytes_of;
using test::eventually;
using test::gated_file_system;
using test::string_of;

std::vector<std::byte> filler(std::size_t n, char c) { return std::vector<std::byte>(n, static_cast<std::byte>(c)); }

TEST(StoreMemory, TheBufferFollowsFreeMemoryBetweenFloorAndCeiling) {
  std::atomic<std::uint64_t> available{10'000'000};
  auto gate = std::make_shared<gated_file_system>(std::make_shared<fault_file_system>());
  options o;
  o.fs = gate;
  o.floor_bytes = 1'000'000;
  o.ceiling_bytes = 8'000'000;
  o.free_memory_fraction = 0.5;
  o.memory_poll_interval = 0ms;
  o.memory = function_memory_source([&]() -> std::optional<std::uint64_t> { return available.load(); });
  auto s = blob_store::open("ckpt", o);
  ASSERT_TRUE(s.has_value()) << s.error().what();
  auto limit_after_commit = [&] {
    transaction t;
    t.put("x", bytes_of("1"));
    EXPECT_TRUE((*s)->commit(std::move(t)).has_value());
    return (*s)->stats().buffer_limit;
  };
  // The writer is held at the gate: `buffered` is exactly what was committed before.
  EXPECT_EQ(limit_after_commit(), 5'000'000u);  // 0 + half of 10 MB
  available = 100'000'000;
  EXPECT_EQ(limit_after_commit(), 8'000'000u);  // the ceiling
  available = 0;
  EXPECT_EQ(limit_after_commit(), 1'000'000u);  // the floor
  available = 4'000'000;
  EXPECT_EQ(limit_after_commit(), 2'000'003u);  // 3 bytes buffered + half of 4 MB
  gate->open_gate();
  ASSERT_TRUE((*s)->flush(30s).has_value());
}

TEST(StoreMemory, AFullBufferMakesCommitWaitAndTheWaitIsMeasured) {
  auto gate = std::make_shared<gated_file_system>(std::make_shared<fault_file_system>());
  options o = test::test_options();
  o.fs = gate;
  o.floor_bytes = o.ceiling_bytes = 1000;
  auto s = blob_store::open("ckpt", o);
  ASSERT_TRUE(s.has_value());
  transaction first;
  first.put("a", filler(600, 'a'));
  ASSERT_TRUE((*s)->commit(std::move(first)).has_value());
  std::atomic<bool> second_done{false};
  std::thread committer([&] {
    transaction second;
    second.put("b", filler(600, 'b'));
    EXPECT_EQ((*s)->commit(std::move(second)).value(), 2u);
    second_done = true;
  });
  ASSERT_TRUE(eventually([&] { return (*s)->stats().commits_waiting == 1; }));
  EXPECT_FALSE(second_done);
  EXPECT_EQ((*s)->stats().bytes_buffered, 600u);
  gate->open_gate();
  committer.join();
  ASSERT_TRUE((*s)->flush(30s).has_value());
  const auto st = (*s)->stats();
  EXPECT_EQ(st.commit_waits, 1u);
  EXPECT_GT(st.commit_wait_ns, 0u);
  EXPECT_EQ(st.commits_waiting, 0u);
  EXPECT_EQ(st.durable, 2u);
  EXPECT_EQ(st.bytes_buffered, 0u);
  EXPECT_GT(st.bytes_written, 1200u);
}

TEST(StoreMemory, ATransactionLargerThanTheBufferWaitsForAnEmptyBufferThenGoesAlone) {
  auto fs = std::make_shared<fault_file_system>();
  options o = test::test_options();
  o.fs = fs;
  o.floor_bytes = o.ceiling_bytes = 100;
  auto s = blob_store::open("ckpt", o);
  ASSERT_TRUE(s.has_value());
  for (int i = 0; i < 3; ++i) {
    transaction t;
    t.put("big", filler(1000, static_cast<char>('a' + i)));
    ASSERT_TRUE((*s)->commit(std::move(t)).has_value());
  }
  ASSERT_TRUE((*s)->flush(30s).has_value());
  EXPECT_EQ(string_of(*(*s)->read("big")), std::string(1000, 'c'));
}

TEST(StoreMemory, TakingBudgetShrinksTheBufferByFlushingNeverByDropping) {
  auto gate = std::make_shared<gated_file_system>(std::make_shared<fault_file_system>());
  auto budget = std::make_shared<memory_budget>(10'000);
  options o = test::test_options();
  o.fs = gate;
  o.floor_bytes = 1000;
  o.ceiling_bytes = 100'000;
  o.budget = budget;
  auto s = blob_store::open("ckpt", o);
  ASSERT_TRUE(s.has_value());
  for (int i = 0; i < 5; ++i) {
    transaction t;
    t.put("blob" + std::to_string(i), filler(1000, static_cast<char>('0' + i)));
    ASSERT_TRUE((*s)->commit(std::move(t)).has_value());
  }
  EXPECT_EQ(budget->held(), 4000u);  // the buffer's bytes above its floor
  EXPECT_EQ(budget->free(), 6000u);
  // The host pool wants 9000 bytes: more than is free, so it waits for the buffer to flush.
  std::atomic<bool> taken{false};
  std::thread pool([&] {
    EXPECT_TRUE(budget->take(9000, 30s));
    taken = true;
  });
  ASSERT_TRUE(eventually([&] { return budget->taken() == 9000; }));
  // Meanwhile the buffer takes nothing more beyond what is free (nothing): a commit waits.
  std::thread committer([&] {
    transaction t;
    t.put("blob5", filler(1000, '5'));
    EXPECT_TRUE((*s)->commit(std::move(t)).has_value());
  });
  ASSERT_TRUE(eventually([&] { return (*s)->stats().commits_waiting == 1; }));
  EXPECT_FALSE(taken);
  gate->open_gate();
  pool.join();
  committer.join();
  ASSERT_TRUE((*s)->flush(30s).has_value());
  EXPECT_LE(budget->held() + budget->taken(), budget->capacity());
  for (int i = 0; i <= 5; ++i) {
    auto b = (*s)->read("blob" + std::to_string(i));
    ASSERT_TRUE(b.has_value()) << b.error().what();
    EXPECT_EQ(string_of(*b), std::string(1000, static_cast<char>('0' + i)));
  }
  budget->give(9000);
  EXPECT_EQ(budget->taken(), 0u);
}

TEST(StoreMemory, TwoStoresSharingABudgetBothFlushForATake) {
  auto budget = std::make_shared<memory_budget>(10'000);
  auto gate_a = std::make_shared<gated_file_system>(std::make_shared<fault_file_system>());
  auto gate_b = std::make_shared<gated_file_system>(std::make_shared<fault_file_system>());
  options o = test::test_options();
  o.floor_bytes = 1000;
  o.ceiling_bytes = 100'000;
  o.budget = budget;
  o.fs = gate_a;
  auto a = blob_store::open("a", o);
  o.fs = gate_b;
  auto b = blob_store::open("b", o);
  ASSERT_TRUE(a.has_value() && b.has_value());
  for (auto* s : {&*a, &*b}) {
    transaction t;
    t.put("blob", filler(4000, 'x'));
    ASSERT_TRUE((*s)->commit(std::move(t)).has_value());
  }
  EXPECT_EQ(budget->held(), 6000u);  // 3000 above each floor
  std::atomic<bool> taken{false};
  std::thread pool([&] {
    EXPECT_TRUE(budget->take(8000, 30s));
    taken = true;
  });
  ASSERT_TRUE(eventually([&] { return budget->taken() == 8000; }));
  gate_a->open_gate();
  ASSERT_TRUE((*a)->flush(30s).has_value());
  EXPECT_FALSE(taken) << "b still holds 3000: 8000 + 3000 > 10000";
  gate_b->open_gate();
  pool.join();
  EXPECT_TRUE(taken);
  ASSERT_TRUE((*b)->flush(30s).has_value());
  EXPECT_EQ(budget->held(), 0u);
  EXPECT_EQ(string_of(*(*a)->read("blob")), std::string(4000, 'x'));
  EXPECT_EQ(string_of(*(*b)->read("blob")), std::string(4000, 'x'));
}

class StoreMemorySource : public ::testing::Test {
 protected:
  test::temp_dir dir_;
  void write(const std::string& name, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(dir_ / name).parent_path());
    std::ofstream(dir_ / name) << text;
  }
};

TEST_F(StoreMemorySource, SystemMemorySourceTakesTheSmallerOfCgroupV2RoomAndMemAvailable) {
  write("meminfo", "MemTotal:       8000 kB\nMemFree:        1000 kB\nMemAvailable:   2000 kB\n");
  write("self_cgroup", "0::/jobs/trainer\n");
  write("cg/jobs/trainer/memory.max", "1000000\n");
  write("cg/jobs/trainer/memory.current", "400000\n");
  auto src = system_memory_source(dir_ / "cg", dir_ / "meminfo", dir_ / "self_cgroup");
  EXPECT_EQ(src->available(), 600'000u);
  write("cg/jobs/trainer/memory.max", "max\n");  // no limit: MemAvailable
  EXPECT_EQ(src->available(), 2000u * 1024);
  auto v1 = system_memory_source(dir_ / "cg", dir_ / "meminfo", dir_ / "no-such-file");
  EXPECT_EQ(v1->available(), 2000u * 1024);
  auto none = system_memory_source(dir_ / "cg", dir_ / "no-meminfo", dir_ / "no-such-file");
  EXPECT_EQ(none->available(), std::nullopt);
}

TEST(StoreMemory, TheRealSystemSourceAnswersOnLinux) {
  auto src = system_memory_source();
  auto a = src->available();
  ASSERT_TRUE(a.has_value());
  EXPECT_GT(*a, 0u);
}

}  // namespace
}  // namespace banyan::store
