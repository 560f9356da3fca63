// Which moves `banyan reconfigure` asks for (tools/banyan/reconfigure.hpp): every move takes a
// whole subtree that runs on one node, the root never moves, and after the moves every component
// runs where the new deployment puts it.
#include "banyan/reconfigure.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using banyan::cli::planned_move;

banyan::partitioner::deployment deployment(const std::map<std::string, std::string>& assigned,
                                           const std::string& name) {
  std::string text = "version: 1\nnodes:\n";
  for (const char* n : {"n0", "n1", "n2"})
    text +=
        std::string("  - {name: ") + n + ", endpoint: \"ipc:///tmp/plan-test-" + n + ".ipc\", capacity: {cpu: 1}}\n";
  text += "assignments:\n";
  for (const auto& [p, n] : assigned) text += "  " + p + ": " + n + "\n";
  auto d = banyan::partitioner::parse_deployment(text, name);
  if (!d) throw std::runtime_error(d.error().message);
  return *d;
}

// The node `path` runs on: its own assignment, else its nearest assigned ancestor's.
std::string node_of(const std::map<std::string, std::string>& assigned, std::string path) {
  while (!assigned.count(path)) path.resize(path.rfind('/'));
  return assigned.at(path);
}

bool in_subtree(const std::string& q, const std::string& p) {
  return q == p || (q.size() > p.size() && q.compare(0, p.size(), p) == 0 && q[p.size()] == '/');
}

// Replays `moves` component by component over `paths`: each must take a subtree that runs wholly
// on its `from`; returns where everything runs afterwards.
std::map<std::string, std::string> replay(const std::vector<std::string>& paths, std::map<std::string, std::string> now,
                                          const std::vector<planned_move>& moves) {
  std::map<std::string, std::string> where;
  for (const auto& p : paths) where[p] = node_of(now, p);
  for (const auto& m : moves) {
    EXPECT_NE(m.path, paths.front()) << "the root moved";
    for (const auto& p : paths) {
      if (!in_subtree(p, m.path)) continue;
      EXPECT_EQ(where[p], m.from) << "the move of " << m.path << " from " << m.from << " takes " << p
                                  << ", which runs on " << where[p];
      where[p] = m.to;
    }
  }
  return where;
}

TEST(ReconfigurePlan, ASubtreeSplitAcrossNodesIsGatheredThenMovedWhole) {
  const std::map<std::string, std::string> now{{"/r", "n0"}, {"/r/a/x", "n1"}, {"/r/a/y", "n2"}};
  const std::map<std::string, std::string> next{{"/r", "n0"}, {"/r/a", "n1"}, {"/r/a/y", "n2"}};
  auto moves = banyan::cli::moves_between(deployment(now, "now.yaml"), deployment(next, "next.yaml"));
  ASSERT_TRUE(moves) << moves.error().message;
  // x and y first come to a's node, a goes whole, then y goes back where it belongs.
  ASSERT_EQ(moves->size(), 4u);
  EXPECT_EQ((*moves)[2].path, "/r/a");
  EXPECT_TRUE((*moves)[2].gathers_for.empty());
  for (int i : {0, 1}) {
    EXPECT_EQ((*moves)[i].to, "n0");
    EXPECT_EQ((*moves)[i].gathers_for, "/r/a");
  }
  EXPECT_EQ((*moves)[3].path, "/r/a/y");
  EXPECT_EQ((*moves)[3].to, "n2");
  const std::vector<std::string> paths{"/r", "/r/a", "/r/a/x", "/r/a/y", "/r/b"};
  const auto where = replay(paths, now, *moves);
  for (const auto& p : paths) EXPECT_EQ(where.at(p), node_of(next, p)) << p;
  // A reconfiguration that stops after the first two moves runs what after_moves says.
  auto after = banyan::cli::after_moves(deployment(now, "now.yaml"), {moves->begin(), moves->begin() + 2});
  std::map<std::string, std::string> partial;
  for (const auto& a : after) partial[a.path] = "n" + std::to_string(a.node);
  EXPECT_EQ(node_of(partial, "/r/a/x"), "n0");
  EXPECT_EQ(node_of(partial, "/r/a/y"), "n0");
  EXPECT_EQ(node_of(partial, "/r/b"), "n0");
}

TEST(ReconfigurePlan, ANewDeploymentThatMovesTheRootIsRefused) {
  auto moves = banyan::cli::moves_between(deployment({{"/r", "n0"}}, "now.yaml"),
                                          deployment({{"/r", "n1"}, {"/r/a", "n0"}}, "next.yaml"));
  ASSERT_FALSE(moves);
  EXPECT_NE(moves.error().message.find("next.yaml: it puts the root `/r` on `n1`"), std::string::npos)
      << moves.error().message;
}

// Random trees and random pairs of deployments (the root on the same node in both): every plan's
// moves replay component by component with a whole subtree on one node each time, and end with
// every component where the new deployment puts it.
TEST(ReconfigurePlan, RandomDeploymentsReplayWholeSubtreeMovesToTheNewOne) {
  const std::uint32_t seed = 20261202;
  std::mt19937 rng(seed);
  for (int round = 0; round < 300; ++round) {
    SCOPED_TRACE("seed " + std::to_string(seed) + ", round " + std::to_string(round));
    std::vector<std::string> paths{"/r"};
    const int n = 2 + static_cast<int>(rng() % 30);
    for (int i = 1; i < n; ++i) paths.push_back(paths[rng() % paths.size()] + "/c" + std::to_string(i));
    auto random_assignment = [&](const std::string& root_node) {
      std::map<std::string, std::string> a{{"/r", root_node}};
      for (std::size_t i = 1; i < paths.size(); ++i)
        if (rng() % 3 == 0) a[paths[i]] = "n" + std::to_string(rng() % 3);
      return a;
    };
    const std::string root_node = "n" + std::to_string(rng() % 3);
    const auto now = random_assignment(root_node), next = random_assignment(root_node);
    auto moves = banyan::cli::moves_between(deployment(now, "now.yaml"), deployment(next, "next.yaml"));
    ASSERT_TRUE(moves) << moves.error().message;
    const auto where = replay(paths, now, *moves);
    for (const auto& p : paths) ASSERT_EQ(where.at(p), node_of(next, p)) << p;
    auto after = banyan::cli::after_moves(deployment(now, "now.yaml"), *moves);
    std::map<std::string, std::string> replayed;
    for (const auto& a : after) replayed[a.path] = "n" + std::to_string(a.node);
    for (const auto& p : paths) ASSERT_EQ(node_of(replayed, p), node_of(next, p)) << p;
  }
}

}  // namespace
