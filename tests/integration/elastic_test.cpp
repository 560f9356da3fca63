// Elastic scheduling with virtual workers (issue 15): train_gpt --elastic in one process with 1, 2 or
// 3 physical workers and any assignment (bit-identical losses), against one instance trained on the
// whole batch (within 1e-5); and on loopback nodes, a node killed with kill -9 mid-run and another
// joining with `banyan launch --join`, with the loss trajectory of an uninterrupted run, bit for bit.
#include "node_runs.hpp"

#include <banyan/nn/adamw.hpp>
#include <banyan/nn/backend.hpp>
#include <banyan/nn/data.hpp>
#include <banyan/nn/gpt.hpp>
#include <banyan/trainer/elastic.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <string>
#include <vector>

namespace banyan {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using test::run_command;
using test::scratch_dir;
using test::summary;

constexpr int virtual_workers = 6, batch = 6, seq = 16, channels = 16;
const char* const fortunes = "/usr/share/games/fortunes";

const std::string small_model =
    " --layers 1 --heads 2 --channels " + std::to_string(channels) + " --seq " + std::to_string(seq);

std::string train_args(int steps, int rows = batch, const std::string& model = small_model) {
  return std::string(TRAIN_GPT) + " --data " + fortunes + model + " --batch " + std::to_string(rows) + " --steps " +
         std::to_string(steps) +
         " --val-every 0 --val-batches 1 --sample-chars 10 --nn-threads 1 --checkpoint '' --json --elastic "
         "--virtual-workers " +
         std::to_string(virtual_workers);
}

std::vector<double> losses_of(const nlohmann::json& j) { return j.value("losses", std::vector<double>{}); }

// One instance trained on the whole batch: virtual worker v's rows are rows [v*b, (v+1)*b) of it.
std::vector<double> one_instance(int steps) {
  auto corpus = nn::load_fortunes(fortunes);
  EXPECT_TRUE(corpus.has_value());
  if (!corpus) return {};
  const std::size_t split = corpus->ids.size() * 9 / 10;
  const int rows = batch / virtual_workers;
  auto shards = trainer::virtual_shards::make(corpus->ids, split, virtual_workers, rows, seq, 1);
  EXPECT_TRUE(shards.has_value());
  auto be = nn::make_backend({.name = "cpu", .threads = 1});
  EXPECT_TRUE(be.has_value());
  if (!shards || !be) return {};
  const nn::gpt_config cfg{.vocab_size = static_cast<int>(corpus->vocab.size()),
                           .max_seq_len = seq,
                           .num_layers = 1,
                           .num_heads = 2,
                           .channels = channels};
  auto model = nn::gpt::create(cfg, batch, seq, **be);
  EXPECT_TRUE(model.has_value());
  if (!model) return {};
  model->init(1);
  nn::adamw opt(**be, model->params());
  std::vector<double> losses;
  for (int step = 0; step < steps; ++step) {
    std::vector<int> tokens, targets, t, g;
    for (int v = 0; v < virtual_workers; ++v) {
      shards->batch(step, v, t, g);
      tokens.insert(tokens.end(), t.begin(), t.end());
      targets.insert(targets.end(), g.begin(), g.end());
    }
    losses.push_back(model->forward(tokens.data(), targets.data(), batch, seq));
    model->zero_grad();
    model->backward();
    opt.step(model->params().base(), model->grads().base(), {.lr = 1e-3f, .weight_decay = 0.0f, .grad_clip = 1.0f});
  }
  return losses;
}

TEST(Elastic, BalanceGivesFasterWorkersMore) {
  // p1 is three times as slow per virtual worker: it gets about a quarter of them.
  EXPECT_EQ(trainer::balance_counts({{1, 10.0}, {1, 30.0}}, 8), (std::vector<int>{6, 2}));
  // Threads count: two threads finish two at a time.
  EXPECT_EQ(trainer::balance_counts({{2, 10.0}, {1, 10.0}}, 6), (std::vector<int>{4, 2}));
  // Unmeasured workers count as the mean of the measured ones; none measured: equal.
  EXPECT_EQ(trainer::balance_counts({{1, 0.0}, {1, 0.0}, {1, 0.0}}, 7), (std::vector<int>{3, 2, 2}));
  EXPECT_EQ(trainer::even_counts({{1, 10.0}, {1, 30.0}}, 8), (std::vector<int>{4, 4}));
  // Every count always sums to V, one worker gets them all.
  EXPECT_EQ(trainer::balance_counts({{3, 5.0}}, 5), (std::vector<int>{5}));
}

TEST(Elastic, LossesAreBitIdenticalWhateverThePhysicalWorkers) {
  constexpr int steps = 8;
  const std::vector<std::string> variants = {
      " --physical-workers 1",
      " --physical-workers 2",
      " --physical-workers 3 --worker-threads 2 --throttle p0=3",  // a measured, uneven assignment
      " --physical-workers 2 --balance even",
  };
  std::vector<std::vector<double>> runs;
  for (const auto& v : variants) {
    auto r = run_command(train_args(steps) + v, 120s);
    ASSERT_EQ(r.exit_code, 0) << v << "\n" << r.output;
    auto j = summary(r.output);
    ASSERT_TRUE(j.is_object()) << r.output;
    runs.push_back(losses_of(j));
    ASSERT_EQ(runs.back().size(), static_cast<std::size_t>(steps)) << v << "\n" << r.output;
    EXPECT_EQ(j["elastic"]["virtual_workers"], virtual_workers);
  }
  for (std::size_t i = 1; i < runs.size(); ++i) EXPECT_EQ(runs[i], runs[0]) << "variant" << variants[i];
  const auto reference = one_instance(steps);
  ASSERT_EQ(reference.size(), runs[0].size());
  for (int s = 0; s < steps; ++s) EXPECT_NEAR(runs[0][s], reference[s], 1e-5) << "step " << s;
}

TEST(Elastic, BadOptionsAreClearErrors) {
  auto uneven = run_command(train_args(2, 8), 60s);  // 8 rows for 6 virtual workers
  EXPECT_EQ(uneven.exit_code, 2) << uneven.output;
  EXPECT_NE(uneven.output.find("--batch 8: must be a multiple of --virtual-workers 6"), std::string::npos)
      << uneven.output;
  auto throttle = run_command(train_args(2) + " --throttle p7=2", 60s);
  EXPECT_EQ(throttle.exit_code, 2) << throttle.output;
  EXPECT_NE(throttle.output.find("--throttle `p7=2`: no physical worker `p7`"), std::string::npos) << throttle.output;
  auto workers = run_command(train_args(2) + " --workers 2", 60s);
  EXPECT_EQ(workers.exit_code, 2) << workers.output;
  EXPECT_NE(workers.output.find("--elastic: not with --workers"), std::string::npos) << workers.output;
}

// Reads `p`'s output (stderr merged) into `log` until a line contains every one of `parts`; false
// when the process ends or `limit` passes first.
bool await_line(process& p, std::string& log, const std::vector<std::string>& parts, std::chrono::seconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  for (;;) {
    bool found = false;  // every line taken is kept, those after the one sought too
    for (auto& line : p.take_lines()) {
      log += line + "\n";
      bool all = true;
      for (const auto& part : parts) all = all && line.find(part) != std::string::npos;
      found = found || all;
    }
    if (found) return true;
    if (p.status() || std::chrono::steady_clock::now() >= until) return false;
    p.read(100ms);
  }
}

// n0: the root, the scheduler and p0; n1: p1; n2: p2; n3 (join: later): p3. Once p2 has work, n3
// joins with `banyan launch --join`; once p3 has joined, n2 is killed with kill -9. p2 is throttled
// (20x) and the split is even, so the kill lands while p2 computes: its virtual workers of that step
// are redone by the others. The losses equal an uninterrupted run's in one process, bit for bit.
TEST(Elastic, JoinAndKillKeepTheLossTrajectory) {
  // A step of this model takes p2 tens of ms: the run outlasts the join and the kill.
  constexpr int steps = 300;
  const std::string model = " --layers 2 --heads 2 --channels 32 --seq 64";
  scratch_dir dir;
  const fs::path d = dir.path / "deployment.yaml";
  {
    std::ofstream out(d);
    out << "version: 1\nnodes:\n";
    for (int i = 0; i < 4; ++i)
      out << "  - {name: n" << i << ", endpoint: \"ipc://" << (dir.path / ("n" + std::to_string(i))).string()
          << "\", capacity: {cpu: 1}" << (i == 3 ? ", join: later" : "") << "}\n";
    out << "assignments:\n  /train_gpt: n0\n";
    for (int i = 1; i < 4; ++i) out << "  /train_gpt/trainer/p" << i << ": n" << i << "\n";
  }
  const std::string app =
      train_args(steps, batch, model) + " --physical-workers 4 --min-workers 3 --balance even --throttle p2=20";
  auto spawn = [](const std::string& command) {
    auto p = process::spawn({"sh", "-c", "exec " + command}, {.out = output_mode::capture, .err = output_mode::merge});
    EXPECT_TRUE(p.has_value()) << command;
    return std::move(p).value();
  };
  auto node = [&](const std::string& name) { return spawn(app + " --deployment " + d.string() + " --node " + name); };
  process n0 = node("n0"), n1 = node("n1"), n2 = node("n2");
  std::string log0;
  ASSERT_TRUE(await_line(n0, log0, {"elastic: step", "assignment", "p2 v"}, 120s)) << log0 << n2.output();
  process joiner = spawn(std::string(BANYAN_CLI) + " launch " + d.string() + " --join n3 -- " + app);
  ASSERT_TRUE(await_line(n0, log0, {"elastic: p3 joined"}, 60s)) << log0 << joiner.output();
  n2.kill();  // kill -9
  ASSERT_TRUE(await_line(n0, log0, {"elastic: p2 left"}, 60s)) << log0;
  auto st0 = n0.wait(std::chrono::milliseconds(180000));
  for (auto& line : n0.take_lines()) log0 += line + "\n";
  ASSERT_TRUE(st0.has_value()) << log0;
  EXPECT_EQ(st0->code, 0) << log0;
  for (auto* p : {&n1, &joiner}) {
    auto st = p->wait(std::chrono::milliseconds(60000));
    ASSERT_TRUE(st.has_value()) << p->output();
    EXPECT_EQ(st->code, 0) << p->output();
  }
  auto j = summary(log0);
  ASSERT_TRUE(j.is_object()) << log0;
  EXPECT_EQ(j["elastic"]["leaves"], 1);
  // p0, p1, p2 at the start, then p3, then p2 again where the failover put it (asked for at its loss,
  // held until the failover placed it).
  EXPECT_EQ(j["elastic"]["joins"], 5) << log0;
  EXPECT_NE(log0.find("failing over `/train_gpt/trainer/p2` to `"), std::string::npos) << log0;
  std::cout << "redone steps: " << j["elastic"]["redone"] << "\n";  // the kill landed mid-step (usually)

  auto uninterrupted = run_command(train_args(steps, batch, model) + " --physical-workers 1", 300s);
  ASSERT_EQ(uninterrupted.exit_code, 0) << uninterrupted.output;
  const auto want = losses_of(summary(uninterrupted.output));
  ASSERT_EQ(want.size(), static_cast<std::size_t>(steps));
  EXPECT_EQ(losses_of(j), want);
}

}  // namespace
}  // namespace banyan
