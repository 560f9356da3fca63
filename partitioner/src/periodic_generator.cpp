// random_workload (periodic_plan.hpp): seeded workloads for tests and benchmarks.
#include "periodic_model.hpp"

#include <algorithm>
#include <cmath>

namespace banyan::partitioner::periodic {

workload random_workload(std::uint64_t seed, const workload_shape& shape) {
  detail::rng r{seed * 0x2545f4914f6cdd1dULL + 7};
  auto uniform = [&](double a, double b) { return a + (b - a) * r.uniform(); };
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(r.uniform() * static_cast<double>(n)); };
  workload w;
  w.name = "random(" + std::to_string(seed) + ")";
  w.slot = shape.slot;
  w.horizon = shape.horizon;
  w.message_cost = shape.message_cost;
  double total_demand = 0, max_demand = 0;
  for (std::size_t s = 0; s < shape.subtrees; ++s) {
    subtree_spec sub;
    sub.path = "/app/s" + std::to_string(s);
    sub.demand = static_cast<double>(1 + pick(4));
    const double wake = uniform(10, 90), resp = uniform(5, 120);
    sub.wake = {{wake, 1.5 * wake, 2 * wake, 3 * wake}, {5, 3, 1}};
    sub.response = {{resp, 1.5 * resp, 2 * resp, 3 * resp}, {5, 3, 1}};
    total_demand += sub.demand;
    max_demand = std::max(max_demand, sub.demand);
    w.subtrees.push_back(std::move(sub));
    w.home.push_back(no_node);
  }
  // Periods: divisors of the horizon that are whole slots and leave room for an instance.
  std::vector<double> periods;
  for (int d : {1, 2, 3, 4, 6, 8, 12, 24}) {
    const double p = shape.horizon / d;
    if (std::abs(p / shape.slot - std::round(p / shape.slot)) < 1e-9 && p >= 6 * shape.slot && p >= 1200)
      periods.push_back(p);
  }
  if (periods.empty()) periods.push_back(shape.horizon);
  std::vector<std::size_t> order(shape.subtrees);
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[pick(i)]);
  for (std::size_t at = 0, f = 0; at < order.size(); ++f) {
    const std::size_t size = std::min(order.size() - at, 2 + pick(4));
    workflow_spec wf;
    wf.name = "w" + std::to_string(f);
    wf.period = periods[pick(periods.size())];
    wf.phase = std::floor(uniform(0, wf.period) / shape.slot) * shape.slot;
    wf.jitter = r.uniform() < 0.5 ? 0 : uniform(0, 60);
    wf.reliability = std::vector<double>{0.95, 0.99, 0.999}[pick(3)];
    std::vector<std::size_t> subs(order.begin() + static_cast<std::ptrdiff_t>(at),
                                  order.begin() + static_cast<std::ptrdiff_t>(at + size));
    at += size;
    if (shape.subtrees > size && r.uniform() < 0.3) {
      const std::size_t extra = pick(shape.subtrees);
      if (std::find(subs.begin(), subs.end(), extra) == subs.end()) subs.push_back(extra);
    }
    const bool chain = r.uniform() < 0.5;
    for (std::size_t q = 0; q < subs.size(); ++q) {
      request_spec rq;
      rq.id = "q" + std::to_string(q);
      rq.subtree = subs[q];
      if (q > 0) rq.after.push_back(chain ? q - 1 : 0);
      rq.traffic = static_cast<double>(1 + pick(100));
      wf.requests.push_back(rq);
    }
    // Deadline: the critical path at the largest response times, plus 30-100% slack.
    std::vector<double> finish(wf.requests.size(), 0);
    double longest = 0;
    for (std::size_t q = 0; q < wf.requests.size(); ++q) {
      const double start = wf.requests[q].after.empty() ? 0 : finish[wf.requests[q].after[0]];
      finish[q] = start + w.subtrees[wf.requests[q].subtree].response.max();
      longest = std::max(longest, finish[q]);
    }
    wf.deadline = std::ceil(longest * uniform(1.3, 2.0));
    w.workflows.push_back(std::move(wf));
  }
  for (std::size_t n = 0; n < shape.nodes; ++n) {
    node_info info;
    info.name = "n" + std::to_string(n);
    info.capacity = std::max(
        max_demand, std::round(total_demand * shape.slack / static_cast<double>(shape.nodes) * uniform(0.6, 1.4)));
    info.cost_per_hour = std::round(uniform(0.5, 2.0) * 100) / 100;
    w.nodes.push_back(info);
  }
  return w;
}

}  // namespace banyan::partitioner::periodic
