// `banyan launch --dashboard`: mesh_app on three loopback nodes with the dashboard
// on a free port; the page is loaded in headless Chromium and what it shows — every component's
// node, every link's messages and bytes, every edge's messages, a plan's predicted cost — is checked
// against the run's own counters: the launch's final --profile once the traffic is over (and held
// there by mesh_app --hold-until), and /api/state readings taken just before and after the page
// while the publishers still publish.
#include "node_runs.hpp"

#include "banyan/base/process.hpp"
#include "banyan/broker/profile.hpp"
#include "banyan/dashboard.hpp"
#include "banyan/partitioner/io.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <httplib.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <csignal>

namespace banyan {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using json = nlohmann::json;

using test::run_argv;
using test::running_launch;
using test::scratch_dir;

// The browser: Debian's chromium, or whatever BANYAN_CHROMIUM names. Empty when there is none.
std::string find_chromium() {
  if (const char* c = std::getenv("BANYAN_CHROMIUM"); c && *c) return c;
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"})
    if (fs::exists(p)) return p;
  return {};
}

// The page as the browser has it after its scripts ran (and its first readings came back).
std::string dump_dom(const std::string& chromium, const fs::path& profile_dir, const std::string& url) {
  auto r =
      run_argv({chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--user-data-dir=" + profile_dir.string(), "--virtual-time-budget=4000", "--dump-dom", url},
               120s);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.output;
}

// Every start tag of `tag` with class `cls` in `html`, as its attributes (name -> value).
std::vector<std::map<std::string, std::string>> elements(const std::string& html, const std::string& tag,
                                                         const std::string& cls) {
  std::vector<std::map<std::string, std::string>> out;
  const std::regex start("<" + tag + R"(\s([^>]*)>)"), attr(R"re(([a-z-]+)="([^"]*)")re");
  for (std::sregex_iterator it(html.begin(), html.end(), start), end; it != end; ++it) {
    const std::string attrs = (*it)[1].str();
    std::map<std::string, std::string> a;
    for (std::sregex_iterator at(attrs.begin(), attrs.end(), attr); at != end; ++at) a[(*at)[1].str()] = (*at)[2].str();
    if (a["class"] == cls) out.push_back(std::move(a));
  }
  return out;
}

std::uint64_t number(const std::string& s) { return std::stoull(s); }

// A deployment like test::write_deployment's (n0 has the root, zone0 and the checker, n1 zone1, n2
// zone2 and zone1/slow), with capacities as shares of the load, so that any window can be planned.
fs::path write_deployment(const fs::path& dir) {
  fs::path d = dir / "deployment.yaml";
  std::ofstream out(d);
  out << "version: 1\nnodes:\n";
  for (int i = 0; i < 3; ++i)
    out << "  - {name: n" << i << ", endpoint: \"ipc://" << (dir / ("n" + std::to_string(i))).string()
        << "\", capacity: {cpu: \"60%\"}}\n";
  out << "assignments:\n  /mesh: n0\n  /mesh/zone1: n1\n  /mesh/zone2: n2\n  /mesh/zone1/slow: n2\n";
  return d;
}

// The node each component of mesh_app runs on under that deployment, written out by hand.
std::string expected_node(const std::string& path) {
  auto under = [&](const std::string& p) { return path == p || path.rfind(p + "/", 0) == 0; };
  if (under("/mesh/zone1/slow")) return "n2";
  if (under("/mesh/zone1")) return "n1";
  if (under("/mesh/zone2")) return "n2";
  return "n0";
}

TEST(Dashboard, ShowsTheRunsOwnCountersInABrowser) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "no chromium (Debian: apt-get install chromium; tools/setup installs it)";
  scratch_dir dir;
  const auto d = write_deployment(dir.path);
  const fs::path final_profile = dir.path / "final.json", hold = dir.path / "hold";
  running_launch run;
  // 3 publishers x 100 messages per 20 ms: about 12 s of publishing, then the traffic stops and the
  // run holds until `hold` exists.
  auto p = process::spawn(
      {BANYAN_CLI, "launch", d.string(), "--run-for", "240s", "--profile", final_profile.string(), "--dashboard",
       "127.0.0.1:0", "--", MESH_APP, "--messages", "60000", "--pace-ms", "20", "--hold-until", hold.string()},
      {.out = output_mode::capture, .err = output_mode::merge, .own_process_group = true});
  ASSERT_TRUE(p) << p.error().what();
  run.p.emplace(std::move(*p));
  struct stopper {  // whatever fails below, the run ends
    running_launch& r;
    fs::path hold;
    ~stopper() {
      std::ofstream(hold).flush();
      if (r.p && !r.p->status() && !r.p->wait(60s)) r.p->kill();
    }
  } stop{run, hold};

  ASSERT_TRUE(run.read_until("banyan launch: dashboard at http://127.0.0.1:", 60s)) << run.log;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(run.log, m, std::regex(R"(dashboard at (http://127\.0\.0\.1:(\d+)/))"))) << run.log;
  const std::string url = m[1].str();
  const int port = std::stoi(m[2].str());
  httplib::Client http("127.0.0.1", port);
  http.set_read_timeout(30, 0);
  auto state = [&] {
    auto r = http.Get("/api/state");
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : httplib::to_string(r.error()));
    return r ? json::parse(r->body, nullptr, false) : json();
  };
  // The page is one self-contained document: nothing to fetch from anywhere else.
  auto page = http.Get("/");
  ASSERT_TRUE(page && page->status == 200);
  EXPECT_EQ(page->body.find("<script src"), std::string::npos);
  EXPECT_EQ(page->body.find("<link"), std::string::npos);
  // Another Host than this dashboard's (DNS rebinding) is refused.
  auto foreign = http.Get("/api/state", {{"Host", "evil.example:" + std::to_string(port)}});
  ASSERT_TRUE(foreign);
  EXPECT_EQ(foreign->status, 403);

  // --- While the publishers publish: the page's counters lie between two readings taken around it.
  ASSERT_TRUE(run.read_until("[n1] [/mesh/zone1/pub] publishing, paced", 120s)) << run.log;
  const json before = state();
  const std::string live_dom = dump_dom(chromium, dir.path / "chromium", url);
  const json after = state();
  const bool still_publishing = !run.read_until("every subscriber got everything", 0s);
  ASSERT_TRUE(before.contains("links") && after.contains("links")) << before.dump() << after.dump();
  auto link_count = [](const json& s, const std::string& from, const std::string& to, const char* what) {
    for (const auto& l : s["links"])
      if (l["from"] == from && l["to"] == to) return l[what].get<std::uint64_t>();
    ADD_FAILURE() << "no link " << from << " -> " << to;
    return std::uint64_t{0};
  };
  EXPECT_NE(live_dom.find("data-rendered=\"true\""), std::string::npos) << live_dom;
  auto live_links = elements(live_dom, "tr", "link");
  EXPECT_EQ(live_links.size(), 6u) << live_dom;  // three nodes, each link both ways
  for (auto& l : live_links) {
    const auto shown = number(l["data-messages"]);
    EXPECT_LE(link_count(before, l["data-from"], l["data-to"], "messages"), shown)
        << l["data-from"] << "->" << l["data-to"];
    EXPECT_GE(link_count(after, l["data-from"], l["data-to"], "messages"), shown)
        << l["data-from"] << "->" << l["data-to"];
    // Every link is there; on a loaded machine one may be silent past the detector's threshold.
    EXPECT_TRUE(l["data-health"] == "up" || l["data-health"] == "stalled")
        << l["data-from"] << "->" << l["data-to"] << ": " << l["data-health"];
  }
  double fastest = 0;
  for (auto& e : elements(live_dom, "g", "edge"))
    if (!e["data-rate"].empty()) fastest = std::max(fastest, std::stod(e["data-rate"]));
  if (still_publishing) EXPECT_GT(fastest, 0) << "the page shows no edge rate while the publishers publish";
  else std::printf("note: publishing ended before the page was read; its rates were not checked\n");

  // --- The traffic is over and held: the page must show exactly what the final profile will say.
  ASSERT_TRUE(run.read_until("every subscriber got everything", 180s)) << run.log;
  const std::string dom = dump_dom(chromium, dir.path / "chromium", url + "#propose=0");
  // The page proposes in the server's default unit, cores, which suits every window it offers.
  EXPECT_NE(dom.find(R"(<option value="cores" selected)"), std::string::npos);
  auto proposed =
      http.Post("/api/propose", R"({"window_s": 0, "weight": "messages", "migration_cost": 0})", "application/json");
  ASSERT_TRUE(proposed);
  EXPECT_EQ(proposed->status, 200) << proposed->body;
  const json plan = json::parse(proposed->body, nullptr, false);
  std::ofstream(hold).flush();
  ASSERT_TRUE(run.read_until("every node succeeded", 120s)) << run.log;
  auto st = run.p->wait(60s);
  ASSERT_TRUE(st) << run.log;
  EXPECT_EQ(st->code, 0) << run.log;
  auto final_p = profile::load(final_profile.string());
  ASSERT_TRUE(final_p) << final_p.error().what() << "\n" << run.log;
  const auto& tree = *final_p->tree;

  // Every component, coloured by the node it ran on; the colour is its node's in the legend.
  std::map<std::string, std::string> colour_of_node;
  std::size_t legend_components = 0;
  for (auto& n : elements(dom, "div", "node")) {
    colour_of_node[n["data-node"]] = n["data-colour"];
    legend_components += number(n["data-components"]);
  }
  EXPECT_EQ(colour_of_node.size(), 3u) << dom;
  EXPECT_EQ(legend_components, tree.size());
  std::set<std::string> colours;
  for (auto& [n, c] : colour_of_node) colours.insert(c);
  EXPECT_EQ(colours.size(), 3u) << "every node has its own colour";
  auto comps = elements(dom, "g", "component");
  EXPECT_EQ(comps.size(), tree.size()) << dom;
  std::set<std::string> seen;
  for (auto& c : comps) {
    seen.insert(c["data-path"]);
    EXPECT_EQ(c["data-node"], expected_node(c["data-path"])) << c["data-path"];
    EXPECT_EQ(c["data-colour"], colour_of_node[c["data-node"]]) << c["data-path"];
  }
  for (vertex_id v = 0; v < tree.size(); ++v)
    EXPECT_TRUE(seen.count(tree.path(v))) << tree.path(v) << " is not on the page";

  // Every link's and every edge's counts, exactly as the launch's final profile.
  auto links = elements(dom, "tr", "link");
  EXPECT_EQ(links.size(), final_p->links.size());
  for (auto& l : links) {
    bool found = false;
    for (const auto& f : final_p->links) {
      if (f.from != l["data-from"] || f.to != l["data-to"]) continue;
      found = true;
      EXPECT_EQ(number(l["data-messages"]), f.messages) << f.from << "->" << f.to;
      EXPECT_EQ(number(l["data-bytes"]), f.bytes) << f.from << "->" << f.to;
    }
    EXPECT_TRUE(found) << l["data-from"] << "->" << l["data-to"];
  }
  std::uint64_t cross = 0;
  for (const auto& f : final_p->links) cross += f.messages;
  EXPECT_GT(cross, 0u);
  auto edges = elements(dom, "g", "edge");
  EXPECT_EQ(edges.size(), tree.size() - 1);
  double cut_traffic = 0;  // the cost the partitioner must predict for the running deployment
  for (auto& e : edges) {
    auto v = tree.find(e["data-child"]);
    ASSERT_TRUE(v) << e["data-child"];
    EXPECT_EQ(number(e["data-messages"]), final_p->edges[*v].messages) << e["data-child"];
    EXPECT_EQ(number(e["data-bytes"]), final_p->edges[*v].bytes) << e["data-child"];
    const bool cut = expected_node(tree.path(*v)) != expected_node(tree.path(tree.parent(*v)));
    EXPECT_EQ(e["data-cut"], cut ? "true" : "false") << e["data-child"];
    if (cut) cut_traffic += static_cast<double>(final_p->edges[*v].messages);
  }

  // The plan the page shows (#propose=0: the run so far) predicts today's cost from those counters.
  auto costs = elements(dom, "p", "plan-costs");
  ASSERT_EQ(costs.size(), 1u) << dom;
  EXPECT_DOUBLE_EQ(std::stod(costs[0]["data-cost-before"]), cut_traffic);
  EXPECT_LE(std::stod(costs[0]["data-cost-after"]), cut_traffic);
  ASSERT_TRUE(plan.is_object()) << proposed->body;
  EXPECT_DOUBLE_EQ(plan["cost_before"].get<double>(), cut_traffic);
  // Not the page's plan necessarily: CPU loads still move a little while the run holds (the
  // checker looks for the file), and the plan weighs them against the capacities.
  EXPECT_LE(plan["cost_after"].get<double>(), cut_traffic);
  EXPECT_NE(plan["deployment"].get<std::string>().find("assignments:"), std::string::npos) << plan.dump(1);
}

TEST(Dashboard, ListensOnLoopbackOnlyUnlessToldOtherwise) {
  scratch_dir dir;
  const auto d = write_deployment(dir.path);
  auto open = run_argv({BANYAN_CLI, "launch", d.string(), "--dashboard", "0.0.0.0:0", "--", MESH_APP}, 60s);
  EXPECT_EQ(open.exit_code, 2) << open.output;
  EXPECT_NE(open.output.find("`0.0.0.0` is not a loopback address"), std::string::npos) << open.output;
  EXPECT_EQ(open.output.find("started (pid"), std::string::npos) << "no node starts: " << open.output;
  auto bad = run_argv({BANYAN_CLI, "launch", d.string(), "--dashboard", "127.0.0.1:http", "--", MESH_APP}, 60s);
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("expected ADDR:PORT"), std::string::npos) << bad.output;
  auto via = run_argv(
      {BANYAN_CLI, "launch", d.string(), "--dashboard", "127.0.0.1:0", "--via", "mpirun", "--", MESH_APP}, 60s);
  EXPECT_EQ(via.exit_code, 2) << via.output;
  EXPECT_NE(via.output.find("not --via"), std::string::npos) << via.output;
}

// Propose's planning without a run or a browser (cli::plan_proposal): a window of a run in which /w/a
// and /w/b each kept two thirds of a core busy, on two nodes of one core each (`cpu: 1`, the way
// deployments write capacities). All of it sits on n0 now, so the plan must move one of them.
profile busy_window(double window_s) {
  std::ostringstream text;
  text << R"({"format": "banyan-profile", "version": 1, "mode": "hier", "duration_s": )" << window_s << R"(,
    "components": [
      {"path": "/w", "parent": null, "kind": "composite", "load": {"cpu": )"
       << 0.01 * window_s << R"(, "messages": 100}},
      {"path": "/w/a", "parent": "/w", "kind": "leaf", "load": {"cpu": )"
       << 0.66 * window_s << R"(, "messages": 5000}},
      {"path": "/w/b", "parent": "/w", "kind": "leaf", "load": {"cpu": )"
       << 0.66 * window_s << R"(, "messages": 5000}}],
    "edges": [{"parent": "/w", "child": "/w/a", "messages": 5000, "bytes": 50000},
              {"parent": "/w", "child": "/w/b", "messages": 4000, "bytes": 40000}]})";
  auto p = profile::from_json_text(text.str(), "window.json");
  EXPECT_TRUE(p) << p.error().what();
  return p ? *p : profile{};
}

partitioner::deployment two_cores(const std::string& capacity) {
  auto d = partitioner::parse_deployment(
      "version: 1\nnodes:\n"
      "  - {name: n0, endpoint: \"ipc:///tmp/n0\", capacity: {cpu: " +
          capacity +
          "}}\n"
          "  - {name: n1, endpoint: \"ipc:///tmp/n1\", capacity: {cpu: " +
          capacity +
          "}}\n"
          "assignments:\n  /w: n0\n",
      "d.yaml");
  EXPECT_TRUE(d) << d.error().message;
  return d ? *d : partitioner::deployment{};
}

TEST(DashboardPlan, TheDefaultRequestPlansEveryWindowOfCoreCapacities) {
  std::string why;
  const auto defaults = cli::parse_proposal_request("", why);
  ASSERT_TRUE(defaults) << why;
  EXPECT_EQ(defaults->load, "cores");
  // The page's own default sends the same.
  const auto page = cli::parse_proposal_request(
      R"({"window_s": 0, "weight": "messages", "load": "cores", "migration_cost": 0})", why);
  ASSERT_TRUE(page) << why;
  for (double window_s : {10.0, 30.0, 60.0, 347.5}) {
    SCOPED_TRACE("window of " + std::to_string(window_s) + " s");
    for (const std::string& capacity : {std::string("1"), std::string("\"60%\"")}) {
      SCOPED_TRACE("capacity " + capacity);
      auto [status, body] = cli::plan_proposal(busy_window(window_s), two_cores(capacity), "d.yaml", *defaults);
      ASSERT_EQ(status, 200) << body;
      const json plan = json::parse(body);
      EXPECT_FALSE(plan["current_feasible"].get<bool>()) << body;  // 1.33 cores on one core
      ASSERT_EQ(plan["moves"].size(), 1u) << body;
      EXPECT_EQ(plan["moves"][0]["to"], "n1") << body;
      EXPECT_EQ(plan["cost_after"].get<double>(), 4000) << body;  // /w/b's edge is cut
      EXPECT_EQ(plan["load"], "cores");
    }
  }
  // CPU seconds, asked for, read `cpu: 1` as one CPU second of the window: the window does not fit,
  // and the error says in which unit the loads were read.
  auto cpu = *defaults;
  cpu.load = "cpu";
  auto [status, body] = cli::plan_proposal(busy_window(30), two_cores("1"), "d.yaml", cpu);
  EXPECT_EQ(status, 422);
  EXPECT_NE(body.find("CPU seconds (of a 30 s window)"), std::string::npos) << body;
  EXPECT_NE(body.find("exceeds total cpu capacity 2"), std::string::npos) << body;
}

TEST(DashboardPlan, MalformedRequestsNameTheField) {
  std::string why;
  EXPECT_FALSE(cli::parse_proposal_request("[1]", why));
  EXPECT_EQ(why, "the request body is not a JSON object");
  for (const auto& [body, field] :
       std::vector<std::pair<std::string, std::string>>{{R"({"load": "seconds"})", "load"},
                                                        {R"({"load": 1})", "load"},
                                                        {R"({"weight": "x"})", "weight"},
                                                        {R"({"window_s": -1})", "window_s"},
                                                        {R"({"window_s": "30"})", "window_s"},
                                                        {R"({"migration_cost": -2})", "migration_cost"}}) {
    why.clear();
    EXPECT_FALSE(cli::parse_proposal_request(body, why)) << body;
    EXPECT_EQ(why.rfind(field + " must be", 0), 0u) << body << ": " << why;
  }
}

}  // namespace
}  // namespace banyan
