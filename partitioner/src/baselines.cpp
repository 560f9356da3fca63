// Capacity-aware naive baselines. Each walks the components top-down and picks a preferred node
// (the next in turn, a hash of the path, a random one, or the node being filled); when that node
// has no room it probes the following nodes. If no node has room the component goes to the
// preferred node anyway and `finalize` labels the mapping infeasible: baselines never lie.
#include "detail.hpp"

#include <functional>
#include <string_view>

namespace banyan::partitioner::detail {
namespace {

class probing : public algorithm {
 public:
  using prefer_fn = std::function<node_id(const problem&, vertex_id, node_id last, rng&)>;
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
    node_id last = 0;
    for (std::size_t v = 0; v < t.size(); ++v) {
      const node_id want = prefer_(p, static_cast<vertex_id>(v), last, r);
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
  return std::make_unique<probing>("round-robin", [](const problem& p, vertex_id v, node_id last, rng&) {
    return v == 0 ? node_id{0} : static_cast<node_id>((last + 1) % static_cast<node_id>(p.k()));
  }, false);
}

std::unique_ptr<algorithm> make_hash() {
  return std::make_unique<probing>("hash", [](const problem& p, vertex_id v, node_id, rng&) {
    return static_cast<node_id>(fnv1a(p.t.name(v)) % p.k());
  }, false);
}

std::unique_ptr<algorithm> make_random() {
  return std::make_unique<probing>("random", [](const problem& p, vertex_id, node_id, rng& r) {
    return static_cast<node_id>(r.below(p.k()));
  }, false);
}

// Fills node 0 in top-down (breadth-first) order, then node 1, and so on.
std::unique_ptr<algorithm> make_greedy() {
  return std::make_unique<probing>("greedy", [](const problem&, vertex_id, node_id last, rng&) {
    return last;
  }, true);
}

}  // namespace banyan::partitioner::detail
