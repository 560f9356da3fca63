// Multi-node integration tests: several node processes on loopback (ipc:// endpoints in a fresh
// temporary folder), each run bounded by `timeout` and by banyan launch's own --timeout.
#include "banyan/broker/placement.hpp"
#include "banyan/broker/profile.hpp"
#include "banyan/partitioner/io.hpp"

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace banyan {
namespace {

namespace fs = std::filesystem;

struct scratch_dir {
  fs::path path;
  scratch_dir() {
    char tmpl[] = "/tmp/banyan-mn-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~scratch_dir() { fs::remove_all(path); }
};

struct outcome {
  int exit_code;
  std::string output;
};

outcome run_command(const std::string& cmd) {
  outcome o{-1, {}};
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return o;
  std::array<char, 4096> buf;
  while (std::fgets(buf.data(), buf.size(), p)) o.output += buf.data();
  int status = pclose(p);
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return o;
}

// Three nodes; zone0 and the checker with the root on n0, zone1 on n1, zone2 and zone1/slow on n2.
fs::path write_deployment(const fs::path& dir) {
  fs::path d = dir / "deployment.yaml";
  std::ofstream out(d);
  out << "version: 1\nnodes:\n";
  for (int i = 0; i < 3; ++i)
    out << "  - {name: n" << i << ", endpoint: \"ipc://" << (dir / ("n" + std::to_string(i))).string()
        << "\", capacity: {cpu: 1}}\n";
  out << "assignments:\n  /mesh: n0\n  /mesh/zone1: n1\n  /mesh/zone2: n2\n  /mesh/zone1/slow: n2\n";
  return d;
}

std::multiset<std::string> digests(const std::string& output) {
  std::multiset<std::string> out;
  std::regex line(R"(DIGEST (\S+) (\d+) ([0-9a-f]+))");
  for (std::sregex_iterator it(output.begin(), output.end(), line), end; it != end; ++it)
    out.insert((*it)[1].str() + " " + (*it)[2].str() + " " + (*it)[3].str());
  return out;
}

std::string launch(const fs::path& deployment, const std::string& args, const fs::path& profile = {}) {
  std::string cmd = std::string("timeout 300 ") + BANYAN_CLI + " launch " + deployment.string() + " --timeout 240";
  if (!profile.empty()) cmd += " --profile " + profile.string();
  return cmd + " -- " + MESH_APP + " " + args;
}

TEST(MultiNode, InvalidDeploymentsAreClearErrors) {
  scratch_dir dir;
  auto d = write_deployment(dir.path);
  auto node_missing = run_command(std::string("timeout 60 ") + MESH_APP + " --deployment " + d.string() + " --node n9");
  EXPECT_EQ(node_missing.exit_code, 2);
  EXPECT_NE(node_missing.output.find("--node `n9` is not in the deployment (nodes: n0, n1, n2)"), std::string::npos)
      << node_missing.output;
  fs::path bad = dir.path / "bad.yaml";
  {
    std::ifstream in(d);
    std::stringstream text;
    text << in.rdbuf();
    std::ofstream(bad) << text.str() << "  /mesh/zone7: n1\n";
  }
  auto path_missing = run_command(std::string("timeout 60 ") + MESH_APP + " --deployment " + bad.string() + " --node n0");
  EXPECT_EQ(path_missing.exit_code, 2);
  EXPECT_NE(path_missing.output.find("bad.yaml:11: assignment `/mesh/zone7` names no component of this app"),
            std::string::npos) << path_missing.output;
  auto no_node = run_command(std::string("timeout 60 ") + MESH_APP + " --deployment " + d.string());
  EXPECT_EQ(no_node.exit_code, 2);
  EXPECT_NE(no_node.output.find("--node"), std::string::npos) << no_node.output;
}

TEST(MultiNode, ThreeNodesDeliverAMillionMessagesInOrderWithoutLoss) {
  scratch_dir dir;
  auto d = write_deployment(dir.path);
  // 3 publishers x 333,334 messages (plus every tenth again zone-locally), each to 6 subscribers.
  auto r = run_command(launch(d, "--messages 333334 --payload 16"));
  ASSERT_EQ(r.exit_code, 0) << r.output.substr(r.output.size() > 4000 ? r.output.size() - 4000 : 0);
  EXPECT_NE(r.output.find("every subscriber got everything"), std::string::npos);
  auto got = digests(r.output);
  ASSERT_EQ(got.size(), 6u) << r.output;
  for (const auto& g : got) EXPECT_NE(g.find(" 1033336 "), std::string::npos) << g;  // 3*333334 + 33334
}

TEST(MultiNode, ThreeNodeRunDeliversWhatOneProcessDelivers) {
  scratch_dir dir;
  auto d = write_deployment(dir.path);
  auto single = run_command(std::string("timeout 120 ") + MESH_APP + " --messages 3000");
  ASSERT_EQ(single.exit_code, 0) << single.output;
  auto want = digests(single.output);
  ASSERT_EQ(want.size(), 6u);
  for (const char* mode : {"hier", "flat-p2p", "flat-node"}) {
    auto multi = run_command(launch(d, std::string("--messages 3000 --mode ") + mode));
    ASSERT_EQ(multi.exit_code, 0) << mode << "\n" << multi.output;
    EXPECT_EQ(digests(multi.output), want) << mode;
  }
}

// Node of every component of `p`'s tree under the deployment (assignments place subtrees).
std::vector<node_index> place(const profile& p, const fs::path& deployment) {
  auto d = partitioner::load_deployment(deployment.string());
  EXPECT_TRUE(d.has_value());
  std::vector<int> assigned(p.tree->size(), -1);
  for (const auto& a : d->assignments) assigned[*p.tree->find(a.path)] = a.node;
  std::vector<node_index> node_of(p.tree->size(), 0);
  for (vertex_id v = 0; v < p.tree->size(); ++v)
    node_of[v] = static_cast<node_index>(assigned[v] >= 0 ? assigned[v] : node_of[p.tree->parent(v)]);
  return node_of;
}

TEST(MultiNode, MeasuredCrossNodeMessagesEqualTheCostModelExactly) {
  scratch_dir dir;
  auto d = write_deployment(dir.path);
  std::map<std::string, std::uint64_t> totals;
  for (const char* mode : {"hier", "flat-p2p", "flat-node"}) {
    SCOPED_TRACE(mode);
    auto prof = dir.path / (std::string(mode) + ".json");
    auto r = run_command(launch(d, std::string("--messages 2000 --mode ") + mode, prof));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto p = profile::load(prof.string());
    ASSERT_TRUE(p.ok()) << p.error().what();
    auto predicted = predict_crossings(*p->tree, p->flows, place(*p, d), *parse_routing_mode(mode));
    std::map<std::pair<std::string, std::string>, std::uint64_t> want, got;
    for (const auto& [link, c] : predicted)
      if (c.messages) want[{"n" + std::to_string(link.first), "n" + std::to_string(link.second)}] = c.messages;
    for (const auto& l : p->links)
      if (l.messages) got[{l.from, l.to}] = l.messages;
    EXPECT_EQ(got, want);
    for (const auto& [k, n] : got) totals[mode] += n;
    // The hier model is also the partitioner's cost: traffic summed over cut tree edges.
    if (std::string(mode) == "hier") {
      auto node_of = place(*p, d);
      std::uint64_t cut = 0;
      for (vertex_id v = 1; v < p->tree->size(); ++v)
        if (node_of[v] != node_of[p->tree->parent(v)]) cut += p->edges[v].messages;
      EXPECT_EQ(cut, totals[mode]);
    }
  }
  // One copy per node never sends more than one per subscriber. (Whether hier beats flat-node depends
  // on the deployment: here zone1/slow sits on n2 under zone1 on n1, so hier goes n0→n1→n2 where
  // flat-node goes n0→n2; the partitioner avoids such placements.)
  EXPECT_LT(totals["flat-node"], totals["flat-p2p"]);
  std::printf("cross-node messages: hier %llu, flat-node %llu, flat-p2p %llu\n",
              static_cast<unsigned long long>(totals["hier"]), static_cast<unsigned long long>(totals["flat-node"]),
              static_cast<unsigned long long>(totals["flat-p2p"]));
}

TEST(MultiNode, KilledNodeIsReportedQuicklyWithASupervisionEvent) {
  scratch_dir dir;
  auto d = write_deployment(dir.path);
  struct node_proc {
    pid_t pid;
    fs::path log;
  };
  std::vector<node_proc> nodes;
  for (int i = 0; i < 3; ++i) {
    fs::path log = dir.path / ("n" + std::to_string(i) + ".log");
    pid_t pid = fork();
    if (pid == 0) {
      FILE* f = std::freopen(log.c_str(), "w", stderr);
      (void)f;
      std::string node = "n" + std::to_string(i);
      // The slow subscribers never finish their share in time, so only a signal ends these nodes.
      execl(MESH_APP, MESH_APP, "--messages", "20000", "--slow-us", "5000", "--deployment", d.c_str(), "--node",
            node.c_str(), "--run-for", "120", static_cast<char*>(nullptr));
      _exit(127);
    }
    nodes.push_back({pid, log});
  }
  auto read = [](const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  auto wait_for = [&](const fs::path& log, const std::string& text, std::chrono::seconds limit) {
    auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
      if (read(log).find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling a log file, not waiting for timing
    }
    return false;
  };
  for (const auto& n : nodes) ASSERT_TRUE(wait_for(n.log, "every node is ready", std::chrono::seconds(60))) << read(n.log);
  auto killed_at = std::chrono::steady_clock::now();
  kill(nodes[2].pid, SIGKILL);
  waitpid(nodes[2].pid, nullptr, 0);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(wait_for(nodes[i].log, "lost node `n2`", std::chrono::seconds(10))) << read(nodes[i].log);
    auto after = std::chrono::steady_clock::now() - killed_at;
    // Heartbeat timeout is 1 s; allow scheduling slack on a loaded 2-core machine.
    EXPECT_LT(std::chrono::duration<double>(after).count(), 2.5) << "node n" << i;
  }
  // The parents of the lost subtrees got a supervision event.
  EXPECT_TRUE(wait_for(nodes[0].log, "child `/mesh/zone2` lost", std::chrono::seconds(10))) << read(nodes[0].log);
  EXPECT_TRUE(wait_for(nodes[1].log, "child `/mesh/zone1/slow` lost", std::chrono::seconds(10))) << read(nodes[1].log);
  // Clean up. (Known issue, see docs/runtime.md: after a peer is lost under load, a survivor can stay
  // blocked on a link's credit window, so its SIGTERM shutdown is not asserted here.)
  for (int i = 0; i < 2; ++i) {
    kill(nodes[i].pid, SIGKILL);
    waitpid(nodes[i].pid, nullptr, 0);
  }
}

}  // namespace
}  // namespace banyan
