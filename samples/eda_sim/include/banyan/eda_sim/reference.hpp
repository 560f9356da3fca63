// The reference check: the same stimulus through Icarus Verilog, compared cycle by cycle.
//
// write a testbench (one DUT instance per lane, inputs from a $readmemb file, outputs printed just
// before each rising edge, timing as in vcd.hpp) → iverilog (compile() — run it before the
// simulation, so a design Icarus cannot build fails at once with Icarus's own messages) → vvp
// (run()) → parse → compare. The testbench works for the RTL and for a gate-level netlist (add
// yosys's simcells.v to `files`). Include dirs, defines and top parameters are the ones yosys got
// (source_options); includes are also found beside the including file (-grelative-include). vvp
// runs in `run_dir`, so a relative $readmemh path means the same as for yosys run there.
//
// Comparison rule (x_policy): where Icarus prints 0 or 1 we must print the same. RTL X is
// optimistic in if/case and pessimistic per word, gate X is exact per bit, so by default
// (ignore_rtl_x) a bit Icarus prints as x/z is a don't-care, counted but not compared.
#pragma once

#include <banyan/eda_sim/netlist.hpp>
#include <banyan/eda_sim/run.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace banyan::eda {

struct reference_options {
  std::vector<std::string> files;  // Verilog the DUT is built from
  std::string top;
  std::uint64_t cycles = 0;
  unsigned lanes = 1;  // DUT instances, one per stimulus lane
  std::string iverilog = "iverilog", vvp = "vvp";
  std::string work_dir;    // empty: a temp dir, removed afterwards
  source_options sources;  // -I, -D, top parameters: as given to yosys
  std::string run_dir;     // vvp's working folder; empty: the current one
};

struct reference_run {
  trace samples;
  double compile_seconds = 0, run_seconds = 0;  // iverilog, vvp
};

// The compiled testbench. A resource: owns its work folder (removed at destruction when it is a
// temp dir). run() may be called once per stimulus of the compiled length and lane count.
class icarus_reference {
 public:
  static result<std::unique_ptr<icarus_reference>> compile(const design& d, const reference_options& opts);
  result<reference_run> run(const stimulus& stim);
  ~icarus_reference();
  icarus_reference(const icarus_reference&) = delete;
  icarus_reference& operator=(const icarus_reference&) = delete;

 private:
  icarus_reference() = default;
  const design* d_ = nullptr;
  reference_options o_;
  std::string dir_;
  double compile_seconds_ = 0;
};

// compile() then run().
result<reference_run> run_icarus(const design& d, const stimulus& stim, const reference_options& opts);

// How X is compared (--x):
//  - ignore_rtl_x: a bit Icarus prints as x/z is not compared (the default);
//  - strict: x must match x too (Icarus x where we have a value is a mismatch, and vice versa);
//  - two_state: only bits both print as 0/1 are compared (our X against Icarus's value is counted
//    as x_vs_value_bits, not a mismatch), for designs whose un-reset state RTL resolves optimistically.
enum class x_policy { ignore_rtl_x, strict, two_state };
result<x_policy> parse_x_policy(const std::string& text);  // "ignore-rtl-x", "strict", "2-state"

struct compare_options {
  std::uint64_t from_cycle = 0;  // cycles before this one are not compared (--check-from)
  x_policy x = x_policy::ignore_rtl_x;
};

struct mismatch {
  std::uint64_t cycle;
  unsigned lane;
  std::string signal;       // output port
  std::string expected;     // Icarus's value of the whole port, MSB first
  std::string got;          // ours
  bool x_vs_value = false;  // every differing bit is X on one side and 0/1 on the other
  std::string hint;         // the likely cause and what to try, for X-vs-value mismatches
};

struct comparison {
  std::uint64_t compared_bits = 0, dont_care_bits = 0, mismatched_bits = 0;
  std::uint64_t x_vs_value_bits = 0;  // bits X on one side and 0/1 on the other (mismatched or tolerated)
  std::uint64_t skipped_cycles = 0;   // before from_cycle
  std::optional<mismatch> first;
  bool passed() const { return mismatched_bits == 0; }
};

// Compares the lanes and cycles both traces hold.
comparison compare(const design& d, const trace& expected, const trace& got, const compare_options& opts = {});
// Whether any output bit goes from 0 to 1 or back from `from_cycle` on: a check of outputs that
// never change compares constants (a design held in reset, say).
bool outputs_change(const trace& t, std::uint64_t from_cycle);

// Writes only the testbench (used by run_icarus and by the benchmarks); `stim_file` is its $readmemb
// input, `out_file` what it prints.
result<void> write_testbench(const design& d, const stimulus& stim, const reference_options& opts,
                             const std::string& tb_path, const std::string& stim_file, const std::string& out_file);

}  // namespace banyan::eda
