// Stimulus: the top inputs' values for every cycle and lane.
//
// Both kinds are random-access by cycle (fill() may be called for any cycle in any order), so the
// simulator and the Icarus testbench writer read the same values without storing them.
//  - random: seeded; lane i of every input bit is bit i of a counter-based hash of (seed, cycle,
//    bit), so a lane's vectors do not depend on how many lanes run. Reset inputs are asserted for
//    the first `reset_cycles` cycles and deasserted after; held inputs keep one value every cycle.
//  - file: one line per cycle, the same values in every lane (format in docs/eda.md).
#pragma once

#include <banyan/eda_sim/design.hpp>
#include <banyan/eda_sim/logic.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace banyan::eda {

class stimulus {
 public:
  virtual ~stimulus() = default;
  // Writes one `lanes` per input bit, design.inputs order, LSB first per port.
  virtual void fill(std::uint64_t cycle, std::span<lanes> bits) const = 0;
  // Cycles available (a file's line count); nullopt when unbounded.
  virtual std::optional<std::uint64_t> length() const { return std::nullopt; }
  // Human-readable origin for reports: "random seed 1, reset rst x2" or the file name.
  virtual std::string describe() const = 0;
  // What the user should know about choices made for them (an input taken for a reset by its name,
  // a reset-like input left random), one line each, for stderr.
  virtual std::vector<std::string> warnings() const { return {}; }
};

struct reset_spec {
  std::string name;
  std::optional<bool> active_low;  // default: from the name (rst_n, resetn, nrst, rst_b, ... are low)
};
// A --reset argument: NAME, NAME:low or NAME:high.
result<reset_spec> parse_reset(const std::string& arg);

struct hold_spec {
  std::string name;
  std::string value;  // as in a stimulus file: decimal, 0x.., 0b.. or x
};
// A --hold argument: NAME=VALUE.
result<hold_spec> parse_hold(const std::string& arg);

struct random_options {
  std::uint64_t seed = 1;
  // Resets: asserted for the first reset_cycles cycles, then deasserted; synchronous and asynchronous
  // resets alike (the flip-flops decide which they are). Empty: every 1-bit input whose name looks
  // like a reset (reset_like), with a warning unless it is one of rst, reset, rst_n, reset_n, rstn,
  // resetn.
  std::vector<reset_spec> resets;
  bool no_reset = false;  // --reset none: no input is treated as a reset
  std::uint64_t reset_cycles = 2;
  std::vector<hold_spec> holds;  // inputs held at one value every cycle (enables, modes)
};

// Whether an input name looks like a reset: a `_`-separated word rst or reset, optionally with a
// one-letter a/s/n prefix or n/b/l suffix (wb_rst_i, arst_i, rst_ni, nreset, resetb). Sets
// `active_low` to the polarity the name suggests.
bool reset_like(const std::string& name, bool& active_low);

result<std::unique_ptr<stimulus>> random_stimulus(const design& d, const random_options& opts);

// Reads a stimulus file. Errors name the file, line and column.
result<std::unique_ptr<stimulus>> file_stimulus(const design& d, const std::string& path);

// Reads the inputs a testbench applied from its VCD ($dumpvars): cycle c's values are the DUT
// inputs' values just before the clock's c-th rising edge (changes at the edge's own timestamp
// count as after it). The scope is the first one (or the one whose path ends in `scope`, e.g.
// "tb.dut") that declares every input and the clock under the top module's port names; a `[7:0]`
// range after a name is allowed. Errors name the file and, where it applies, the input or line.
result<std::unique_ptr<stimulus>> vcd_stimulus(const design& d, const std::string& path, const std::string& scope = "");

// Total input bits (the span size fill() expects).
std::size_t input_bits(const design& d);

}  // namespace banyan::eda
