// Data-parallel training across nodes (issue 14 item 4): train_gpt's node trainers under one gradient
// server, in one process and on three loopback nodes under banyan launch, against one instance
// trained on the whole batch. The gradients travel as broker messages, so the merged profile shows
// exactly what crossed each link.
#include "node_runs.hpp"

#include "banyan/broker/profile.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace banyan {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using test::run_command;
using test::scratch_dir;

constexpr int steps = 6;

std::string train_args() {
  return std::string(TRAIN_GPT) +
         " --data /usr/share/games/fortunes --layers 1 --heads 2 --channels 16 --seq 16 --batch 6 --steps " +
         std::to_string(steps) +
         " --val-every 0 --val-batches 1 --sample-chars 10 --nn-threads 1 --checkpoint '' --json";
}

using test::summary;

// n0 holds the root, the gradient server and rank 0; n1 and n2 one node trainer each, so every
// gradient of ranks 1 and 2 crosses a link.
fs::path write_deployment(const fs::path& dir) {
  return test::write_deployment(
      dir, {{"/train_gpt", "n0"}, {"/train_gpt/trainer/n1", "n1"}, {"/train_gpt/trainer/n2", "n2"}});
}

TEST(DataParallel, NodeTrainersOnThreeNodesMatchOneProcessAndOneInstance) {
  scratch_dir dir;
  auto one = run_command(train_args(), 120s);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  auto in_process = run_command(train_args() + " --workers 1 --data-parallel 3", 120s);
  ASSERT_EQ(in_process.exit_code, 0) << in_process.output;
  const auto prof = dir.path / "profile.json";
  auto launched = run_command(std::string(BANYAN_CLI) + " launch " + write_deployment(dir.path).string() +
                                  " --run-for 240s --profile " + prof.string() + " -- " + train_args() +
                                  " --workers 1 --data-parallel 3",
                              300s);
  ASSERT_EQ(launched.exit_code, 0) << launched.output;

  auto a = summary(one.output), b = summary(in_process.output), c = summary(launched.output, "n0");
  ASSERT_TRUE(a.is_object() && b.is_object() && c.is_object()) << one.output << in_process.output << launched.output;
  ASSERT_EQ(c["steps"], steps);
  // Three node trainers of one worker each on two rows: the cluster mean of their gradients is the
  // whole batch's (float rounding apart); where they run changes nothing (the server sums in rank order).
  EXPECT_LT(std::abs(a["train_loss"].get<double>() - b["train_loss"].get<double>()), 1e-5)
      << a["train_loss"] << " vs " << b["train_loss"];
  EXPECT_EQ(b["train_loss"].get<double>(), c["train_loss"].get<double>());
  EXPECT_EQ(b["val_loss"].get<double>(), c["val_loss"].get<double>());
  EXPECT_EQ(b["sample"], c["sample"]);
  for (const char* rank : {"n1", "n2"}) {
    const std::string line = std::string("[/train_gpt/trainer/") + rank + "] data-parallel: node trainer ";
    EXPECT_NE(launched.output.find(line), std::string::npos) << launched.output;
  }

  // Exactly one gradient (header + the parameter arena's bytes) up and one down per node per step,
  // between the server's node and each other node, and nothing between n1 and n2.
  auto p = profile::load(prof.string());
  ASSERT_TRUE(p.has_value()) << p.error().what();
  const std::uint64_t gradient = 32 + c["gradient_bytes"].get<std::uint64_t>();
  std::map<std::pair<std::string, std::string>, std::pair<std::uint64_t, std::uint64_t>> links;
  for (const auto& l : p->links)
    if (l.messages) links[{l.from, l.to}] = {l.messages, l.bytes};
  const std::pair<std::uint64_t, std::uint64_t> one_per_step{steps, steps * gradient};
  std::map<std::pair<std::string, std::string>, std::pair<std::uint64_t, std::uint64_t>> want{
      {{"n0", "n1"}, one_per_step},
      {{"n1", "n0"}, one_per_step},
      {{"n0", "n2"}, one_per_step},
      {{"n2", "n0"}, one_per_step}};
  EXPECT_EQ(links, want) << "gradient message: " << gradient << " bytes";
  for (const char* rank : {"/train_gpt/trainer/n1", "/train_gpt/trainer/n2"}) {
    auto v = p->tree->find(rank);
    ASSERT_TRUE(v.has_value()) << rank;
    EXPECT_EQ(p->edges[*v].messages, 2u * steps) << rank;
    EXPECT_EQ(p->edges[*v].bytes, 2u * steps * gradient) << rank;
  }
}

TEST(DataParallel, BadCountsAreClearErrors) {
  auto no_workers = run_command(train_args() + " --data-parallel 3", 60s);
  EXPECT_EQ(no_workers.exit_code, 2) << no_workers.output;
  EXPECT_NE(no_workers.output.find("--data-parallel 3: needs --workers"), std::string::npos) << no_workers.output;
  auto uneven = run_command(train_args() + " --workers 1 --data-parallel 4", 60s);
  EXPECT_EQ(uneven.exit_code, 2) << uneven.output;
  EXPECT_NE(uneven.output.find("--batch 6: must be a multiple of --data-parallel 4"), std::string::npos)
      << uneven.output;
}

// --workers 2: the workers are leaves of the tree under a NUMA-domain composite, each on its own
// thread, and the node trainer drives them with broker messages (the profile sees them).
TEST(WorkerLeaves, WorkersAreComponentsOfTheTreeDrivenByMessages) {
  scratch_dir dir;
  const auto prof = dir.path / "profile.json";
  auto r = run_command(train_args() + " --workers 2 --profile " + prof.string(), 120s);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto p = profile::load(prof.string());
  ASSERT_TRUE(p.has_value()) << p.error().what();
  for (const char* composite : {"/train_gpt/trainer", "/train_gpt/trainer/numa0"}) {
    auto v = p->tree->find(composite);
    ASSERT_TRUE(v.has_value()) << composite;
    EXPECT_TRUE(p->composite[*v]) << composite;
  }
  for (const char* worker : {"/train_gpt/trainer/numa0/w0", "/train_gpt/trainer/numa0/w1"}) {
    auto v = p->tree->find(worker);
    ASSERT_TRUE(v.has_value()) << worker;
    EXPECT_FALSE(p->composite[*v]) << worker;
    // work/ready up, one work/steps down (6 steps are one run), work/done up.
    EXPECT_EQ(p->edges[*v].messages, 3u) << worker;
  }
}

}  // namespace
}  // namespace banyan
