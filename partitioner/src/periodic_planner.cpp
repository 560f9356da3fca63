// make_plan (periodic_plan.hpp): solve the model (MIP or heuristic), check it by Monte Carlo, and
// widen the awake windows of the workflows short of their target until all meet it; and the
// baseline policies put in the same terms.
#include "periodic_model.hpp"

#include "detail.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace banyan::partitioner::periodic {

const char* to_string(plan_algorithm a) {
  switch (a) {
    case plan_algorithm::mip: return "mip";
    case plan_algorithm::heuristic: return "heuristic";
    case plan_algorithm::automatic: return "auto";
  }
  return "?";
}

namespace {

using partitioner::detail::format_number;

std::vector<node_id> homes(const workload& w, const std::vector<node_id>& placement) {
  std::vector<node_id> out(w.subtrees.size(), 0);
  for (std::size_t s = 0; s < out.size(); ++s) {
    if (s < w.home.size() && w.home[s] != no_node) out[s] = w.home[s];
    else if (s < placement.size() && placement[s] != no_node) out[s] = placement[s];
  }
  return out;
}

schedule empty_schedule(const workload& w, const std::vector<node_id>& placement, const std::string& policy) {
  schedule s;
  s.policy = policy;
  s.node = homes(w, placement);
  s.awake.assign(w.subtrees.size(), std::vector<std::uint8_t>(w.slots(), 0));
  s.keep_alive.assign(w.subtrees.size(), 0);
  return s;
}

// Marks slots overlapping [from, to) seconds (cyclic).
void mark(const workload& w, std::vector<std::uint8_t>& row, double from, double to) {
  const auto T = static_cast<std::int64_t>(row.size());
  const auto first = static_cast<std::int64_t>(std::floor(from / w.slot));
  const auto last = std::min(first + T - 1, std::max(first, static_cast<std::int64_t>(std::ceil(to / w.slot)) - 1));
  for (std::int64_t t = first; t <= last; ++t) row[static_cast<std::size_t>(((t % T) + T) % T)] = 1;
}

std::string pct(double x) { return format_number(x, 6); }

}  // namespace

schedule always_on(const workload& w, const std::vector<node_id>& placement) {
  schedule s = empty_schedule(w, placement, "always-on");
  for (auto& row : s.awake) std::fill(row.begin(), row.end(), 1);
  return s;
}

schedule fixed_keep_alive(const workload& w, const std::vector<node_id>& placement, double keep_alive_s) {
  schedule s = empty_schedule(w, placement, "keep-alive-" + format_number(keep_alive_s, 6) + "s");
  std::fill(s.keep_alive.begin(), s.keep_alive.end(), keep_alive_s);
  return s;
}

schedule hybrid_histogram(const workload& w, const std::vector<node_id>& placement) {
  schedule sch = empty_schedule(w, placement, "hybrid-histogram");
  const detail::model m = detail::build_model(w);
  // Per subtree, (arrival, end) of its requests over the horizon at the median times, woken on demand.
  std::vector<std::vector<std::pair<double, double>>> busy(w.subtrees.size());
  std::vector<double> issue, begin, finish;
  std::vector<int> waiting;
  for (std::size_t f = 0; f < w.workflows.size(); ++f) {
    const auto& wf = w.workflows[f];
    const auto& fm = m.flows[f];
    std::vector<double> ready(fm.subtrees.size(), -1);
    detail::run_instance(
        wf, fm.successors,
        [&](std::size_t q, double at) {
          const std::size_t j = fm.local[q];
          if (ready[j] < 0) ready[j] = at + w.subtrees[fm.subtrees[j]].wake.quantile(0.5);
          return std::max(at, ready[j]);
        },
        [&](std::size_t q) { return w.subtrees[wf.requests[q].subtree].response.quantile(0.5); }, issue, begin, finish,
        waiting);
    for (std::size_t i = 0; i < wf.instances(w.horizon); ++i) {
      const double release = wf.phase + static_cast<double>(i) * wf.period;
      for (std::size_t q = 0; q < wf.requests.size(); ++q)
        busy[wf.requests[q].subtree].emplace_back(release + issue[q], release + finish[q]);
    }
  }
  constexpr double range = 4 * 3600.0, bin = 60.0;
  for (std::size_t s = 0; s < w.subtrees.size(); ++s) {
    auto& b = busy[s];
    if (b.empty()) continue;
    std::sort(b.begin(), b.end());
    std::vector<std::pair<double, double>> merged;
    for (const auto& x : b) {
      if (!merged.empty() && x.first <= merged.back().second)
        merged.back().second = std::max(merged.back().second, x.second);
      else merged.push_back(x);
    }
    std::vector<double> idle;  // after each busy period, until the next (cyclic)
    for (std::size_t i = 0; i < merged.size(); ++i) {
      const double next = i + 1 < merged.size() ? merged[i + 1].first : merged[0].first + w.horizon;
      idle.push_back(std::max(0.0, next - merged[i].second));
    }
    const auto oob =
        static_cast<std::size_t>(std::count_if(idle.begin(), idle.end(), [&](double x) { return x > range; }));
    auto& row = sch.awake[s];
    if (2 * oob > idle.size()) {
      // Mostly beyond the histogram: predict each idle time (the periodic series repeats exactly,
      // so the last one of the same position) and keep the subtree loaded from 85% to 115% of it.
      for (std::size_t i = 0; i < merged.size(); ++i)
        mark(w, row, merged[i].second + 0.85 * idle[i], merged[i].second + 1.15 * idle[i]);
      continue;
    }
    // The histogram's 5th and 99th percentiles, in whole bins, with 10% margins.
    std::vector<double> sorted = idle;
    std::sort(sorted.begin(), sorted.end());
    auto percentile = [&](double q) {
      const auto at = std::min(sorted.size() - 1, static_cast<std::size_t>(q * static_cast<double>(sorted.size())));
      return std::min(range, std::floor(sorted[at] / bin) * bin);
    };
    const double prewarm = std::floor(0.9 * percentile(0.05) / bin) * bin;
    const double keep = std::ceil(1.1 * (percentile(0.99) + bin) / bin) * bin - prewarm;
    for (std::size_t i = 0; i < merged.size(); ++i)
      mark(w, row, merged[i].second + prewarm, merged[i].second + prewarm + keep);
    sch.keep_alive[s] = prewarm == 0 ? keep : 0;
  }
  return sch;
}

result<plan_outcome> make_plan(const workload& w, const plan_options& o) {
  const partitioner::detail::stopwatch clock;
  auto say = [&](const std::string& what) {
    if (o.on_progress) o.on_progress(what);
  };
  const detail::model m = detail::build_model(w, o.planning_quantile);
  std::vector<int> margins(w.workflows.size(), 0);
  plan_algorithm algo = o.algorithm;
  if (algo == plan_algorithm::automatic)
    algo = detail::mip_columns(m, margins) <= o.mip_max_columns ? plan_algorithm::mip : plan_algorithm::heuristic;
  plan_outcome out;
  out.algorithm = to_string(algo);
  for (std::size_t round = 0;; ++round) {
    say(round == 0 ? std::string("heuristic") : "repair " + std::to_string(round) + ": heuristic");
    detail::solved sol = detail::solve_heuristic(m, margins);
    if (algo == plan_algorithm::mip) {
      say(round == 0 ? std::string("mip") : "repair " + std::to_string(round) + ": mip");
      detail::solved exact = detail::solve_mip(m, margins, o.time_limit_s, sol.found ? &sol.c : nullptr);
      if (exact.found || !sol.found) sol = exact;
    }
    if (!sol.found) return error{errc::over_capacity, "no schedule fits the nodes' capacities: " + sol.message};
    if (round == 0) {
      out.model_cost = sol.cost;
      out.lower_bound = sol.bound;
      out.optimal = sol.optimal;
    }
    out.s = detail::to_schedule(m, sol.c, margins);
    say("monte carlo");
    out.e = simulate(w, out.s, o.simulation);
    std::vector<std::string> short_of;
    if (round == 0 && std::any_of(out.e.workflows.begin(), out.e.workflows.end(),
                                  [](const workflow_outcome& f) { return !f.meets(); })) {
      // Short of a target: can any schedule meet it? The best is everything awake all the time.
      say("checking what always-on reaches");
      const evaluation best = simulate(w, always_on(w, out.s.node), o.simulation);
      for (const auto& f : best.workflows) {
        if (!f.meets())
          return error{errc::invalid, "workflow `" + f.name + "`: the reliability target " + pct(f.target) +
                                          " cannot be met: at best " + pct(f.fraction) + " [" + pct(f.low) + ", " +
                                          pct(f.high) + "] (every subtree always awake; " + std::to_string(f.samples) +
                                          " instances, seed " + std::to_string(o.simulation.seed) + ")"};
      }
    }
    for (std::size_t f = 0; f < out.e.workflows.size(); ++f) {
      if (out.e.workflows[f].meets()) continue;
      short_of.push_back(w.workflows[f].name);
      margins[f] = std::max(1, 2 * margins[f]);
    }
    out.repairs = round;
    if (short_of.empty()) break;
    if (round + 1 >= o.max_repairs) {
      return error{errc::invalid, "workflow `" + short_of.front() + "` is still short of its target after " +
                                      std::to_string(round + 1) + " repairs"};
    }
  }
  out.margins = margins;
  out.seconds = clock.seconds();
  return out;
}

}  // namespace banyan::partitioner::periodic
