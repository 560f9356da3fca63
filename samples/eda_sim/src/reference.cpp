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

result<void> write_testbench(const design& d, const stimulus& stim, const reference_options& o,
                       const std::string& tb_path, const std::string& stim_file, const std::string& out_file) {
  const std::size_t in_bits = input_bits(d);
  const unsigned n_lanes = o.lanes ? o.lanes : 1;
  if (d.outputs.empty()) return error{errc::reference_failed, "top module " + d.top + " has no outputs to compare"};
  {
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
  }
  std::ofstream tb(tb_path);
  if (!tb) return error{errc::io, tb_path + ": cannot write"};
  tb << "`timescale 1ns/1ps\n// Written by eda_sim: same stimulus, outputs sampled just before each rising edge.\n"
     << "module banyan_tb;\n  reg clk = 1'b0;\n";
  if (in_bits) tb << "  reg [" << in_bits - 1 << ":0] stim [0:" << o.cycles * n_lanes - 1 << "];\n";
  for (unsigned l = 0; l < n_lanes; ++l) {
    for (std::size_t p = 0; p < d.inputs.size(); ++p)
      tb << "  reg [" << d.inputs[p].slots.size() - 1 << ":0] " << wire('i', p, l) << ";\n";
    for (std::size_t p = 0; p < d.outputs.size(); ++p)
      tb << "  wire [" << d.outputs[p].slots.size() - 1 << ":0] " << wire('o', p, l) << ";\n";
    tb << "  " << ident(d.top) << " dut_l" << l << " (";
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
  for (unsigned l = 0; l < n_lanes; ++l) tb << "      $fwrite(f, \"%b\\n\", " << concat('o', d.outputs.size(), l) << ");\n";
  tb << "      clk = 1'b1;\n      #5;\n      clk = 1'b0;\n      #1;\n    end\n"
     << "    $fclose(f);\n    $finish;\n  end\nendmodule\n";
  if (!tb) return error{errc::io, tb_path + ": write failed"};
  return {};
}

result<reference_run> run_icarus(const design& d, const stimulus& stim, const reference_options& o) {
  namespace fs = std::filesystem;
  const std::string dir = o.work_dir.empty() ? detail::make_temp_dir() : fs::absolute(o.work_dir).string();
  if (dir.empty()) return error{errc::io, "cannot create a temporary directory"};
  fs::create_directories(dir);
  const unsigned lanes = o.lanes ? o.lanes : 1;
  auto cleanup = [&] {
    if (o.work_dir.empty()) fs::remove_all(dir);
  };
  auto st = write_testbench(d, stim, o, dir + "/tb.v", dir + "/stim.mem", dir + "/out.txt");
  if (!st) return cleanup(), st.error();
  std::vector<std::string> cmd = {o.iverilog, "-g2012", "-o", dir + "/sim.vvp", "-s", "banyan_tb", dir + "/tb.v"};
  for (const auto& f : o.files) cmd.push_back(fs::absolute(f).string());
  reference_run run;
  auto t0 = std::chrono::steady_clock::now();
  auto r = detail::run_tool(cmd, dir);
  run.compile_seconds = since(t0);
  if (!r) return cleanup(), error{errc::reference_failed, r.error().message + " (is Icarus Verilog installed? tools/setup)"};
  if (!r->status.success()) {
    cleanup();
    return error{errc::reference_failed, "iverilog failed (exit " + std::to_string(r->status.shell_code()) + "):\n" +
                                             detail::excerpt(r->out, "error")};
  }
  t0 = std::chrono::steady_clock::now();
  r = detail::run_tool({o.vvp, "-n", dir + "/sim.vvp"}, dir);
  run.run_seconds = since(t0);
  if (!r) return cleanup(), error{errc::reference_failed, r.error().message + " (is Icarus Verilog installed? tools/setup)"};
  if (!r->status.success()) {
    cleanup();
    return error{errc::reference_failed, "vvp failed (exit " + std::to_string(r->status.shell_code()) + "):\n" + detail::excerpt(r->out, "")};
  }
  std::ifstream in(dir + "/out.txt");
  std::size_t bits = 0;
  for (const auto& p : d.outputs) bits += p.slots.size();
  run.samples.bits = bits;
  run.samples.lanes = lanes;
  run.samples.samples.reserve(o.cycles * lanes * bits);
  std::string line;
  std::uint64_t n = 0;
  while (std::getline(in, line)) {
    if (line.size() != bits) {
      cleanup();
      return error{errc::reference_failed, "vvp output line " + std::to_string(n + 1) + " has " +
                                               std::to_string(line.size()) + " bits, expected " + std::to_string(bits)};
    }
    for (std::size_t b = 0; b < bits; ++b) {
      const char c = line[bits - 1 - b];
      run.samples.samples.push_back(c == '0' ? 0 : c == '1' ? 1 : 2);
    }
    ++n;
  }
  cleanup();
  if (n != o.cycles * lanes)
    return error{errc::reference_failed, "vvp printed " + std::to_string(n) + " samples, expected " +
                                             std::to_string(o.cycles * lanes)};
  return run;
}

comparison compare(const design& d, const trace& exp, const trace& got) {
  comparison c;
  if (exp.bits != got.bits || exp.bits == 0) return c;
  const unsigned lanes = std::min(exp.lanes, got.lanes);
  const std::uint64_t cycles = std::min(exp.samples.size() / (exp.bits * exp.lanes),
                                        got.samples.size() / (got.bits * std::max(1u, got.lanes)));
  auto port_string = [&](const trace& t, std::uint64_t cyc, unsigned lane, std::size_t from, std::size_t width) {
    std::string s(width, '?');
    for (std::size_t i = 0; i < width; ++i) {
      const int v = t.at(cyc, lane, from + i);
      s[width - 1 - i] = v == 2 ? 'x' : static_cast<char>('0' + v);
    }
    return s;
  };
  for (std::uint64_t cyc = 0; cyc < cycles; ++cyc)
    for (unsigned l = 0; l < lanes; ++l) {
      std::size_t from = 0;
      for (const auto& p : d.outputs) {
        for (std::size_t i = 0; i < p.slots.size(); ++i) {
          const int e = exp.at(cyc, l, from + i), g = got.at(cyc, l, from + i);
          if (e == 2) {
            ++c.dont_care_bits;
            continue;
          }
          ++c.compared_bits;
          if (e != g) {
            ++c.mismatched_bits;
            if (!c.first)
              c.first = mismatch{cyc, l, p.name, port_string(exp, cyc, l, from, p.slots.size()),
                                 port_string(got, cyc, l, from, p.slots.size())};
          }
        }
        from += p.slots.size();
      }
    }
  return c;
}

}  // namespace banyan::eda
