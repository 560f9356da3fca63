// The samples under failover: a node other than the root's is killed (kill -9) mid-run under
// `banyan launch --state-dir`, and the run ends with exit 0 and the same result as an undisturbed
// one (docs/runtime.md, "Failover").
#include "node_runs.hpp"

#include "banyan/store/store.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace banyan {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

using test::scratch_dir;
using test::watched_launch;

// samples/factory/three_nodes.sh's deployment: every line on n0, its machines on n1 and n2, the
// quality service on n2, the ledger's auditor on n1.
fs::path factory_deployment(const fs::path& dir) {
  return test::write_deployment(dir, {{"/factory", "n0"},
                                      {"/factory/line1/feeder", "n1"},
                                      {"/factory/line1/cutter", "n1"},
                                      {"/factory/line1/press", "n1"},
                                      {"/factory/line1/packer", "n1"},
                                      {"/factory/line2/feeder", "n2"},
                                      {"/factory/line2/cutter", "n1"},
                                      {"/factory/line2/press", "n2"},
                                      {"/factory/line2/packer", "n1"},
                                      {"/factory/line3/feeder", "n2"},
                                      {"/factory/line3/cutter", "n2"},
                                      {"/factory/line3/press", "n1"},
                                      {"/factory/line3/packer", "n2"},
                                      {"/factory/quality", "n2"},
                                      {"/factory/ledger/auditor", "n1"}});
}

// The result lines of a run (`FACTORY ...`, node prefixes dropped), sorted; the supervisors'
// reports of children lost with a node (`FACTORY FAILURE ...: node `n2` lost: ...`) go to `losses`.
std::vector<std::string> factory_result(const std::string& output, std::vector<std::string>* losses = nullptr) {
  std::vector<std::string> out;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("[n", 0) == 0 && line.find("] ") != std::string::npos) line = line.substr(line.find("] ") + 2);
    if (line.rfind("FACTORY ", 0) != 0) continue;
    if (line.rfind("FACTORY FAILURE ", 0) == 0 && line.find(": node `") != std::string::npos) {
      if (losses) losses->push_back(line);
      continue;
    }
    out.push_back(line);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

const std::vector<std::string> factory_args{"--threads", "2", "--parts", "60", "--pace", "40ms"};

// Kills `victims` one after the other, each once the jams of the presses it runs are durable. The
// result must be that of one process, with the losses reported besides.
void factory_failover(const std::vector<std::string>& victims) {
  scratch_dir dir;
  std::vector<std::string> one{FACTORY_APP};
  one.insert(one.end(), factory_args.begin(), factory_args.end());
  const auto single = test::run_argv(one, 120s);
  ASSERT_EQ(single.exit_code, 0) << single.output;
  const auto want = factory_result(single.output);
  ASSERT_EQ(std::count_if(want.begin(), want.end(), [](const auto& l) { return l.rfind("FACTORY line ", 0) == 0; }), 3)
      << single.output;

  std::vector<std::string> argv{BANYAN_CLI, "launch",   factory_deployment(dir.path).string(), "--run-for", "120s",
                                "--",       FACTORY_APP};
  argv.insert(argv.end(), factory_args.begin(), factory_args.end());
  argv.insert(argv.end(), {"--state-dir", (dir.path / "states").string()});
  watched_launch l(argv);
  ASSERT_TRUE(l.cluster_ready("/factory")) << l.log;
  // Where each press runs: its jam (checkpointed before it throws) must be durable on that node
  // before the node is killed, or its next incarnation jams again (a failover restores the last
  // durable state) and the result differs; a failover moves the presses of the lost node.
  std::map<std::string, std::string> press_on{
      {"/factory/line1/press", "n1"}, {"/factory/line2/press", "n2"}, {"/factory/line3/press", "n1"}};
  auto jams_durable_on = [&](const std::string& node) {
    auto r = store::blob_reader::open((dir.path / "states" / node).string());
    if (!r) return false;
    const auto& blobs = r->blobs();
    for (const auto& entry : press_on) {
      const bool durable =
          std::any_of(blobs.begin(), blobs.end(), [&](const auto& b) { return b.name == entry.first; });
      if (entry.second == node && !durable) return false;
    }
    return true;
  };
  // A jam's report travels to the line on n0 after the press checkpointed it: the node is killed
  // only once the reports of its presses' jams arrived, or a report still on its way dies with it.
  auto jams_reported_from = [&](const std::string& node) {
    for (const auto& [press, on] : press_on) {
      if (on != node) continue;
      for (const auto& line : want)
        if (line.rfind("FACTORY FAILURE " + press + ":", 0) == 0 && l.log.find(line) == std::string::npos) return false;
    }
    return true;
  };
  for (const auto& victim : victims) {
    ASSERT_TRUE(l.until([&] { return jams_durable_on(victim) && jams_reported_from(victim); }, 60s)) << l.log;
    ASSERT_EQ(l.log.find("FACTORY line 1:"), std::string::npos) << "the run ended before " << victim << " was killed\n"
                                                                << l.log;
    ASSERT_TRUE(l.kill_node(victim)) << l.log;
    const std::string failing_over = "node `" + victim + "` lost: failing over ";
    ASSERT_TRUE(l.until_line(failing_over)) << l.log;
    const auto at = l.log.find(failing_over);
    const std::string moves = l.log.substr(at, l.log.find('\n', at) - at);
    for (auto& [press, on] : press_on) {
      const auto from = moves.find("`" + press + "` to `");
      if (from != std::string::npos) on = moves.substr(from + press.size() + 7, 2);
    }
  }
  ASSERT_EQ(l.end(120s), 0) << l.log;
  for (const auto& victim : victims)
    EXPECT_NE(l.log.find("node " + victim + " was lost (exit 137); the run goes on"), std::string::npos) << l.log;
  std::vector<std::string> losses;
  EXPECT_EQ(joined(factory_result(l.log, &losses)), joined(want)) << l.log;
  EXPECT_FALSE(losses.empty()) << l.log;  // the lines' supervisors heard of the loss
  // The feeders' places came back from the store: no line starts over from its first part.
  EXPECT_NE(l.log.find("restart from their last durable state in `"), std::string::npos) << l.log;
}

TEST(SampleFailover, FactoryNodeKilledMidRunFailsOverWithTheSameResult) { factory_failover({"n2"}); }

TEST(SampleFailover, FactoryTwoNodesKilledOneAfterTheOtherEndOnTheRootsNodeWithTheSameResult) {
  factory_failover({"n1", "n2"});
}

}  // namespace
}  // namespace banyan
