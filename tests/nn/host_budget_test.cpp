// The memory manager's host pool draws from the host budget a checkpoint store's write buffer shares
// (memory_options::host_budget): creating a model whose plan swaps waits until the store has flushed
// enough, and never makes it drop what was committed; without a budget nothing changes; a store that
// does not flush in time is an error naming the bytes.
//
// The store writes through a file layer whose create() waits for the test to open a gate, so what it
// holds stays buffered until the test says so: nothing here depends on timing except the one test of
// the timeout itself.
#include "banyan/nn/gpt.hpp"
#include "banyan/nn/memory_plan.hpp"
#include "banyan/store/store.hpp"

#include "../store/helpers.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace banyan::nn {
namespace {

using namespace std::chrono_literals;
using store::test::eventually;
using store::test::gated_file_system;
using store::test::string_of;

const gpt_config small{.vocab_size = 29, .max_seq_len = 16, .num_layers = 3, .num_heads = 2, .channels = 16};
constexpr int B = 2, T = 16;
constexpr std::size_t device_budget = 1ull << 22;  // room for every plan: only the host pool matters here
constexpr std::uint64_t floor_bytes = 1000, blob_bytes = 1000;
constexpr int blobs = 5;

std::unique_ptr<backend> cpu() {
  auto be = make_backend({.name = "cpu", .threads = 2});
  EXPECT_TRUE(be);
  return std::move(be).value();
}

memory_costs unit_costs(const memory_graph& g) {
  memory_costs c;
  c.forward_ms.assign(g.ops.size(), 1.0);
  c.backward_ms.assign(g.ops.size(), 2.0);
  c.d2h_bytes_per_ms = c.h2d_bytes_per_ms = 4096;
  return c;
}

memory_graph layout(backend& be) { return gpt::create(small, B, T, be)->memory_layout(); }

memory_plan plan_of(const memory_graph& g, memory_decision d) {
  return compile_plan(g, unit_costs(g), std::vector<memory_decision>(g.ops.size(), d));
}

// The swap policy swaps every saved set whatever the costs, so its host pool is known in advance.
std::size_t swap_host_bytes(backend& be) { return plan_of(layout(be), memory_decision::swap).host_bytes; }

memory_options managed(memory_policy policy, std::shared_ptr<store::memory_budget> host) {
  memory_options o{.budget = device_budget, .policy = policy, .replan = false};
  o.host_budget = std::move(host);
  return o;
}

std::string blob_name(int i) { return "blob" + std::to_string(i); }
std::string blob_text(int i) { return std::string(blob_bytes, static_cast<char>('a' + i)); }

// A store in a temporary folder whose writer is held at the gate, holding `blobs` committed
// transactions of blob_bytes each: blobs x blob_bytes - floor_bytes of them held from `budget`.
struct held_store {
  store::test::temp_dir dir;
  std::shared_ptr<gated_file_system> gate = std::make_shared<gated_file_system>(store::posix_file_system());
  std::unique_ptr<store::blob_store> s;

  explicit held_store(std::shared_ptr<store::memory_budget> budget) {
    store::options o = store::test::test_options();  // no system memory source: only the budget counts
    o.fs = gate;
    o.floor_bytes = floor_bytes;
    o.ceiling_bytes = 1ull << 30;
    o.budget = std::move(budget);
    auto opened = store::blob_store::open(dir / "ckpt", o);
    EXPECT_TRUE(opened) << opened.error().what();
    if (!opened) return;
    s = std::move(*opened);
    for (int i = 0; i < blobs; ++i) commit(i);
  }
  ~held_store() { gate->open_gate(); }  // so that a failed test still ends (the store flushes on close)
  held_store(const held_store&) = delete;
  held_store& operator=(const held_store&) = delete;

  void commit(int i) {
    store::transaction t;
    t.put(blob_name(i), blob_text(i));
    auto id = s->commit(std::move(t));
    EXPECT_TRUE(id) << id.error().what();
  }
  // Every transaction committed is durable and reads back, in this store and in the folder reopened.
  void expect_all_durable(int committed) {
    ASSERT_TRUE(s->flush(30s)) << "the store did not flush";
    EXPECT_EQ(s->durable_id(), static_cast<store::txn_id>(committed));
    EXPECT_FALSE(s->failure().has_value());
    for (int i = 0; i < committed; ++i) {
      auto b = s->read(blob_name(i));
      ASSERT_TRUE(b) << b.error().what();
      EXPECT_EQ(string_of(*b), blob_text(i)) << blob_name(i);
    }
    s.reset();
    auto again = store::blob_store::open(dir / "ckpt", store::test::test_options());
    ASSERT_TRUE(again) << again.error().what();
    EXPECT_EQ((*again)->blobs().size(), static_cast<std::size_t>(committed));
    for (int i = 0; i < committed; ++i) {
      auto b = (*again)->read(blob_name(i));
      ASSERT_TRUE(b) << b.error().what();
      EXPECT_EQ(string_of(*b), blob_text(i)) << blob_name(i) << " after reopening";
    }
  }
};

TEST(MemoryHostBudget, TheHostPoolWaitsForTheStoreToFlushItsBufferAndNothingCommittedIsDropped) {
  auto be = cpu();
  const std::size_t host = swap_host_bytes(*be);
  ASSERT_GT(host, 0u);
  // Room for the host pool and 2000 buffered bytes above the store's floor; the store holds 4000.
  const std::uint64_t slack = 2000;
  auto budget = std::make_shared<store::memory_budget>(host + slack);
  held_store st(budget);
  ASSERT_NE(st.s, nullptr);
  const std::uint64_t held = blobs * blob_bytes - floor_bytes;
  ASSERT_EQ(budget->held(), held);
  ASSERT_GT(held, slack);
  // The last commit's limit: what was buffered then plus what the budget left free.
  const std::uint64_t limit_before = st.s->stats().buffer_limit;
  EXPECT_EQ(limit_before, budget->capacity() + floor_bytes);

  std::atomic<bool> created{false};
  std::optional<result<gpt>> model;
  std::jthread creator, committer;
  struct open_on_exit {  // a failed assertion still lets both threads end (declared last: runs first)
    gated_file_system& gate;
    ~open_on_exit() { gate.open_gate(); }
  } opener{*st.gate};
  creator = std::jthread([&] {
    model.emplace(gpt::create(small, B, T, *be, managed(memory_policy::swap, budget)));
    created = true;
  });
  // The executor asks for the host pool's bytes and waits: the store must flush first.
  ASSERT_TRUE(eventually([&] { return budget->taken() == host; })) << "the host pool never asked the budget";
  EXPECT_FALSE(created) << "the model was created while the store still held the budget's bytes";
  // The store's buffer shrank at once to what it holds: a new commit waits for the writer.
  committer = std::jthread([&] { st.commit(blobs); });
  ASSERT_TRUE(eventually([&] { return st.s->stats().commits_waiting == 1; }));
  EXPECT_EQ(st.s->stats().buffer_limit, blobs * blob_bytes);
  EXPECT_LT(st.s->stats().buffer_limit, limit_before);
  EXPECT_FALSE(created);

  st.gate->open_gate();
  creator.join();
  committer.join();
  ASSERT_TRUE(model.has_value());
  ASSERT_TRUE(*model) << model->error().what();
  gpt& m = **model;
  EXPECT_EQ(m.memory()->plan().host_bytes, host);
  EXPECT_EQ(budget->taken(), host);
  EXPECT_LE(budget->taken() + budget->held(), budget->capacity());
  st.expect_all_durable(blobs + 1);

  // The pool works: a training step swaps through it.
  m.init(1);
  std::vector<int> tok(B * T, 3), tgt(B * T, 4);
  m.forward(tok.data(), tgt.data(), B, T);
  m.zero_grad();
  m.backward();
  EXPECT_GT(m.memory()->stats().prefetches, 0u);
  EXPECT_EQ(budget->taken(), host);
  model.reset();
  EXPECT_EQ(budget->taken(), 0u) << "the executor gives its bytes back when it goes";
}

TEST(MemoryHostBudget, WithoutAHostBudgetNothingIsTakenAndNothingWaits) {
  auto be = cpu();
  const std::size_t host = swap_host_bytes(*be);
  ASSERT_GT(host, 0u);
  // The same store, holding more of its budget than the host pool would need.
  auto budget = std::make_shared<store::memory_budget>(host + 2000);
  held_store st(budget);
  ASSERT_NE(st.s, nullptr);
  const std::uint64_t held = budget->held();
  const store::store_stats before = st.s->stats();
  // Created while the store cannot flush: with no host budget nothing is asked, so nothing waits.
  auto m = gpt::create(small, B, T, *be, managed(memory_policy::swap, nullptr));
  ASSERT_TRUE(m) << m.error().what();
  EXPECT_EQ(m->memory()->plan().host_bytes, host);
  EXPECT_EQ(m->memory()->options().host_budget, nullptr);
  EXPECT_EQ(budget->taken(), 0u);
  EXPECT_EQ(budget->held(), held);
  st.commit(blobs);  // the buffer still has its room: this commit does not wait
  EXPECT_EQ(st.s->stats().commit_waits, 0u);
  EXPECT_EQ(st.s->stats().buffer_limit, before.buffer_limit);
  st.gate->open_gate();
  st.expect_all_durable(blobs + 1);
}

TEST(MemoryHostBudget, AHostBudgetChangesNoResult) {
  auto be = cpu();
  // The losses of three steps, then every gradient.
  auto train = [&](std::shared_ptr<store::memory_budget> host) {
    auto m = gpt::create(small, B, T, *be, managed(memory_policy::swap, std::move(host)));
    EXPECT_TRUE(m) << m.error().what();
    if (!m) return std::vector<float>{};
    m->init(9);
    std::vector<float> out;
    std::vector<int> tok(B * T), tgt(B * T);
    for (int s = 0; s < 3; ++s) {
      for (int i = 0; i < B * T; ++i) {
        tok[i] = (i * 7 + s) % small.vocab_size;
        tgt[i] = (i * 5 + s + 1) % small.vocab_size;
      }
      out.push_back(m->forward(tok.data(), tgt.data(), B, T));
      m->zero_grad();
      m->backward();
    }
    EXPECT_GT(m->memory()->stats().prefetches, 0u);
    const std::vector<float> grads = m->grads().to_host(*be);
    out.insert(out.end(), grads.begin(), grads.end());
    return out;
  };
  auto budget = std::make_shared<store::memory_budget>(1ull << 30);
  const std::vector<float> shared = train(budget);
  EXPECT_EQ(budget->taken(), 0u);
  EXPECT_EQ(shared, train(nullptr));
}

TEST(MemoryHostBudget, ATakeThatTimesOutIsAnErrorNamingTheBytesAndLeavesThePlanAsItWas) {
  auto be = cpu();
  const std::size_t host = swap_host_bytes(*be);
  auto budget = std::make_shared<store::memory_budget>(host + 2000);
  held_store st(budget);
  ASSERT_NE(st.s, nullptr);
  const std::uint64_t held = budget->held();
  // The gate stays shut: the store cannot flush, so the (short) wait runs out whatever the machine.
  memory_options o = managed(memory_policy::swap, budget);
  o.host_budget_wait = 50ms;
  auto failed = gpt::create(small, B, T, *be, o);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, errc::timeout) << failed.error().what();
  const std::string& why = failed.error().message;
  EXPECT_NE(why.find("(" + std::to_string(host) + " bytes)"), std::string::npos) << why;
  EXPECT_NE(why.find("the checkpoint write buffer did not flush in time"), std::string::npos) << why;
  EXPECT_NE(why.find("within 50 ms"), std::string::npos) << why;
  EXPECT_EQ(budget->taken(), 0u) << "a take that timed out takes nothing";

  // set_plan on a running model fails the same way and keeps the plan it had.
  o.policy = memory_policy::keep;
  auto m = gpt::create(small, B, T, *be, o);  // keeps everything: no host pool, nothing to take
  ASSERT_TRUE(m) << m.error().what();
  ASSERT_EQ(m->memory()->plan().host_bytes, 0u);
  const std::size_t peak = m->memory()->plan().peak_bytes;
  auto grow = m->memory()->set_plan(plan_of(m->memory()->graph(), memory_decision::swap));
  ASSERT_FALSE(grow);
  EXPECT_EQ(grow.error().code, errc::timeout);
  EXPECT_EQ(m->memory()->plan().host_bytes, 0u);
  EXPECT_EQ(m->memory()->plan().peak_bytes, peak);
  EXPECT_EQ(budget->taken(), 0u);
  EXPECT_EQ(budget->held(), held) << "the store kept what it buffered";

  st.gate->open_gate();
  st.expect_all_durable(blobs);
  // Flushed, the store leaves room: the same request now succeeds.
  EXPECT_TRUE(m->memory()->set_plan(plan_of(m->memory()->graph(), memory_decision::swap)));
  EXPECT_EQ(budget->taken(), host);
}

TEST(MemoryHostBudget, AGrowingHostPoolTakesTheDifferenceAndTheModelGivesItAllBack) {
  auto be = cpu();
  auto budget = std::make_shared<store::memory_budget>(1ull << 30);
  {
    auto m = gpt::create(small, B, T, *be, managed(memory_policy::keep, budget));
    ASSERT_TRUE(m) << m.error().what();
    EXPECT_EQ(budget->taken(), 0u);
    const memory_graph& g = m->memory()->graph();
    std::vector<memory_decision> some(g.ops.size(), memory_decision::keep);
    for (std::size_t i = 0; i < some.size(); i += 2) some[i] = memory_decision::swap;
    const memory_plan part = compile_plan(g, unit_costs(g), some);
    const memory_plan all = plan_of(g, memory_decision::swap);
    ASSERT_GT(part.host_bytes, 0u);
    ASSERT_LT(part.host_bytes, all.host_bytes);
    ASSERT_TRUE(m->memory()->set_plan(part));
    EXPECT_EQ(budget->taken(), part.host_bytes);
    ASSERT_TRUE(m->memory()->set_plan(all));
    EXPECT_EQ(budget->taken(), all.host_bytes);
    ASSERT_TRUE(m->memory()->set_plan(plan_of(g, memory_decision::keep)));
    EXPECT_EQ(budget->taken(), all.host_bytes) << "the host pool never shrinks, so it keeps its bytes";
  }
  EXPECT_EQ(budget->taken(), 0u);
}

TEST(MemoryHostBudget, AHostPoolLargerThanTheWholeBudgetFailsAtOnceNamingBoth) {
  auto be = cpu();
  const std::size_t host = swap_host_bytes(*be);
  auto budget = std::make_shared<store::memory_budget>(host - 1);
  memory_options o = managed(memory_policy::swap, budget);
  o.host_budget_wait = 0ms;  // a take would time out: the error must say too large instead
  auto m = gpt::create(small, B, T, *be, o);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, errc::invalid_argument);
  EXPECT_NE(m.error().message.find("(" + std::to_string(host) + " bytes)"), std::string::npos) << m.error().message;
  EXPECT_NE(m.error().message.find("(" + std::to_string(host - 1) + " bytes)"), std::string::npos) << m.error().message;
  EXPECT_EQ(budget->taken(), 0u);
}

}  // namespace
}  // namespace banyan::nn
