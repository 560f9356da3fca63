// partition_bench: every algorithm on generated hierarchical workloads, cost as a ratio to the
// proven optimum of the same instance (smt or mip, warm-started from bottom-up), or to the best
// cost any algorithm found where nothing is proven, and time. Results: docs/benchmarks.md.
//
//   partition_bench [--sizes 20,50,...] [--nodes 4,8,16] [--seeds 3] [--exact-time-limit 60s]
//                   [--exact-max 200] [--results out.json]
//   partition_bench --families 84 [--family-size 24] [--first-seed 1] [--exact-time-limit 10s]
#include "banyan/partitioner/algorithm.hpp"
#include "banyan/partitioner/families.hpp"
#include "banyan/partitioner/generator.hpp"
#include "banyan/partitioner/io.hpp"
#include "partition_sweep.hpp"

#include "banyan/cli.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>

using namespace banyan::partitioner;

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

struct cell {
  std::vector<double> ratio, seconds;
  int infeasible = 0, runs = 0;
};

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// The library's whole path for one profile, stage by stage: what `banyan partition --algorithm
// bottom-up -o` does, without the CLI's own extras.
int time_end_to_end(const std::string& profile, const std::string& cluster_file, const std::string& out) {
  const double t0 = now_s();
  auto t = load_profile(profile);
  if (!t) {
    std::fprintf(stderr, "%s\n", t.error().message.c_str());
    return 1;
  }
  const double t1 = now_s();
  auto c = load_cluster(cluster_file);
  if (!c) {
    std::fprintf(stderr, "%s\n", c.error().message.c_str());
    return 1;
  }
  auto p = make_problem(std::move(*t), std::move(*c));
  if (!p) {
    std::fprintf(stderr, "%s\n", p.error().message.c_str());
    return 1;
  }
  const double t2 = now_s();
  auto s = solve("bottom-up", *p);
  const double t3 = now_s();
  {
    std::ofstream f(out);
    write_deployment(f, *p, s->map, {"partition_bench --end-to-end"});
  }
  const double t4 = now_s();
  std::printf(
      "%zu components: read profile %.3f s, cluster+problem %.3f s, bottom-up %.3f s (cost %.6g, bound %.6g, %s), "
      "write deployment %.3f s, total %.3f s\n",
      p->t.size(), t1 - t0, t2 - t1, t3 - t2, s->cost, s->lower_bound, s->message.c_str(), t4 - t3, t4 - t0);
  return 0;
}

int write_family(const std::string& shape, std::size_t n, std::size_t k, const std::string& profile,
                 const std::string& cluster_file) {
  family_options f{.components = n, .traffic = family_traffic::pareto, .load_scale = 1e-3, .nodes = k};
  bool found = false;
  for (family_shape s : all_family_shapes()) {
    if (shape == to_string(s)) {
      f.shape = s;
      found = true;
    }
  }
  if (!found) {
    std::fprintf(stderr, "--shape: unknown shape `%s`\n", shape.c_str());
    return 2;
  }
  auto p = generate_family(f);
  if (!p) {
    std::fprintf(stderr, "%s\n", p.error().message.c_str());
    return 1;
  }
  std::ofstream a(profile), b(cluster_file);
  write_profile(a, p->t);
  write_cluster(b, p->c);
  std::printf("%s: %s\n", profile.c_str(), describe(f).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"partition_bench: partitioner cost vs proven optimum, and time"};
  std::vector<std::size_t> sizes{20, 50, 100, 200, 1000, 10000, 100000, 1000000};
  std::vector<std::size_t> nodes{4, 8, 16};
  std::size_t seeds = 3, exact_max = 200;
  std::chrono::milliseconds exact_time_limit{60'000};
  double slack = 1.2;
  std::size_t rack = 0;
  std::string json_out;
  std::vector<std::string> algos{"bottom-up", "metis", "greedy", "round-robin", "hash", "random"};
  app.add_option("--sizes", sizes, "components per tree")->delimiter(',');
  app.add_option("--nodes", nodes, "nodes per cluster")->delimiter(',');
  app.add_option("--seeds", seeds, "seeds per (size, nodes)");
  auto* limit =
      banyan::cli::add_duration_option(app, "--exact-time-limit", exact_time_limit, "time limit for smt and mip each");
  banyan::cli::add_deprecated_alias(app, limit, "--exact-timeout", "partition_bench");
  app.add_option("--exact-max", exact_max, "largest size given to smt and mip");
  app.add_option("--slack", slack, "total capacity / total load");
  auto* rack_size = app.add_option("--rack-size", rack, "rack size for group link costs (0: uniform)");
  banyan::cli::add_deprecated_alias(app, rack_size, "--rack", "partition_bench");
  auto* algorithms = app.add_option("--algorithms", algos, "heuristics and baselines to run")->delimiter(',');
  banyan::cli::add_deprecated_alias(app, algorithms, "--algos", "partition_bench");
  auto* results = app.add_option("--results", json_out, "write per-instance results here (JSON)");
  banyan::cli::add_deprecated_alias(app, results, "--json", "partition_bench");
  bool exact_all = false;
  app.add_flag("--exact-all", exact_all, "run mip even when smt already proved the optimum");
  family_sweep_options sweep;
  app.add_option("--families", sweep.instances, "run the family sweep over this many instances instead");
  app.add_option("--family-size", sweep.components, "components per family instance (stars: at least 31)");
  app.add_option("--first-seed", sweep.first_seed, "seed of the sweep's first instance");
  std::vector<std::string> end_to_end;
  app.add_option("--end-to-end", end_to_end,
                 "PROFILE CLUSTER DEPLOYMENT: time each stage of reading, bottom-up and writing")
      ->expected(3);
  std::string write_shape;
  std::size_t write_n = 1000000, write_k = 8;
  std::vector<std::string> write_files;
  app.add_option("--write-family", write_files,
                 "PROFILE CLUSTER: write a family instance (--shape, --family-n, --family-k)")
      ->expected(2);
  app.add_option("--shape", write_shape, "chain | chain+branches | star | caterpillar | binary | heavy-60% | gen-tree");
  app.add_option("--family-n", write_n, "components of the written instance");
  app.add_option("--family-k", write_k, "nodes of the written instance");
  if (auto code = banyan::cli::parse(app, argc, argv)) return *code;
  if (!write_files.empty()) return write_family(write_shape, write_n, write_k, write_files[0], write_files[1]);
  if (!end_to_end.empty()) return time_end_to_end(end_to_end[0], end_to_end[1], end_to_end[2]);
  const double exact_timeout = std::chrono::duration<double>(exact_time_limit).count();
  if (app.count("--families") > 0) {
    sweep.exact_time_limit_s = exact_timeout;
    sweep.results = json_out;
    return run_family_sweep(sweep);
  }

  nlohmann::json rows = nlohmann::json::array();
  std::map<std::string, std::size_t> largest_proven;  // exact solver -> largest size proven
  std::map<std::string, int> wins, comparable;        // baseline -> bottom-up strictly/at most cheaper
  std::printf("%8s %3s %-12s %9s %9s %9s %5s %s\n", "size", "k", "algorithm", "med.ratio", "max.ratio", "med.time",
              "infs", "reference");
  for (std::size_t n : sizes) {
    for (std::size_t k : nodes) {
      std::map<std::string, cell> cells;
      int proven = 0;
      for (std::size_t s = 1; s <= seeds; ++s) {
        generator_options g{.components = n,
                            .seed = s * 1000 + k,
                            .nodes = k,
                            .slack = slack,
                            .rack_size = rack,
                            .with_paths = n <= 100000};
        const tree t = generate_tree(g);
        auto p = make_problem(t, generate_cluster(t, g));
        if (!p) {
          std::fprintf(stderr, "n=%zu k=%zu seed=%zu: %s\n", n, k, s, p.error().message.c_str());
          return 1;
        }
        std::map<std::string, solution> got;
        for (const auto& a : algos) got[a] = *solve(a, *p, {.timeout_s = exact_timeout, .seed = s});
        double reference = INFINITY;
        bool is_proven = false;
        if (n <= exact_max) {
          const mapping* warm = got["bottom-up"].status == solve_status::feasible ? &got["bottom-up"].map : nullptr;
          for (const char* e : {"smt", "mip"}) {
            if (is_proven && !exact_all) break;
            got[e] = *solve(e, *p, {.timeout_s = exact_timeout, .seed = s, .warm_start = warm});
            if (got[e].status == solve_status::optimal) {
              is_proven = true;
              reference = got[e].cost;
              largest_proven[e] = std::max(largest_proven[e], n);
            }
          }
        }
        if (!is_proven) {
          for (const auto& [a, sol] : got) {
            if (sol.status == solve_status::feasible || sol.status == solve_status::optimal)
              reference = std::min(reference, sol.cost);
          }
        }
        proven += is_proven;
        const auto& bu = got["bottom-up"];
        for (const auto& [a, sol] : got) {
          auto& c = cells[a];
          ++c.runs;
          c.seconds.push_back(sol.seconds);
          const bool ok = sol.status == solve_status::feasible || sol.status == solve_status::optimal;
          if (!ok) {
            ++c.infeasible;
          } else c.ratio.push_back(reference > 0 ? sol.cost / reference : (sol.cost == 0 ? 1.0 : INFINITY));
          if (a != "bottom-up" && a != "smt" && a != "mip") {
            ++comparable[a];
            // bottom-up wins when it is cheaper, or when the baseline's mapping is over capacity.
            if (!ok || (bu.status == solve_status::feasible && bu.cost < sol.cost - 1e-9)) ++wins[a];
          }
          rows.push_back({{"size", n},
                          {"nodes", k},
                          {"seed", g.seed},
                          {"algorithm", a},
                          {"status", to_string(sol.status)},
                          {"cost", ok ? sol.cost : -1},
                          {"reference", reference},
                          {"proven", is_proven},
                          {"lower_bound", sol.lower_bound},
                          {"seconds", sol.seconds}});
        }
      }
      for (const auto& [a, c] : cells) {
        std::printf("%8zu %3zu %-12s %9.4f %9.4f %9.3f %5d %s\n", n, k, a.c_str(), median(c.ratio),
                    c.ratio.empty() ? NAN : *std::max_element(c.ratio.begin(), c.ratio.end()), median(c.seconds),
                    c.infeasible,
                    proven == static_cast<int>(seeds) ? "optimum"
                    : proven                          ? "mixed"
                                                      : "best-known");
      }
      std::fflush(stdout);
    }
  }
  std::printf("\nbottom-up cheaper than baseline (or baseline over capacity):\n");
  for (const auto& [a, c] : comparable)
    std::printf("  %-12s %d/%d (%.1f%%)\n", a.c_str(), wins[a], c, 100.0 * wins[a] / c);
  std::printf("largest size proven optimal within %.0f s:", exact_timeout);
  for (const auto& [e, n] : largest_proven) std::printf("  %s %zu", e.c_str(), n);
  std::printf("\n");
  if (!json_out.empty()) std::ofstream(json_out) << rows.dump(1) << "\n";
  return 0;
}
