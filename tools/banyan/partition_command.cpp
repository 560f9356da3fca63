// `banyan partition PROFILE.json --cluster CLUSTER.yaml --algorithm NAME|all|a,b`: maps a traffic
// profile onto a cluster, prints one row per algorithm (cost, cost / best lower bound, max load /
// capacity, cut edges, time, status), and writes the cheapest feasible mapping as a deployment.
// `--load messages` partitions by the messages each component handled instead of its CPU time, and
// CPU loads measured too thinly to trust are warned about (profile_loads.hpp).
// `--current DEPLOYMENT.yaml --migration-cost ALPHA` re-partitions from the mapping a deployment runs
// now: the algorithms' mappings become candidates for plan_migration (migration.hpp), which trades
// traffic saved against bytes of state moved; the moves, costs and bytes are printed, and --out
// writes the plan's deployment.
#include "banyan/cli.hpp"
#include "banyan/commands.hpp"
#include "banyan/profile_loads.hpp"

#include "banyan/base/log.hpp"
#include "banyan/base/process.hpp"
#include "banyan/base/progress.hpp"
#include "banyan/partitioner/algorithm.hpp"
#include "banyan/partitioner/io.hpp"
#include "banyan/partitioner/migration.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <future>
#include <iostream>
#include <optional>
#include <sstream>

namespace banyan::cli {
namespace {

namespace bp = banyan::partitioner;

constexpr const char* tool = "banyan partition";

struct options {
  std::string profile, cluster, algo = "bottom-up", out, results, dot, unit = "messages", load = "cpu";
  std::string current;        // deployment running now: plan a migration from it
  double migration_cost = 0;  // objective units per byte of state moved
  bool move_root = false;     // with --current: the plan may move the root (for a fresh launch; a live move cannot)
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
    bar.update(static_cast<std::uint64_t>(bar.elapsed_seconds() * 10),
               exact ? "(tenths of the time limit)" : "solving");
  }
  bp::solution s = fut.get();
  bar.finish(bp::to_string(s.status));
  return s;
}

// --dot (of `map`, when there is one) and --results, with the summary; 0, or the exit code of a
// file that cannot be written.
int write_dot_and_results(const options& o, const bp::problem& p, const bp::mapping* map, nlohmann::json& summary) {
  if (map && !o.dot.empty()) {
    std::ofstream f(o.dot);
    if (!f) return fail(o.dot + ": cannot open for writing");
    bp::write_dot(f, p, *map, 2000, {.traffic = o.unit, .load = o.load == "messages" ? "messages" : "cpu s"});
    f.close();
    summary["dot"] = o.dot;
    if (const std::string svg = render_svg(o.dot); !svg.empty()) summary["svg"] = svg;
  }
  if (!o.results.empty()) {
    std::ofstream f(o.results);
    if (!f) return fail(o.results + ": cannot open for writing");
    f << summary.dump(2) << "\n";
  }
  return 0;
}

// The current deployment's mapping in the cluster's node numbering: every assigned node must be a
// node of the cluster (by name), every path a component of the profile.
bp::result<bp::mapping> current_mapping(const bp::problem& p, const bp::deployment& d,
                                        const std::string& cluster_name) {
  auto m = bp::mapping_of(p.t, d);
  if (!m) return m.error();
  std::vector<bp::node_id> to_cluster(d.c.size(), bp::no_node);
  for (std::size_t i = 0; i < d.c.size(); ++i) to_cluster[i] = p.c.find(d.c.nodes[i].name);
  for (const auto& a : d.assignments) {
    if (to_cluster[a.node] == bp::no_node) {
      return bp::error{bp::errc::invalid, d.name + ":" + std::to_string(a.line) + ": assignment `" + a.path +
                                              "` is on node `" + d.c.nodes[a.node].name + "`, which cluster " +
                                              cluster_name + " does not have"};
    }
  }
  for (auto& n : *m) n = to_cluster[n];
  return m;
}

// Prints (or writes as JSON) the migration plan and writes its deployment with --out.
int report_migration(const options& o, const bp::problem& p, const std::string& cluster_name,
                     const bp::migration_plan& plan, const std::vector<std::string>& candidate_names,
                     nlohmann::json& summary) {
  const std::string start = plan.candidate < 0 ? plan.start
                                               : candidate_names[static_cast<std::size_t>(plan.candidate)] +
                                                     "'s mapping" + (plan.relabelled ? " (nodes relabelled)" : "");
  nlohmann::json moves = nlohmann::json::array();
  for (const auto& m : plan.moves) {
    moves.push_back({{"path", p.t.name(m.root)},
                     {"from", p.c.nodes[m.from].name},
                     {"to", p.c.nodes[m.to].name},
                     {"components", m.components},
                     {"state_bytes", m.state_bytes}});
  }
  nlohmann::json mig{{"current", o.current},
                     {"migration_cost", o.migration_cost},
                     {"state", "load.memory"},
                     {"traffic_unit", o.unit},
                     {"current_feasible", plan.current_feasible},
                     {"cost_before", plan.cost_before},
                     {"cost_after", plan.cost_after},
                     {"bytes_moved", plan.bytes_moved},
                     {"objective", plan.objective},
                     {"objective_current", plan.objective_current},
                     {"start", start},
                     {"local_moves", plan.local_moves},
                     {"moves", moves}};
  if (!plan.current_feasible) mig["current_violation"] = plan.current_violation;
  summary["migration"] = mig;
  summary["cost"] = plan.cost_after;
  std::size_t assignments = 0;
  for (std::size_t v = 0; v < p.t.size(); ++v) assignments += v == 0 || plan.map[v] != plan.map[p.t.parent[v]];
  summary["assignments"] = assignments;
  if (!o.out.empty()) {
    std::ofstream f(o.out);
    if (!f) return fail(o.out + ": cannot open for writing");
    std::ostringstream head;
    head << "migration plan from " << o.current << " at " << o.migration_cost << " per byte: cost " << plan.cost_before
         << " -> " << plan.cost_after << ", " << plan.bytes_moved << " bytes of state moved";
    bp::write_deployment(f, p, plan.map,
                         {"written by banyan partition from " + o.profile + " and " + cluster_name, head.str()});
    summary["deployment"] = o.out;
  }
  if (int code = write_dot_and_results(o, p, &plan.map, summary)) return code;
  if (o.json) {
    std::cout << summary.dump(2) << "\n";
    return 0;
  }
  if (!plan.current_feasible)
    std::printf("current deployment %s is over capacity (%s); repaired\n", o.current.c_str(),
                plan.current_violation.c_str());
  if (plan.moves.empty()) {
    std::printf("nothing moves: no move saves more traffic than its state costs at %g per byte\n", o.migration_cost);
  } else {
    std::printf("%-40s %-12s %-12s %10s %14s\n", "component", "from", "to", "components", "state.bytes");
    for (const auto& m : plan.moves) {
      std::printf("%-40s %-12s %-12s %10zu %14.0f\n", p.t.name(m.root).c_str(), p.c.nodes[m.from].name.c_str(),
                  p.c.nodes[m.to].name.c_str(), m.components, m.state_bytes);
    }
  }
  std::printf(
      "traffic cost (%s x link cost): %g before, %g after; %g bytes of state moved; objective %g (staying: %g%s); from "
      "%s\n",
      o.unit.c_str(), plan.cost_before, plan.cost_after, plan.bytes_moved, plan.objective, plan.objective_current,
      plan.current_feasible ? "" : ", over capacity", start.c_str());
  if (!o.out.empty()) std::printf("deployment written to %s\n", o.out.c_str());
  return 0;
}

int run(const options& o) {
  bp::profile_options po;
  if (o.unit == "bytes") po.unit = bp::traffic_unit::bytes;
  else if (o.unit != "messages") return bad_input("--weight must be `messages` or `bytes`, got `" + o.unit + "`");
  if (o.load != "cpu" && o.load != "messages")
    return bad_input("--load must be `cpu` or `messages`, got `" + o.load + "`");
  if (!std::isfinite(o.migration_cost) || o.migration_cost < 0) {
    std::ostringstream got;
    got << o.migration_cost;
    return bad_input("--migration-cost must be a non-negative number of cost units per byte, got " + got.str());
  }
  if (o.current.empty() && o.migration_cost != 0) return bad_input("--migration-cost needs --current DEPLOYMENT.yaml");
  if (o.current.empty() && o.cluster.empty())
    return bad_input("--cluster is required (or --current, whose cluster is used)");
  bp::profile_measurements measured;  // read in the same pass as the tree
  auto t = bp::load_profile(o.profile, po, &measured);
  if (!t) return bad_input(t.error().message);
  for (const auto& repeated : measured.repeated_edges) banyan::log::warning(tool, repeated);
  if (measured.repeated_edge_count > measured.repeated_edges.size()) {
    banyan::log::warning(tool, o.profile + ": " +
                                   std::to_string(measured.repeated_edge_count - measured.repeated_edges.size()) +
                                   " more edges are listed more than once; each one's traffic is summed");
  }
  std::optional<bp::deployment> current;
  if (!o.current.empty()) {
    auto d = bp::load_deployment(o.current);
    if (!d) return bad_input(d.error().message);
    current = std::move(*d);
  }
  // Without --cluster, the current deployment's own nodes and capacities are the cluster.
  const std::string cluster_name = o.cluster.empty() ? o.current : o.cluster;
  auto c = o.cluster.empty() ? bp::result<bp::cluster>(current->c) : bp::load_cluster(o.cluster);
  if (!c) return bad_input(c.error().message);
  const load_confidence confidence = judge_loads(*t, measured);
  if (o.load == "messages") {
    if (auto ok = use_message_loads(*t, measured, o.profile); !ok) return bad_input(ok.error().message);
    for (const auto& n : c->nodes) {
      if (!n.cpu.percent) {
        banyan::log::warning(tool, o.cluster + ": node `" + n.name +
                                       "` has an absolute capacity.cpu, read as "
                                       "messages with --load messages; give capacities as percentages (\"40%\")");
      }
    }
  } else if (!confidence.trusted()) {
    banyan::log::warning(tool, o.profile + ": " + confidence.describe());
  }
  auto pr = bp::make_problem(std::move(*t), std::move(*c));
  if (!pr) return bad_input(o.profile + " on " + cluster_name + ": " + pr.error().message);
  const bp::problem& p = *pr;
  bp::mapping current_map;
  if (current) {
    auto m = current_mapping(p, *current, cluster_name);
    if (!m) return bad_input(m.error().message);
    current_map = std::move(*m);
    if (!p.t.has_memory()) {
      banyan::log::warning(tool, o.profile +
                                     ": no component reports load.memory, so every component's state counts "
                                     "0 bytes and --migration-cost has no effect");
    }
  }

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
    bp::solve_options so{
        .timeout_s = std::chrono::duration<double>(o.time_limit).count(), .seed = o.seed, .warm_start = warm};
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
    nlohmann::json r{{"algorithm", s.algorithm},
                     {"status", bp::to_string(s.status)},
                     {"seconds", s.seconds},
                     {"lower_bound", s.lower_bound},
                     {"message", s.message}};
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
  nlohmann::json summary{{"profile", o.profile},
                         {"cluster", cluster_name},
                         {"components", p.t.size()},
                         {"nodes", p.k()},
                         {"load", load},
                         {"lower_bound", bound},
                         {"results", rows},
                         {"chosen", best ? nlohmann::json(best->algorithm) : nlohmann::json(nullptr)}};
  // Subtree roots in the deployment: the root and every component on another node than its parent.
  std::size_t assignments = 0;
  if (best) {
    for (std::size_t v = 0; v < p.t.size(); ++v) assignments += v == 0 || best->map[v] != best->map[p.t.parent[v]];
  }
  if (best) {
    summary["cost"] = best->cost;
    summary["assignments"] = assignments;
  }

  if (current) {
    std::vector<bp::mapping> candidates;
    std::vector<std::string> candidate_names;
    for (const auto& s : sols) {
      if (s.status == bp::solve_status::optimal || s.status == bp::solve_status::feasible) {
        candidates.push_back(s.map);
        candidate_names.push_back(s.algorithm);
      }
    }
    auto plan = bp::plan_migration(
        p, current_map,
        {.alpha = o.migration_cost, .candidates = std::move(candidates), .seed = o.seed, .root_stays = !o.move_root});
    if (!plan) return fail(o.current + " on " + cluster_name + ": " + plan.error().message);
    return report_migration(o, p, cluster_name, *plan, candidate_names, summary);
  }

  if (best && !o.out.empty()) {
    std::ofstream f(o.out);
    if (!f) return fail(o.out + ": cannot open for writing");
    std::ostringstream cost;
    cost << best->cost;
    bp::write_deployment(
        f, p, best->map,
        {"written by banyan partition from " + o.profile + " and " + o.cluster,
         "algorithm " + best->algorithm + " (" + bp::to_string(best->status) + "), cross-node cost " + cost.str()});
    summary["deployment"] = o.out;
  }
  if (int code = write_dot_and_results(o, p, best ? &best->map : nullptr, summary)) return code;

  if (o.json) {
    std::cout << summary.dump(2) << "\n";
  } else {
    std::printf("%s: %zu components on %zu nodes; loads in %s (cpu confidence %s); best lower bound %s\n",
                o.profile.c_str(), p.t.size(), p.k(), o.load == "messages" ? "messages" : "cpu s", confidence.level(),
                bound > 0 ? std::to_string(bound).c_str() : "none proven");
    std::printf("%-18s %14s %9s %8s %9s %9s  %s\n", "algorithm", "cost", "vs.bound", "max.util", "cut.edges", "time.s",
                "status");
    for (const auto& s : sols) {
      if (s.map.empty()) {
        std::printf("%-18s %14s %9s %8s %9s %9.3f  %s%s%s\n", s.algorithm.c_str(), "-", "-", "-", "-", s.seconds,
                    bp::to_string(s.status), s.message.empty() ? "" : ": ", s.message.c_str());
        continue;
      }
      const auto e = bp::evaluate(p, s.map);
      char ratio[32] = "-";
      if (bound > 0) std::snprintf(ratio, sizeof ratio, "%.4f", e.cost / bound);
      std::printf("%-18s %14.6g %9s %8.3f %9zu %9.3f  %s%s%s\n", s.algorithm.c_str(), e.cost, ratio, e.max_utilisation,
                  e.cut_edges, s.seconds, bp::to_string(s.status),
                  s.status == bp::solve_status::optimal || s.message.empty() ? "" : ": ",
                  s.status == bp::solve_status::optimal ? "" : s.message.c_str());
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
  sub.add_option("--cluster", o->cluster, "cluster or deployment YAML (docs/formats.md); optional with --current");
  auto* algorithm = sub.add_option("--algorithm", o->algo,
                                   "bottom-up | smt | mip | metis | greedy | round-robin | round-robin-leaves | hash | "
                                   "random | all, or a comma list")
                        ->capture_default_str();
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
  sub.add_option("--current", o->current,
                 "deployment YAML running now: propose a migration from it (its cluster is used without --cluster)");
  sub.add_option("--migration-cost", o->migration_cost,
                 "with --current: cost units (traffic unit x link cost) per byte of state moved (load.memory)")
      ->capture_default_str();
  sub.add_flag(
      "--move-root", o->move_root,
      "with --current: the plan may put the root on another node (only a fresh launch can; `banyan reconfigure` "
      "moves everything but the root)");
  add_deprecated_alias(sub, algorithm, "--algo", tool);
  add_deprecated_alias(sub, time_limit, "--timeout", tool);
  add_deprecated_alias(sub, results, "--report", tool);
  return [o] { return run(*o); };
}

}  // namespace banyan::cli
