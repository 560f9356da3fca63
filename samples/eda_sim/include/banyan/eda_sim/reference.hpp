// The reference check: the same stimulus through Icarus Verilog, compared cycle by cycle.
//
// write a testbench (one DUT instance per lane, inputs from a $readmemb file, outputs printed just
// before each rising edge, timing as in vcd.hpp) → iverilog → vvp → parse → compare. The
// testbench works for the RTL and for a gate-level netlist (add yosys's simcells.v to `files`).
//
// Comparison rule (4-state "to the extent needed to match Icarus"): where Icarus prints 0 or 1 we
// must print the same; where it prints x or z the bit is a don't-care (RTL X is pessimistic per
// word where gates are exact per bit) and is counted, not compared.
#pragma once

#include <banyan/eda_sim/run.hpp>

#include <optional>
#include <string>
#include <vector>

namespace banyan::eda {

struct reference_options {
  std::vector<std::string> files;  // Verilog the DUT is built from
  std::string top;
  std::uint64_t cycles = 0;
  unsigned lanes = 1;              // DUT instances, one per stimulus lane
  std::string iverilog = "iverilog", vvp = "vvp";
  std::string work_dir;            // empty: a temp dir, removed afterwards
};

struct reference_run {
  trace samples;
  double compile_seconds = 0, run_seconds = 0;  // iverilog, vvp
};

result<reference_run> run_icarus(const design& d, const stimulus& stim, const reference_options& opts);

struct mismatch {
  std::uint64_t cycle;
  unsigned lane;
  std::string signal;    // output port
  std::string expected;  // Icarus's value of the whole port, MSB first
  std::string got;       // ours
};

struct comparison {
  std::uint64_t compared_bits = 0, dont_care_bits = 0, mismatched_bits = 0;
  std::optional<mismatch> first;
  bool passed() const { return mismatched_bits == 0; }
};

// Compares the lanes and cycles both traces hold.
comparison compare(const design& d, const trace& expected, const trace& got);

// Writes only the testbench (used by run_icarus and by the benchmarks); `stim_file` is its $readmemb
// input, `out_file` what it prints.
result<void> write_testbench(const design& d, const stimulus& stim, const reference_options& opts,
                       const std::string& tb_path, const std::string& stim_file, const std::string& out_file);

}  // namespace banyan::eda
