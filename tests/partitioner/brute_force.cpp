#include "brute_force.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

namespace banyan::partitioner::testing {
namespace {

struct prng {
  std::uint64_t s;
  std::uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  std::size_t in(std::size_t lo, std::size_t hi) { return lo + next() % (hi - lo + 1); }
};

double link(const problem& p, node_id a, node_id b) {
  if (a == b) return 0;
  if (p.c.link_cost.empty()) return 1;
  return p.c.link_cost[a * p.k() + b];
}

}  // namespace

double naive_cost(const problem& p, const mapping& m) {
  double cost = 0;
  for (std::size_t u = 0; u < p.t.size(); ++u) {
    for (std::size_t v = 0; v < p.t.size(); ++v) {
      if (p.t.parent[v] == static_cast<vertex_id>(u)) cost += p.t.weight[v] * link(p, m[u], m[v]);
    }
  }
  return cost;
}

bool naive_feasible(const problem& p, const mapping& m) {
  for (std::size_t j = 0; j < p.k(); ++j) {
    double cpu = 0, mem = 0;
    for (std::size_t v = 0; v < p.t.size(); ++v) {
      if (m[v] != static_cast<node_id>(j)) continue;
      cpu += p.t.cpu[v];
      if (p.t.has_memory()) mem += p.t.memory[v];
    }
    // The documented rule, written out again: relative tolerance 1e-9, no absolute slack.
    if (cpu > p.cpu_capacity[j] * (1 + 1e-9)) return false;
    if (!p.memory_capacity.empty() && mem > p.memory_capacity[j] * (1 + 1e-9)) return false;
  }
  return true;
}

brute_result brute_force(const problem& p) {
  const std::size_t n = p.t.size(), k = p.k();
  brute_result r;
  mapping m(n, 0);
  std::vector<double> cpu(k, 0), mem(k, 0);
  const bool dim2 = !p.memory_capacity.empty();
  std::function<void(std::size_t, double)> go = [&](std::size_t v, double cost) {
    if (cost >= r.cost) return;
    if (v == n) {
      r.feasible = true;
      r.cost = cost;
      r.best = m;
      return;
    }
    for (std::size_t j = 0; j < k; ++j) {
      if (cpu[j] + p.t.cpu[v] > p.cpu_capacity[j] * (1 + 1e-9)) continue;
      if (dim2 && mem[j] + p.t.memory[v] > p.memory_capacity[j] * (1 + 1e-9)) continue;
      m[v] = static_cast<node_id>(j);
      cpu[j] += p.t.cpu[v];
      if (dim2) mem[j] += p.t.memory[v];
      const double add = v == 0 ? 0 : p.t.weight[v] * link(p, m[p.t.parent[v]], m[v]);
      go(v + 1, cost + add);
      cpu[j] -= p.t.cpu[v];
      if (dim2) mem[j] -= p.t.memory[v];
    }
  };
  go(0, 0);
  return r;
}

std::optional<problem> tiny_problem(std::uint64_t seed, const tiny_options& o) {
  prng r{seed * 2654435761u + 12345};
  for (int i = 0; i < 4; ++i) r.next();
  const std::size_t n = r.in(2, o.max_vertices);
  const std::size_t k = r.in(2, o.max_nodes);
  tree t;
  for (std::size_t v = 0; v < n; ++v) {
    t.parent.push_back(v == 0 ? -1 : static_cast<vertex_id>(r.in(0, v - 1)));
    t.cpu.push_back(static_cast<double>(r.in(0, 9)));
    t.weight.push_back(v == 0 ? 0 : static_cast<double>(r.in(0, 20)));
    t.path.push_back(v == 0 ? "/r" : "/r/c" + std::to_string(v));
    if (o.memory) t.memory.push_back(static_cast<double>(r.in(0, 5)));
  }
  double total = 0, biggest = 0, total_mem = 0, biggest_mem = 0;
  for (double x : t.cpu) {
    total += x;
    biggest = std::max(biggest, x);
  }
  for (double x : t.memory) {
    total_mem += x;
    biggest_mem = std::max(biggest_mem, x);
  }
  const double slack = o.slack_min + (o.slack_max - o.slack_min) * static_cast<double>(r.in(0, 1000)) / 1000.0;
  cluster c;
  for (std::size_t j = 0; j < k; ++j) {
    node_spec nd;
    nd.name = "n" + std::to_string(j);
    nd.endpoint = "tcp://127.0.0.1:" + std::to_string(7100 + j);
    // Integer capacities, some nodes bigger than others.
    const double share = total * slack / static_cast<double>(k) * (r.in(0, 1) ? 1.0 : 0.7);
    nd.cpu = {std::max(std::ceil(share), biggest), false};
    if (o.memory)
      nd.memory = capacity_spec{std::max(std::ceil(total_mem * slack / static_cast<double>(k)), biggest_mem), false};
    c.nodes.push_back(nd);
  }
  if (o.link_matrix) {
    c.link_cost.assign(k * k, 0);
    for (std::size_t a = 0; a < k; ++a) {
      for (std::size_t b = a + 1; b < k; ++b) {
        c.link_cost[a * k + b] = c.link_cost[b * k + a] = static_cast<double>(r.in(1, 5));
      }
    }
  }
  auto p = make_problem(std::move(t), std::move(c));
  if (!p) return std::nullopt;
  return std::move(*p);
}

}  // namespace banyan::partitioner::testing
