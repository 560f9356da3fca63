// The shipped `zb-h1` and `interleaved-1f1b` against the orders of the libraries they are named after,
// transcribed here as plain loops (no torch or Megatron-LM where the tests run):
//   zb-h1            torch.distributed.pipelining's ScheduleInterleavedZeroBubble (ZB1P) with one
//                    stage per rank: _get_warmup_ops(multiply_factor=1) and _get_1f1b_rank_ops with
//                    enable_zero_bubble and num_1f1b_microbatches = rank (pytorch/pytorch 1fd7abc);
//   interleaved-1f1b Megatron-LM's forward_backward_pipelining_with_interleaving (m a multiple of p):
//                    2(p-1-r) + (v-1)p warm-up forwards, or all of them when m == p.
// Every shape torch or Megatron accepts in the ranges below is compared action for action.
#include <banyan/pipeline/csv.hpp>
#include <banyan/pipeline/dsl.hpp>
#include <banyan/pipeline/simulate.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace bp = banyan::pipeline;

namespace {

bp::table shipped(const char* name, bp::shape s) {
  const auto* b = bp::find_builtin(name);
  EXPECT_NE(b, nullptr) << name;
  if (!b) return {};
  auto prog = bp::parse_program(b->text, name);
  EXPECT_TRUE(prog) << prog.error().message;
  if (!prog) return {};
  auto t = bp::compile(*prog, s);
  EXPECT_TRUE(t) << name << " p=" << s.p << " m=" << s.m << " v=" << s.v << ": " << t.error().message;
  return t ? *t : bp::table{};
}

std::string act(int stage, char kind, int mb) { return std::to_string(stage) + kind + std::to_string(mb); }

std::string join(const std::vector<std::vector<std::string>>& ranks) {
  std::string out;
  for (const auto& row : ranks) {
    for (std::size_t i = 0; i < row.size(); ++i) out += (i ? "," : "") + row[i];
    out += "\n";
  }
  return out;
}

// torch's ZB1P with one local stage: warm-up min(p-1-r, m) forwards; then per op a forward (while
// any is left) and a backward-input, followed by the oldest pending weight gradient once the op is
// the r-th after the warm-up or later; the weight gradients still pending come last.
std::string torch_zb1p(int p, int m) {
  std::vector<std::vector<std::string>> ranks(p);
  for (int r = 0; r < p; ++r) {
    const int warmup = std::min(p - 1 - r, m), total = m + warmup;
    int f = 0, i = 0, w = 0;
    auto& row = ranks[r];
    for (int op = 0; op < total; ++op) {
      if (op < warmup) {
        row.push_back(act(r, 'F', f++));
        continue;
      }
      if (op < m) row.push_back(act(r, 'F', f++));
      row.push_back(act(r, 'I', i++));
      if (op - warmup >= r) row.push_back(act(r, 'W', w++));
    }
    while (w < i) row.push_back(act(r, 'W', w++));
  }
  return join(ranks);
}

// Megatron-LM's interleaved 1F1B (m % p == 0): the k-th forward is chunk (k mod pv) / p, microbatch
// (k / pv) p + k mod p; backwards visit the chunks in reverse.
std::string megatron_interleaved(int p, int m, int v) {
  std::vector<std::vector<std::string>> ranks(p);
  const int total = m * v;
  for (int r = 0; r < p; ++r) {
    const int warmup = m == p ? total : std::min(2 * (p - 1 - r) + (v - 1) * p, total);
    auto unit = [&](int k, bool forward, char kind) {
      const int c = (k % (p * v)) / p, chunk = forward ? c : v - 1 - c;
      return act(chunk * p + r, kind, (k / (p * v)) * p + k % p);
    };
    auto& row = ranks[r];
    for (int k = 0; k < warmup; ++k) row.push_back(unit(k, true, 'F'));
    for (int k = 0; k < total - warmup; ++k) {
      row.push_back(unit(warmup + k, true, 'F'));
      row.push_back(unit(k, false, 'B'));
    }
    for (int k = total - warmup; k < total; ++k) row.push_back(unit(k, false, 'B'));
  }
  return join(ranks);
}

}  // namespace

TEST(ReferenceOrders, ZbH1IsTorchZb1pForEveryShapeTorchAccepts) {
  for (int p = 1; p <= 8; ++p)
    for (int m = 1; m <= 3 * p + 1; ++m) {
      // ScheduleInterleavedZeroBubble refuses m that is not a multiple of its rounds, max(1, m / p).
      if (m % std::max(1, m / p) != 0) continue;
      SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(m));
      EXPECT_EQ(bp::write_csv(shipped("zb-h1", {p, m, 1})), torch_zb1p(p, m));
    }
}

// The case that differed: with m <= p-2 rank 1 keeps its first I's weight gradient back (torch
// counts the r deferred W over the steady phase and the cool-down together).
TEST(ReferenceOrders, ZbH1DefersWWithFewMicrobatchesAsTorchDoes) {
  const auto t = shipped("zb-h1", {4, 2, 1});
  EXPECT_EQ(bp::write_csv(t),
            "0F0,0F1,0I0,0W0,0I1,0W1\n1F0,1F1,1I0,1I1,1W0,1W1\n2F0,2F1,2I0,2I1,2W0,2W1\n3F0,3I0,3F1,3I1,3W0,3W1\n");
}

TEST(ReferenceOrders, InterleavedIsMegatronForEveryWholeGroupShape) {
  for (int p = 2; p <= 6; ++p)
    for (int v = 2; v <= 3; ++v)
      for (int m = p; m <= 3 * p; m += p) {
        SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(m) + " v=" + std::to_string(v));
        EXPECT_EQ(bp::write_csv(shipped("interleaved-1f1b", {p, m, v})), megatron_interleaved(p, m, v));
      }
}

// Megatron's all-warm-up case at m == p: every rank runs all its forwards first, so the last rank
// holds all of them (peak m*v units of 1/v each: m) where the 1F1B warm-up would hold fewer.
TEST(ReferenceOrders, InterleavedRunsEveryForwardFirstWhenMEqualsP) {
  const int p = 2, m = 2, v = 2;
  const auto t = shipped("interleaved-1f1b", {p, m, v});
  EXPECT_EQ(bp::write_csv(t), "0F0,0F1,2F0,2F1,2B0,2B1,0B0,0B1\n1F0,1F1,3F0,3F1,3B0,3B1,1B0,1B1\n");
  auto stages = bp::stage_costs(bp::uniform_costs(p, 1, 1, 1), t.stages);
  ASSERT_TRUE(stages);
  auto s = bp::simulate(t, *stages);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_DOUBLE_EQ(s->peak_memory[p - 1], m);
}
