// periodic_bench: the periodic planner's figures (docs/benchmarks.md, "Periodic deployment").
//   1. heuristic vs the MIP's proven optimum on --instances random small workloads (seeded): median
//      and worst gap of the model cost, and the times;
//   2. make_plan's time (heuristic, with its Monte Carlo check and repair) at each of --sizes
//      subtrees over one day of one-minute slots;
//   3. predicted cost and met fraction of the plan and of each baseline policy against always-on,
//      on a generated workload of --policy-subtrees subtrees.
// Every workload comes from random_workload(seed, shape), so the same options give the same inputs.
#include "banyan/cli.hpp"

#include "banyan/base/progress.hpp"
#include "banyan/partitioner/periodic_plan.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "periodic_model.hpp"  // the model and solvers, for the gap figure (partitioner/src)

namespace pp = banyan::partitioner::periodic;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

pp::workload_shape day(std::size_t subtrees) {
  pp::workload_shape s;
  s.subtrees = subtrees;
  s.nodes = std::max<std::size_t>(2, subtrees / 8);
  s.slot = 60;
  s.horizon = 86400;
  s.slack = 1.2;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"periodic_bench: heuristic vs MIP optimum, planner time per size, policy costs"};
  std::size_t instances = 30, small_subtrees = 8, small_nodes = 3, policy_subtrees = 200;
  std::vector<std::size_t> sizes{100, 1000, 10000};
  std::uint64_t seed = 1, samples = 100000;
  std::chrono::milliseconds mip_limit{60000};
  std::string results;
  bool skip_gaps = false;
  app.add_option("--instances", instances, "random small workloads for the gap figure")->capture_default_str();
  app.add_option("--small-subtrees", small_subtrees, "subtrees of each small workload")->capture_default_str();
  app.add_option("--small-nodes", small_nodes, "nodes of each small workload")->capture_default_str();
  app.add_option("--sizes", sizes, "subtree counts for the time figure")->delimiter(',');
  app.add_option("--policy-subtrees", policy_subtrees, "subtrees of the policy comparison")->capture_default_str();
  app.add_option("--samples", samples, "Monte Carlo instances per workflow")->capture_default_str();
  app.add_option("--seed", seed, "first seed")->capture_default_str();
  app.add_flag("--skip-gaps", skip_gaps, "leave out the heuristic-vs-MIP figure");
  banyan::cli::add_duration_option(app, "--exact-time-limit", mip_limit, "time for each MIP solve");
  app.add_option("--results", results, "write every figure as JSON");
  if (auto code = banyan::cli::parse(app, argc, argv)) return *code;
  nlohmann::json out;

  // 1. Heuristic vs MIP on small instances (the model cost, before the Monte Carlo repair).
  if (!skip_gaps) {
    std::vector<double> gaps;
    nlohmann::json rows = nlohmann::json::array();
    double mip_time = 0, heuristic_time = 0;
    std::size_t unproven = 0;
    banyan::progress bar("gaps", instances, {.unit = "workloads"});
    for (std::size_t i = 0; i < instances; ++i) {
      pp::workload_shape shape;
      shape.subtrees = small_subtrees;
      shape.nodes = small_nodes;
      const pp::workload w = pp::random_workload(seed + i, shape);
      const auto m = pp::detail::build_model(w);
      const std::vector<int> margins(m.flows.size(), 0);
      double t0 = now();
      const auto h = pp::detail::solve_heuristic(m, margins);
      const double th = now() - t0;
      t0 = now();
      const auto x = pp::detail::solve_mip(m, margins, std::chrono::duration<double>(mip_limit).count(), nullptr);
      const double tm = now() - t0;
      mip_time += tm;
      heuristic_time += th;
      bar.update(i + 1);
      nlohmann::json r{{"seed", seed + i}, {"heuristic", h.found ? h.cost : -1}, {"heuristic_s", th},
                       {"mip_s", tm},      {"mip", x.found ? x.cost : -1},       {"optimal", x.optimal}};
      if (x.found && x.optimal && h.found) {
        gaps.push_back(x.cost > 0 ? h.cost / x.cost - 1 : 0);
        r["gap"] = gaps.back();
      } else {
        ++unproven;
      }
      rows.push_back(r);
    }
    bar.finish();
    std::sort(gaps.begin(), gaps.end());
    const double median = gaps.empty() ? 0 : gaps[gaps.size() / 2], worst = gaps.empty() ? 0 : gaps.back();
    const auto within =
        static_cast<std::size_t>(std::count_if(gaps.begin(), gaps.end(), [](double g) { return g <= 0.03; }));
    std::printf("heuristic vs MIP optimum (%zu subtrees, %zu nodes, 24 slots of 5 min): %zu proven of %zu\n",
                small_subtrees, small_nodes, gaps.size(), instances);
    std::printf("  gap median %.2f%%  worst %.2f%%  within 3%%: %zu/%zu  time: heuristic %.3f s, mip %.3f s (mean)\n",
                100 * median, 100 * worst, within, gaps.size(), heuristic_time / static_cast<double>(instances),
                mip_time / static_cast<double>(instances));
    out["gaps"] = {{"instances", rows},          {"median", median},      {"worst", worst},
                   {"within_3_percent", within}, {"proven", gaps.size()}, {"unproven", unproven}};
  }

  // 2. Planner time per size: one day, one-minute slots, heuristic + Monte Carlo.
  nlohmann::json times = nlohmann::json::array();
  for (auto n : sizes) {
    const pp::workload w = pp::random_workload(seed, day(n));
    pp::plan_options o;
    o.algorithm = pp::plan_algorithm::heuristic;
    o.simulation.samples = samples;
    o.simulation.seed = seed;
    double t0 = now();
    const auto m = pp::detail::build_model(w);
    const auto h = pp::detail::solve_heuristic(m, std::vector<int>(m.flows.size(), 0));
    const double solve_s = now() - t0;
    t0 = now();
    auto p = pp::make_plan(w, o);
    const double plan_s = now() - t0;
    if (!p) {
      std::printf("%zu subtrees: %s\n", n, p.error().message.c_str());
      times.push_back({{"subtrees", n}, {"error", p.error().message}});
      continue;
    }
    std::printf(
        "%6zu subtrees, %4zu nodes, %4zu workflows, 1440 slots: heuristic %.2f s (columns %zu, lp %s), "
        "whole plan %.2f s (%zu repairs, %llu instances per workflow), cost %.4g vs always-on %.4g\n",
        n, w.nodes.size(), w.workflows.size(), solve_s, h.columns, h.bound > 0 ? "yes" : "no", plan_s, p->repairs,
        static_cast<unsigned long long>(samples), p->e.cost, pp::planned_cost(w, pp::always_on(w, p->s.node)));
    times.push_back({{"subtrees", n},
                     {"nodes", w.nodes.size()},
                     {"workflows", w.workflows.size()},
                     {"heuristic_s", solve_s},
                     {"plan_s", plan_s},
                     {"repairs", p->repairs},
                     {"lp", h.bound > 0},
                     {"cost", p->e.cost}});
  }
  out["times"] = times;

  // 3. Policies vs always-on.
  {
    const pp::workload w = pp::random_workload(seed, day(policy_subtrees));
    pp::plan_options o;
    o.simulation.samples = samples;
    o.simulation.seed = seed;
    auto p = pp::make_plan(w, o);
    if (p) {
      const pp::evaluation on = pp::simulate(w, pp::always_on(w, p->s.node), o.simulation);
      std::vector<std::pair<std::string, pp::evaluation>> rows{
          {"plan (" + p->algorithm + ")", p->e},
          {"always-on", on},
          {"keep-alive-60s", pp::simulate(w, pp::fixed_keep_alive(w, p->s.node, 60), o.simulation)},
          {"hybrid-histogram", pp::simulate(w, pp::hybrid_histogram(w, p->s.node), o.simulation)}};
      std::printf("policies on %zu subtrees, %zu nodes, %zu workflows (one day, 1-min slots):\n", policy_subtrees,
                  w.nodes.size(), w.workflows.size());
      nlohmann::json list = nlohmann::json::array();
      for (const auto& [name, e] : rows) {
        std::size_t short_of = 0;
        for (const auto& f : e.workflows) short_of += f.meets() ? 0 : 1;
        std::printf("  %-20s cost %10.4g  %6.2f%% of always-on  met %.5f  workflows short of target %zu\n",
                    name.c_str(), e.cost, 100 * e.cost / on.cost, e.met_fraction, short_of);
        list.push_back({{"policy", name},
                        {"cost", e.cost},
                        {"vs_always_on", e.cost / on.cost},
                        {"met_fraction", e.met_fraction},
                        {"workflows_short", short_of}});
      }
      out["policies"] = list;
    } else {
      std::printf("policies: %s\n", p.error().message.c_str());
    }
  }
  if (!results.empty()) std::ofstream(results) << out.dump(2) << "\n";
  return 0;
}
