// Capacity-aware naive baselines. Each walks the components top-down and picks a preferred node
// (the next in turn, a hash of the path, a random one, the node being filled, or for
// round-robin-leaves the next in turn for a leaf and the parent's node for a composite); when that
// node has no room it probes the following nodes. If no node has room the component goes to the
// preferred node anyway and `finalize` labels the mapping infeasible: baselines never lie.
#include "detail.hpp"

#include <functional>
#include <string_view>

namespace banyan::partitioner::detail {
namespace {

// What a baseline may look at when it picks the preferred node of `v`.
struct turn {
  const problem& p;
  vertex_id v;
  node_id last;               // the previous component's preferred node (sticky: where it went)
  const mapping& placed;      // nodes of the components before v (so of v's parent)
  std::size_t leaves_before;  // components without children before v in top-down order
  bool leaf;                  // v has no children
  rng& r;
};

class probing : public algorithm {
 public:
  using prefer_fn = std::function<node_id(const turn&)>;
  probing(std::string name, prefer_fn prefer, bool sticky)
      : name_(std::move(name)), prefer_(std::move(prefer)), sticky_(sticky) {}
  std::string name() const override { return name_; }

  solution solve(const problem& p, const solve_options& o) override {
    const auto& t = p.t;
    const auto k = static_cast<node_id>(p.k());
    rng r(o.seed);
    room free(p);
    solution s;
    s.map.assign(t.size(), 0);
    std::vector<bool> leaf(t.size(), true);
    for (std::size_t v = 1; v < t.size(); ++v) leaf[static_cast<std::size_t>(t.parent[v])] = false;
    node_id last = 0;
    std::size_t leaves_before = 0;
    for (std::size_t v = 0; v < t.size(); ++v) {
      const node_id want = prefer_({p, static_cast<vertex_id>(v), last, s.map, leaves_before, leaf[v], r});
      leaves_before += leaf[v] ? 1 : 0;
      node_id got = want;
      for (node_id i = 0; i < k; ++i) {
        const node_id a = (want + i) % k;
        if (free.fits(p, a, t.cpu[v], mem_of(t, static_cast<vertex_id>(v)))) {
          got = a;
          break;
        }
      }
      free.take(got, t.cpu[v], mem_of(t, static_cast<vertex_id>(v)));
      s.map[v] = got;
      last = sticky_ ? got : want;
    }
    s.status = solve_status::feasible;  // finalize() downgrades it when over capacity
    return s;
  }

 private:
  std::string name_;
  prefer_fn prefer_;
  bool sticky_;
};

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

std::unique_ptr<algorithm> make_round_robin() {
  return std::make_unique<probing>(
      "round-robin",
      [](const turn& t) {
        return t.v == 0 ? node_id{0} : static_cast<node_id>((t.last + 1) % static_cast<node_id>(t.p.k()));
      },
      false);
}

// Deals out whole subtrees rather than vertices: the leaves go to nodes 0, 1, 2, ... in turn
// (top-down order) and every composite stays on its parent's node (the root on node 0), so each
// leaf is a subtree alone on its node. A poor start for a live re-partitioning that moves whole
// subtrees (tools/bench/eda_reconfigure.py); `round-robin` splits every parent from its children.
std::unique_ptr<algorithm> make_round_robin_leaves() {
  return std::make_unique<probing>(
      "round-robin-leaves",
      [](const turn& t) {
        if (t.leaf) return static_cast<node_id>(t.leaves_before % t.p.k());
        return t.v == 0 ? node_id{0} : t.placed[static_cast<std::size_t>(t.p.t.parent[static_cast<std::size_t>(t.v)])];
      },
      false);
}

std::unique_ptr<algorithm> make_hash() {
  return std::make_unique<probing>(
      "hash", [](const turn& t) { return static_cast<node_id>(fnv1a(t.p.t.name(t.v)) % t.p.k()); }, false);
}

std::unique_ptr<algorithm> make_random() {
  return std::make_unique<probing>(
      "random", [](const turn& t) { return static_cast<node_id>(t.r.below(t.p.k())); }, false);
}

// Fills node 0 in top-down (breadth-first) order, then node 1, and so on.
std::unique_ptr<algorithm> make_greedy() {
  return std::make_unique<probing>(
      "greedy", [](const turn& t) { return t.last; }, true);
}

}  // namespace banyan::partitioner::detail
