// `banyan pipeline show|validate|simulate|search`: pipeline schedules from DSL programs (a shipped
// name such as `zb-h1`, or a .pipe file) or torch.distributed.pipelining CSV tables (.csv).
//
//   banyan pipeline show 1f1b -p 4 -m 8                 # the action table (add --lower for comms)
//   banyan pipeline validate my.csv                      # first violation with rank and step
//   banyan pipeline simulate zb-h1 -p 4 -m 8 --costs c.json --trace t.json --svg g.svg
//   banyan pipeline search -p 4 -m 16 --costs c.json --cap 6 --out-dsl best.pipe --out-csv best.csv
#include "banyan/cli.hpp"
#include "banyan/commands.hpp"

#include <banyan/base/progress.hpp>

#include <banyan/pipeline/csv.hpp>
#include <banyan/pipeline/dsl.hpp>
#include <banyan/pipeline/lower.hpp>
#include <banyan/pipeline/render.hpp>
#include <banyan/pipeline/search.hpp>
#include <banyan/pipeline/validate.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

namespace banyan::cli {
namespace {

namespace pl = banyan::pipeline;

constexpr const char* tool = "banyan pipeline";

struct options {
  std::string schedule, costs_file, trace, svg, out_csv, out_dsl;
  int p = 4, m = 8, v = 1;
  double forward_time = 1, input_grad_time = 1, weight_grad_time = 1, memory = 1, latency = 0, bandwidth = 0;
  bool latency_given = false, bandwidth_given = false;  // on the command line: they override --costs' values
  double cap = 0;
  std::chrono::milliseconds time_limit{30000};
  std::vector<int> chunk_counts{1, 2};
  int generations = 200;
  int budget = 0;
  std::vector<int> layers_per_stage;  // simulate --layers-per-stage
  std::uint64_t seed = 1;
  bool json = false, lower = false, list = false;
};

// With --json an error is JSON too, on stdout where the result would have been:
// {"error": "<message>", "exit_code": N}; the message also goes to stderr as usual.
bool json_errors = false;

int fail(const std::string& what, int code = exit_failed) {
  if (json_errors) {
    const nlohmann::json j{{"error", what}, {"exit_code", code}};
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  return cli::fail(tool, what, code);
}
int bad_input(const std::string& what) { return fail(what, exit_bad_arguments); }

banyan::result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return banyan::error{pl::errc::io, path + ": cannot open"};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  return static_cast<bool>(out);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

struct loaded {
  pl::table t;
  std::string name;
  int v = 1;
};

// A schedule argument: a .csv table, a .pipe program, or the name of a shipped program.
banyan::result<loaded> load_schedule(const options& o) {
  if (ends_with(o.schedule, ".csv")) {
    auto text = read_file(o.schedule);
    if (!text) return text.error();
    auto t = pl::read_csv(*text, o.schedule);
    if (!t) return t.error();
    const int ranks = t->num_ranks();
    return loaded{*t, o.schedule, ranks > 0 ? t->stages / ranks : 1};
  }
  std::string text, source = o.schedule;
  if (ends_with(o.schedule, ".pipe")) {
    auto file = read_file(o.schedule);
    if (!file) return file.error();
    text = *file;
  } else if (const auto* b = pl::find_builtin(o.schedule)) {
    text = b->text;
  } else {
    std::string names;
    for (const auto& b : pl::builtin_programs()) names += " " + b.name;
    return banyan::error{
        pl::errc::invalid,
        "`" + o.schedule + "` is not a .csv table, a .pipe program or a shipped program (shipped:" + names + ")"};
  }
  auto prog = pl::parse_program(text, source);
  if (!prog) return prog.error();
  auto t = pl::compile(*prog, {o.p, o.m, o.v});
  if (!t) return t.error();
  auto v = pl::chunks_of(*prog, {o.p, o.m, o.v});
  return loaded{*t, prog->name.empty() ? source : prog->name, v ? *v : 1};
}

banyan::result<pl::costs> load_costs(const options& o, int stages_hint) {
  if (!o.costs_file.empty()) {
    auto text = read_file(o.costs_file);
    if (!text) return text.error();
    auto c = pl::parse_costs(*text, o.costs_file);
    if (c && o.latency_given) c->latency = o.latency;
    if (c && o.bandwidth_given) c->bandwidth = o.bandwidth;
    return c;
  }
  pl::costs c = pl::uniform_costs(stages_hint, o.forward_time, o.input_grad_time, o.weight_grad_time, o.memory);
  c.latency = o.latency, c.bandwidth = o.bandwidth;
  return c;
}

nlohmann::json table_json(const pl::table& t) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& row : t.ranks) {
    nlohmann::json r = nlohmann::json::array();
    for (const auto& a : row) r.push_back(pl::to_string(a));
    ranks.push_back(r);
  }
  return {{"stages", t.stages}, {"microbatches", t.microbatches}, {"stage_rank", t.stage_rank}, {"ranks", ranks}};
}

nlohmann::json sim_json(const pl::sim_result& s) {
  return {{"makespan", s.makespan}, {"bubble_ratio", s.bubble_ratio}, {"span_bubble_ratio", s.span_bubble_ratio},
          {"busy", s.busy},         {"peak_memory", s.peak_memory},   {"max_peak_memory", s.max_peak_memory()}};
}

void add_shape_options(CLI::App& sub, options& o) {
  sub.add_option("-p,--ranks", o.p, "ranks (pipeline stages for v=1)")->check(CLI::Range(1, 1024));
  sub.add_option("-m,--microbatches", o.m, "microbatches")->check(CLI::Range(1, 100000));
  sub.add_option("-v,--chunks", o.v, "chunks per rank, for programs written with `chunks v`")->check(CLI::Range(1, 64));
}

void add_cost_options(CLI::App& sub, options& o) {
  sub.add_option("--costs", o.costs_file, "costs JSON (per stage or per layer; see docs/pipeline.md)");
  auto* forward = sub.add_option("--forward-time", o.forward_time, "uniform forward time per stage (without --costs)")
                      ->check(CLI::NonNegativeNumber);
  auto* input_grad = sub.add_option("--input-grad-time", o.input_grad_time, "uniform backward-input time")
                         ->check(CLI::NonNegativeNumber);
  auto* weight_grad = sub.add_option("--weight-grad-time", o.weight_grad_time, "uniform backward-weight time")
                          ->check(CLI::NonNegativeNumber);
  auto* memory = sub.add_option("--memory", o.memory, "uniform activation memory per microbatch and stage")
                     ->check(CLI::NonNegativeNumber);
  add_deprecated_alias(sub, forward, "--tf", tool);
  add_deprecated_alias(sub, input_grad, "--ti", tool);
  add_deprecated_alias(sub, weight_grad, "--tw", tool);
  add_deprecated_alias(sub, memory, "--mem", tool);
  sub.add_option("--latency", o.latency, "message latency (overrides the --costs file's)")
      ->check(CLI::NonNegativeNumber)
      ->each([&o](const std::string&) { o.latency_given = true; });
  sub.add_option("--bandwidth", o.bandwidth,
                 "link bandwidth, bytes per time unit (0 = infinite; overrides the --costs file's)")
      ->check(CLI::NonNegativeNumber)
      ->each([&o](const std::string&) { o.bandwidth_given = true; });
}

int run_show(const options& o) {
  if (o.list) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& b : pl::builtin_programs()) {
      auto prog = pl::parse_program(b.text, b.name);
      list.push_back({{"name", b.name}, {"doc", prog ? prog->doc : ""}});
      if (!o.json) std::printf("%-22s %s\n", b.name.c_str(), prog ? prog->doc.c_str() : "");
    }
    if (o.json) std::cout << list.dump(2) << "\n";
    return 0;
  }
  if (o.schedule.empty()) return bad_input("show: give a schedule (shipped name, .pipe or .csv) or --list");
  auto l = load_schedule(o);
  if (!l) return bad_input(l.error().message);
  pl::table t = o.lower ? pl::lower_comms(l->t) : l->t;
  if (!o.out_csv.empty() && !write_file(o.out_csv, pl::write_csv(t))) return fail(o.out_csv + ": cannot write");
  if (o.json) {
    auto j = table_json(t);
    j["name"] = l->name;
    std::cout << j.dump(2) << "\n";
  } else {
    std::printf("%s: %d ranks, %d stages, %d microbatches\n%s", l->name.c_str(), t.num_ranks(), t.stages,
                t.microbatches, pl::format_table(t).c_str());
  }
  return 0;
}

int run_validate(const options& o) {
  auto l = load_schedule(o);
  if (!l) return bad_input(l.error().message);
  auto v = pl::validate(l->t);
  if (o.json) {
    nlohmann::json j{{"schedule", l->name}, {"valid", !v}};
    if (v) j["violation"] = {{"rank", v->rank}, {"step", v->step}, {"message", v->message}};
    std::cout << j.dump(2) << "\n";
  } else if (v) {
    std::printf("%s: invalid: %s\n", l->name.c_str(), v->message.c_str());
  } else {
    std::printf("%s: valid (%d ranks, %d stages, %d microbatches, %s)\n", l->name.c_str(), l->t.num_ranks(),
                l->t.stages, l->t.microbatches,
                l->t.has_comms() ? "with communication" : "compute only; lowering adds deadlock-free communication");
  }
  return v ? 1 : 0;
}

int run_simulate(const options& o) {
  auto l = load_schedule(o);
  if (!l) return bad_input(l.error().message);
  auto c = load_costs(o, l->t.num_ranks());
  if (!c) return bad_input(c.error().message);
  auto stages = pl::stage_costs(*c, l->t.stages);
  if (!stages)
    return bad_input((o.costs_file.empty() ? std::string("costs") : o.costs_file) + ": " + stages.error().message);
  if (!o.layers_per_stage.empty()) {
    // A split as `search` prints it: per stage, how many layers, in order.
    const int n = static_cast<int>(c->units.size());
    if (!c->per_layer) return bad_input("--layers-per-stage: needs per-layer costs (\"layers\" in --costs)");
    if (static_cast<int>(o.layers_per_stage.size()) != l->t.stages)
      return bad_input("--layers-per-stage: gives " + std::to_string(o.layers_per_stage.size()) +
                       " stages, the schedule has " + std::to_string(l->t.stages));
    std::vector<int> cuts{0};
    for (int k : o.layers_per_stage) cuts.push_back(cuts.back() + k);
    if (cuts.back() != n)
      return bad_input("--layers-per-stage: sums to " + std::to_string(cuts.back()) + " layers, the costs have " +
                       std::to_string(n));
    stages = pl::stages_from_cuts(*c, cuts);
  }
  pl::sim_options so;
  so.record_events = !o.trace.empty() || !o.svg.empty();
  auto s = pl::simulate(l->t, *stages, {c->latency, c->bandwidth}, so);
  if (!s) return fail(l->name + ": " + s.error().message);
  if (!o.trace.empty() && !write_file(o.trace, pl::chrome_trace(*s))) return fail(o.trace + ": cannot write");
  if (!o.svg.empty() && !write_file(o.svg, pl::svg_gantt(*s, l->name))) return fail(o.svg + ": cannot write");
  if (o.json) {
    auto j = sim_json(*s);
    j["schedule"] = l->name;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf(
      "%s: makespan %.4g, bubble %.2f%% (global: idle / busy over all ranks), %.2f%% (inside each rank's span)\n",
      l->name.c_str(), s->makespan, 100 * s->bubble_ratio, 100 * s->span_bubble_ratio);
  std::printf("peak memory per rank:");
  for (double x : s->peak_memory) std::printf(" %.4g", x);
  std::printf("\n");
  if (!o.trace.empty()) std::printf("chrome trace: %s\n", o.trace.c_str());
  if (!o.svg.empty()) std::printf("gantt chart: %s\n", o.svg.c_str());
  return 0;
}

int run_search(const options& o) {
  auto c = load_costs(o, o.p);
  if (!c) return bad_input(c.error().message);
  pl::search_options so;
  so.p = o.p, so.m = o.m, so.mem_cap = o.cap, so.chunk_options = o.chunk_counts;
  so.time_limit_s = std::chrono::duration<double>(o.time_limit).count(), so.generations = o.generations,
  so.seed = o.seed;
  so.local_steps = 1000000;  // the budget or the time limit ends it
  so.max_evaluations = o.budget;
  const auto budget = static_cast<std::uint64_t>(o.time_limit.count() / 100);  // tenths of a second
  banyan::progress bar("pipeline search", budget);
  so.progress = [&](const pl::search_progress& pr) {
    char detail[160];
    std::snprintf(detail, sizeof detail, "%s %d/%d  best makespan %.4g  %d schedules tried", pr.phase.c_str(), pr.step,
                  pr.steps, pr.best_makespan, pr.evaluations);
    bar.update(std::min<std::uint64_t>(budget, static_cast<std::uint64_t>(pr.elapsed_s * 10)), detail);
  };
  auto r = pl::search(*c, so);
  if (!r) return fail(r.error().message);
  bar.finish(std::to_string(r->evaluations) + " schedules tried");
  if (auto v = pl::validate(r->best.t)) return fail("search produced an invalid table (a bug): " + v->message);
  auto layers_per_stage = [](const std::vector<int>& cuts) {
    std::vector<int> n;
    for (std::size_t j = 0; j + 1 < cuts.size(); ++j) n.push_back(cuts[j + 1] - cuts[j]);
    return n;
  };
  // A program carries no split: with per-layer costs the written one says it in a comment, and how
  // train_gpt runs it (its --layers-per-stage takes these counts).
  std::string split;
  for (int n : layers_per_stage(r->best.cuts)) split += (split.empty() ? "" : ",") + std::to_string(n);
  const std::string dsl =
      split.empty() ? r->dsl
                    : "# layers per stage: " + split + " (train_gpt --layers-per-stage " + split + ")\n" + r->dsl;
  if (!o.out_dsl.empty() && !write_file(o.out_dsl, dsl)) return fail(o.out_dsl + ": cannot write");
  if (!o.out_csv.empty() && !write_file(o.out_csv, pl::write_csv(r->best.t))) return fail(o.out_csv + ": cannot write");
  const double base = r->best_predefined ? r->best_predefined->sim.makespan : 0;
  const double bound = pl::makespan_lower_bound(*c, o.p, o.m);
  const std::string reproduce =
      "seed " + std::to_string(o.seed) + ", " + std::to_string(r->evaluations) + " evaluations" +
      (r->time_cut ? " (the time limit cut the search short: rerun with --budget " + std::to_string(r->evaluations) +
                         " and a generous --time-limit to reproduce it)"
       : o.budget > 0 ? " (--budget " + std::to_string(o.budget) + ")"
                      : "");
  if (o.json) {
    nlohmann::json j{{"best",
                      {{"origin", r->best.origin},
                       {"v", r->best.v},
                       {"sim", sim_json(r->best.sim)},
                       {"dsl", dsl},
                       {"table", table_json(r->best.t)}}},
                     {"evaluations", r->evaluations},
                     {"seed", o.seed},
                     {"budget", o.budget},
                     {"time_cut", r->time_cut},
                     {"lower_bound", bound},
                     {"gap_to_lower_bound", r->best.sim.makespan / bound - 1},
                     {"seconds", r->seconds},
                     {"notes", r->notes}};
    if (r->best_predefined)
      j["best_predefined"] = {{"origin", r->best_predefined->origin},
                              {"sim", sim_json(r->best_predefined->sim)},
                              {"speedup", base / r->best.sim.makespan}};
    if (!r->best.cuts.empty()) {
      j["best"]["cuts"] = r->best.cuts;
      j["best"]["layers_per_stage"] = layers_per_stage(r->best.cuts);
      if (r->best_predefined) j["best_predefined"]["layers_per_stage"] = layers_per_stage(r->best_predefined->cuts);
    }
    if (r->best_predefined_any_split)
      j["best_predefined_any_split"] = {{"origin", r->best_predefined_any_split->origin},
                                        {"sim", sim_json(r->best_predefined_any_split->sim)},
                                        {"layers_per_stage", layers_per_stage(r->best_predefined_any_split->cuts)},
                                        {"speedup", r->best_predefined_any_split->sim.makespan / r->best.sim.makespan}};
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  for (const auto& n : r->notes) std::printf("  %s\n", n.c_str());
  std::printf("best: %s, makespan %.4g, bubble %.2f%%, peak memory %.4g (cap %s)\n", r->best.origin.c_str(),
              r->best.sim.makespan, 100 * r->best.sim.bubble_ratio, r->best.sim.max_peak_memory(),
              o.cap > 0 ? std::to_string(o.cap).c_str() : "none");
  if (r->best_predefined)
    std::printf("vs best shipped program within the cap (%s, makespan %.4g): %.3fx\n",
                r->best_predefined->origin.c_str(), base, base / r->best.sim.makespan);
  if (!r->best.cuts.empty()) {
    std::printf("layers per stage:");
    for (int n : layers_per_stage(r->best.cuts)) std::printf(" %d", n);
    std::printf("\n");
    if (r->best_predefined_any_split)
      std::printf("vs best shipped program on any split tried (%s, makespan %.4g): %.3fx\n",
                  r->best_predefined_any_split->origin.c_str(), r->best_predefined_any_split->sim.makespan,
                  r->best_predefined_any_split->sim.makespan / r->best.sim.makespan);
  }
  std::printf("lower bound %.4g (docs/pipeline.md): gap %.2f%%\n", bound, 100 * (r->best.sim.makespan / bound - 1));
  std::printf("reproduce: %s\n", reproduce.c_str());
  if (o.out_dsl.empty()) std::printf("\n%s", dsl.c_str());
  else std::printf("program: %s\n", o.out_dsl.c_str());
  if (!o.out_csv.empty()) std::printf("table: %s\n", o.out_csv.c_str());
  const std::string& file = !o.out_csv.empty() ? o.out_csv : o.out_dsl;
  if (!split.empty() && !file.empty()) {
    std::printf("run it: train_gpt --pipeline %d --microbatches %d --schedule %s%s --layers-per-stage %s\n", o.p, o.m,
                file.c_str(),
                !o.out_csv.empty() || r->best.v == 1 ? "" : (" --interleave " + std::to_string(r->best.v)).c_str(),
                split.c_str());
  }
  return 0;
}

}  // namespace

action setup_pipeline(CLI::App& app) {
  auto o = std::make_shared<options>();
  app.require_subcommand(1);
  auto* show =
      app.add_subcommand("show", "Print the action table of a program or CSV (or --list the shipped programs)");
  show->add_option("schedule", o->schedule, "shipped program name, .pipe program or .csv table");
  show->add_flag("--list", o->list, "list the shipped programs");
  show->add_flag("--lower", o->lower, "include the lowered SEND/RECV actions");
  show->add_option("--out-csv", o->out_csv, "write the table as torch CSV");
  add_shape_options(*show, *o);
  auto* validate = app.add_subcommand("validate", "Check a schedule; prints the first violation with rank and step");
  validate->add_option("schedule", o->schedule, "shipped program name, .pipe program or .csv table")->required();
  add_shape_options(*validate, *o);
  auto* simulate = app.add_subcommand("simulate", "Predict makespan, bubble and peak memory; render trace and Gantt");
  simulate->add_option("schedule", o->schedule, "shipped program name, .pipe program or .csv table")->required();
  add_shape_options(*simulate, *o);
  add_cost_options(*simulate, *o);
  simulate
      ->add_option("--layers-per-stage", o->layers_per_stage,
                   "with per-layer costs: the split, e.g. 5,4,4,1 (default the balanced one)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  simulate->add_option("--trace", o->trace, "write a Chrome trace (chrome://tracing, Perfetto)");
  simulate->add_option("--svg", o->svg, "write an SVG Gantt chart");
  auto* search = app.add_subcommand("search", "Search for a faster schedule within a per-rank memory cap");
  search->add_option("-p,--ranks", o->p, "ranks")->check(CLI::Range(1, 1024));
  search->add_option("-m,--microbatches", o->m, "microbatches")->check(CLI::Range(1, 100000));
  add_cost_options(*search, *o);
  search->add_option("--cap", o->cap, "per-rank memory cap in the costs' memory unit (0 = none)")
      ->check(CLI::NonNegativeNumber);
  auto* chunk_counts =
      search->add_option("--chunk-counts", o->chunk_counts, "chunks per rank to consider (v), a comma list")
          ->delimiter(',')
          ->check(CLI::Range(1, 16));
  add_deprecated_alias(*search, chunk_counts, "--chunks", tool);
  add_duration_option(*search, "--time-limit", o->time_limit, "time the search may take",
                      std::chrono::milliseconds(100), std::chrono::hours(1));
  search->add_option("--generations", o->generations, "genetic generations at most")->check(CLI::Range(0, 100000));
  search->add_option("--seed", o->seed, "random seed");
  search
      ->add_option("--budget", o->budget,
                   "simulations at most (0 = until --time-limit); same seed and budget, same result")
      ->check(CLI::NonNegativeNumber);
  search->add_option("--out-dsl", o->out_dsl, "write the best schedule as a DSL program");
  search->add_option("--out-csv", o->out_csv, "write the best schedule as torch CSV");
  for (auto* sub : {show, validate, simulate, search}) sub->add_flag("--json", o->json, "print JSON on stdout");
  return [o, show, validate, simulate, search]() -> int {
    json_errors = o->json;
    if (show->parsed()) return run_show(*o);
    if (validate->parsed()) return run_validate(*o);
    if (simulate->parsed()) return run_simulate(*o);
    if (search->parsed()) return run_search(*o);
    return exit_bad_arguments;
  };
}

}  // namespace banyan::cli
