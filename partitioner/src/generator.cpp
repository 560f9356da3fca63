// Hierarchical workload generator. Shape: breadth-first growth where each composite gets
// 1 + Geometric children (mean `fanout_mean`) and each child is a leaf with probability
// `leaf_fraction_depth`. Loads: leaves lognormal, composites a twentieth of a draw. Traffic: every
// leaf has three flows (messages ~ uniform around messages_per_leaf / 3); a flow stays under the
// publisher's parent with probability `locality`, otherwise its scope is a random higher ancestor
// and its destination a random vertex below another child of that scope. Each message adds one to
// every tree edge on its propagation path (up to the scope, down to the destination).
#include "banyan/partitioner/generator.hpp"

#include "detail.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <deque>

namespace banyan::partitioner {
namespace {

std::size_t geometric(detail::rng& r, double mean) {
  // Number of failures before a success with p = 1 / (1 + mean).
  if (mean <= 0) return 0;
  const double p = 1.0 / (1.0 + mean);
  return static_cast<std::size_t>(std::floor(std::log(std::max(r.uniform(), 1e-300)) / std::log(1 - p)));
}

}  // namespace

tree generate_tree(const generator_options& o) {
  const std::size_t n = std::max<std::size_t>(o.components, 1);
  detail::rng r(o.seed);
  tree t;
  t.parent.reserve(n);
  t.parent.push_back(no_vertex);
  std::vector<std::uint32_t> depth{0};
  std::vector<char> composite{1};
  std::deque<vertex_id> open{0};
  while (t.parent.size() < n) {
    if (open.empty()) {
      // Everything so far is a leaf: turn the newest one into a composite and continue below it.
      const auto last = static_cast<vertex_id>(t.parent.size() - 1);
      composite[last] = 1;
      open.push_back(last);
    }
    const vertex_id p = open.front();
    open.pop_front();
    const std::size_t kids = 1 + geometric(r, o.fanout_mean - 1);
    for (std::size_t i = 0; i < kids && t.parent.size() < n; ++i) {
      const auto v = static_cast<vertex_id>(t.parent.size());
      t.parent.push_back(p);
      depth.push_back(depth[p] + 1);
      const bool leaf = r.uniform() < o.leaf_fraction_depth;
      composite.push_back(leaf ? 0 : 1);
      if (!leaf) open.push_back(v);
    }
  }
  // Composites that got no children are leaves after all.
  const detail::children ch(t);
  t.cpu.resize(n);
  if (o.memory) t.memory.resize(n);
  for (std::size_t v = 0; v < n; ++v) {
    const double draw = std::exp(o.load_sigma * r.normal());
    const bool leaf = ch.count(static_cast<vertex_id>(v)) == 0;
    t.cpu[v] = std::round((leaf ? draw : draw / 20) * 1e6) / 1e9;  // CPU seconds, microsecond grain
    if (o.memory) t.memory[v] = std::round((leaf ? draw : 0.1) * 1048576);
  }
  t.weight.assign(n, 0.0);
  const std::size_t flows = 3;
  const double per_flow = o.messages_per_leaf / flows;
  for (std::size_t v = 1; v < n; ++v) {
    const auto x = static_cast<vertex_id>(v);
    if (ch.count(x) != 0) continue;
    for (std::size_t f = 0; f < flows; ++f) {
      const double msgs = std::floor(per_flow * (0.5 + r.uniform())) + 1;
      // Scope: the parent (local) or a random higher ancestor (long-range).
      vertex_id scope = t.parent[x];
      if (r.uniform() >= o.locality && depth[scope] > 0) {
        const std::size_t up = 1 + r.below(depth[scope]);
        for (std::size_t i = 0; i < up; ++i) scope = t.parent[scope];
      }
      // Up from the publisher to the scope.
      vertex_id from_side = x;
      for (vertex_id u = x; u != scope; u = t.parent[u]) {
        t.weight[u] += msgs;
        from_side = u;
      }
      // Down: a random child of the scope (not the publisher's side if there is another), then a
      // random descent.
      const std::size_t nk = ch.count(scope);
      vertex_id d = ch.kids[ch.first[scope] + r.below(nk)];
      if (d == from_side && nk > 1)
        d = ch.kids[ch.first[scope] + (static_cast<std::size_t>(d - ch.kids[ch.first[scope]]) + 1) % nk];
      if (d == from_side) continue;  // only child: the message stays on the publisher's side
      t.weight[d] += msgs;
      while (ch.count(d) != 0 && r.uniform() < 0.6) {
        d = ch.kids[ch.first[d] + r.below(ch.count(d))];
        t.weight[d] += msgs;
      }
    }
  }
  if (o.with_paths) {
    t.path.resize(n);
    std::vector<std::size_t> index_in_parent(n, 0);
    for (std::size_t p = 0; p < n; ++p) {
      std::size_t i = 0;
      for (auto it = ch.begin(static_cast<vertex_id>(p)); it != ch.end(static_cast<vertex_id>(p)); ++it)
        index_in_parent[*it] = i++;
    }
    t.path[0] = "/" + o.root_name;
    for (std::size_t v = 1; v < n; ++v) {
      const bool leaf = ch.count(static_cast<vertex_id>(v)) == 0;
      t.path[v] = t.path[t.parent[v]] + (leaf ? "/w" : "/g") + std::to_string(index_in_parent[v]);
    }
  }
  assert(validate(t));
  return t;
}

cluster generate_cluster(const tree& t, const generator_options& o) {
  detail::rng r(o.seed ^ 0xC105EE5ull);
  const std::size_t k = std::max<std::size_t>(o.nodes, 1);
  double total = 0, biggest = 0, total_mem = 0, biggest_mem = 0;
  for (std::size_t v = 0; v < t.size(); ++v) {
    total += t.cpu[v];
    biggest = std::max(biggest, t.cpu[v]);
    if (t.has_memory()) {
      total_mem += t.memory[v];
      biggest_mem = std::max(biggest_mem, t.memory[v]);
    }
  }
  std::vector<double> share(k);
  double sum = 0;
  for (auto& s : share) {
    s = 1 + o.heterogeneity * (2 * r.uniform() - 1);
    sum += s;
  }
  cluster c;
  for (std::size_t i = 0; i < k; ++i) {
    node_spec n;
    n.name = "n" + std::to_string(i);
    n.endpoint = o.endpoint_base + std::to_string(7100 + i);
    if (o.rack_size > 0) n.group = "rack" + std::to_string(i / o.rack_size);
    // Every component must fit some node: never below the heaviest one (rounded up a little).
    const double cpu = std::max(total * o.slack * share[i] / sum, biggest * 1.01);
    n.cpu = {std::ceil(cpu * 1e6) / 1e6, false};
    if (t.has_memory())
      n.memory = capacity_spec{std::ceil(std::max(total_mem * o.slack * share[i] / sum, biggest_mem * 1.01)), false};
    c.nodes.push_back(std::move(n));
  }
  if (o.rack_size > 0 && k > o.rack_size) {
    c.link_cost.assign(k * k, 0);
    for (std::size_t a = 0; a < k; ++a) {
      for (std::size_t b = 0; b < k; ++b) {
        if (a != b) c.link_cost[a * k + b] = c.nodes[a].group == c.nodes[b].group ? 1 : 4;
      }
    }
  }
  return c;
}

}  // namespace banyan::partitioner
