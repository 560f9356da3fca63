// The family sweep (partition_sweep.hpp). Instance i draws every dimension from its own seeded
// stream (shape cycles so each shape gets the same count); each result is judged against the
// optimum that smt or mip proves (both warm-started from bottom-up), otherwise against the best
// cost any algorithm found. Tables group instances by each dimension in turn.
#include "partition_sweep.hpp"

#include "banyan/partitioner/algorithm.hpp"
#include "banyan/partitioner/families.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <vector>

using namespace banyan::partitioner;

namespace {

struct outcome {
  family_options f;
  bool proven = false, infeasible = false;
  double reference = NAN, bu = NAN, bound = 0, metis = NAN, greedy = NAN, bu_seconds = 0;
};

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

double ratio(double cost, double ref) {
  if (std::isnan(cost)) return NAN;
  if (ref > 0) return cost / ref;
  return cost <= 0 ? 1.0 : INFINITY;
}

family_options draw(std::uint64_t seed, std::size_t i, std::size_t components) {
  const auto shapes = all_family_shapes();
  const family_shape shape = shapes[i % shapes.size()];
  return random_family(seed, shape, shape == family_shape::star ? std::max<std::size_t>(components, 31) : components);
}

bool ok(const solution& s) { return s.status == solve_status::optimal || s.status == solve_status::feasible; }

void table(const char* title, const std::vector<outcome>& rows,
           const std::function<std::string(const family_options&)>& key) {
  std::map<std::string, std::vector<const outcome*>> groups;
  for (const auto& r : rows) groups[key(r.f)].push_back(&r);
  std::printf("\n%-16s %5s %6s %9s %9s %5s %10s %10s %8s %8s %10s\n", title, "inst", "proven", "bu.med", "bu.worst",
              ">5%", "best.med", "best.worst", ">metis", ">greedy", "bu/bound");
  for (const auto& [name, g] : groups) {
    std::vector<double> rs, gaps, vs_best;
    int proven = 0, over5 = 0, above_metis = 0, above_greedy = 0, n = 0;
    for (const outcome* r : g) {
      if (r->infeasible) continue;
      ++n;
      if (!r->proven) continue;
      ++proven;
      const double q = ratio(r->bu, r->reference);
      rs.push_back(q);
      if (q > 1.05) ++over5;
    }
    for (const outcome* r : g) {
      if (r->infeasible) continue;
      if (!std::isnan(r->metis) && r->bu > r->metis * (1 + 1e-9)) ++above_metis;
      if (!std::isnan(r->greedy) && r->bu > r->greedy * (1 + 1e-9)) ++above_greedy;
      if (r->bound > 0) gaps.push_back(r->bu / r->bound);
      vs_best.push_back(ratio(r->bu, r->reference));
    }
    std::printf("%-16s %5d %6d %9.4f %9.4f %5d %10.4f %10.4f %8d %8d %10.3f\n", name.c_str(), n, proven, median(rs),
                rs.empty() ? NAN : *std::max_element(rs.begin(), rs.end()), over5, median(vs_best),
                vs_best.empty() ? NAN : *std::max_element(vs_best.begin(), vs_best.end()), above_metis, above_greedy,
                median(gaps));
  }
}

}  // namespace

int run_family_sweep(const family_sweep_options& o) {
  std::vector<outcome> rows;
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t i = 0; i < o.instances; ++i) {
    outcome r;
    r.f = draw(o.first_seed + i, i, o.components);
    auto p = generate_family(r.f);
    if (!p) {
      std::fprintf(stderr, "%s: %s\n", describe(r.f).c_str(), p.error().message.c_str());
      return 1;
    }
    const solve_options so{.timeout_s = o.exact_time_limit_s, .seed = r.f.seed};
    const solution bu = *solve("bottom-up", *p, so);
    const solution me = *solve("metis", *p, so);
    const solution gr = *solve("greedy", *p, so);
    r.bu_seconds = bu.seconds;
    if (ok(me)) r.metis = me.cost;
    if (ok(gr)) r.greedy = gr.cost;
    r.bound = bu.lower_bound;
    double best = INFINITY;
    for (const auto* s : {&bu, &me, &gr})
      if (ok(*s)) best = std::min(best, s->cost);
    const mapping* warm = ok(bu) ? &bu.map : nullptr;
    std::string proof = "best-known";
    for (const char* e : {"smt", "mip"}) {
      const solution ex = *solve(e, *p, {.timeout_s = o.exact_time_limit_s, .seed = r.f.seed, .warm_start = warm});
      r.bound = std::max(r.bound, ex.lower_bound);
      if (ok(ex)) best = std::min(best, ex.cost);
      if (ex.status == solve_status::optimal) {
        r.proven = true;
        proof = e;
        break;
      }
      if (ex.status == solve_status::infeasible && ex.map.empty()) {
        r.infeasible = true;
        proof = std::string(e) + ":infeasible";
        break;
      }
    }
    r.reference = best;
    if (ok(bu)) r.bu = bu.cost;
    else if (!r.infeasible) r.bu = INFINITY;  // bottom-up found nothing where a mapping exists
    std::printf("%3zu %-70s bu %-10.4g ref %-10.4g (%s) ratio %.4f bound %.4g metis %.4g greedy %.4g %.3fs\n", i,
                describe(r.f).c_str(), r.bu, r.reference, proof.c_str(), ratio(r.bu, r.reference), r.bound, r.metis,
                r.greedy, r.bu_seconds);
    std::fflush(stdout);
    out.push_back({{"instance", describe(r.f)},
                   {"proven", r.proven},
                   {"infeasible", r.infeasible},
                   {"bottom_up", std::isfinite(r.bu) ? r.bu : -1},
                   {"reference", std::isfinite(r.reference) ? r.reference : -1},
                   {"lower_bound", r.bound},
                   {"metis", std::isnan(r.metis) ? -1 : r.metis},
                   {"greedy", std::isnan(r.greedy) ? -1 : r.greedy},
                   {"seconds", r.bu_seconds}});
    rows.push_back(r);
  }
  table("shape", rows, [](const family_options& f) { return std::string(to_string(f.shape)); });
  table("traffic", rows, [](const family_options& f) { return std::string(to_string(f.traffic)); });
  table("load scale", rows, [](const family_options& f) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", f.load_scale);
    return std::string(b);
  });
  table("slack", rows, [](const family_options& f) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", f.slack);
    return std::string(b);
  });
  table("capacities", rows, [](const family_options& f) { return std::string(f.unequal ? "unequal" : "equal"); });
  table("k", rows, [](const family_options& f) { return std::to_string(f.nodes); });
  table("links", rows, [](const family_options& f) { return std::string(to_string(f.links)); });
  table("order", rows, [](const family_options& f) { return std::string(f.shuffled ? "shuffled" : "top-down"); });
  table("all", rows, [](const family_options&) { return std::string("all"); });
  if (!o.results.empty()) std::ofstream(o.results) << out.dump(1) << "\n";
  return 0;
}
