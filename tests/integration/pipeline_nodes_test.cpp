// Pipeline stages across nodes: train_gpt --pipeline with its stage leaves on 2
// and 4 loopback nodes under banyan launch gives the one-process run's losses bit for bit, and every
// link carries exactly the bytes pipeline::predict_traffic derives from the schedule and the
// placement; a stage node killed mid-run ends the run by itself with an error naming the stage and
// the last checkpoint, from which --resume continues the same loss curve.
#include "node_runs.hpp"

#include "banyan/base/process.hpp"
#include "banyan/broker/profile.hpp"

#include <banyan/pipeline/dsl.hpp>
#include <banyan/pipeline/trainer.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

namespace banyan {
namespace {

namespace fs = std::filesystem;
namespace pl = banyan::pipeline;
using namespace std::chrono_literals;
using test::run_command;
using test::scratch_dir;
using test::summary;

struct run_shape {
  int layers = 2, ranks = 2, microbatches = 4, interleave = 1, steps = 3;
  std::string schedule = "1f1b";
  int checkpoint_every = 0;  // > 0: --checkpoint-every (its ctl/saved and ctl/committed are predicted too)
};

constexpr int batch = 8, seq = 16, channels = 16;

std::string train_args(const run_shape& r) {
  return std::string(TRAIN_GPT) + " --data /usr/share/games/fortunes --heads 2 --channels " + std::to_string(channels) +
         " --seq " + std::to_string(seq) + " --batch " + std::to_string(batch) + " --nn-threads 1 --layers " +
         std::to_string(r.layers) + " --steps " + std::to_string(r.steps) + " --pipeline " + std::to_string(r.ranks) +
         " --schedule " + r.schedule + " --microbatches " + std::to_string(r.microbatches) + " --interleave " +
         std::to_string(r.interleave);
}

// The trainer's options as train_gpt builds them for `r` (the model's vocabulary from its --json).
pl::trainer_options options_of(const run_shape& r, int vocab) {
  pl::trainer_options o;
  o.model = {.vocab_size = vocab, .max_seq_len = seq, .num_layers = r.layers, .num_heads = 2, .channels = channels};
  o.batch = batch / r.microbatches;
  o.seq_len = seq;
  auto prog = pl::parse_program(pl::find_builtin(r.schedule)->text, r.schedule);
  EXPECT_TRUE(prog.has_value());
  auto t = pl::compile(*prog, {r.ranks, r.microbatches, r.interleave});
  EXPECT_TRUE(t.has_value()) << t.error().message;
  o.schedule = *t;
  o.steps = r.steps;
  o.record_timeline = true;
  if (r.checkpoint_every > 0) o.checkpoints = {.path = "pp.ckpt", .every = r.checkpoint_every};
  return o;
}

std::vector<double> losses_of(const nlohmann::json& j) { return j.at("losses").get<std::vector<double>>(); }

// Leaf r on node n<r * nodes / ranks>; the root and the composite on n0.
void expect_nodes_match_one_process(const run_shape& r, int nodes) {
  scratch_dir dir;
  std::vector<std::pair<std::string, std::string>> assign{{"/train_gpt", "n0"}};
  std::vector<std::string> node_of_rank;
  for (int q = 0; q < r.ranks; ++q) {
    node_of_rank.push_back("n" + std::to_string(q * nodes / r.ranks));
    if (node_of_rank.back() != "n0")
      assign.push_back({"/train_gpt/trainer/r" + std::to_string(q), node_of_rank.back()});
  }
  const std::string app = train_args(r) + " --json --checkpoint " +
                          (r.checkpoint_every > 0 ? (dir.path / "pp.ckpt").string() + " --checkpoint-every " +
                                                        std::to_string(r.checkpoint_every)
                                                  : std::string("''"));
  auto one = run_command(app, 120s);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const auto prof = dir.path / "profile.json";
  auto launched =
      run_command(std::string(BANYAN_CLI) + " launch " + test::write_deployment(dir.path, assign, nodes).string() +
                      " --run-for 120s --profile " + prof.string() + " -- " + app,
                  180s);
  ASSERT_EQ(launched.exit_code, 0) << launched.output;
  const auto a = summary(one.output), b = summary(launched.output, "n0");
  ASSERT_TRUE(a.is_object() && b.is_object()) << one.output << launched.output;
  ASSERT_EQ(losses_of(a).size(), static_cast<std::size_t>(r.steps));
  EXPECT_EQ(losses_of(a), losses_of(b));  // the same arithmetic wherever the leaves run

  auto want = pl::predict_traffic(options_of(r, b.at("vocab_size").get<int>()), "n0", node_of_rank);
  ASSERT_TRUE(want.has_value()) << want.error().message;
  auto p = profile::load(prof.string());
  ASSERT_TRUE(p.has_value()) << p.error().what();
  std::map<std::pair<std::string, std::string>, std::pair<std::uint64_t, std::uint64_t>> measured, predicted;
  for (const auto& l : p->links)
    if (l.messages) measured[{l.from, l.to}] = {l.messages, l.bytes};
  std::uint64_t tensor_bytes = 0;
  for (const auto& [link, t] : *want) {
    predicted[link] = {t.messages, t.bytes};
    tensor_bytes += t.tensor_bytes;
  }
  EXPECT_EQ(measured, predicted);
  EXPECT_GT(tensor_bytes, 0u);  // activations and gradients did cross the links
}

TEST(PipelineNodes, TwoNodesGiveTheOneProcessLossesAndThePredictedBytesPerLink) {
  expect_nodes_match_one_process({.layers = 2, .ranks = 2, .microbatches = 4, .steps = 3, .schedule = "1f1b"}, 2);
}

// Four ranks of two chunks each (V placement: stage 0 and stage 7 on rank 0) on four nodes, and
// zb-h1's split backward on two nodes holding two ranks each (the messages between two ranks of n1
// go through n0, where the composite is), saving checkpoints after steps 2 and 3.
TEST(PipelineNodes, FourNodesWithVPlacementAndTwoRanksPerNode) {
  expect_nodes_match_one_process(
      {.layers = 8, .ranks = 4, .microbatches = 8, .interleave = 2, .steps = 2, .schedule = "zb-v"}, 4);
  expect_nodes_match_one_process(
      {.layers = 4, .ranks = 4, .microbatches = 4, .steps = 3, .schedule = "zb-h1", .checkpoint_every = 2}, 2);
}

bool await_line(process& p, std::string& log, const std::regex& line, std::smatch& match, std::chrono::seconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  for (;;) {
    for (auto& l : p.take_lines()) {
      log += l + "\n";
      if (std::regex_search(l, match, line)) return true;
    }
    if (p.status() || std::chrono::steady_clock::now() >= until) return false;
    p.read(100ms);
  }
}

// n1 (stage 1) is killed with kill -9 once the checkpoint after step 4 is written, while n0 trains
// on: n0 must end by itself (the heartbeat finds the loss within about a second), fail, and name the
// stage and the checkpoint; resuming on two nodes gives the uninterrupted run's next losses exactly.
TEST(PipelineNodes, AKilledStageNodeFailsFastNamingTheStageAndResumeContinuesTheCurve) {
  scratch_dir dir;
  const run_shape r{.layers = 2, .ranks = 2, .microbatches = 4, .steps = 5000, .schedule = "1f1b"};
  const auto d = test::write_deployment(dir.path, {{"/train_gpt", "n0"}, {"/train_gpt/trainer/r1", "n1"}}, 2);
  const std::string ck = (dir.path / "pp.ckpt").string();
  const std::string app = train_args(r) + " --checkpoint " + ck + " --checkpoint-every 2";
  auto spawn = [&](const std::string& node) {
    auto p = process::spawn({"sh", "-c", "exec " + app + " --deployment " + d.string() + " --node " + node},
                            {.out = output_mode::capture, .err = output_mode::merge});
    EXPECT_TRUE(p.has_value());
    return std::move(p).value();
  };
  process n0 = spawn("n0"), n1 = spawn("n1");
  std::string log0;
  std::smatch m;
  ASSERT_TRUE(await_line(n0, log0, std::regex("checkpoint in `.*pp\\.ckpt` after step 4"), m, 60s))
      << log0 << n1.output();
  n1.kill();  // kill -9
  const auto killed = std::chrono::steady_clock::now();
  auto st = n0.wait(std::chrono::milliseconds(30000));
  ASSERT_TRUE(st.has_value()) << "n0 did not end by itself within 30 s of the kill\n" << log0 << n0.output();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  for (auto& l : n0.take_lines()) log0 += l + "\n";
  EXPECT_NE(st->code, 0) << log0;
  std::cout << "n0 ended " << seconds << " s after the kill\n";
  // The loss reaches the trainer first as the loss itself (`lost: no frame ...`) or as its
  // failover (`lost; failed over to ...`), whichever the node's actors deliver first.
  const std::regex error(
      "pipeline stage 1 \\(`/train_gpt/trainer/r1`\\) failed: node `n1` lost[:;] .*; the pipeline cannot go "
      "on without it; the last durable checkpoint in `.*pp\\.ckpt` is after step ([0-9]+)");
  ASSERT_TRUE(std::regex_search(log0, m, error)) << log0;
  const int saved = std::stoi(m[1].str());
  EXPECT_GE(saved, 4);
  EXPECT_EQ(saved % 2, 0);

  // Four more steps from the checkpoint, against an uninterrupted run in one process.
  run_shape more = r;
  more.steps = saved + 4;
  auto resumed = run_command(std::string(BANYAN_CLI) + " launch " + d.string() + " --run-for 120s -- " +
                                 train_args(more) + " --checkpoint " + ck + " --require-resume --json",
                             180s);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  auto whole = run_command(train_args(more) + " --checkpoint '' --json", 120s);
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  const auto a = losses_of(summary(whole.output)), b = losses_of(summary(resumed.output, "n0"));
  ASSERT_EQ(a.size(), static_cast<std::size_t>(saved + 4));
  EXPECT_EQ(b, std::vector<double>(a.end() - 4, a.end())) << resumed.output;
  EXPECT_EQ(summary(resumed.output, "n0").at("first_step"), saved + 1);
  // The folder's latest checkpoint is the last step's, and older ones are gone: the store keeps its
  // last two transactions (docs/store.md).
  auto manifest = pl::read_manifest(ck);
  ASSERT_TRUE(manifest) << manifest.error().message;
  EXPECT_EQ(manifest->step, saved + 4);
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(ck)) files += e.is_regular_file() ? 1 : 0;
  EXPECT_LE(files, 2u);
}

}  // namespace
}  // namespace banyan
