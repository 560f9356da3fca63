// The shipped `zb-v` against its reference, torch.distributed.pipelining's ScheduleZBVZeroBubble
// (the order of Qi et al. 2024, section 6): the same order per rank for every m >= 2p-1, span bubble
// 0 at equal times once m >= 2p, and for m < 2p-1 torch's rule (the order for 2p-1 microbatches with
// the extra ones dropped), which still validates.
#include <banyan/pipeline/csv.hpp>
#include <banyan/pipeline/dsl.hpp>
#include <banyan/pipeline/simulate.hpp>
#include <banyan/pipeline/validate.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <sys/wait.h>

namespace bp = banyan::pipeline;

namespace {

bp::table zbv(int p, int m) {
  const auto* b = bp::find_builtin("zb-v");
  EXPECT_NE(b, nullptr);
  auto prog = bp::parse_program(b->text, "zb-v");
  EXPECT_TRUE(prog) << prog.error().message;
  auto t = bp::compile(*prog, {p, m, 2});
  EXPECT_TRUE(t) << "p=" << p << " m=" << m << ": " << t.error().message;
  return t ? *t : bp::table{};
}

bp::sim_result simulate(const bp::table& t, int p, double tf, double ti, double tw) {
  auto stages = bp::stage_costs(bp::uniform_costs(p, tf, ti, tw), t.stages);
  EXPECT_TRUE(stages) << stages.error().message;
  auto r = bp::simulate(t, *stages);
  EXPECT_TRUE(r) << r.error().message;
  return r ? *r : bp::sim_result{};
}

// Reads the format of tools/pipeline/torch_zbv_orders.py: `# p=P m=M`, then one CSV line per rank.
std::map<std::pair<int, int>, std::string> read_orders(std::istream& in) {
  std::map<std::pair<int, int>, std::string> out;
  std::pair<int, int> shape{0, 0};
  std::string line;
  while (std::getline(in, line)) {
    int p = 0, m = 0;
    if (std::sscanf(line.c_str(), "# p=%d m=%d", &p, &m) == 2) {
      shape = {p, m};
      out[shape];
    } else if (!line.empty() && line[0] != '#' && shape.first > 0) {
      out[shape] += line + "\n";
    }
  }
  return out;
}

void expect_torch_order(const std::map<std::pair<int, int>, std::string>& orders) {
  for (const auto& [shape, csv] : orders) {
    const auto [p, m] = shape;
    SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(m));
    EXPECT_EQ(bp::write_csv(zbv(p, m)), csv);
  }
}

}  // namespace

TEST(ZbV, EqualsTorchOrderOnTheCommittedShapes) {
  std::ifstream in(BANYAN_SOURCE_DIR "/tests/pipeline/zbv_torch_orders.txt");
  ASSERT_TRUE(in) << "tests/pipeline/zbv_torch_orders.txt";
  const auto orders = read_orders(in);
  ASSERT_EQ(orders.size(), 3u);
  EXPECT_TRUE(orders.count({2, 3}) && orders.count({2, 4}) && orders.count({4, 8}));
  expect_torch_order(orders);
}

// p in {2, 3, 4, 6, 8}, m from 2p-1 to 4p, against torch itself: skipped where torch (with
// torch.distributed.pipelining, torch >= 2.4) cannot be imported.
TEST(ZbV, EqualsTorchOrderForEveryMFrom2PMinus1) {
  const std::string cmd = "python3 " BANYAN_SOURCE_DIR "/tools/pipeline/torch_zbv_orders.py --sweep 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr) << cmd;
  std::string text;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) text.append(buf, n);
  const int status = pclose(pipe);
  const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  if (rc == 77 || rc == 127)
    GTEST_SKIP() << "no torch.distributed.pipelining here (" << text
                 << "); checked against tests/pipeline/zbv_torch_orders.txt only";
  ASSERT_EQ(rc, 0) << text;
  std::istringstream in(text);
  const auto orders = read_orders(in);
  EXPECT_EQ(orders.size(), 6u + 8 + 10 + 14 + 18);  // 2p + 2 values of m per p
  expect_torch_order(orders);
}

TEST(ZbV, SpanBubbleIsZeroAtEqualTimesFromMEqual2P) {
  for (int p : {2, 3, 4, 6, 8})
    for (int m = 2 * p; m <= 4 * p; ++m)
      for (double t : {1.0, 2.5}) {
        SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(m) + " t=" + std::to_string(t));
        const auto r = simulate(zbv(p, m), p, t, t, t);
        EXPECT_NEAR(r.span_bubble_ratio, 0, 1e-9);
        // 1F1B's memory: 2p chunk activations of half a stage each.
        EXPECT_DOUBLE_EQ(r.max_peak_memory(), p);
      }
}

// Below 2p-1 microbatches torch computes the order for n = 2p-1 and drops microbatches m..n-1; the
// program does the same (its ops may find nothing to take). Those tables must still run.
TEST(ZbV, FewMicrobatchesKeepTorchsOrderWithTheExtraOnesDropped) {
  for (int p : {1, 2, 3, 4, 6, 8}) {
    const bp::table full = zbv(p, 2 * p - 1);
    for (int m = 1; m < 2 * p - 1; ++m) {
      SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(m));
      bp::table expected = full;
      expected.microbatches = m;
      for (auto& row : expected.ranks) std::erase_if(row, [&](const bp::action& a) { return a.microbatch >= m; });
      const bp::table t = zbv(p, m);
      EXPECT_EQ(bp::write_csv(t), bp::write_csv(expected));
      auto violation = bp::validate(t);
      EXPECT_FALSE(violation) << violation->message;
    }
  }
}
