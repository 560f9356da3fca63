#include <banyan/eda_sim/run.hpp>
#include <banyan/eda_sim/vcd.hpp>

#include <chrono>

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

}  // namespace banyan::eda
