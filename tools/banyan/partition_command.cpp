// `banyan partition PROFILE.json --cluster CLUSTER.yaml --algorithm NAME|all|a,b`: maps a traffic
// profile onto a cluster, prints one row per algorithm (cost, cost / best lower bound, max load /
// capacity, cut edges, time, status), and writes the cheapest feasible mapping as a deployment.
// `--load messages` partitions by the messages each component handled instead of its CPU time, and
// CPU loads measured too thinly to trust are warned about (profile_loads.hpp).
#include "banyan/cli.hpp"
#include "banyan/commands.hpp"
#include "banyan/profile_loads.hpp"

#include "banyan/base/log.hpp"
#include "banyan/base/process.hpp"
#include "banyan/base/progress.hpp"
#include "banyan/partitioner/algorithm.hpp"
#include "banyan/partitioner/io.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <future>
#include <iostream>
#include <sstream>

namespace banyan::cli {
namespace {

namespace bp = banyan::partitioner;

constexpr const char* tool = "banyan partition";

struct options {
  std::string profile, cluster, algo = "bottom-up", out, results, dot, unit = "messages", load = "cpu";
  std::chrono::milliseconds time_limit{10000};
  std::uint64_t seed = 1;
  bool json = false;
};

int fail(const std::string& what, int code = exit_failed) { return cli::fail(tool, what, code); }
int bad_input(const std::string& what) { return fail(what, exit_bad_arguments); }

// Renders `dot` as SVG next to it when Graphviz is installed; the SVG's name, or empty.
std::string render_svg(const std::string& dot) {
  std::string svg = dot;
  if (svg.size() > 4 && svg.substr(svg.size() - 4) == ".dot") svg.resize(svg.size() - 4);
  svg += ".svg";
  auto r = banyan::run_process({"dot", "-Tsvg", dot, "-o", svg});
  return r && r->status.success() ? svg : std::string();
}

// Runs one algorithm on a worker thread while the calling thread shows progress.
bp::solution run_one(const std::string& name, const bp::problem& p, const bp::solve_options& o) {
  auto fut = std::async(std::launch::async, [&] { return *bp::solve(name, p, o); });
  const bool exact = name == "smt" || name == "mip";
  banyan::progress bar(name, exact ? static_cast<std::uint64_t>(o.timeout_s * 10) : 0,
                       {.summary_after = std::chrono::seconds(1)});
  while (fut.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
    bar.update(static_cast<std::uint64_t>(bar.elapsed_seconds() * 10), exact ? "(tenths of the time limit)" : "solving");
  }
  bp::solution s = fut.get();
  bar.finish(bp::to_string(s.status));
  return s;
}

int run(const options& o) {
  bp::profile_options po;
  if (o.unit == "bytes") po.unit = bp::traffic_unit::bytes;
  else if (o.unit != "messages") return bad_input("--weight must be `messages` or `bytes`, got `" + o.unit + "`");
  if (o.load != "cpu" && o.load != "messages") return bad_input("--load must be `cpu` or `messages`, got `" + o.load + "`");
  bp::profile_measurements measured;  // read in the same pass as the tree
  auto t = bp::load_profile(o.profile, po, &measured);
  if (!t) return bad_input(t.error().message);
  auto c = bp::load_cluster(o.cluster);
  if (!c) return bad_input(c.error().message);
  const load_confidence confidence = judge_loads(*t, measured);
  if (o.load == "messages") {
    if (auto ok = use_message_loads(*t, measured, o.profile); !ok) return bad_input(ok.error().message);
    for (const auto& n : c->nodes) {
      if (!n.cpu.percent) {
        banyan::log::warning(tool, o.cluster + ": node `" + n.name + "` has an absolute capacity.cpu, read as "
                                   "messages with --load messages; give capacities as percentages (\"40%\")");
      }
    }
  } else if (!confidence.trusted()) {
    banyan::log::warning(tool, o.profile + ": " + confidence.describe());
  }
  auto pr = bp::make_problem(std::move(*t), std::move(*c));
  if (!pr) return bad_input(o.profile + " on " + o.cluster + ": " + pr.error().message);
  const bp::problem& p = *pr;

  std::vector<std::string> names;
  if (o.algo == "all") {
    names = bp::algorithm_names();
  } else {
    std::stringstream ss(o.algo);
    for (std::string a; std::getline(ss, a, ',');) {
      if (auto ok = bp::make_algorithm(a); !ok) return bad_input(ok.error().message);
      names.push_back(a);
    }
  }
  // The heuristic runs first so that the exact solvers can start from its cost.
  std::stable_partition(names.begin(), names.end(), [](const std::string& a) { return a == "bottom-up"; });
  std::stable_partition(names.begin(), names.end(), [](const std::string& a) { return a != "smt" && a != "mip"; });

  // Progress goes to stderr, so it never disturbs --json on stdout.
  std::vector<bp::solution> sols;
  sols.reserve(names.size());  // `warm` points into it
  const bp::mapping* warm = nullptr;
  for (const auto& a : names) {
    bp::solve_options so{.timeout_s = std::chrono::duration<double>(o.time_limit).count(), .seed = o.seed,
                         .warm_start = warm};
    sols.push_back(run_one(a, p, so));
    if (a == "bottom-up" && sols.back().status == bp::solve_status::feasible) warm = &sols.back().map;
  }
  double bound = 0;
  for (const auto& s : sols) bound = std::max(bound, s.lower_bound);
  const bp::solution* best = nullptr;
  for (const auto& s : sols) {
    const bool ok = s.status == bp::solve_status::optimal || s.status == bp::solve_status::feasible;
    if (ok && (!best || s.cost < best->cost)) best = &s;
  }

  nlohmann::json rows = nlohmann::json::array();
  for (const auto& s : sols) {
    nlohmann::json r{{"algorithm", s.algorithm}, {"status", bp::to_string(s.status)}, {"seconds", s.seconds},
                     {"lower_bound", s.lower_bound}, {"message", s.message}};
    if (!s.map.empty()) {
      const auto e = bp::evaluate(p, s.map);
      r["cost"] = e.cost;
      r["cut_edges"] = e.cut_edges;
      r["max_utilisation"] = e.max_utilisation;
      r["cost_over_bound"] = bound > 0 ? nlohmann::json(e.cost / bound) : nlohmann::json(nullptr);
    }
    rows.push_back(r);
  }
  nlohmann::json load{{"unit", o.load},
                      {"window_s", confidence.window_s},
                      {"cpu_s", confidence.cpu_s},
                      {"messages", confidence.messages},
                      {"cpu_confidence", confidence.level()}};
  if (confidence.judged()) load["cpu_well_sampled_share"] = confidence.well_sampled_share;
  nlohmann::json summary{{"profile", o.profile}, {"cluster", o.cluster}, {"components", p.t.size()}, {"nodes", p.k()},
                         {"load", load},
                         {"lower_bound", bound}, {"results", rows}, {"chosen", best ? nlohmann::json(best->algorithm) : nlohmann::json(nullptr)}};
  // Subtree roots in the deployment: the root and every component on another node than its parent.
  std::size_t assignments = 0;
  if (best) {
    for (std::size_t v = 0; v < p.t.size(); ++v) assignments += v == 0 || best->map[v] != best->map[p.t.parent[v]];
  }
  if (best) {
    summary["cost"] = best->cost;
    summary["assignments"] = assignments;
  }

  if (best && !o.out.empty()) {
    std::ofstream f(o.out);
    if (!f) return fail(o.out + ": cannot open for writing");
    std::ostringstream cost;
    cost << best->cost;
    bp::write_deployment(f, p, best->map, {"written by banyan partition from " + o.profile + " and " + o.cluster,
                                           "algorithm " + best->algorithm + " (" + bp::to_string(best->status) + "), cross-node cost " + cost.str()});
    summary["deployment"] = o.out;
  }
  if (best && !o.dot.empty()) {
    std::ofstream f(o.dot);
    if (!f) return fail(o.dot + ": cannot open for writing");
    bp::write_dot(f, p, best->map, 2000, {.traffic = o.unit, .load = o.load == "messages" ? "messages" : "cpu s"});
    f.close();
    summary["dot"] = o.dot;
    if (const std::string svg = render_svg(o.dot); !svg.empty()) summary["svg"] = svg;
  }
  if (!o.results.empty()) {
    std::ofstream f(o.results);
    if (!f) return fail(o.results + ": cannot open for writing");
    f << summary.dump(2) << "\n";
  }

  if (o.json) {
    std::cout << summary.dump(2) << "\n";
  } else {
    std::printf("%s: %zu components on %zu nodes; loads in %s (cpu confidence %s); best lower bound %s\n",
                o.profile.c_str(), p.t.size(), p.k(), o.load == "messages" ? "messages" : "cpu s", confidence.level(),
                bound > 0 ? std::to_string(bound).c_str() : "none proven");
    std::printf("%-12s %14s %9s %8s %9s %9s  %s\n", "algorithm", "cost", "vs.bound", "max.util", "cut.edges", "time.s", "status");
    for (const auto& s : sols) {
      if (s.map.empty()) {
        std::printf("%-12s %14s %9s %8s %9s %9.3f  %s%s%s\n", s.algorithm.c_str(), "-", "-", "-", "-", s.seconds,
                    bp::to_string(s.status), s.message.empty() ? "" : ": ", s.message.c_str());
        continue;
      }
      const auto e = bp::evaluate(p, s.map);
      char ratio[32] = "-";
      if (bound > 0) std::snprintf(ratio, sizeof ratio, "%.4f", e.cost / bound);
      std::printf("%-12s %14.6g %9s %8.3f %9zu %9.3f  %s%s%s\n", s.algorithm.c_str(), e.cost, ratio, e.max_utilisation,
                  e.cut_edges, s.seconds, bp::to_string(s.status),
                  s.status == bp::solve_status::optimal || s.message.empty() ? "" : ": ", s.status == bp::solve_status::optimal ? "" : s.message.c_str());
    }
    if (best) {
      std::printf("chosen: %s, cost %g, %zu assignments%s%s\n", best->algorithm.c_str(), best->cost, assignments,
                  o.out.empty() ? "" : ", deployment written to ", o.out.c_str());
    } else {
      std::printf("no algorithm found a mapping within capacity\n");
    }
  }
  return best ? 0 : 1;
}

}  // namespace

action setup_partition(CLI::App& sub) {
  auto o = std::make_shared<options>();
  sub.add_option("profile", o->profile, "profile JSON (docs/formats.md)")->required();
  sub.add_option("--cluster", o->cluster, "cluster or deployment YAML (docs/formats.md)")->required();
  auto* algorithm = sub.add_option("--algorithm", o->algo, "bottom-up | smt | mip | metis | greedy | round-robin | hash | random | all, or a comma list")->capture_default_str();
  auto* time_limit = add_duration_option(sub, "--time-limit", o->time_limit, "time for each exact solver (smt, mip)");
  sub.add_option("--out,-o", o->out, "write the cheapest feasible mapping as a deployment YAML");
  auto* results = sub.add_option("--results", o->results, "write every algorithm's result as JSON");
  sub.add_option("--dot", o->dot, "write a Graphviz rendering coloured by node (and .svg when `dot` is installed)");
  sub.add_option("--weight", o->unit, "edge traffic unit: messages | bytes")->capture_default_str();
  sub.add_option("--load", o->load,
                 "component load: cpu (handler CPU seconds; warned about when measured too thinly to trust) | "
                 "messages (messages handled: the same in every run of the same input; use percentage capacities)")
      ->capture_default_str();
  sub.add_option("--seed", o->seed, "seed for randomised algorithms")->capture_default_str();
  sub.add_flag("--json", o->json, "print the summary as JSON on stdout");
  add_deprecated_alias(sub, algorithm, "--algo", tool);
  add_deprecated_alias(sub, time_limit, "--timeout", tool);
  add_deprecated_alias(sub, results, "--report", tool);
  return [o] { return run(*o); };
}

}  // namespace banyan::cli
