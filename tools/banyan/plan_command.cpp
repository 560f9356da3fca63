// `banyan plan WORKLOAD.yaml --deployment D.yaml`: plans when each periodic subtree is awake and
// where (docs/periodic.md): the cheapest schedule within the nodes' capacities whose every workflow
// meets its reliability target by Monte Carlo, written as a plan file; with --baselines the same
// Monte Carlo and cost for always-on, a fixed 60 s keep-alive and the hybrid histogram policy.
// --evaluate PLAN judges an existing plan instead (refusing one made for another deployment).
#include "banyan/cli.hpp"
#include "banyan/commands.hpp"

#include "banyan/base/progress.hpp"
#include "banyan/partitioner/io.hpp"
#include "banyan/partitioner/periodic_plan.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>

namespace banyan::cli {
namespace {

namespace bp = banyan::partitioner;
namespace pp = banyan::partitioner::periodic;

constexpr const char* tool = "banyan plan";

struct options {
  std::string workload, deployment, profile, algorithm = "auto", out, evaluate;
  std::chrono::milliseconds time_limit{30000};
  std::uint64_t samples = 100000, seed = 1;
  double planning_quantile = 0;
  bool json = false, baselines = false;
  std::chrono::milliseconds keep_alive{60000};
  std::string baseline_plans;
};

nlohmann::json outcome_json(const pp::evaluation& e) {
  nlohmann::json flows = nlohmann::json::array();
  for (const auto& f : e.workflows) {
    flows.push_back({{"name", f.name},
                     {"target", f.target},
                     {"met_fraction", f.fraction},
                     {"low", f.low},
                     {"high", f.high},
                     {"samples", f.samples},
                     {"meets", f.meets()}});
  }
  return {{"cost", e.cost}, {"planned_cost", e.planned_cost}, {"met_fraction", e.met_fraction}, {"workflows", flows}};
}

std::string number(double x, int digits = 4) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, x);
  return buf;
}

int run(const options& o) {
  const auto started = std::chrono::steady_clock::now();
  pp::plan_algorithm algo{};
  if (o.algorithm == "mip") algo = pp::plan_algorithm::mip;
  else if (o.algorithm == "heuristic") algo = pp::plan_algorithm::heuristic;
  else if (o.algorithm == "auto") algo = pp::plan_algorithm::automatic;
  else return fail(tool, "unknown --algorithm `" + o.algorithm + "` (mip, heuristic or auto)", exit_bad_arguments);

  std::optional<bp::deployment> dep;
  if (!o.deployment.empty()) {
    auto d = bp::load_deployment(o.deployment);
    if (!d) return fail(tool, d.error().message, exit_bad_arguments);
    dep = std::move(*d);
  }
  std::optional<bp::tree> profile;
  if (!o.profile.empty()) {
    auto t = bp::load_profile(o.profile);
    if (!t) return fail(tool, t.error().message, exit_bad_arguments);
    profile = std::move(*t);
  }
  auto w = pp::load_workload(o.workload, {dep ? &*dep : nullptr, profile ? &*profile : nullptr});
  if (!w) return fail(tool, w.error().message, exit_bad_arguments);

  pp::simulate_options sim;
  sim.samples = o.samples;
  sim.seed = o.seed;
  nlohmann::json summary{{"workload", o.workload},
                         {"deployment", o.deployment.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.deployment)},
                         {"fingerprint", w->deployment_fingerprint},
                         {"subtrees", w->subtrees.size()},
                         {"workflows", w->workflows.size()},
                         {"nodes", w->nodes.size()},
                         {"slots", w->slots()},
                         {"samples", o.samples},
                         {"seed", o.seed}};
  banyan::progress bar("plan", 0,
                       {.show = o.json ? progress_options::display::final_only : progress_options::display::automatic,
                        .summary_after = std::chrono::seconds(1)});
  std::uint64_t steps = 0;
  pp::schedule chosen;
  pp::evaluation judged;
  std::string algorithm;  // written into the plan file
  if (!o.evaluate.empty()) {
    auto p = pp::load_plan(o.evaluate, *w);
    if (!p) return fail(tool, p.error().message, exit_bad_arguments);
    bar.update(++steps, "monte carlo");
    chosen = p->s;
    judged = pp::simulate(*w, chosen, sim);
    summary["evaluated"] = o.evaluate;
    summary["algorithm"] = p->algorithm;
    algorithm = p->algorithm;
  } else {
    pp::plan_options po;
    po.algorithm = algo;
    po.time_limit_s = std::chrono::duration<double>(o.time_limit).count();
    po.simulation = sim;
    po.planning_quantile = o.planning_quantile;
    po.on_progress = [&](const std::string& what) { bar.update(++steps, what); };
    auto plan = pp::make_plan(*w, po);
    if (!plan) return fail(tool, plan.error().message, exit_failed);
    chosen = plan->s;
    judged = plan->e;
    const double gap = plan->lower_bound > 0 && plan->model_cost > 0
                           ? std::max(0.0, (plan->model_cost - plan->lower_bound) / plan->model_cost)
                           : std::nan("");
    summary["algorithm"] = plan->algorithm;
    summary["optimal"] = plan->optimal;
    summary["model_cost"] = plan->model_cost;
    summary["lower_bound"] = plan->lower_bound;
    summary["gap"] = std::isfinite(gap) ? nlohmann::json(gap) : nlohmann::json(nullptr);
    summary["repairs"] = plan->repairs;
    summary["margins"] = plan->margins;
    summary["plan_seconds"] = plan->seconds;
    algorithm = plan->algorithm;
  }
  summary["plan"] = outcome_json(judged);

  // Baselines on the deployment's nodes (or the plan's, for subtrees it does not place).
  std::vector<std::pair<std::string, pp::evaluation>> baselines;
  const pp::evaluation on = pp::simulate(*w, pp::always_on(*w, chosen.node), sim);
  // Writes a schedule as a plan file for `banyan launch --plan` (docs/formats.md, "Periodic plan").
  auto write_file = [&](const std::string& path, const pp::schedule& s, const pp::evaluation& e,
                        const std::string& algorithm) -> std::string {
    pp::plan_file f;
    f.s = s;
    f.algorithm = algorithm;
    f.deployment = o.deployment;
    f.deployment_fingerprint = w->deployment_fingerprint;
    f.cost = e.cost;
    f.seed = o.seed;
    f.samples = o.samples;
    for (const auto& x : e.workflows) f.reliability.push_back({x.name, x.target, x.fraction, x.low, x.high});
    std::ofstream out(path);
    if (!out) return path + ": cannot open for writing";
    pp::write_plan(out, *w, f);
    out.close();
    return out ? std::string() : path + ": cannot write";
  };
  if (o.baselines || !o.baseline_plans.empty()) {
    bar.update(++steps, "baselines");
    const double keep = std::chrono::duration<double>(o.keep_alive).count();
    const std::string keep_name = "keep-alive-" + number(keep, 4) + "s";
    const std::pair<std::string, pp::schedule> policies[] = {
        {"always-on", pp::always_on(*w, chosen.node)},
        {keep_name, pp::fixed_keep_alive(*w, chosen.node, keep)},
        {"hybrid-histogram", pp::hybrid_histogram(*w, chosen.node)}};
    for (const auto& [name, schedule] : policies) {
      baselines.emplace_back(name, name == "always-on" ? on : pp::simulate(*w, schedule, sim));
      if (o.baseline_plans.empty()) continue;
      const std::string path = o.baseline_plans + "/" + name + ".yaml";
      if (auto why = write_file(path, schedule, baselines.back().second, name); !why.empty()) return fail(tool, why);
    }
    nlohmann::json list = nlohmann::json::array();
    for (const auto& [name, e] : baselines) {
      nlohmann::json j = outcome_json(e);
      j["policy"] = name;
      list.push_back(j);
    }
    summary["baselines"] = list;
  }
  summary["always_on_cost"] = on.cost;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  summary["seconds"] = seconds;
  bar.finish("done");

  if (!o.out.empty()) {
    if (auto why = write_file(o.out, chosen, judged, algorithm); !why.empty()) return fail(tool, why);
    summary["out"] = o.out;
  }

  bool all_meet = true;
  for (const auto& f : judged.workflows) all_meet = all_meet && f.meets();
  if (o.json) {
    std::cout << summary.dump(2) << "\n";
  } else {
    std::cout << "monte carlo: " << o.samples << " instances per workflow, seed " << o.seed << "\n";
    std::printf("%-24s %8s %10s %22s  %s\n", "workflow", "target", "predicted", "95% interval", "meets");
    for (const auto& f : judged.workflows) {
      std::printf("%-24s %8s %10s %22s  %s\n", f.name.c_str(), number(f.target).c_str(), number(f.fraction, 6).c_str(),
                  ("[" + number(f.low, 6) + ", " + number(f.high, 6) + "]").c_str(), f.meets() ? "yes" : "NO");
    }
    std::printf("\n%-18s %14s %12s %12s\n", "policy", "cost/horizon", "vs always-on", "met");
    auto row = [&](const std::string& name, const pp::evaluation& e) {
      std::printf("%-18s %14s %11s%% %12s\n", name.c_str(), number(e.cost, 6).c_str(),
                  number(on.cost > 0 ? 100 * e.cost / on.cost : 0, 4).c_str(), number(e.met_fraction, 6).c_str());
    };
    row(o.evaluate.empty() ? "plan (" + summary["algorithm"].get<std::string>() + ")" : "plan", judged);
    for (const auto& [name, e] : baselines) row(name, e);
  }
  std::fprintf(stderr, "%s: %s%s in %.1fs%s\n", tool, o.evaluate.empty() ? "planned " : "evaluated ",
               o.workload.c_str(), seconds,
               o.evaluate.empty() && summary.contains("gap") && !summary["gap"].is_null()
                   ? (", proven gap " + number(100 * summary["gap"].get<double>(), 3) + "%").c_str()
                   : "");
  return all_meet ? 0 : exit_failed;
}

}  // namespace

action setup_plan(CLI::App& sub) {
  auto o = std::make_shared<options>();
  sub.add_option("workload", o->workload, "workload YAML: workflows, subtrees, timings (docs/formats.md)")->required();
  sub.add_option("--deployment", o->deployment,
                 "the deployment the plan is for: its nodes and subtrees; a plan or workload for another is refused");
  sub.add_option("--profile", o->profile, "profile JSON: subtree paths are checked against its components");
  sub.add_option("--algorithm", o->algorithm, "mip | heuristic | auto (mip when the model is small)")
      ->capture_default_str();
  add_duration_option(sub, "--time-limit", o->time_limit, "time for each MIP solve");
  sub.add_option("--samples", o->samples, "Monte Carlo instances per workflow")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{100000000}))
      ->capture_default_str();
  sub.add_option("--seed", o->seed, "seed of the Monte Carlo; same seed, same figures")->capture_default_str();
  sub.add_option("--planning-quantile", o->planning_quantile,
                 "quantile of the times the model plans with (0: each workflow's target)")
      ->check(CLI::Range(0.0, 1.0));
  sub.add_option("--out,-o", o->out, "write the plan (YAML, docs/formats.md)");
  sub.add_option("--evaluate", o->evaluate, "judge this plan file instead of planning");
  sub.add_flag("--baselines", o->baselines, "also judge always-on, a fixed keep-alive and the hybrid histogram policy");
  add_duration_option(sub, "--keep-alive", o->keep_alive, "the keep-alive baseline's keep-alive (default 60s)");
  sub.add_option("--baseline-plans", o->baseline_plans,
                 "write each baseline as a plan file DIR/POLICY.yaml, for banyan launch --plan (implies --baselines)")
      ->type_name("DIR");
  sub.add_flag("--json", o->json, "print the summary as JSON on stdout");
  return [o] { return run(*o); };
}

}  // namespace banyan::cli
