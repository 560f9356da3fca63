// Runs a design for a number of cycles on one simulator and records what the check needs.
//
// Each cycle: inputs from the stimulus, settle, sample the outputs (this is "just before the rising
// edge"), optionally dump a waveform, clock edge. The trace keeps every sampled output of the first
// `trace_lanes` lanes; a signature (hash of all samples of all lanes) is always kept so runs can be
// compared without traces (e.g. across deployments).
#pragma once

#include <banyan/eda_sim/simulator.hpp>
#include <banyan/eda_sim/stimulus.hpp>

#include <cstdint>
#include <functional>
#include <vector>

namespace banyan::eda {

class vcd_writer;

struct sim_options {
  std::uint64_t cycles = 1000;
  unsigned lanes = 1;                                   // 1..64 independent stimulus lanes
  unsigned trace_lanes = 0;                             // lanes whose samples are kept (<= lanes)
  vcd_writer* vcd = nullptr;                            // lane 0 waveform, or none
  std::function<void(std::uint64_t done)> on_progress;  // called every few thousand cycles
};

struct trace {
  std::size_t bits = 0;  // output bits per sample
  unsigned lanes = 0;
  std::vector<std::uint8_t> samples;  // [cycle][lane][bit]: 0, 1, 2 = X
  std::uint8_t at(std::uint64_t cycle, unsigned lane, std::size_t bit) const {
    return samples[(cycle * lanes + lane) * bits + bit];
  }
};

struct sim_result {
  trace samples;
  std::uint64_t signature = 0xcbf29ce484222325ull;  // hash of every sample of every lane
  sim_stats stats;
  double seconds = 0;  // wall time of the cycle loop
};

sim_result simulate(simulator& sim, const stimulus& stim, const sim_options& opts);

// Settles the polarity of each reset whose polarity nobody named, by what it does: the reset is held
// asserted one way and then the other for a few cycles, each under two random streams of the other
// inputs (the other resets held deasserted). Asserted, a reset settles flip-flops: more of them end
// with the same known value under both streams. `opts.resets` empty (and no `no_reset`) means the
// inputs named like a reset (reset_like). Fills in every polarity (the name's guess where both ways
// settle as many) and returns a line for each reset the user should hear of, for stderr.
std::vector<std::string> settle_reset_polarities(const design& d, random_options& opts);

}  // namespace banyan::eda
