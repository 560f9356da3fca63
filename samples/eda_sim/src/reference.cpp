#include <banyan/eda_sim/reference.hpp>

#include "tool.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace banyan::eda {
namespace {

// A Verilog identifier for any port name: plain when it is one, escaped otherwise.
std::string ident(const std::string& s) {
  bool plain = !s.empty() && (std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_');
  for (char c : s) plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$');
  return plain ? s : "\\" + s + " ";
}

std::string wire(char kind, std::size_t port, unsigned lane) {
  return std::string(1, kind) + std::to_string(port) + "_l" + std::to_string(lane);
}

// {last, ..., first}: the concatenation whose LSB is the first port's LSB.
std::string concat(char kind, std::size_t ports, unsigned lane) {
  std::string s = "{";
  for (std::size_t p = ports; p-- > 0;) s += wire(kind, p, lane) + (p ? ", " : "");
  return s + "}";
}

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

namespace {

result<void> write_stimulus(const design& d, const stimulus& stim, const reference_options& o,
                            const std::string& stim_file) {
  const std::size_t in_bits = input_bits(d);
  const unsigned n_lanes = o.lanes ? o.lanes : 1;
  std::ofstream sm(stim_file);
  if (!sm) return error{errc::io, stim_file + ": cannot write"};
  std::vector<lanes> in(in_bits);
  std::string line(in_bits, '0');
  for (std::uint64_t c = 0; c < o.cycles; ++c) {
    stim.fill(c, in);
    for (unsigned l = 0; l < n_lanes; ++l) {
      for (std::size_t b = 0; b < in_bits; ++b) {
        const int v = in[b].get(l);
        line[in_bits - 1 - b] = v == 2 ? 'x' : static_cast<char>('0' + v);
      }
      if (in_bits) sm << line << '\n';
    }
  }
  if (!sm) return error{errc::io, stim_file + ": write failed"};
  return {};
}

result<void> write_tb(const design& d, const reference_options& o, const std::string& tb_path,
                      const std::string& stim_file, const std::string& out_file) {
  const std::size_t in_bits = input_bits(d);
  const unsigned n_lanes = o.lanes ? o.lanes : 1;
  if (d.outputs.empty()) return error{errc::reference_failed, "top module " + d.top + " has no outputs to compare"};
  std::ofstream tb(tb_path);
  if (!tb) return error{errc::io, tb_path + ": cannot write"};
  std::string params;
  for (const auto& [name, value] : o.sources.params)
    params += (params.empty() ? "" : ", ") + ("." + name + "(" + value + ")");
  tb << "`timescale 1ns/1ps\n// Written by eda_sim: same stimulus, outputs sampled just before each rising edge.\n"
     << "module banyan_tb;\n  reg clk = 1'b0;\n";
  if (in_bits) tb << "  reg [" << in_bits - 1 << ":0] stim [0:" << o.cycles * n_lanes - 1 << "];\n";
  for (unsigned l = 0; l < n_lanes; ++l) {
    for (std::size_t p = 0; p < d.inputs.size(); ++p)
      tb << "  reg [" << d.inputs[p].slots.size() - 1 << ":0] " << wire('i', p, l) << ";\n";
    for (std::size_t p = 0; p < d.outputs.size(); ++p)
      tb << "  wire [" << d.outputs[p].slots.size() - 1 << ":0] " << wire('o', p, l) << ";\n";
    tb << "  " << ident(d.top) << (params.empty() ? "" : " #(" + params + ")") << " dut_l" << l << " (";
    bool first = true;
    auto conn = [&](const std::string& port, const std::string& w) {
      tb << (first ? "" : ", ") << "." << ident(port) << "(" << w << ")";
      first = false;
    };
    if (!d.clock.empty()) conn(d.clock, "clk");
    for (std::size_t p = 0; p < d.inputs.size(); ++p) conn(d.inputs[p].name, wire('i', p, l));
    for (std::size_t p = 0; p < d.outputs.size(); ++p) conn(d.outputs[p].name, wire('o', p, l));
    tb << ");\n";
  }
  tb << "  integer c, f;\n  initial begin\n";
  if (in_bits) tb << "    $readmemb(\"" << stim_file << "\", stim);\n";
  tb << "    f = $fopen(\"" << out_file << "\", \"w\");\n    #1;\n"
     << "    for (c = 0; c < " << o.cycles << "; c = c + 1) begin\n";
  if (in_bits)
    for (unsigned l = 0; l < n_lanes; ++l)
      tb << "      " << concat('i', d.inputs.size(), l) << " = stim[c*" << n_lanes << " + " << l << "];\n";
  tb << "      #4;\n";
  for (unsigned l = 0; l < n_lanes; ++l)
    tb << "      $fwrite(f, \"%b\\n\", " << concat('o', d.outputs.size(), l) << ");\n";
  tb << "      clk = 1'b1;\n      #5;\n      clk = 1'b0;\n      #1;\n    end\n"
     << "    $fclose(f);\n    $finish;\n  end\nendmodule\n";
  if (!tb) return error{errc::io, tb_path + ": write failed"};
  return {};
}

// A tool's output for an error message: every line (the real cause is often not the last one, e.g.
// "Include file timescale.v not found" before "Unknown module type"), capped.
std::string all_lines(const std::string& out, std::size_t max_lines = 40) {
  std::istringstream in(out);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) lines.push_back(l);
  std::string s;
  const std::size_t from = lines.size() > max_lines ? lines.size() - max_lines : 0;
  if (from) s = "  (" + std::to_string(from) + " earlier lines left out)";
  for (std::size_t i = from; i < lines.size(); ++i) s += (s.empty() ? "  " : "\n  ") + lines[i];
  return s;
}

}  // namespace

result<void> write_testbench(const design& d, const stimulus& stim, const reference_options& o,
                             const std::string& tb_path, const std::string& stim_file, const std::string& out_file) {
  if (auto st = write_tb(d, o, tb_path, stim_file, out_file); !st) return st;
  return write_stimulus(d, stim, o, stim_file);
}

result<std::unique_ptr<icarus_reference>> icarus_reference::compile(const design& d, const reference_options& o) {
  namespace fs = std::filesystem;
  std::unique_ptr<icarus_reference> ref(new icarus_reference);
  ref->d_ = &d;
  ref->o_ = o;
  if (ref->o_.lanes == 0) ref->o_.lanes = 1;
  ref->dir_ = o.work_dir.empty() ? detail::make_temp_dir() : fs::absolute(o.work_dir).string();
  if (ref->dir_.empty()) return error{errc::io, "cannot create a temporary directory"};
  fs::create_directories(ref->dir_);
  const std::string& dir = ref->dir_;
  if (auto st = write_tb(d, ref->o_, dir + "/tb.v", dir + "/stim.mem", dir + "/out.txt"); !st) return st.error();
  std::vector<std::string> cmd = {o.iverilog,       "-g2012", "-grelative-include", "-o",
                                  dir + "/sim.vvp", "-s",     "banyan_tb"};
  for (const auto& inc : o.sources.include_dirs) cmd.push_back("-I" + fs::absolute(inc).string());
  for (const auto& def : o.sources.defines) cmd.push_back("-D" + def);
  cmd.push_back(dir + "/tb.v");
  for (const auto& f : o.files) cmd.push_back(fs::absolute(f).string());
  auto t0 = std::chrono::steady_clock::now();
  auto r = detail::run_tool(cmd, o.run_dir);
  ref->compile_seconds_ = since(t0);
  if (!r) return error{errc::reference_failed, r.error().message + " (is Icarus Verilog installed? tools/setup)"};
  if (!r->status.success())
    return error{errc::reference_failed, "Icarus Verilog (iverilog) cannot build the reference from the RTL (exit " +
                                             std::to_string(r->status.shell_code()) + "):\n" + all_lines(r->out)};
  return ref;
}

icarus_reference::~icarus_reference() {
  if (o_.work_dir.empty() && !dir_.empty()) std::filesystem::remove_all(dir_);
}

result<reference_run> icarus_reference::run(const stimulus& stim) {
  const design& d = *d_;
  const unsigned lanes = o_.lanes;
  if (auto st = write_stimulus(d, stim, o_, dir_ + "/stim.mem"); !st) return st.error();
  reference_run run;
  run.compile_seconds = compile_seconds_;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = detail::run_tool({o_.vvp, "-n", dir_ + "/sim.vvp"}, o_.run_dir);
  run.run_seconds = since(t0);
  if (!r) return error{errc::reference_failed, r.error().message + " (is Icarus Verilog installed? tools/setup)"};
  if (!r->status.success())
    return error{errc::reference_failed,
                 "vvp failed (exit " + std::to_string(r->status.shell_code()) + "):\n" + all_lines(r->out)};
  // A memory file Icarus cannot open leaves the memory X and every check after it meaningless.
  if (r->out.find("Unable to open") != std::string::npos)
    return error{errc::reference_failed,
                 "Icarus could not read a memory file; a relative $readmemh/$readmemb path is resolved from the folder "
                 "eda_sim runs in (" +
                     (o_.run_dir.empty() ? std::filesystem::current_path().string() : o_.run_dir) +
                     "), while yosys also looks beside the source file: run from the file's folder or pass its path "
                     "(e.g. -P MEMFILE='\"/path/prog.hex\"'):\n" +
                     detail::excerpt(r->out, "Unable to open")};
  std::ifstream in(dir_ + "/out.txt");
  std::size_t bits = 0;
  for (const auto& p : d.outputs) bits += p.slots.size();
  run.samples.bits = bits;
  run.samples.lanes = lanes;
  run.samples.samples.reserve(o_.cycles * lanes * bits);
  std::string line;
  std::uint64_t n = 0;
  while (std::getline(in, line)) {
    if (line.size() != bits)
      return error{errc::reference_failed, "vvp output line " + std::to_string(n + 1) + " has " +
                                               std::to_string(line.size()) + " bits, expected " + std::to_string(bits)};
    for (std::size_t b = 0; b < bits; ++b) {
      const char c = line[bits - 1 - b];
      run.samples.samples.push_back(c == '0' ? 0 : c == '1' ? 1 : 2);
    }
    ++n;
  }
  if (n != o_.cycles * lanes)
    return error{errc::reference_failed, "vvp printed " + std::to_string(n) + " samples, expected " +
                                             std::to_string(o_.cycles * lanes) + ":\n" + all_lines(r->out, 10)};
  return run;
}

result<reference_run> run_icarus(const design& d, const stimulus& stim, const reference_options& o) {
  auto ref = icarus_reference::compile(d, o);
  if (!ref) return ref.error();
  return (*ref)->run(stim);
}

result<x_policy> parse_x_policy(const std::string& text) {
  if (text == "ignore-rtl-x") return x_policy::ignore_rtl_x;
  if (text == "strict") return x_policy::strict;
  if (text == "2-state") return x_policy::two_state;
  return error{errc::bad_stimulus, "--x " + text + ": expected strict, ignore-rtl-x or 2-state"};
}

comparison compare(const design& d, const trace& exp, const trace& got, const compare_options& o) {
  comparison c;
  if (exp.bits != got.bits || exp.bits == 0) return c;
  const unsigned lanes = std::min(exp.lanes, got.lanes);
  const std::uint64_t cycles =
      std::min(exp.samples.size() / (exp.bits * exp.lanes), got.samples.size() / (got.bits * std::max(1u, got.lanes)));
  auto port_string = [&](const trace& t, std::uint64_t cyc, unsigned lane, std::size_t from, std::size_t width) {
    std::string s(width, '?');
    for (std::size_t i = 0; i < width; ++i) {
      const int v = t.at(cyc, lane, from + i);
      s[width - 1 - i] = v == 2 ? 'x' : static_cast<char>('0' + v);
    }
    return s;
  };
  c.skipped_cycles = std::min(o.from_cycle, cycles);
  for (std::uint64_t cyc = c.skipped_cycles; cyc < cycles; ++cyc)
    for (unsigned l = 0; l < lanes; ++l) {
      std::size_t from = 0;
      for (const auto& p : d.outputs) {
        bool port_bad = false, all_x_vs_value = true, ours_x = false;
        for (std::size_t i = 0; i < p.slots.size(); ++i) {
          const int e = exp.at(cyc, l, from + i), g = got.at(cyc, l, from + i);
          const bool xv = (e == 2) != (g == 2);
          if (xv) ++c.x_vs_value_bits;
          if (e == 2 && o.x != x_policy::strict) {
            ++c.dont_care_bits;
            continue;
          }
          if (g == 2 && e != 2 && o.x == x_policy::two_state) {
            ++c.dont_care_bits;
            continue;
          }
          ++c.compared_bits;
          if (e != g) {
            ++c.mismatched_bits;
            port_bad = true;
            all_x_vs_value = all_x_vs_value && xv;
            ours_x = ours_x || g == 2;
          }
        }
        if (port_bad && !c.first) {
          mismatch m{cyc,
                     l,
                     p.name,
                     port_string(exp, cyc, l, from, p.slots.size()),
                     port_string(got, cyc, l, from, p.slots.size()),
                     all_x_vs_value,
                     {}};
          if (all_x_vs_value && ours_x)
            m.hint =
                "X against a value: the gates see X where Icarus's RTL has a value. Likely un-reset or "
                "uninitialised state, which RTL if/case on X resolves optimistically (it takes the else "
                "branch) while gates keep X; name the reset (--reset NAME[:low]), give the registers an "
                "initial value, compare from later (--check-from CYCLE|reset) or use --x 2-state";
          else if (all_x_vs_value)
            m.hint = "value against X: Icarus prints x where the gates have a value (--x strict compares x)";
          c.first = std::move(m);
        }
        from += p.slots.size();
      }
    }
  return c;
}

bool outputs_change(const trace& t, std::uint64_t from_cycle) {
  const std::uint64_t cycles = t.bits && t.lanes ? t.samples.size() / (t.bits * t.lanes) : 0;
  for (unsigned l = 0; l < t.lanes; ++l)
    for (std::size_t b = 0; b < t.bits; ++b)
      for (std::uint64_t cyc = from_cycle + 1; cyc < cycles; ++cyc) {
        const int was = t.at(cyc - 1, l, b), is = t.at(cyc, l, b);
        if (was != is && was != 2 && is != 2) return true;  // X settling to a value is no change
      }
  return false;
}

}  // namespace banyan::eda
