// Monte Carlo of workflow instances under a schedule (periodic_plan.hpp): deadline outcomes with
// Wilson intervals and the expected cost, planned and on demand.
#include "periodic_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace banyan::partitioner::periodic {

std::pair<double, double> wilson(std::uint64_t met, std::uint64_t n, double z) {
  if (n == 0) return {0, 1};
  const double N = static_cast<double>(n), p = static_cast<double>(met) / N, z2 = z * z;
  const double centre = (p + z2 / (2 * N)) / (1 + z2 / N);
  const double half = z * std::sqrt(p * (1 - p) / N + z2 / (4 * N * N)) / (1 + z2 / N);
  return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

double planned_cost(const workload& w, const schedule& s) {
  const std::size_t T = w.slots(), k = w.nodes.size();
  std::vector<std::uint8_t> used(k * T, 0);
  for (std::size_t i = 0; i < s.awake.size(); ++i) {
    const auto n = static_cast<std::size_t>(s.node[i]);
    for (std::size_t t = 0; t < T; ++t) used[n * T + t] |= s.awake[i][t];
  }
  double cost = 0;
  for (std::size_t n = 0; n < k; ++n) {
    cost += w.nodes[n].cost_per_hour * (w.slot / 3600.0) *
            static_cast<double>(std::count(used.begin() + static_cast<std::ptrdiff_t>(n * T),
                                           used.begin() + static_cast<std::ptrdiff_t>((n + 1) * T), 1));
  }
  return cost;
}

namespace {

constexpr std::int64_t always = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t asleep = std::numeric_limits<std::int64_t>::max();

// Per subtree, the slot at which the awake run holding each slot began (may be negative: the run
// began in the previous horizon), `asleep`, or `always` when the subtree never sleeps.
std::vector<std::int64_t> run_starts(const std::vector<std::uint8_t>& awake) {
  const auto T = static_cast<std::int64_t>(awake.size());
  std::vector<std::int64_t> start(awake.size(), asleep);
  if (std::all_of(awake.begin(), awake.end(), [](std::uint8_t a) { return a != 0; })) {
    std::fill(start.begin(), start.end(), always);
    return start;
  }
  // Find a sleeping slot and walk one full cycle from it.
  std::int64_t origin = 0;
  while (awake[static_cast<std::size_t>(origin)]) ++origin;
  std::int64_t current = asleep;
  for (std::int64_t i = 1; i <= T; ++i) {
    const std::int64_t t = origin + i;  // unwrapped
    const auto slot = static_cast<std::size_t>(t % T);
    if (!awake[slot]) {
      current = asleep;
      continue;
    }
    if (current == asleep) current = t;
    start[slot] = current - (t - static_cast<std::int64_t>(slot));  // relative to this slot's cycle
  }
  return start;
}

// A histogram's draws without re-adding its counts each time: cumulative fractions of the non-empty
// buckets, the same draw as histogram::sample for the same two uniforms.
struct sampler {
  std::vector<double> cum, lo, hi;
  explicit sampler(const histogram& h) {
    double total = 0;
    for (double c : h.counts) total += c;
    double seen = 0;
    for (std::size_t i = 0; i < h.counts.size(); ++i) {
      if (h.counts[i] <= 0) continue;
      seen += h.counts[i];
      cum.push_back(seen / total);
      lo.push_back(h.bounds[i]);
      hi.push_back(h.bounds[i + 1]);
    }
  }
  double operator()(double u_bucket, double u_within) const {
    std::size_t i = 0;
    while (i + 1 < cum.size() && u_bucket >= cum[i]) ++i;
    return lo[i] + u_within * (hi[i] - lo[i]);
  }
};

}  // namespace

evaluation simulate(const workload& w, const schedule& s, const simulate_options& o) {
  const detail::model m = detail::build_model(w);
  const std::size_t T = m.T, k = w.nodes.size(), S = w.subtrees.size();
  std::vector<std::vector<std::int64_t>> starts(S);
  for (std::size_t i = 0; i < S; ++i) starts[i] = run_starts(s.awake[i]);
  std::vector<sampler> wake_of, response_of;
  for (const auto& sub : w.subtrees) {
    wake_of.emplace_back(sub.wake);
    response_of.emplace_back(sub.response);
  }
  evaluation e;
  e.seed = o.seed;
  e.planned_cost = planned_cost(w, s);
  // Planned use per node and slot; on-demand use accumulates log(1 - p) across workflows.
  std::vector<std::uint8_t> planned(k * T, 0);
  for (std::size_t i = 0; i < S; ++i) {
    const auto n = static_cast<std::size_t>(s.node[i]);
    for (std::size_t t = 0; t < T; ++t) planned[n * T + t] |= s.awake[i][t];
  }
  std::vector<double> log_idle(k * T, 0);
  std::vector<std::uint32_t> hits(k * T, 0), stamp(k * T, 0);
  std::vector<std::size_t> touched;
  std::vector<double> issue, begin, finish, wake, od_ready, od_until;
  std::vector<int> waiting;
  std::uint64_t all_met = 0, all_samples = 0;
  for (std::size_t f = 0; f < w.workflows.size(); ++f) {
    const workflow_spec& wf = w.workflows[f];
    const auto& fm = m.flows[f];
    detail::rng r{o.seed * 0x9e3779b97f4a7c15ULL + f * 0x632be59bd9b4e019ULL + 1};
    const std::size_t instances = wf.instances(w.horizon);
    const std::uint64_t samples = std::max<std::uint64_t>(o.samples, 1);
    std::uint64_t met = 0;
    std::uint32_t sample_id = 0;
    const std::size_t j_count = fm.subtrees.size();
    wake.resize(j_count);
    od_ready.resize(j_count);
    od_until.resize(j_count);
    for (std::uint64_t x = 0; x < samples; ++x) {
      ++sample_id;
      const std::size_t inst = x % instances;
      const double release = wf.phase + static_cast<double>(inst) * wf.period + r.uniform() * wf.jitter;
      for (std::size_t j = 0; j < j_count; ++j) {
        const double u1 = r.uniform();
        wake[j] = wake_of[fm.subtrees[j]](u1, r.uniform());
        od_until[j] = -std::numeric_limits<double>::infinity();
        od_ready[j] = 0;
      }
      // Whether the schedule keeps `sub` awake at absolute time `t` (its node's slot is then billed).
      auto planned_at = [&](std::size_t sub, double t) {
        const double in = t - std::floor(t / w.horizon) * w.horizon;
        return s.awake[sub][std::min(static_cast<std::size_t>(in / w.slot), T - 1)] != 0;
      };
      // On-demand awake spans go to the node-slot hit counts, each (node, slot) once per sample.
      auto bill = [&](std::size_t sub, double from, double to) {
        const auto n = static_cast<std::size_t>(s.node[sub]);
        auto first = static_cast<std::int64_t>(std::floor(from / w.slot));
        auto last = std::max(first, static_cast<std::int64_t>(std::ceil(to / w.slot)) - 1);
        last = std::min(last, first + static_cast<std::int64_t>(T) - 1);
        for (std::int64_t t = first; t <= last; ++t) {
          const auto slot = static_cast<std::size_t>(
              ((t % static_cast<std::int64_t>(T)) + static_cast<std::int64_t>(T)) % static_cast<std::int64_t>(T));
          const std::size_t at = n * T + slot;
          if (planned[at] || stamp[at] == sample_id) continue;
          stamp[at] = sample_id;
          if (hits[at]++ == 0) touched.push_back(at);
        }
      };
      const double last = detail::run_instance(
          wf, fm.successors,
          [&](std::size_t q, double at_rel) {
            const std::size_t j = fm.local[q], sub = fm.subtrees[j];
            const double at = release + at_rel;  // absolute, may run past the horizon
            const double cycle = std::floor(at / w.horizon);
            const double in = at - cycle * w.horizon;
            const auto slot = std::min(static_cast<std::size_t>(in / w.slot), T - 1);
            const std::int64_t st = starts[sub][slot];
            if (st == always) return at_rel;
            if (st != asleep) {
              const double woke = cycle * w.horizon + static_cast<double>(st) * w.slot;
              return std::max(at, woke + wake[j]) - release;
            }
            if (od_until[j] > 0) return std::max(at, od_ready[j]) - release;  // woken on demand before
            od_ready[j] = at + wake[j];
            od_until[j] = std::numeric_limits<double>::infinity();
            return od_ready[j] - release;
          },
          [&](std::size_t q) {
            const double u1 = r.uniform();
            return response_of[wf.requests[q].subtree](u1, r.uniform());
          },
          issue, begin, finish, waiting);
      // Keep-alive and billing of on-demand episodes: from the wake to the last finish + keep-alive.
      for (std::size_t j = 0; j < j_count; ++j) {
        const std::size_t sub = fm.subtrees[j];
        double first = std::numeric_limits<double>::infinity(), end = -first;
        for (std::size_t q = 0; q < wf.requests.size(); ++q) {
          if (fm.local[q] != j) continue;
          first = std::min(first, release + issue[q]);
          end = std::max(end, release + finish[q]);
        }
        // Woken on demand: from the wake-up; planned: what ran past the end of the run. Slots
        // the schedule keeps awake anyway are not billed again.
        if (od_until[j] > 0) bill(sub, od_ready[j] - wake[j], end + s.keep_alive[sub]);
        else if (end > first && !(s.keep_alive[sub] == 0 && planned_at(sub, end) && planned_at(sub, first)))
          bill(sub, first, end + s.keep_alive[sub]);
      }
      if (last <= wf.deadline) ++met;
    }
    // Per instance position, samples / instances draws: p = hits / draws per position.
    const double per_position = static_cast<double>(samples) / static_cast<double>(instances);
    for (auto at : touched) {
      const double p = std::min(1.0, hits[at] / per_position);
      log_idle[at] += p >= 1 ? -std::numeric_limits<double>::infinity() : std::log1p(-p);
      hits[at] = 0;
      stamp[at] = 0;
    }
    touched.clear();
    workflow_outcome out;
    out.name = wf.name;
    out.samples = samples;
    out.met = met;
    out.target = wf.reliability;
    out.fraction = static_cast<double>(met) / static_cast<double>(samples);
    std::tie(out.low, out.high) = wilson(met, samples, o.z);
    e.workflows.push_back(out);
    all_met += met;
    all_samples += samples;
  }
  e.met_fraction = all_samples ? static_cast<double>(all_met) / static_cast<double>(all_samples) : 1;
  e.cost = 0;
  for (std::size_t n = 0; n < k; ++n) {
    double slots = 0;
    for (std::size_t t = 0; t < T; ++t) slots += planned[n * T + t] ? 1.0 : 1.0 - std::exp(log_idle[n * T + t]);
    e.cost += w.nodes[n].cost_per_hour * (w.slot / 3600.0) * slots;
  }
  return e;
}

}  // namespace banyan::partitioner::periodic
