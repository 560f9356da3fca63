// METIS k-way baseline: the tree as a graph, vertex weights = loads, edge weights = traffic,
// target part weights proportional to node capacities. METIS knows neither link costs nor hard
// capacities (it balances within `ubvec`), so its mapping can be over capacity; `finalize` says so.
#include "detail.hpp"

#include <metis.h>
#include <unistd.h>

#include <cstdio>

#include <algorithm>
#include <cmath>

namespace banyan::partitioner::detail {
namespace {

class metis_algorithm : public algorithm {
 public:
  std::string name() const override { return "metis"; }

  solution solve(const problem& p, const solve_options& o) override {
    const auto& t = p.t;
    const std::size_t n = t.size(), k = p.k();
    solution s;
    if (k == 1 || n == 1) {
      s.map.assign(n, 0);
      s.status = solve_status::feasible;
      return s;
    }
    // Integer weights: METIS takes idx_t (32-bit here); scale totals to ~1e7 to keep precision
    // without overflow.
    auto scaled = [](const std::vector<double>& x, bool at_least_one) {
      double total = 0;
      for (double v : x) total += v;
      const double f = total > 0 ? 1e7 / total : 1;
      std::vector<idx_t> out(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) {
        out[i] = static_cast<idx_t>(std::llround(x[i] * f));
        if (at_least_one) out[i] = std::max<idx_t>(out[i], 1);
      }
      return out;
    };
    const bool mem = !p.memory_capacity.empty();
    idx_t ncon = mem ? 2 : 1;
    std::vector<idx_t> cpu = scaled(t.cpu, false), memw;
    if (mem) memw = scaled(t.memory, false);
    std::vector<idx_t> vwgt(n * ncon);
    for (std::size_t v = 0; v < n; ++v) {
      vwgt[v * ncon] = cpu[v];
      if (mem) vwgt[v * ncon + 1] = memw[v];
    }
    std::vector<double> w(t.weight.begin() + 1, t.weight.end());
    std::vector<idx_t> ew = scaled(w, true);
    std::vector<idx_t> xadj(n + 1, 0), adjncy, adjwgt;
    adjncy.reserve(2 * (n - 1));
    adjwgt.reserve(2 * (n - 1));
    const children ch(t);
    for (std::size_t v = 0; v < n; ++v) {
      if (v > 0) {
        adjncy.push_back(t.parent[v]);
        adjwgt.push_back(ew[v - 1]);
      }
      for (auto it = ch.begin(static_cast<vertex_id>(v)); it != ch.end(static_cast<vertex_id>(v)); ++it) {
        adjncy.push_back(*it);
        adjwgt.push_back(ew[*it - 1]);
      }
      xadj[v + 1] = static_cast<idx_t>(adjncy.size());
    }
    std::vector<real_t> tpwgts(k * ncon);
    double cap = 0, mcap = 0;
    for (std::size_t i = 0; i < k; ++i) {
      cap += p.cpu_capacity[i];
      if (mem) mcap += std::isfinite(p.memory_capacity[i]) ? p.memory_capacity[i] : 0;
    }
    for (std::size_t i = 0; i < k; ++i) {
      tpwgts[i * ncon] = static_cast<real_t>(p.cpu_capacity[i] / cap);
      if (mem)
        tpwgts[i * ncon + 1] = static_cast<real_t>(
            mcap > 0 && std::isfinite(p.memory_capacity[i]) ? p.memory_capacity[i] / mcap : 1.0 / k);
    }
    // METIS requires each constraint's targets to sum to 1.
    for (idx_t c = 0; c < ncon; ++c) {
      real_t sum = 0;
      for (std::size_t i = 0; i < k; ++i) sum += tpwgts[i * ncon + c];
      for (std::size_t i = 0; i < k; ++i) tpwgts[i * ncon + c] /= sum;
    }
    std::vector<real_t> ubvec(ncon, 1.03f);
    idx_t options[METIS_NOPTIONS];
    METIS_SetDefaultOptions(options);
    options[METIS_OPTION_SEED] = static_cast<idx_t>(o.seed & 0x7fffffff);
    options[METIS_OPTION_NUMBERING] = 0;
    idx_t nv = static_cast<idx_t>(n), np = static_cast<idx_t>(k), objval = 0;
    std::vector<idx_t> part(n, 0);
    // METIS prints diagnostics ("Cannot bisect a graph with 0 vertices") to stdout on tiny graphs;
    // silence stdout around the call so that a tool's JSON output stays parseable.
    std::fflush(stdout);
    const int saved = dup(STDOUT_FILENO);
    if (FILE* null = std::fopen("/dev/null", "w")) {
      dup2(fileno(null), STDOUT_FILENO);
      std::fclose(null);
    }
    const int rc = METIS_PartGraphKway(&nv, &ncon, xadj.data(), adjncy.data(), vwgt.data(), nullptr, adjwgt.data(), &np,
                                       tpwgts.data(), ubvec.data(), options, &objval, part.data());
    std::fflush(stdout);
    if (saved >= 0) {
      dup2(saved, STDOUT_FILENO);
      close(saved);
    }
    if (rc != METIS_OK) {
      s.status = solve_status::unknown;
      s.message = "METIS_PartGraphKway failed (code " + std::to_string(rc) + ")";
      return s;
    }
    s.map.assign(part.begin(), part.end());
    s.status = solve_status::feasible;
    return s;
  }
};

}  // namespace

std::unique_ptr<algorithm> make_metis() { return std::make_unique<metis_algorithm>(); }

}  // namespace banyan::partitioner::detail
