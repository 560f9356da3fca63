// eda_bench: simulated cycles per second of eda_sim's engine on one node, against the same design
// and the same stimulus in the same run on
//   - Icarus on the RTL,
//   - Icarus on the gate-level netlist (yosys write_verilog -noexpr + simcells.v),
//   - Verilator on that same netlist (a C++ harness clocks the model; only the loop is timed).
// Every simulator's outputs are compared with ours (Verilator is 2-state: from the end of reset on).
//
//   eda_bench --top soc
//   samples/eda_sim/designs/{soc/soc,cpu/cpu,multiplier/multiplier,alu_regfile/alu_regfile,fifo/fifo}.v
//             --cycles 2000 [--results out.json] [--json] [--no-verilator] [-I DIR] [-D NAME] [-P NAME=VALUE]
//             [--hold NAME=VALUE] [--map-memories]
//
// Prints a table on stdout (the results as JSON with --json); --results also writes them to a file.
//
// Icarus's time is vvp's wall time for the whole testbench (it includes reading the stimulus and
// writing samples, as our timed loop includes generating stimulus and keeping samples).
#include <banyan/eda_sim/compiled.hpp>
#include <banyan/eda_sim/design.hpp>
#include <banyan/eda_sim/netlist.hpp>
#include <banyan/eda_sim/reference.hpp>
#include <banyan/eda_sim/run.hpp>
#include <banyan/eda_sim/simulator.hpp>

#include "banyan/base/log.hpp"
#include "banyan/base/process.hpp"
#include "banyan/cli.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace eda = banyan::eda;
namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

constexpr const char* tool = "eda_bench";

// Runs a build or simulation step in `dir`; its merged output, and whether it succeeded.
bool run_step(const std::vector<std::string>& argv, const std::string& dir, std::string& output) {
  auto r = banyan::run_process(
      argv, {.working_dir = dir, .out = banyan::output_mode::capture, .err = banyan::output_mode::merge});
  if (!r) {
    output += r.error().message + "\n";
    return false;
  }
  output += r->out;
  return r->status.success();
}

// A C++ harness for Verilator: reads the testbench's stimulus file, runs the cycles, times the loop,
// writes the samples in the testbench's format.
std::string harness(const eda::design& d, std::uint64_t cycles) {
  std::ostringstream h;
  h << "#include \"V" << d.top << ".h\"\n#include <chrono>\n#include <cstdint>\n#include <cstdio>\n"
    << "#include <fstream>\n#include <string>\n#include <vector>\n"
    << "int main() {\n  V" << d.top << " m;\n  std::ifstream in(\"stim.mem\");\n"
    << "  std::vector<std::string> stim; for (std::string l; std::getline(in, l);) stim.push_back(l);\n"
    << "  std::vector<std::string> out(" << cycles << ");\n"
    << "  auto t0 = std::chrono::steady_clock::now();\n"
    << "  for (std::uint64_t c = 0; c < " << cycles << "; ++c) {\n"
    << "    const std::string& s = stim[c]; std::size_t pos = s.size();\n";
  for (const auto& p : d.inputs) {
    const auto w = p.slots.size();
    h << "    { std::uint64_t v = 0; for (std::size_t i = 0; i < " << w
      << "; ++i) v |= std::uint64_t(s[pos - 1 - i] == '1') << i;"
      << " pos -= " << w << "; m." << p.name << " = v; }\n";
  }
  if (!d.clock.empty()) h << "    m." << d.clock << " = 0;\n";
  h << "    m.eval();\n    std::string& o = out[c];\n";
  for (auto it = d.outputs.rbegin(); it != d.outputs.rend(); ++it) {
    const auto w = it->slots.size();
    h << "    { std::uint64_t v = m." << it->name << "; for (std::size_t i = " << w
      << "; i-- > 0;) o += char('0' + ((v >> i) & 1)); }\n";
  }
  if (!d.clock.empty()) h << "    m." << d.clock << " = 1;\n    m.eval();\n";
  h << "  }\n  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();\n"
    << "  std::ofstream f(\"out.txt\"); for (auto& o : out) f << o << '\\n';\n"
    << "  std::printf(\"seconds %.9f\\n\", s);\n  return 0;\n}\n";
  return h.str();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"eda_bench: eda_sim's engine vs Icarus (RTL and gate level) and Verilator, same design and stimulus"};
  std::vector<std::string> files;
  std::string top = "soc", results_path, work = "eda_bench_work";
  std::uint64_t cycles = 2000, seed = 1;
  bool no_verilator = false, json_out = false, map_memories = false;
  std::vector<std::string> include_dirs, defines, params, holds;
  app.add_option("files", files, "Verilog files (required)");
  app.add_option("--top", top, "Top module")->capture_default_str();
  app.add_option("--cycles", cycles, "Cycles for every simulator")->capture_default_str();
  app.add_option("--seed", seed, "Stimulus seed")->capture_default_str();
  app.add_option("--results", results_path, "Also write the results as JSON to this file");
  // --json is a flag (docs/cli.md); `--json FILE.json`, its old spelling, still works as --results.
  std::string json_file;
  app.add_option("--json", json_file, "Print the results as JSON on stdout instead of the table")->expected(0, 1);
  app.add_option("--work-dir", work, "Scratch directory")->capture_default_str();
  app.add_flag("--no-verilator", no_verilator, "Skip Verilator (its C++ build takes minutes on 2 cores)");
  app.add_option("-I,--include-dir", include_dirs, "`include folder (as eda_sim)");
  app.add_option("-D,--define", defines, "Macro NAME[=VALUE] (as eda_sim)");
  app.add_option("-P,--param", params, "Top parameter NAME=VALUE (as eda_sim)");
  app.add_option("--hold", holds, "Hold input NAME at VALUE every cycle (as eda_sim)");
  app.add_flag("--map-memories", map_memories, "Map memories to flip-flops (as eda_sim)");
  if (auto code = banyan::cli::parse(app, argc, argv)) return *code;
  json_out = app.count("--json") > 0;
  if (json_file.size() > 5 && json_file.ends_with(".json")) {
    banyan::log::warning(tool, "--json FILE is deprecated; use --results FILE");
    results_path = json_file;
    json_out = false;
  } else if (!json_file.empty()) {
    files.insert(files.begin(), json_file);  // `--json a.v b.v`: the flag, then the files
  }
  if (files.empty())
    return banyan::cli::fail(tool, "no Verilog files given (see --help)", banyan::cli::exit_bad_arguments);

  fs::create_directories(work);
  work = fs::absolute(work).string();
  auto fail = [](const std::string& m) { return banyan::cli::fail(tool, m); };
  auto step = [](const std::string& what) { banyan::log::info(tool, what); };
  eda::source_options sources{include_dirs, defines, {}};
  for (const auto& p : params) {
    auto kv = eda::parse_param(p);
    if (!kv) return banyan::cli::fail(tool, kv.error().message, banyan::cli::exit_bad_arguments);
    sources.params.push_back(*kv);
  }
  eda::random_options rand_opts;
  rand_opts.seed = seed;
  for (const auto& h : holds) {
    auto spec = eda::parse_hold(h);
    if (!spec) return banyan::cli::fail(tool, spec.error().message, banyan::cli::exit_bad_arguments);
    rand_opts.holds.push_back(*spec);
  }
  eda::yosys_options yo{files, top};
  yo.sources = sources;
  yo.map_memories = map_memories;
  step("1/6 yosys + elaborate " + top);
  auto n = eda::synthesize(yo);
  if (!n) return fail(n.error().message);
  auto d = eda::elaborate(*n);
  if (!d) return fail(d.error().message);
  auto stim = eda::random_stimulus(*d, rand_opts);
  if (!stim) return fail(stim.error().message);
  json out = {{"design", top},
              {"gates", d->gates},
              {"flip_flops", d->flops},
              {"memory_bits", d->memory_bits},
              {"leaves", d->leaves.size()},
              {"cycles", cycles}};

  step("2/6 eda_sim engine (interpreter: 1 lane and 64 lanes; compiled: 1 lane); the leaf exchange, 1 lane");
  eda::sim_options ro;
  ro.cycles = cycles;
  ro.lanes = 1;
  ro.trace_lanes = 1;
  eda::simulator s1(*d, eda::schedule::flat, 1);  // narrow values (one byte per plane)
  auto ours1 = eda::simulate(s1, **stim, ro);
  ro.lanes = 64;
  eda::simulator s64(*d);
  auto ours64 = eda::simulate(s64, **stim, ro);
  // The compiled engine (compiled.hpp), same stimulus, compile time apart; a second simulator of the
  // same design loads the object from the cache. One lane, interpreter and compiled alternating,
  // medians of 3 (this machine's load moves between steps).
  const std::string cache = work + "/native-cache";
  eda::simulator sc(*d, eda::schedule::flat, 1);
  auto code = sc.compile({.cache_dir = cache});
  if (!code) return fail(code.error().message);
  ro.lanes = 1;
  auto compiled1 = eda::simulate(sc, **stim, ro);
  std::vector<double> interp_s{ours1.seconds}, compiled_s{compiled1.seconds};
  for (int rep = 1; rep < 3; ++rep) {
    eda::simulator si(*d, eda::schedule::flat, 1), sn(*d, eda::schedule::flat, 1);
    if (auto c = sn.compile({.cache_dir = cache}); !c) return fail(c.error().message);
    interp_s.push_back(eda::simulate(si, **stim, ro).seconds);
    compiled_s.push_back(eda::simulate(sn, **stim, ro).seconds);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  ours1.seconds = median(interp_s);
  const auto load_start = std::chrono::steady_clock::now();
  eda::simulator sc_load(*d, eda::schedule::flat, 1);
  auto loaded = sc_load.compile({.cache_dir = cache});
  const double load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
  out["compiled_cycles_per_s"] = cycles / median(compiled_s);
  out["compiled_vs_interpreter"] = median(interp_s) / median(compiled_s);
  out["compile_seconds"] = (*code)->compile_seconds;
  out["compile_source_bytes"] = (*code)->source_bytes;
  out["compile_cache_hit"] = loaded && (*loaded)->from_cache;
  out["compile_cache_load_seconds"] = load_seconds;
  out["compiled_agrees"] = compiled1.samples.samples == ours1.samples.samples && compiled1.signature == ours1.signature;
  ro.lanes = 64;
  const double ours_cps = cycles / ours1.seconds, ours64_cps = cycles / ours64.seconds;
  out["ours_1_lane_cycles_per_s"] = ours_cps;
  out["ours_64_lanes_cycles_per_s"] = ours64_cps;
  out["ours_64_lanes_lane_cycles_per_s"] = 64 * ours64_cps;
  out["lanes_agree"] = ours1.samples.samples == ours64.samples.samples;
  out["ours_passes_per_cycle"] = double(ours1.stats.rounds) / cycles;
  // The leaf-by-leaf exchange (the schedule the component version mirrors), same stimulus.
  ro.lanes = 1;
  eda::simulator sl(*d, eda::schedule::leaves);
  auto leaves1 = eda::simulate(sl, **stim, ro);
  out["ours_leaves_schedule_cycles_per_s"] = cycles / leaves1.seconds;
  out["ours_leaves_schedule_passes_per_cycle"] = double(leaves1.stats.rounds) / cycles;
  out["leaves_schedule_agrees"] = leaves1.samples.samples == ours1.samples.samples;

  auto icarus = [&](const std::string& name, const std::vector<std::string>& f) -> std::optional<double> {
    eda::reference_options ref{f, top, cycles, 1, "iverilog", "vvp", work + "/" + name};
    if (name == "icarus_rtl") ref.sources = sources;  // the gate-level netlist has them applied already
    auto r = eda::run_icarus(*d, **stim, ref);
    if (!r) {
      banyan::log::error(tool, name + ": " + r.error().message);
      return std::nullopt;
    }
    auto c = eda::compare(*d, r->samples, ours1.samples);
    out[name + "_matches_ours"] = c.passed();
    return cycles / r->run_seconds;
  };
  step("3/6 Icarus on the RTL");
  auto rtl = icarus("icarus_rtl", files);
  step("4/6 Icarus on the gate-level netlist");
  const std::string gl = work + "/gate_level.v";
  if (auto st = eda::write_gate_verilog(yo, gl); !st) return fail(st.error().message);
  std::string simcells = "/usr/share/yosys/simcells.v";
  auto gate = icarus("icarus_gate", {gl, simcells});
  if (rtl) out["icarus_rtl_cycles_per_s"] = *rtl, out["ratio_vs_icarus_rtl"] = ours_cps / *rtl;
  if (gate) out["icarus_gate_cycles_per_s"] = *gate, out["ratio_vs_icarus_gate"] = ours_cps / *gate;

  if (!no_verilator) {
    step("5/6 Verilator build (minutes)");
    const std::string vdir = work + "/verilator";
    fs::create_directories(vdir);
    std::ofstream(vdir + "/harness.cpp") << harness(*d, cycles);
    eda::reference_options ref{files, top, cycles, 1};
    ref.sources = sources;
    auto st = eda::write_testbench(*d, **stim, ref, vdir + "/tb_unused.v", vdir + "/stim.mem", vdir + "/unused.txt");
    if (!st) return fail(st.error().message);
    std::string log;
    const bool built = run_step(
        {"verilator", "--cc", "--exe", "--build", "-O3", "-Wno-fatal", "-Wno-lint", "-Wno-style", "--top-module", top,
         "-Mdir", vdir + "/obj", gl, simcells, vdir + "/harness.cpp", "-j", "2", "-CFLAGS", "-O2"},
        vdir, log);
    step("6/6 Verilator run");
    std::string run_log;
    if (!built || !run_step({vdir + "/obj/V" + top}, vdir, run_log)) {
      // Another program's output, shown as it is (a log line would escape its newlines).
      std::cerr << "eda_bench: verilator failed:\n" << log.substr(log.size() > 2000 ? log.size() - 2000 : 0) << run_log;
    } else {
      double secs = 0;
      std::sscanf(run_log.c_str(), "seconds %lf", &secs);
      const double vcps = cycles / secs;
      out["verilator_cycles_per_s"] = vcps;
      out["ratio_vs_verilator"] = ours_cps / vcps;
      out["compiled_ratio_vs_verilator"] = out["compiled_cycles_per_s"].get<double>() / vcps;
      out["ratio_64_lanes_vs_verilator"] = 64 * ours64_cps / vcps;
      // Compare from the end of reset (Verilator has no X).
      std::ifstream vin(vdir + "/out.txt");
      std::uint64_t c = 0, bad = 0;
      for (std::string line; std::getline(vin, line); ++c) {
        if (c < 2) continue;
        for (std::size_t b = 0; b < line.size() && b < ours1.samples.bits; ++b) {
          const int v = line[line.size() - 1 - b] - '0', o = ours1.samples.at(c, 0, b);
          if (o != 2 && v != o) ++bad;
        }
      }
      out["verilator_mismatched_bits_after_reset"] = bad;
    }
  }
  if (!results_path.empty()) std::ofstream(results_path) << out.dump(2) << "\n";
  if (json_out) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::printf("%-34s %12s %10s\n", "simulator", "cycles/s", "ours/it");
  auto row = [&](const char* name, const char* key, double ratio_base) {
    if (!out.contains(key)) return;
    const double v = out[key].get<double>();
    std::printf("%-34s %12.0f %9.2fx\n", name, v, ratio_base / v);
  };
  row("eda_sim engine, 1 lane", "ours_1_lane_cycles_per_s", ours_cps);
  row("eda_sim compiled engine, 1 lane", "compiled_cycles_per_s", ours_cps);
  row("eda_sim engine, leaf exchange, 1 lane", "ours_leaves_schedule_cycles_per_s", ours_cps);
  row("eda_sim engine, 64 lanes (lane-cycles)", "ours_64_lanes_lane_cycles_per_s", ours_cps);
  row("Icarus, RTL", "icarus_rtl_cycles_per_s", ours_cps);
  row("Icarus, gate level + simcells.v", "icarus_gate_cycles_per_s", ours_cps);
  row("Verilator -O3, gate level", "verilator_cycles_per_s", ours_cps);
  return 0;
}
