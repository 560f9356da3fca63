// Instance families (families.hpp). Shapes are built with arbitrary ids and renumbered top-down
// (breadth-first, or a random top-down order when shuffled), as a profile reader would.
#include "banyan/partitioner/families.hpp"
#include "banyan/partitioner/generator.hpp"

#include "detail.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace banyan::partitioner {
namespace {

// parent[] over ids 0..n-1 with root 0 (any order) -> a tree numbered top-down.
tree renumber(const std::vector<vertex_id>& parent, bool shuffled, detail::rng& r) {
  const std::size_t n = parent.size();
  std::vector<std::vector<vertex_id>> kids(n);
  for (std::size_t v = 1; v < n; ++v) kids[parent[v]].push_back(static_cast<vertex_id>(v));
  std::vector<vertex_id> order{0}, frontier;
  if (shuffled) {
    frontier = kids[0];
    order.reserve(n);
    while (!frontier.empty()) {
      const std::size_t i = r.below(frontier.size());
      const vertex_id v = frontier[i];
      frontier[i] = frontier.back();
      frontier.pop_back();
      order.push_back(v);
      for (vertex_id c : kids[v]) frontier.push_back(c);
    }
  } else {
    for (std::size_t h = 0; h < order.size(); ++h) {
      for (vertex_id c : kids[order[h]]) order.push_back(c);
    }
  }
  std::vector<vertex_id> id(n);
  for (std::size_t i = 0; i < n; ++i) id[order[i]] = static_cast<vertex_id>(i);
  tree t;
  t.parent.assign(n, no_vertex);
  for (std::size_t v = 1; v < n; ++v) t.parent[id[v]] = id[parent[v]];
  return t;
}

std::vector<vertex_id> shape(const family_options& o, std::size_t n, detail::rng& r, std::vector<char>& heavy) {
  std::vector<vertex_id> parent(n, no_vertex);
  heavy.assign(n, 0);
  switch (o.shape) {
    case family_shape::chain:
      for (std::size_t v = 1; v < n; ++v) parent[v] = static_cast<vertex_id>(v - 1);
      break;
    case family_shape::chain_branches: {
      const std::size_t spine = std::max<std::size_t>(1, n / 2);
      for (std::size_t v = 1; v < spine; ++v) parent[v] = static_cast<vertex_id>(v - 1);
      std::size_t v = spine;
      while (v < n) {
        vertex_id at = static_cast<vertex_id>(r.below(spine));
        const std::size_t len = 1 + r.below(3);
        for (std::size_t i = 0; i < len && v < n; ++i, ++v) {
          parent[v] = at;
          at = static_cast<vertex_id>(v);
        }
      }
      break;
    }
    case family_shape::star:
      for (std::size_t v = 1; v < n; ++v) parent[v] = 0;
      break;
    case family_shape::caterpillar: {
      const std::size_t spine = std::max<std::size_t>(1, (n + 2) / 3);
      for (std::size_t v = 1; v < spine; ++v) parent[v] = static_cast<vertex_id>(v - 1);
      for (std::size_t v = spine; v < n; ++v) parent[v] = static_cast<vertex_id>((v - spine) % spine);
      break;
    }
    case family_shape::binary:
      for (std::size_t v = 1; v < n; ++v) parent[v] = static_cast<vertex_id>((v - 1) / 2);
      break;
    case family_shape::heavy_subtree: {
      // Root, a heavy child h with ~half the vertices below it (random recursive tree), the rest
      // a random recursive tree under the root; loads are rescaled later so S(h) holds 60%.
      const std::size_t half = std::max<std::size_t>(1, n / 2);
      if (n >= 2) {
        parent[1] = 0;
        heavy[1] = 1;
      }
      for (std::size_t v = 2; v < n; ++v) {
        if (v <= half) {
          parent[v] = static_cast<vertex_id>(1 + r.below(v - 1));
          heavy[v] = 1;
        } else {
          const std::size_t pick = r.below(v - half);  // the root or one of half+1 .. v-1
          parent[v] = pick == 0 ? 0 : static_cast<vertex_id>(half + pick);
        }
      }
      break;
    }
    case family_shape::gen_tree: break;  // handled by the caller
  }
  return parent;
}

double traffic(family_traffic k, detail::rng& r) {
  switch (k) {
    case family_traffic::uniform: return 1 + std::floor(r.uniform() * 100);
    case family_traffic::pareto: return std::floor(std::pow(1 - r.uniform(), -1 / 1.2) * 10) / 10;  // x_m 1, alpha 1.2
    case family_traffic::spiky:
      // Mostly about nothing, a few edges at 1e4-1e6.
      return r.uniform() < 0.1 ? std::round(std::pow(10.0, 4 + 2 * r.uniform())) : std::floor(r.uniform() * 3) * 1e-3;
  }
  return 1;
}

}  // namespace

const char* to_string(family_shape s) {
  switch (s) {
    case family_shape::chain: return "chain";
    case family_shape::chain_branches: return "chain+branches";
    case family_shape::star: return "star";
    case family_shape::caterpillar: return "caterpillar";
    case family_shape::binary: return "binary";
    case family_shape::heavy_subtree: return "heavy-60%";
    case family_shape::gen_tree: return "gen-tree";
  }
  return "?";
}
const char* to_string(family_traffic t) {
  switch (t) {
    case family_traffic::uniform: return "uniform";
    case family_traffic::pareto: return "pareto";
    case family_traffic::spiky: return "spiky";
  }
  return "?";
}
const char* to_string(family_links l) {
  switch (l) {
    case family_links::uniform: return "uniform-links";
    case family_links::rack: return "rack";
    case family_links::irregular: return "irregular";
  }
  return "?";
}

std::vector<family_shape> all_family_shapes() {
  return {family_shape::chain,  family_shape::chain_branches, family_shape::star,    family_shape::caterpillar,
          family_shape::binary, family_shape::heavy_subtree,  family_shape::gen_tree};
}

family_options random_family(std::uint64_t seed, family_shape shape, std::size_t components,
                             const std::vector<std::size_t>& ks) {
  detail::rng r(seed ^ 0xFA4111E5ull);
  constexpr double scales[] = {1, 1e-3, 1e-6, 1e-12};
  constexpr double slacks[] = {1.02, 1.1, 1.25, 1.5};
  family_options f;
  f.seed = seed;
  f.shape = shape;
  f.components = components;
  f.traffic = static_cast<family_traffic>(r.below(3));
  f.load_scale = scales[r.below(4)];
  f.slack = slacks[r.below(4)];
  f.unequal = r.below(2) == 1;
  f.nodes = ks.empty() ? 2 : ks[r.below(ks.size())];
  f.links = static_cast<family_links>(r.below(3));
  f.shuffled = r.below(2) == 1;
  return f;
}

std::string describe(const family_options& o) {
  std::ostringstream s;
  s << to_string(o.shape) << " n=" << o.components << " " << to_string(o.traffic) << " load=" << o.load_scale
    << " slack=" << o.slack << " k=" << o.nodes << (o.unequal ? " unequal" : " equal") << " " << to_string(o.links)
    << (o.shuffled ? " shuffled" : "") << " seed=" << o.seed;
  return s.str();
}

result<problem> generate_family(const family_options& o) {
  detail::rng r(o.seed * 0x2545F4914F6CDD1Dull + static_cast<std::uint64_t>(o.shape));
  const std::size_t n = std::max<std::size_t>(o.components, 2);
  std::vector<char> heavy;
  tree t;
  if (o.shape == family_shape::gen_tree) {
    generator_options g{.components = n, .seed = o.seed, .with_paths = false};
    const tree base = generate_tree(g);
    t = renumber(base.parent, o.shuffled, r);
    heavy.assign(n, 0);
  } else {
    t = renumber(shape(o, n, r, heavy), o.shuffled, r);
    if (o.shape == family_shape::heavy_subtree) {
      // Recover which new ids are in the heavy subtree: the child of the root with the most vertices.
      std::vector<std::size_t> size(n, 1);
      for (std::size_t v = n; v-- > 1;) size[t.parent[v]] += size[v];
      vertex_id h = no_vertex;
      for (std::size_t v = 1; v < n; ++v) {
        if (t.parent[v] == 0 && (h < 0 || size[v] > size[h])) h = static_cast<vertex_id>(v);
      }
      heavy.assign(n, 0);
      for (std::size_t v = 1; v < n; ++v) heavy[v] = static_cast<vertex_id>(v) == h || heavy[t.parent[v]];
    }
  }
  t.cpu.resize(n);
  t.weight.assign(n, 0);
  for (std::size_t v = 0; v < n; ++v) {
    t.cpu[v] = o.load_scale == 1 ? 1 + std::floor(r.uniform() * 10) : std::exp(0.5 * r.normal()) * o.load_scale;
  }
  if (o.shape == family_shape::heavy_subtree) {
    double in = 0, out = 0;
    for (std::size_t v = 0; v < n; ++v) (heavy[v] ? in : out) += t.cpu[v];
    if (in > 0 && out > 0) {
      // Scale the heavy side so it holds 60% of the total (loads stay integral when they were).
      const double f = 1.5 * out / in;
      for (std::size_t v = 0; v < n; ++v) {
        if (heavy[v]) t.cpu[v] = o.load_scale == 1 ? std::max(1.0, std::round(t.cpu[v] * f)) : t.cpu[v] * f;
      }
    }
  }
  for (std::size_t v = 1; v < n; ++v) t.weight[v] = traffic(o.traffic, r);
  t.path.resize(n);
  for (std::size_t v = 0; v < n; ++v) t.path[v] = v == 0 ? std::string("/app") : "/app/c" + std::to_string(v);

  const std::size_t k = std::max<std::size_t>(o.nodes, 1);
  double total = 0, biggest = 0;
  for (double x : t.cpu) {
    total += x;
    biggest = std::max(biggest, x);
  }
  std::vector<double> share(k, 1.0);
  double sum = 0;
  for (auto& s : share) {
    if (o.unequal) s = 0.5 + r.uniform();
    sum += s;
  }
  cluster c;
  for (std::size_t i = 0; i < k; ++i) {
    node_spec nd;
    nd.name = "n" + std::to_string(i);
    nd.cpu = {std::max(total * o.slack * share[i] / sum, biggest), false};
    c.nodes.push_back(std::move(nd));
  }
  if (o.links != family_links::uniform && k > 1) {
    c.link_cost.assign(k * k, 0);
    for (std::size_t a = 0; a < k; ++a) {
      for (std::size_t b = a + 1; b < k; ++b) {
        const double cost =
            o.links == family_links::rack ? (a / 2 == b / 2 ? 1.0 : 4.0) : 1.0 + static_cast<double>(r.below(9));
        c.link_cost[a * k + b] = c.link_cost[b * k + a] = cost;
      }
    }
  }
  return make_problem(std::move(t), std::move(c));
}

}  // namespace banyan::partitioner
