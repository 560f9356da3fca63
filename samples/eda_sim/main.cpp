// eda_sim: gate-level simulation of a Verilog design on its component tree, checked against Icarus.
//
//   eda_sim --top cpu designs/cpu/*.v --cycles 1000 --seed 1 --check --vcd out.vcd [--json]
//
// Exit status (docs/cli.md): 0 success, 1 the design or run failed or --check found a mismatch, 2 bad
// arguments, including a --netlist or --stimulus file that cannot be read or is malformed.
#include <banyan/eda_sim/design.hpp>
#include <banyan/eda_sim/netlist.hpp>
#include <banyan/eda_sim/reference.hpp>
#include <banyan/eda_sim/run.hpp>
#include <banyan/eda_sim/vcd.hpp>

#ifdef EDA_SIM_HAVE_SDK
#include <banyan/eda_sim/components.hpp>
#endif

#include <banyan/base/progress.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

namespace eda = banyan::eda;
using json = nlohmann::ordered_json;

namespace {

struct options {
  std::vector<std::string> files;
  std::string top, netlist_json, stimulus_file, vcd, work_dir, clock;
  std::vector<std::string> resets, holds, include_dirs, defines, params;
  std::string check_from = "0", x_policy = "ignore-rtl-x", cache_dir;
  bool no_cache = false, count_messages = false;
  std::string schedule = "flat", stimulus_scope, engine = "auto", cxx = "c++";
  std::uint64_t cycles = 0, seed = 1, reset_cycles = 2;
  unsigned lanes = 1, check_lanes = 1;
  bool check = false, json_out = false, tree = false, reset_low = false, reset_high = false, map_memories = false;
  // Component version (banyan SDK).
  bool components = false, report = false;
  std::string mode = "hier", profile, deployment, node, grain = "node", state_dir;
  unsigned threads = 0;
  std::uint64_t checkpoint_every = 0;
};

// The error a run ends with, on stderr; returns the exit code (1: the work failed, 2: bad arguments).
int fail(const std::string& what, int code = 1) {
  std::cerr << "eda_sim: " << what << "\n";
  return code;
}
int bad_arguments(const std::string& what) { return fail(what, 2); }

json tree_json(const eda::design& d) {
  json j;
  j["instances"] = json::array();
  for (const auto& in : d.instances) {
    json e = {{"path", in.path}, {"module", in.module}};
    if (in.leaf >= 0) e["leaf"] = d.leaves[in.leaf].path, e["cells"] = d.leaves[in.leaf].cells;
    j["instances"].push_back(e);
  }
  j["topics"] = json::array();
  for (const auto& g : d.groups) {
    json readers = json::array();
    for (int r : g.readers) readers.push_back(d.leaves[r].path);
    j["topics"].push_back({{"topic", g.topic},
                           {"scope", d.instances[g.scope].path},
                           {"nets", g.nets.size()},
                           {"publisher", d.leaves[g.driver].path},
                           {"subscribers", readers}});
  }
  return j;
}

int run(const options& o) {
  // 0. Arguments that need no design.
  eda::source_options sources{o.include_dirs, o.defines, {}};
  for (const auto& p : o.params) {
    auto kv = eda::parse_param(p);
    if (!kv) return bad_arguments(kv.error().message);
    sources.params.push_back(*kv);
  }
  auto xp = eda::parse_x_policy(o.x_policy);
  if (!xp) return bad_arguments(xp.error().message);
  eda::random_options rand_opts{o.seed, {}, false, o.reset_cycles, {}};
  for (const auto& r : o.resets) {
    if (r == "none") {
      rand_opts.no_reset = true;
      continue;
    }
    auto spec = eda::parse_reset(r);
    if (!spec) return bad_arguments(spec.error().message);
    if (!spec->active_low && o.reset_low) spec->active_low = true;
    if (!spec->active_low && o.reset_high) spec->active_low = false;
    rand_opts.resets.push_back(*spec);
  }
  if (rand_opts.no_reset && !rand_opts.resets.empty())
    return bad_arguments("--reset none cannot be combined with named resets");
  for (const auto& h : o.holds) {
    auto spec = eda::parse_hold(h);
    if (!spec) return bad_arguments(spec.error().message);
    rand_opts.holds.push_back(*spec);
  }
  std::uint64_t check_from = 0;
  const std::uint64_t reset_end = o.stimulus_file.empty() && !rand_opts.no_reset ? o.reset_cycles : 0;
  if (o.check_from == "reset") {
    check_from = reset_end;
  } else {
    char* end = nullptr;
    check_from = std::strtoull(o.check_from.c_str(), &end, 10);
    if (o.check_from.empty() || *end || o.check_from[0] == '-')
      return bad_arguments("--check-from " + o.check_from + ": expected a cycle number or 'reset'");
  }

  // Netlists and compiled designs are cached by hash in one folder.
  std::string cache = o.cache_dir;
  if (cache.empty()) {
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    const char* home = std::getenv("HOME");
    if (xdg && *xdg) cache = std::string(xdg) + "/banyan/eda_sim";
    else if (home && *home) cache = std::string(home) + "/.cache/banyan/eda_sim";
  }
  if (o.no_cache) cache.clear();

  // 1. Netlist: from Verilog through yosys, or a yosys JSON given directly.
  banyan::result<eda::netlist> n = banyan::error{eda::errc::io, ""};
  if (!o.netlist_json.empty()) {
    std::ifstream in(o.netlist_json);
    if (!in) return bad_arguments(o.netlist_json + ": cannot open");
    std::stringstream ss;
    ss << in.rdbuf();
    n = eda::read_yosys_json(ss.str(), o.netlist_json);
  } else {
    if (o.files.empty()) return bad_arguments("no Verilog files given (see --help)");
    n = eda::synthesize(
        {o.files, o.top, "yosys", o.work_dir.empty() ? "" : o.work_dir + "/yosys", sources, o.map_memories, cache, ""});
  }
  if (!n) return fail(n.error().message);
  auto d = eda::elaborate(*n, {o.clock});
  if (!d) return fail(d.error().message);
  if (!o.json_out)
    std::fprintf(stderr,
                 "eda_sim: %s%s: %zu instances, %zu gates, %zu flip-flops, %zu memories (%zu bits), %zu leaves, "
                 "%zu topics%s%s\n",
                 d->top.c_str(), n->from_cache ? " (netlist from the cache)" : "", d->instances.size(), d->gates,
                 d->flops, d->memories, d->memory_bits, d->leaves.size(), d->groups.size(),
                 d->clock.empty() ? "" : ", clock ", d->clock.c_str());
  if (o.tree) {
    std::cout << tree_json(*d).dump(2) << "\n";
    return 0;
  }

  // 2. Stimulus.
  banyan::result<std::unique_ptr<eda::stimulus>> stim = banyan::error{eda::errc::io, ""};
  std::vector<std::string> reset_notes;
  std::uint64_t cycles = o.cycles;
  if (!o.stimulus_file.empty()) {
    const bool vcd_in = o.stimulus_file.size() > 4 && o.stimulus_file.ends_with(".vcd");
    stim = vcd_in ? eda::vcd_stimulus(*d, o.stimulus_file, o.stimulus_scope) : eda::file_stimulus(*d, o.stimulus_file);
    if (!stim) return bad_arguments(stim.error().message);
    const auto len = *(*stim)->length();
    if (cycles == 0) cycles = len;
    if (cycles > len)
      return bad_arguments(o.stimulus_file + ": " + std::to_string(cycles) + " cycles requested but the file has " +
                           std::to_string(len));
  } else {
    // Each reset's polarity, where nobody named it, from what the reset does (a line for each
    // that is still a guess or that its name gets wrong).
    reset_notes = eda::settle_reset_polarities(*d, rand_opts);
    stim = eda::random_stimulus(*d, rand_opts);
    if (!stim) return bad_arguments(stim.error().message);
    if (cycles == 0) cycles = 1000;
  }
  json warnings = json::array();
  for (const auto& w : reset_notes) {
    warnings.push_back(w);
    if (!o.json_out) std::fprintf(stderr, "eda_sim: warning: %s\n", w.c_str());
  }
  for (const auto& w : (*stim)->warnings()) {
    warnings.push_back(w);
    if (!o.json_out) std::fprintf(stderr, "eda_sim: warning: %s\n", w.c_str());
  }

  // 2b. The reference is built before the simulation, so that RTL Icarus cannot compile fails at once.
  std::unique_ptr<eda::icarus_reference> reference;
  const unsigned check_lanes = std::min(o.check_lanes, o.lanes);
  if (o.check) {
    if (o.files.empty()) return bad_arguments("--check needs the Verilog files (the RTL Icarus runs)");
    eda::reference_options ref{
        o.files, d->top, cycles, check_lanes, "iverilog", "vvp", o.work_dir.empty() ? "" : o.work_dir + "/icarus",
        sources, ""};
    auto built = eda::icarus_reference::compile(*d, ref);
    if (!built) return fail(built.error().message);
    reference = std::move(*built);
  }

  // 3. Simulate.
  std::shared_ptr<const eda::stimulus> stim_shared;
  int rc_components = 0;
  bool skip_check = false;  // a node of a deployment that does not host the io leaf has nothing to check
  std::unique_ptr<eda::vcd_writer> vcd;
  std::string report_table;  // --report: printed on stdout at the end
  if (!o.vcd.empty()) {
    auto w = eda::vcd_writer::open(o.vcd, *d);
    if (!w) return fail(w.error().message);
    vcd = std::move(*w);
  }
  eda::simulator sim(*d, o.schedule == "leaves" ? eda::schedule::leaves : eda::schedule::flat, o.lanes);
  sim.count_messages(o.count_messages);
  eda::compile_options co{.cache_dir = cache, .compiler = o.cxx};
  const auto parsed_engine = eda::parse_engine(o.engine);
  if (!parsed_engine) return bad_arguments(parsed_engine.error().message + " (--engine or EDA_SIM_ENGINE)");
  const auto kind = *parsed_engine;
  auto chosen = eda::use_engine(sim, kind, cycles, co);
  if (!chosen) return fail(chosen.error().message);
  if (!chosen->note.empty()) std::fprintf(stderr, "eda_sim: %s\n", chosen->note.c_str());
  if (!o.json_out && chosen->code)
    std::fprintf(stderr, "eda_sim: compiled engine: %s\n", eda::describe(*chosen->code).c_str());
  banyan::progress bar("simulate", cycles, {.unit = "cycles", .rate_decimals = 0});
  eda::sim_options ro;
  ro.cycles = cycles;
  ro.lanes = o.lanes;
  ro.trace_lanes = o.check ? std::min(o.check_lanes, o.lanes) : 0;
  ro.vcd = vcd.get();
  ro.on_progress = [&](std::uint64_t done) { bar.update(done); };
  auto r = eda::simulate(sim, **stim, ro);
  bar.clear();  // the summary below says more

  std::uint64_t messages = 0, bytes = 0;
  for (std::size_t g = 0; g < d->groups.size(); ++g) {
    messages += r.stats.publishes[g];
    bytes += r.stats.publishes[g] * d->groups[g].nets.size() * sizeof(eda::lanes);
  }
  json summary = {{"design", d->top},
                  {"instances", d->instances.size()},
                  {"gates", d->gates},
                  {"netlist_from_cache", n->from_cache},
                  {"flip_flops", d->flops},
                  {"memories", d->memories},
                  {"memory_bits", d->memory_bits},
                  {"leaves", d->leaves.size()},
                  {"topics", d->groups.size()},
                  {"stimulus", (*stim)->describe()},
                  {"warnings", warnings},
                  {"cycles", cycles},
                  {"lanes", o.lanes},
                  {"seconds", r.seconds},
                  {"cycles_per_second", r.seconds > 0 ? cycles / r.seconds : 0.0},
                  {"lane_cycles_per_second", r.seconds > 0 ? cycles * o.lanes / r.seconds : 0.0},
                  {"schedule", o.schedule},
                  {"engine", chosen->code ? "compiled" : "interp"},
                  {"two_state_cycles", r.stats.two_state_passes},
                  {"rounds_per_cycle", cycles ? double(r.stats.rounds) / cycles : 0.0},
                  {"max_rounds", r.stats.max_rounds},
                  {"leaf_evaluations_per_cycle", cycles ? double(r.stats.leaf_evaluations) / cycles : 0.0},
                  {"gate_evaluations_per_cycle", cycles ? double(r.stats.gate_evaluations) / cycles : 0.0},
                  {"signature", r.signature}};
  const bool counted = o.count_messages || o.schedule == "leaves";
  if (counted) summary["messages"] = messages, summary["bytes"] = bytes;  // else null: not counted
  else summary["messages"] = nullptr, summary["bytes"] = nullptr;
  if (!o.json_out)
    std::fprintf(stderr, "eda_sim: %llu cycles x %u lanes in %.3f s (%.0f cycles/s), %.2f rounds/cycle (max %d)%s\n",
                 static_cast<unsigned long long>(cycles), o.lanes, r.seconds,
                 summary["cycles_per_second"].get<double>(), summary["rounds_per_cycle"].get<double>(),
                 r.stats.max_rounds, counted ? (", " + std::to_string(messages) + " boundary messages").c_str() : "");

#ifdef EDA_SIM_HAVE_SDK
  // 3b. The same run as components on banyan's SDK: outputs must be identical to the engine's.
  if (o.components) {
    auto cr = std::make_shared<eda::component_run>();
    cr->d = std::make_shared<const eda::design>(*d);
    cr->stim = std::shared_ptr<const eda::stimulus>(std::move(*stim));
    stim = banyan::error{eda::errc::io, "moved"};
    cr->cycles = cycles;
    cr->lanes = o.lanes;
    cr->trace_lanes = ro.trace_lanes;
    cr->how = o.grain == "leaf" ? eda::grain::leaf : eda::grain::node;
    cr->engine = kind;
    cr->compile = co;
    if (o.checkpoint_every > 0 && cr->how != eda::grain::leaf)
      return bad_arguments("--checkpoint-every needs --grain leaf (a node's merged leaves cannot be resumed apart)");
    cr->checkpoint_every = o.checkpoint_every;
    if (!o.profile.empty() && o.deployment.empty() && cr->how == eda::grain::node)
      std::fprintf(stderr,
                   "eda_sim: warning: --profile with --grain node in one process sends no group messages, "
                   "so the profile has no edge traffic; use --grain leaf to profile for the partitioner\n");
    auto app = eda::make_app(cr);
    banyan::run_options bo;
    bo.mode = *banyan::parse_routing_mode(o.mode);
    bo.threads = o.threads;
    bo.deployment = o.deployment;
    bo.node = o.node;
    bo.state_dir = o.state_dir;
    auto br = banyan::run(*app, bo);
    if (!br.error.empty()) return fail(br.error);
    if (br.exit_code != 0) return fail("the component run ended with exit code " + std::to_string(br.exit_code));
    if (o.report) report_table = br.traffic.traffic_table();
    if (!o.profile.empty()) {
      auto w = br.traffic.write(o.profile);
      if (!w) return fail(w.error().what());
    }
    std::uint64_t edge_msgs = 0, edge_bytes = 0;
    for (const auto& e : br.traffic.edges) edge_msgs += e.messages, edge_bytes += e.bytes;
    json jc = {{"mode", o.mode},
               {"grain", o.grain},
               {"hosted_io", cr->ended_here},
               {"seconds", cr->seconds},
               {"cycles_per_second", cr->seconds > 0 ? cycles / cr->seconds : 0.0},
               {"edge_messages", edge_msgs},
               {"edge_bytes", edge_bytes}};
    if (cr->checkpoint_every > 0) jc["resent_after_failover"] = cr->resent.load();
    if (cr->ended_here) {
      jc["signature"] = cr->signature;
      jc["identical_to_engine"] = cr->signature == r.signature && cr->samples.samples == r.samples.samples;
      std::uint64_t cross_msgs = 0, cross_bytes = 0;
      for (const auto& l : br.traffic.links) cross_msgs += l.messages, cross_bytes += l.bytes;
      if (!br.traffic.links.empty()) jc["cross_node_messages"] = cross_msgs, jc["cross_node_bytes"] = cross_bytes;
      if (!o.json_out)
        std::fprintf(stderr,
                     "eda_sim: components (%s): %llu cycles in %.3f s (%.0f cycles/s), outputs %s the engine's, "
                     "%llu edge messages\n",
                     o.mode.c_str(), static_cast<unsigned long long>(cycles), cr->seconds,
                     jc["cycles_per_second"].get<double>(),
                     jc["identical_to_engine"].get<bool>() ? "identical to" : "DIFFER from",
                     static_cast<unsigned long long>(edge_msgs));
      if (!jc["identical_to_engine"].get<bool>()) summary["components"] = jc, rc_components = 1;
    }
    summary["components"] = jc;
    stim_shared = cr->stim;
    skip_check = !cr->ended_here;
  }
#endif

  // 4. Reference check.
  int rc = rc_components;
  if (reference && !skip_check) {
    const eda::stimulus& st = stim_shared ? *stim_shared : **stim;
    auto icarus = reference->run(st);
    if (!icarus) return fail(icarus.error().message);
    auto c = eda::compare(*d, icarus->samples, r.samples, {check_from, *xp});
    json jc = {{"passed", c.passed()},
               {"lanes", check_lanes},
               {"from_cycle", check_from},
               {"x_policy", o.x_policy},
               {"compared_bits", c.compared_bits},
               {"dont_care_bits", c.dont_care_bits},
               {"mismatched_bits", c.mismatched_bits},
               {"x_vs_value_bits", c.x_vs_value_bits},

               {"icarus_compile_seconds", icarus->compile_seconds},
               {"icarus_seconds", icarus->run_seconds}};
    if (c.first) {
      jc["first_mismatch"] = {{"cycle", c.first->cycle},   {"lane", c.first->lane},
                              {"signal", c.first->signal}, {"expected", c.first->expected},
                              {"got", c.first->got},       {"x_vs_value", c.first->x_vs_value}};
      if (!c.first->hint.empty()) jc["first_mismatch"]["hint"] = c.first->hint;
    }
    // A pass over outputs that never change after the reset compares constants: say so, whatever the
    // output format.
    // (a reset's end shows at the outputs one cycle later: the cycle after its last edge)
    const std::uint64_t settled = std::max(check_from, reset_end ? reset_end + 1 : 0);
    const bool changed = eda::outputs_change(r.samples, settled);
    jc["outputs_change"] = changed;
    summary["check"] = jc;
    if (c.passed() && !changed && cycles > settled + 1)
      std::fprintf(stderr,
                   "eda_sim: warning: no output changed in cycles %llu..%llu, so the check compared constants: is "
                   "the design held in reset (%s)? Name each reset and its polarity with --reset NAME:low or "
                   "NAME:high, or --reset none\n",
                   static_cast<unsigned long long>(settled), static_cast<unsigned long long>(cycles - 1),
                   st.describe().c_str());
    if (!c.passed() && o.json_out)  // the JSON on stdout says it too; stderr is what a user watches
      std::fprintf(stderr, "eda_sim: check FAILED: first mismatch at cycle %llu, lane %u, signal %s\n",
                   static_cast<unsigned long long>(c.first->cycle), c.first->lane, c.first->signal.c_str());
    if (!o.json_out) {
      if (c.passed())
        std::fprintf(stderr,
                     "eda_sim: check passed: cycles %llu..%llu x %u lanes match Icarus (%llu bits compared, %llu "
                     "not compared under --x %s)\n",
                     static_cast<unsigned long long>(check_from),
                     static_cast<unsigned long long>(cycles ? cycles - 1 : 0), check_lanes,
                     static_cast<unsigned long long>(c.compared_bits),
                     static_cast<unsigned long long>(c.dont_care_bits), o.x_policy.c_str());
      else
        std::fprintf(stderr,
                     "eda_sim: check FAILED: first mismatch at cycle %llu, lane %u, signal %s: expected %s, got %s "
                     "(%llu bits differ)%s%s\n",
                     static_cast<unsigned long long>(c.first->cycle), c.first->lane, c.first->signal.c_str(),
                     c.first->expected.c_str(), c.first->got.c_str(),
                     static_cast<unsigned long long>(c.mismatched_bits), c.first->hint.empty() ? "" : "\n  ",
                     c.first->hint.c_str());
    }
    if (!c.passed()) rc = 1;
  }
  if (o.json_out) std::cout << summary.dump(2) << "\n";
  std::cout << report_table;
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "eda_sim: gate-level simulation of a Verilog design on banyan's component tree,\n"
      "checked cycle by cycle against Icarus Verilog. See docs/eda.md."};
  options o;
  // The default engine can come from the environment, so that a test suite or a launch runs every
  // eda_sim of it with one engine (EDA_SIM_ENGINE=compiled); --engine wins.
  if (const char* e = std::getenv("EDA_SIM_ENGINE"); e && *e) o.engine = e;
  app.add_option("files", o.files, "Verilog source files");
  app.add_option("--top", o.top, "Top module")->required();
  app.add_option("--netlist", o.netlist_json, "Read this yosys JSON instead of running yosys on the files");
  app.add_option("--cycles", o.cycles, "Cycles to simulate (default 1000, or the stimulus file's length)");
  app.add_option("--seed", o.seed, "Seed of the random stimulus")->capture_default_str();
  app.add_option("--lanes", o.lanes, "Independent stimulus lanes simulated at once, bit-parallel")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--stimulus", o.stimulus_file,
                 "Stimulus file instead of random vectors (format: docs/eda.md); a .vcd "
                 "file is a testbench's dump: the inputs just before each rising edge");
  app.add_option("--stimulus-scope", o.stimulus_scope,
                 "The DUT's scope in a .vcd stimulus, e.g. tb.dut (default: the "
                 "first scope with every input and the clock)");
  app.add_option("--clock", o.clock, "Clock input (default: the input that clocks the flip-flops)");
  // Each of these takes exactly one value (repeat the option for more): placed before the file list,
  // it must not take the files as its values.
  app.add_option("-I,--include-dir", o.include_dirs,
                 "`include search folder (after the including file's own), "
                 "for yosys and Icarus; repeatable")
      ->allow_extra_args(false);
  app.add_option("-D,--define", o.defines, "Macro NAME or NAME=VALUE, for yosys and Icarus; repeatable")
      ->allow_extra_args(false);
  app.add_option("-P,--param", o.params,
                 "Top-module parameter NAME=VALUE (a Verilog constant: 8, 8'h3f, "
                 "'\"prog.hex\"'), for yosys and Icarus; repeatable")
      ->allow_extra_args(false);
  app.add_option("--cache-dir", o.cache_dir,
                 "Netlists by source hash (default: $XDG_CACHE_HOME/banyan/eda_sim or "
                 "~/.cache/banyan/eda_sim)");
  app.add_flag("--no-cache", o.no_cache, "Always run yosys; do not read or write the netlist cache");
  app.add_option("--schedule", o.schedule,
                 "Engine: flat (one global levelised program, one pass per cycle) or "
                 "leaves (leaf-by-leaf exchange, as the components)")
      ->check(CLI::IsMember({"flat", "leaves"}))
      ->capture_default_str();
  app.add_option("--engine", o.engine,
                 "Who evaluates the cells: compiled (C++ emitted per design, compiled with --cxx "
                 "and cached by hash beside the netlists), interp (the levelised interpreter, the "
                 "reference) or auto (compiled when cached or when the run is long enough to repay "
                 "compiling; interp when no compiler works); default: $EDA_SIM_ENGINE or auto")
      ->check(CLI::IsMember({"auto", "compiled", "interp"}))
      ->capture_default_str();
  app.add_option("--cxx", o.cxx, "C++ compiler for --engine compiled/auto")->capture_default_str();
  app.add_flag("--map-memories", o.map_memories,
               "Map memories to flip-flops and logic (yosys memory_map) instead of "
               "simulating each as one memory; for small memories only");
  app.add_option("--reset", o.resets,
                 "Reset input NAME, NAME:low or NAME:high, held asserted for --reset-cycles; "
                 "repeatable (default: inputs named like a reset; 'none' for no reset)")
      ->allow_extra_args(false);
  app.add_option("--reset-cycles", o.reset_cycles, "Cycles of reset at the start")->capture_default_str();
  app.add_flag("--reset-active-low", o.reset_low, "Named resets without :low/:high are active low");
  app.add_flag("--reset-active-high", o.reset_high, "Named resets without :low/:high are active high");
  app.add_option("--hold", o.holds,
                 "Hold input NAME at VALUE (decimal, 0x.., 0b.., x) every cycle while the other "
                 "inputs are random; repeatable")
      ->allow_extra_args(false);
  app.add_flag("--check", o.check, "Run the same stimulus through Icarus on the RTL and compare every cycle");
  app.add_option("--check-from", o.check_from, "Compare from this cycle on, or 'reset': from the end of reset")
      ->capture_default_str();
  app.add_option("--x", o.x_policy,
                 "X in --check: ignore-rtl-x (Icarus x not compared), strict (x must match), "
                 "2-state (x on either side not compared)")
      ->check(CLI::IsMember({"ignore-rtl-x", "strict", "2-state"}))
      ->capture_default_str();
  app.add_option("--check-lanes", o.check_lanes, "Lanes to check against Icarus (one DUT instance each)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--vcd", o.vcd, "Write lane 0 as a VCD waveform");
  app.add_option("--work-dir", o.work_dir, "Keep yosys and Icarus files here (default: temp dirs, removed)");
  app.add_flag("--tree", o.tree, "Print the component tree and topics as JSON and exit");
  app.add_flag("--json", o.json_out, "Print the summary as JSON on stdout");
  app.add_flag("--count-messages", o.count_messages,
               "Count the boundary messages of the flat schedule (the "
               "groups that change per cycle; costs time)");
#ifdef EDA_SIM_HAVE_SDK
  app.add_flag("--components", o.components,
               "Also run the design as banyan components (after the engine) and "
               "require identical outputs");
  app.add_option("--mode", o.mode, "Routing for --components: hier, flat-p2p or flat-node")
      ->check(CLI::IsMember({"hier", "flat-p2p", "flat-node"}))
      ->capture_default_str();
  app.add_option("--grain", o.grain,
                 "Who evaluates with --components: node (the leaves of a process as one "
                 "program, messages only between nodes) or leaf (every leaf, every group a "
                 "message: the per-edge traffic a --profile for the partitioner needs)")
      ->check(CLI::IsMember({"node", "leaf"}))
      ->capture_default_str();
  app.add_option("--threads", o.threads, "CAF scheduler threads for --components (default: cores)");
  app.add_option("--profile", o.profile, "Write the component run's traffic profile (JSON) here");
  app.add_flag("--report", o.report, "Print the component run's per-edge traffic table on stdout at the end");
  app.add_option("--deployment", o.deployment, "Run the components as one node of this deployment (YAML)");
  app.add_option("--node", o.node, "This node's name in the deployment")->needs("--deployment");
  app.add_option("--checkpoint-every", o.checkpoint_every,
                 "With --components --grain leaf: every leaf keeps its state every this many cycles, so that a "
                 "failover resumes it from there (with --state-dir: durable)");
  app.add_option("--state-dir", o.state_dir,
                 "Under banyan launch: keep the checkpoints durable in this folder (the same for every node), "
                 "so that a lost node's leaves resume on a survivor (docs/runtime.md, Failover)");
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return run(o);
}
