#include "exact_common.hpp"

#include <algorithm>

namespace banyan::partitioner::detail {
namespace {

bool integral(double x) { return std::abs(x - std::round(x)) <= 1e-9 * std::max(1.0, std::abs(x)); }

// Finds s in 10^0..10^9 with every x*s integral and max*s <= limit; 0 when none.
double exact_scale(const std::vector<const std::vector<double>*>& all, double max, long long limit) {
  for (double s = 1; s <= 1e9 && max * s <= static_cast<double>(limit); s *= 10) {
    bool ok = true;
    for (const auto* xs : all) {
      for (double x : *xs) {
        if (std::isfinite(x) && !integral(x * s)) { ok = false; break; }
      }
      if (!ok) break;
    }
    if (ok) return s;
  }
  return 0;
}

}  // namespace

integer_loads scale_loads(const problem& p, long long max_value) {
  integer_loads r;
  const auto& t = p.t;
  auto one_dim = [&](const std::vector<double>& load, const std::vector<double>& cap,
                     std::vector<long long>& out_load, std::vector<long long>& out_cap) {
    double max = 0;
    for (double c : cap) if (std::isfinite(c)) max = std::max(max, c);
    for (double l : load) max = std::max(max, l);
    double s = exact_scale({&load, &cap}, max, max_value);
    const bool exact = s > 0;
    if (!exact) s = max > 0 ? static_cast<double>(max_value) / max : 1;
    r.exact = r.exact && exact;
    out_load.resize(load.size());
    for (std::size_t i = 0; i < load.size(); ++i) {
      out_load[i] = exact ? std::llround(load[i] * s) : static_cast<long long>(std::ceil(load[i] * s - 1e-9));
    }
    out_cap.resize(cap.size());
    for (std::size_t i = 0; i < cap.size(); ++i) {
      if (!std::isfinite(cap[i])) { out_cap[i] = -1; continue; }  // unconstrained
      out_cap[i] = exact ? std::llround(cap[i] * s) : static_cast<long long>(std::floor(cap[i] * s + 1e-9));
    }
  };
  one_dim(t.cpu, p.cpu_capacity, r.cpu, r.cpu_cap);
  if (!p.memory_capacity.empty()) one_dim(t.memory, p.memory_capacity, r.mem, r.mem_cap);
  return r;
}

integer_weights scale_weights(const problem& p, double max_total) {
  integer_weights r;
  double total = 0, max_cost = 1;
  for (double x : p.c.link_cost) max_cost = std::max(max_cost, x);
  for (double w : p.t.weight) total += w * max_cost;
  bool integral_all = true;
  for (double w : p.t.weight) {
    if (!integral(w)) { integral_all = false; break; }
  }
  for (double x : p.c.link_cost) {
    if (!integral(x)) { integral_all = false; break; }
  }
  if (integral_all && total <= max_total) return r;
  r.exact = false;
  r.scale = total > 0 ? max_total / total : 1;
  return r;
}

void fall_back_to_warm_start(const problem& p, const solve_options& o, solution& s) {
  if (!o.warm_start || s.status == solve_status::optimal) return;
  const evaluation warm = evaluate(p, *o.warm_start);
  if (!warm.feasible) return;
  if (!s.map.empty()) {
    const evaluation own = evaluate(p, s.map);
    if (own.feasible && own.cost <= warm.cost) return;
  }
  s.map = *o.warm_start;
  s.status = solve_status::feasible;
}

std::vector<std::vector<node_id>> interchangeable_nodes(const problem& p) {
  const auto k = static_cast<node_id>(p.k());
  auto same = [&](node_id a, node_id b) {
    if (p.cpu_capacity[a] != p.cpu_capacity[b]) return false;
    if (!p.memory_capacity.empty() && p.memory_capacity[a] != p.memory_capacity[b]) return false;
    for (node_id m = 0; m < k; ++m) {
      if (m != a && m != b && p.c.cost(a, m) != p.c.cost(b, m)) return false;
    }
    return true;
  };
  std::vector<std::vector<node_id>> classes;
  std::vector<char> done(k, 0);
  for (node_id a = 0; a < k; ++a) {
    if (done[a]) continue;
    std::vector<node_id> cls{a};
    for (node_id b = a + 1; b < k; ++b) {
      if (!done[b] && same(a, b)) { cls.push_back(b); done[b] = 1; }
    }
    if (cls.size() >= 2) classes.push_back(std::move(cls));
  }
  return classes;
}

}  // namespace banyan::partitioner::detail
