#include "detail.hpp"

#include <algorithm>
#include <limits>

namespace banyan::partitioner {

const char* to_string(solve_status s) {
  switch (s) {
    case solve_status::optimal: return "optimal";
    case solve_status::feasible: return "feasible";
    case solve_status::unknown: return "unknown";
    case solve_status::infeasible: return "infeasible";
  }
  return "?";
}

std::vector<std::string> algorithm_names() {
  return {"bottom-up", "smt", "mip", "metis", "greedy", "round-robin", "round-robin-leaves", "hash", "random"};
}

result<std::unique_ptr<algorithm>> make_algorithm(std::string_view name) {
  using namespace detail;
  if (name == "bottom-up") return make_bottom_up();
  if (name == "smt") return make_smt();
  if (name == "mip") return make_mip();
  if (name == "metis") return make_metis();
  if (name == "greedy") return make_greedy();
  if (name == "round-robin") return make_round_robin();
  if (name == "round-robin-leaves") return make_round_robin_leaves();
  if (name == "hash") return make_hash();
  if (name == "random") return make_random();
  std::string known;
  for (const auto& n : algorithm_names()) known += (known.empty() ? "" : ", ") + n;
  return error{errc::unknown_algorithm, "unknown algorithm `" + std::string(name) + "` (known: " + known + ")"};
}

void finalize(const problem& p, solution& s) {
  if (s.map.empty()) {
    s.cost = std::numeric_limits<double>::quiet_NaN();
    if (s.status != solve_status::infeasible) s.status = solve_status::unknown;
    return;
  }
  const evaluation e = evaluate(p, s.map);
  s.cost = e.cost;
  if (!e.feasible) {
    s.status = solve_status::infeasible;
    s.message = "over capacity: " + e.violation + (s.message.empty() ? "" : "; " + s.message);
  } else if (s.status == solve_status::unknown || s.status == solve_status::infeasible) {
    s.status = solve_status::feasible;
  }
  if (s.status == solve_status::optimal) s.lower_bound = s.cost;
}

result<solution> solve(std::string_view name, const problem& p, const solve_options& o) {
  auto a = make_algorithm(name);
  if (!a) return a.error();
  detail::stopwatch w;
  solve_options with_bound = o;
  with_bound.known_lower_bound = std::max(o.known_lower_bound, proven_lower_bound(p));
  solution s = (*a)->solve(p, with_bound);
  s.lower_bound = std::max(s.lower_bound, with_bound.known_lower_bound);
  s.seconds = w.seconds();
  s.algorithm = std::string(name);
  finalize(p, s);
  return s;
}

}  // namespace banyan::partitioner
