// Stimulus: the top inputs' values for every cycle and lane.
//
// Both kinds are random-access by cycle (fill() may be called for any cycle in any order), so the
// simulator and the Icarus testbench writer read the same values without storing them.
//  - random: seeded; lane i of every input bit is bit i of a counter-based hash of (seed, cycle,
//    bit), so a lane's vectors do not depend on how many lanes run. The reset input is asserted for
//    the first `reset_cycles` cycles and deasserted after.
//  - file: one line per cycle, the same values in every lane (format in docs/eda.md).
#pragma once

#include <banyan/eda_sim/design.hpp>
#include <banyan/eda_sim/logic.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

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
};

struct random_options {
  std::uint64_t seed = 1;
  std::string reset;            // input name; empty: rst, reset, rst_n, reset_n, rstn, resetn if present
  std::optional<bool> reset_active_low;  // default: true when the name ends in "n" after "rst"/"reset"
  std::uint64_t reset_cycles = 2;
};

result<std::unique_ptr<stimulus>> random_stimulus(const design& d, const random_options& opts);

// Reads a stimulus file. Errors name the file, line and column.
result<std::unique_ptr<stimulus>> file_stimulus(const design& d, const std::string& path);

// Total input bits (the span size fill() expects).
std::size_t input_bits(const design& d);

}  // namespace banyan::eda
