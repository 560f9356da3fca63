// A start for bottom-up from exact tree dynamic programming (Lukes-style knapsack over the tree):
// nodes are filled one at a time. For node j, over the components not yet placed (a forest), a
// dynamic program finds the set S to put on j that cuts the least traffic towards the rest, such that
// S fits j and what is left still fits the nodes after j (in total). With k = 2 and uniform link
// costs this is the exact optimum up to the bucketing below; for k > 2 it is a sequence of optimal
// two-way splits, which refine.cpp then improves.
//
// State per vertex v and side (v in S or not): a Pareto front of (load of S inside v's subtree,
// traffic cut inside it). Fronts are bucketed by load (B buckets over j's capacity, the cheapest
// entry kept per bucket), but every entry carries its exact load, so what the program returns always
// fits: bucketing may lose optimality, never feasibility. Loads are compared in relative terms only
// (capacity_tolerance), so the scale of loads (1 or 1e-12) does not matter. Cost O(n B^2) per node.
#include "detail.hpp"

#include <algorithm>
#include <limits>

namespace banyan::partitioner::detail {
namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

struct entry {
  double cost = inf;
  double load = 0;
  std::int32_t prev = -1;   // bucket in the previous step's front (same side)
  std::int32_t child = -1;  // side * (B + 1) + bucket in the child's final front
};

class peeler {
 public:
  peeler(const problem& p, const children& ch, std::size_t buckets)
      : p_(p), t_(p.t), ch_(ch), b_(buckets), width_(2 * (buckets + 1)) {}

  // Fills node `j` from the vertices with m[v] == no_node; false when no valid set exists.
  bool fill(node_id j, double rest_capacity, double share, std::size_t rank, mapping& m) {
    const std::size_t n = t_.size();
    cap_ = p_.cpu_capacity[j];
    if (!(cap_ > 0)) cap_ = 0;
    double remaining = 0;
    for (std::size_t v = 0; v < n; ++v) {
      if (m[v] == no_node) remaining += t_.cpu[v];
    }
    // What stays must fit the later nodes: load(S) >= remaining - rest (relative tolerance).
    // Optionally at least `share` of j's proportional part of what remains (full nodes early leave
    // room to later ones when capacity is tight).
    const double lo = std::max(remaining - rest_capacity * (1 + capacity_tolerance),
                               share * remaining * cap_ / std::max(cap_ + rest_capacity, 1e-300));
    pool_.clear();
    start_.assign(n + 1, -1);
    steps_.assign(n + 1, 0);
    kids_.assign(n + 1, {});
    for (std::size_t i = n; i-- > 0;) {
      const auto v = static_cast<vertex_id>(i);
      if (m[v] != no_node) continue;
      start_[v] = static_cast<std::int64_t>(pool_.size());
      pool_.resize(pool_.size() + width_);
      entry* f = &pool_[start_[v]];
      f[0] = {0, 0, -1, -1};  // v not in S
      if (within(t_.cpu[v], cap_)) f[(b_ + 1) + bucket(t_.cpu[v])] = {0, t_.cpu[v], -1, -1};
      steps_[v] = 1;
      for (auto it = ch_.begin(v); it != ch_.end(v); ++it) {
        if (m[*it] != no_node) continue;
        kids_[v].push_back(*it);
        merge(v, *it, t_.weight[*it]);
      }
    }
    // A virtual root (index n) joins the forest's roots at no cost.
    start_[n] = static_cast<std::int64_t>(pool_.size());
    pool_.resize(pool_.size() + width_);
    pool_[start_[n]] = {0, 0, -1, -1};
    steps_[n] = 1;
    for (std::size_t v = 0; v < n; ++v) {
      if (m[v] != no_node) continue;
      if (v == 0 || m[t_.parent[v]] != no_node) {
        kids_[n].push_back(static_cast<vertex_id>(v));
        merge(static_cast<vertex_id>(n), static_cast<vertex_id>(v), 0);
      }
    }
    const entry* root = final_front(static_cast<vertex_id>(n));
    // The cheapest valid entry, or the rank-th cheapest (other starts explore second choices).
    std::vector<std::int32_t> valid;
    for (std::size_t y = 0; y <= b_; ++y) {
      const entry& e = root[y];
      if (e.cost != inf && e.load >= lo) valid.push_back(static_cast<std::int32_t>(y));
    }
    if (valid.empty()) return false;
    std::stable_sort(valid.begin(), valid.end(), [&](std::int32_t a, std::int32_t b) {
      return root[a].cost < root[b].cost || (root[a].cost == root[b].cost && root[a].load > root[b].load);
    });
    if (rank >= valid.size()) return false;
    const std::int32_t best = valid[rank];
    // Walk the choices back down: (vertex, side, bucket) of its final front.
    struct item {
      vertex_id v;
      std::int32_t side, bucket;
    };
    std::vector<item> stack{{static_cast<vertex_id>(n), 0, best}};
    while (!stack.empty()) {
      const item it = stack.back();
      stack.pop_back();
      if (static_cast<std::size_t>(it.v) < n && it.side == 1) m[it.v] = j;
      std::int32_t bucket = it.bucket;
      for (std::size_t s = steps_[it.v] - 1; s >= 1; --s) {
        const entry& e = pool_[start_[it.v] + static_cast<std::int64_t>(s * width_) + it.side * (b_ + 1) + bucket];
        const vertex_id c = kids_[it.v][s - 1];
        stack.push_back({c, e.child / static_cast<std::int32_t>(b_ + 1), e.child % static_cast<std::int32_t>(b_ + 1)});
        bucket = e.prev;
      }
    }
    return true;
  }

 private:
  std::size_t bucket(double load) const {
    if (!(cap_ > 0)) return 0;
    return std::min(b_, static_cast<std::size_t>(load / cap_ * static_cast<double>(b_)));
  }
  const entry* final_front(vertex_id v) const {
    return &pool_[start_[v] + static_cast<std::int64_t>((steps_[v] - 1) * width_)];
  }

  // Appends a new step to v's fronts: v's current front merged with child c's final front.
  void merge(vertex_id v, vertex_id c, double w) {
    const std::int64_t prev_at = start_[v] + static_cast<std::int64_t>((steps_[v] - 1) * width_);
    const std::int64_t child_at = start_[c] + static_cast<std::int64_t>((steps_[c] - 1) * width_);
    // v's steps are contiguous only if nothing else was appended since; copy the step forward.
    const std::int64_t out_at = static_cast<std::int64_t>(pool_.size());
    pool_.resize(pool_.size() + width_);
    if (out_at != prev_at + static_cast<std::int64_t>(width_)) {
      relocate(v);
      return merge(v, c, w);
    }
    const std::int32_t stride = static_cast<std::int32_t>(b_ + 1);
    nonempty_.clear();
    for (std::int32_t y = 0; y < 2 * stride; ++y) {
      if (pool_[child_at + y].cost != inf) nonempty_.push_back(y);
    }
    for (std::int32_t a = 0; a < 2; ++a) {
      for (std::int32_t x = 0; x < stride; ++x) {
        const entry f = pool_[prev_at + a * stride + x];
        if (f.cost == inf) continue;
        for (std::int32_t y : nonempty_) {
          const entry& g = pool_[child_at + y];
          const double load = f.load + g.load;
          if (!within(load, cap_)) continue;
          const double cost = f.cost + g.cost + ((y >= stride) != (a == 1) ? w : 0.0);
          entry& h = pool_[out_at + a * stride + static_cast<std::int32_t>(bucket(load))];
          if (cost < h.cost || (cost == h.cost && load > h.load)) h = {cost, load, x, y};
        }
      }
    }
    ++steps_[v];
  }

  // Moves v's steps to the end of the pool (children's fronts were appended in between).
  void relocate(vertex_id v) {
    pool_.resize(pool_.size() - width_);
    const std::int64_t from = start_[v];
    const std::int64_t to = static_cast<std::int64_t>(pool_.size());
    pool_.resize(pool_.size() + steps_[v] * width_);
    std::copy(pool_.begin() + from, pool_.begin() + from + static_cast<std::int64_t>(steps_[v] * width_),
              pool_.begin() + to);
    start_[v] = to;
  }

  const problem& p_;
  const tree& t_;
  const children& ch_;
  std::size_t b_, width_;
  double cap_ = 0;
  std::vector<entry> pool_;
  std::vector<std::int64_t> start_;
  std::vector<std::size_t> steps_;
  std::vector<std::vector<vertex_id>> kids_;
  std::vector<std::int32_t> nonempty_;
};

}  // namespace

bool peel_start(const problem& p, const children& ch, const std::vector<node_id>& order, std::size_t buckets,
                double share, std::size_t first_rank, mapping& m) {
  m.assign(p.t.size(), no_node);
  peeler pe(p, ch, buckets);
  for (std::size_t i = 0; i < order.size(); ++i) {
    double rest = 0;
    for (std::size_t r = i + 1; r < order.size(); ++r) rest += p.cpu_capacity[order[r]];
    if (!pe.fill(order[i], rest, i + 1 < order.size() ? share : 0.0, i == 0 ? first_rank : 0, m)) return false;
  }
  for (node_id x : m) {
    if (x == no_node) return false;
  }
  return true;
}

}  // namespace banyan::partitioner::detail
