#include <banyan/eda_sim/run.hpp>
#include <banyan/eda_sim/vcd.hpp>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

namespace banyan::eda {

sim_result simulate(simulator& sim, const stimulus& stim, const sim_options& opts) {
  const design& d = sim.spec();
  sim_result r;
  const unsigned lanes_used = opts.lanes == 0 ? 1 : (opts.lanes > 64 ? 64 : opts.lanes);
  const std::uint64_t lane_mask = lanes_used == 64 ? ~0ull : (1ull << lanes_used) - 1;
  std::vector<lanes> in(input_bits(d)), out;
  r.samples.lanes = opts.trace_lanes > lanes_used ? lanes_used : opts.trace_lanes;
  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t c = 0; c < opts.cycles; ++c) {
    stim.fill(c, in);
    for (auto& v : in) {  // unused lanes stay 0 so they cost nothing and never differ
      v.hi &= lane_mask;
      v.lo |= ~lane_mask;
    }
    sim.set_inputs(in);
    sim.settle();
    sim.outputs(out);
    if (c == 0) r.samples.bits = out.size();
    if (r.samples.lanes) {
      const std::size_t base = r.samples.samples.size();
      r.samples.samples.resize(base + r.samples.lanes * out.size());
      for (unsigned l = 0; l < r.samples.lanes; ++l)
        for (std::size_t b = 0; b < out.size(); ++b)
          r.samples.samples[base + l * out.size() + b] = static_cast<std::uint8_t>(out[b].get(l));
    }
    // Signature over all lanes' samples: equal runs (same lanes) give equal signatures.
    for (const auto& v : out) {
      r.signature = (r.signature ^ (v.hi & lane_mask)) * 0x100000001b3ull;
      r.signature = (r.signature ^ (v.unknown() & lane_mask)) * 0x100000001b3ull;
    }
    if (opts.vcd) opts.vcd->sample(c, sim);
    sim.clock_edge();
    if (opts.on_progress && (c & 4095) == 4095) opts.on_progress(c + 1);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (opts.vcd) opts.vcd->finish(opts.cycles);
  r.stats = sim.stats();
  return r;
}

namespace {

// The flip-flops that a reset held asserted (every reset in `opts`, for all `cycles`) settles: those
// with the same known value at the end under two random streams of the other inputs.
std::size_t settled_flops(const design& d, random_options opts, std::uint64_t cycles) {
  opts.reset_cycles = cycles;
  std::vector<std::vector<int>> states;  // per run: each flip-flop's value, 0, 1 or 2 (X)
  const std::uint64_t first = opts.seed;
  for (const std::uint64_t seed : {first, first + std::uint64_t{0x9e3779b97f4a7c15ULL}}) {
    opts.seed = seed;
    auto stim = random_stimulus(d, opts);
    if (!stim) return 0;
    simulator sim(d, schedule::flat, 1);
    std::vector<lanes> in(input_bits(d));
    for (std::uint64_t c = 0; c < cycles; ++c) {
      (*stim)->fill(c, in);
      sim.set_inputs(in);
      sim.settle();
      sim.clock_edge();
    }
    sim.settle();
    auto& values = states.emplace_back();
    for (std::size_t l = 0; l < d.leaves.size(); ++l)
      for (const auto& ff : d.leaves[l].flops) values.push_back(sim.value(static_cast<int>(l), ff.state).get(0));
  }
  std::size_t settled = 0;
  for (std::size_t i = 0; i < states[0].size(); ++i) settled += states[0][i] == states[1][i] && states[0][i] != 2;
  return settled;
}

}  // namespace

std::vector<std::string> settle_reset_polarities(const design& d, random_options& opts) {
  std::vector<std::string> lines;
  if (opts.no_reset) return lines;
  const bool by_name = opts.resets.empty();  // taken for resets by their names, not named by the user
  if (by_name) {
    for (const auto& in : d.inputs) {
      bool low = false;
      if (in.slots.size() == 1 && reset_like(in.name, low)) opts.resets.push_back({in.name, std::nullopt});
    }
  }
  std::vector<bool> open(opts.resets.size()), guess(opts.resets.size());
  for (std::size_t r = 0; r < opts.resets.size(); ++r) {
    bool low = false;
    reset_like(opts.resets[r].name, low);
    open[r] = !opts.resets[r].active_low.has_value();
    guess[r] = low;
    if (open[r]) opts.resets[r].active_low = low;
  }
  static const std::vector<std::string> plain = {"rst", "reset", "rst_n", "reset_n", "rstn", "resetn"};
  constexpr std::uint64_t probe_cycles = 8;
  for (std::size_t r = 0; r < opts.resets.size(); ++r) {
    auto& spec = opts.resets[r];
    const std::string& name = spec.name;
    const std::string named = guess[r] ? "low" : "high";
    std::optional<bool> found;
    if (open[r]) {
      // Held asserted one way, then the other (the other resets held deasserted): asserted, it
      // settles more flip-flops.
      std::size_t settled[2];
      for (const bool low : {false, true}) {
        random_options trial = opts;
        trial.resets = {{name, low}};
        for (std::size_t o = 0; o < opts.resets.size(); ++o)
          if (o != r) trial.holds.push_back({opts.resets[o].name, *opts.resets[o].active_low ? "1" : "0"});
        settled[low] = settled_flops(d, trial, probe_cycles);
      }
      if (settled[0] != settled[1]) found = settled[1] > settled[0];
      if (found) spec.active_low = *found;
    }
    const std::string is = *spec.active_low ? "low" : "high";
    if (open[r] && !found) {
      lines.push_back("reset " + name + ": taken as active-" + is + " from its name, a guess: held either way it " +
                      "settles as many flip-flops; name it with --reset " + name + ":low or " + name + ":high");
    } else if (found && *found != guess[r]) {
      lines.push_back("reset " + name + ": active-" + is + ", not active-" + named + " as its name suggests: held " +
                      is + ", it settles the outputs (--reset " + name + ":" + named + " to say otherwise)");
    } else if (by_name && std::find(plain.begin(), plain.end(), name) == plain.end()) {
      lines.push_back("input " + name + " looks like a reset: held asserted (active-" + is + ") for " +
                      std::to_string(opts.reset_cycles) +
                      " cycles; name resets with --reset NAME[:low|:high], or --reset none");
    }
  }
  return lines;
}

}  // namespace banyan::eda
