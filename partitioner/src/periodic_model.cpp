// Histograms, the planner's patterns (periodic_model.hpp) and the model's one cost function.
#include "periodic_model.hpp"

#include "detail.hpp"

#include <algorithm>
#include <numeric>

namespace banyan::partitioner::periodic {

double histogram::min() const {
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] > 0) return bounds[i];
  }
  return 0;
}

double histogram::max() const {
  for (std::size_t i = counts.size(); i-- > 0;) {
    if (counts[i] > 0) return bounds[i + 1];
  }
  return 0;
}

double histogram::mean() const {
  double sum = 0, total = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    sum += counts[i] * 0.5 * (bounds[i] + bounds[i + 1]);
    total += counts[i];
  }
  return total > 0 ? sum / total : 0;
}

double histogram::quantile(double q) const {
  const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
  const double target = std::clamp(q, 0.0, 1.0) * total;
  double seen = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] <= 0) continue;
    if (seen + counts[i] >= target) {
      const double f = (target - seen) / counts[i];
      return bounds[i] + f * (bounds[i + 1] - bounds[i]);
    }
    seen += counts[i];
  }
  return max();
}

double histogram::sample(double u_bucket, double u_within) const {
  const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
  const double target = u_bucket * total;
  double seen = 0;
  std::size_t last = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] <= 0) continue;
    last = i;
    seen += counts[i];
    if (target < seen) break;
  }
  return bounds[last] + u_within * (bounds[last + 1] - bounds[last]);
}

namespace detail {

model build_model(const workload& w, double quantile) {
  model m;
  m.w = &w;
  m.T = w.slots();
  m.slot_hours = w.slot / 3600.0;
  m.flows_of.resize(w.subtrees.size());
  std::vector<double> issue, begin, finish;
  std::vector<int> waiting;
  for (std::size_t f = 0; f < w.workflows.size(); ++f) {
    const workflow_spec& wf = w.workflows[f];
    flow_model fm;
    fm.successors.resize(wf.requests.size());
    for (std::size_t q = 0; q < wf.requests.size(); ++q) {
      for (auto p : wf.requests[q].after) fm.successors[p].push_back(q);
      const auto it = std::find(fm.subtrees.begin(), fm.subtrees.end(), wf.requests[q].subtree);
      fm.local.push_back(static_cast<std::size_t>(it - fm.subtrees.begin()));
      if (it == fm.subtrees.end()) fm.subtrees.push_back(wf.requests[q].subtree);
    }
    for (auto s : fm.subtrees) m.flows_of[s].push_back(f);
    const std::size_t k = fm.subtrees.size();
    // Masks: every subset up to 10 subtrees; beyond, all-pre-wake, each one on demand, all on demand.
    std::vector<std::uint64_t> masks;
    const std::uint64_t all = k >= 64 ? ~0ULL : ((1ULL << k) - 1);
    if (k <= 10) {
      for (std::uint64_t x = 0; x <= all; ++x) masks.push_back(all ^ x);
    } else {
      masks.push_back(all);
      for (std::size_t j = 0; j < k && j < 64; ++j) masks.push_back(all ^ (1ULL << j));
      masks.push_back(0);
    }
    const double rho = quantile > 0 ? quantile : wf.reliability;
    for (const std::uint64_t mask : masks) {
      pattern p;
      p.prewake.resize(k);
      for (std::size_t j = 0; j < k; ++j) p.prewake[j] = j < 64 && ((mask >> j) & 1) ? 1 : 0;
      p.window.assign(k, {0, 0});
      std::vector<double> ready(k, -1);  // when the subtree serves; -1: not woken yet
      std::vector<std::uint8_t> woken(k, 0);
      p.finish = run_instance(
          wf, fm.successors,
          [&](std::size_t q, double at) {
            const std::size_t j = fm.local[q];
            const double wake = w.subtrees[fm.subtrees[j]].wake.quantile(rho);
            if (!woken[j]) {
              woken[j] = 1;
              if (p.prewake[j]) {
                ready[j] = at;
                p.window[j] = {at - wake, at};
              } else {
                ready[j] = at + wake;
                p.window[j] = {at, at};
              }
            }
            return std::max(at, ready[j]);
          },
          [&](std::size_t q) { return w.subtrees[wf.requests[q].subtree].response.quantile(rho); }, issue, begin,
          finish, waiting);
      for (std::size_t q = 0; q < wf.requests.size(); ++q) {
        auto& win = p.window[fm.local[q]];
        win.second = std::max(win.second, finish[q]);
      }
      if (p.finish <= wf.deadline + 1e-9 || mask == all) fm.patterns.push_back(std::move(p));
    }
    // Keep all-pre-wake first; drop it when it misses the deadline and another pattern does not.
    if (fm.patterns.size() > 1 && fm.patterns[0].finish > wf.deadline + 1e-9) fm.patterns.erase(fm.patterns.begin());
    // Cross-node traffic between the subtrees of requests and their predecessors.
    const double instances = static_cast<double>(wf.instances(w.horizon));
    for (const auto& q : wf.requests) {
      for (auto p : q.after) {
        const std::size_t a = wf.requests[p].subtree, b = q.subtree;
        if (a == b || q.traffic <= 0) continue;
        m.talks.push_back({std::min(a, b), std::max(a, b), q.traffic * instances});
      }
    }
    m.flows.push_back(std::move(fm));
  }
  // Merge talks between the same pair.
  std::sort(m.talks.begin(), m.talks.end(),
            [](const talk& x, const talk& y) { return std::pair(x.a, x.b) < std::pair(y.a, y.b); });
  std::vector<talk> merged;
  for (const auto& t : m.talks) {
    if (!merged.empty() && merged.back().a == t.a && merged.back().b == t.b) merged.back().messages += t.messages;
    else merged.push_back(t);
  }
  m.talks = std::move(merged);
  return m;
}

std::vector<std::vector<std::uint8_t>> awake_of(const model& m, const std::vector<int>& patterns,
                                                const std::vector<int>& margins) {
  std::vector<std::vector<std::uint8_t>> awake(m.w->subtrees.size(), std::vector<std::uint8_t>(m.T, 0));
  for (std::size_t f = 0; f < m.flows.size(); ++f) {
    const auto& fm = m.flows[f];
    const pattern& p = fm.patterns[static_cast<std::size_t>(patterns[f])];
    for (std::size_t j = 0; j < fm.subtrees.size(); ++j) {
      auto& row = awake[fm.subtrees[j]];
      for_each_slot(m, f, p, j, margins[f], [&](std::size_t t) { row[t] = 1; });
    }
  }
  return awake;
}

schedule to_schedule(const model& m, const choice& c, const std::vector<int>& margins) {
  schedule s;
  s.policy = "plan";
  s.node = c.node;
  s.awake = awake_of(m, c.pattern, margins);
  s.keep_alive.assign(m.w->subtrees.size(), 0);
  return s;
}

double traffic_cost(const model& m, const std::vector<node_id>& node) {
  double cost = 0;
  if (m.w->message_cost == 0) return 0;
  for (const auto& t : m.talks) cost += t.messages * m.w->link(node[t.a], node[t.b]);
  return cost * m.w->message_cost;
}

model_eval model_cost(const model& m, const choice& c, const std::vector<int>& margins) {
  const workload& w = *m.w;
  const auto awake = awake_of(m, c.pattern, margins);
  const std::size_t k = w.nodes.size();
  std::vector<double> load(k * m.T, 0);
  std::vector<std::uint8_t> used(k * m.T, 0);
  model_eval e;
  for (std::size_t s = 0; s < w.subtrees.size(); ++s) {
    const auto n = static_cast<std::size_t>(c.node[s]);
    for (std::size_t t = 0; t < m.T; ++t) {
      if (!awake[s][t]) continue;
      load[n * m.T + t] += w.subtrees[s].demand;
      used[n * m.T + t] = 1;
    }
  }
  for (std::size_t n = 0; n < k; ++n) {
    std::size_t slots = 0;
    for (std::size_t t = 0; t < m.T; ++t) {
      slots += used[n * m.T + t];
      if (e.feasible && !within_capacity(load[n * m.T + t], w.nodes[n].capacity)) {
        e.feasible = false;
        e.violation = "node `" + w.nodes[n].name + "` holds " +
                      partitioner::detail::format_number(load[n * m.T + t], 6) + " at slot " + std::to_string(t) +
                      ", above its capacity " + partitioner::detail::format_number(w.nodes[n].capacity, 6);
      }
    }
    e.cost += w.nodes[n].cost_per_hour * m.slot_hours * static_cast<double>(slots);
  }
  e.cost += traffic_cost(m, c.node);
  return e;
}

}  // namespace detail
}  // namespace banyan::partitioner::periodic
