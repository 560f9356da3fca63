#include <banyan/pipeline/greedy.hpp>

#include "grid.hpp"

#include <algorithm>
#include <deque>
#include <limits>

namespace banyan::pipeline {

namespace {
using detail::grid;
constexpr double never = std::numeric_limits<double>::infinity();

int stage_of(placement place, int p, int chunk, int r) {
  return chunk * p + ((place == placement::vshape && chunk % 2 == 1) ? p - 1 - r : r);
}
}  // namespace

result<table> greedy_schedule(int p, int m, const std::vector<stage_cost>& stage, const link_model& link,
                              double mem_cap, const greedy_policy& pol) {
  const int v = pol.v, S = p * v;
  if (static_cast<int>(stage.size()) != S)
    return error{errc::invalid, "greedy: need " + std::to_string(S) + " stage costs"};
  table t;
  t.stages = S;
  t.microbatches = m;
  t.stage_rank.assign(S, 0);
  t.ranks.assign(p, {});
  std::vector<std::vector<int>> stages_of(p, std::vector<int>(v));
  for (int r = 0; r < p; ++r)
    for (int c = 0; c < v; ++c) t.stage_rank[stages_of[r][c] = stage_of(pol.place, p, c, r)] = r;
  auto transfer = [&](int from, int to, int s_bytes) {
    return t.stage_rank[from] == t.stage_rank[to]
               ? 0.0
               : link.latency + (link.bandwidth > 0 ? stage[s_bytes].comm_bytes / link.bandwidth : 0.0);
  };
  // Ready times of inputs (never = not produced yet).
  grid<double> f_in(S, m, never), b_in(S, m, never), f_end(S, m, never);
  for (int k = 0; k < m; ++k) f_in(0, k) = 0, b_in(S - 1, k) = 0;  // inputs and loss need no message
  std::vector<double> clock(p, 0), mem(p, 0);
  std::vector<std::vector<int>> nf(p, std::vector<int>(v, 0)), nb(p, std::vector<int>(v, 0));
  std::vector<std::vector<std::deque<int>>> pend(p, std::vector<std::deque<int>>(v));
  std::vector<int> inflight(p, 0);
  std::vector<char> blocked(p, 0);  // waits for a rank tied with it or for an unknown event
  for (int s = 0; s < S; ++s) mem[t.stage_rank[s]] += stage[s].static_mem;
  for (int r = 0; r < p; ++r) {
    double need = 0;
    for (int c = 0; c < v; ++c) need = std::max(need, stage[stages_of[r][c]].mem);
    if (mem_cap > 0 && mem[r] + need > mem_cap + 1e-9)
      return error{errc::infeasible, "memory cap " + std::to_string(mem_cap) + " is below what rank " +
                                         std::to_string(r) + " needs for one microbatch (" +
                                         std::to_string(mem[r] + need) + ")"};
  }
  const std::size_t total = static_cast<std::size_t>(p) * v * m * (pol.split_backward ? 3 : 2);
  std::size_t done = 0;
  while (done < total) {
    // The rank with the earliest clock decides; everything finishing by then is already known.
    int r = -1;
    for (int q = 0; q < p; ++q)
      if (!blocked[q] && (r < 0 || clock[q] < clock[r])) r = q;
    if (r < 0)
      return error{errc::infeasible, "greedy: every rank waits on another (memory cap or in-flight limit too tight)"};
    const double now = clock[r];
    double next_event = never;
    int best_f = -1, best_b = -1, best_w = -1;
    const int limit = r < static_cast<int>(pol.max_inflight.size()) ? pol.max_inflight[r] : 0;
    for (int cc = 0; cc < v; ++cc) {
      const int c = pol.deep_chunk_first ? v - 1 - cc : cc;
      const int s = stages_of[r][c];
      if (nf[r][c] < m) {
        const double ready = f_in(s, nf[r][c]);
        const bool mem_ok = mem_cap <= 0 || mem[r] + stage[s].mem <= mem_cap + 1e-9;
        const bool depth_ok = limit <= 0 || inflight[r] < limit;
        if (ready <= now && mem_ok && depth_ok) {
          if (best_f < 0) best_f = c;
        } else if (ready > now && mem_ok && depth_ok) {
          next_event = std::min(next_event, ready);
        }
      }
      if (nb[r][c] < nf[r][c]) {
        const int k = nb[r][c];
        const double ready = std::max(f_end(s, k), b_in(s, k));
        if (ready <= now) {
          // Prefer the backward of the later stage: it unblocks the longer chain.
          if (best_b < 0 || s > stages_of[r][best_b]) best_b = c;
        } else {
          next_event = std::min(next_event, ready);
        }
      }
      if (!pend[r][c].empty() && best_w < 0) best_w = c;
    }
    const bool fwd_first = r < static_cast<int>(pol.prefer_forward.size()) && pol.prefer_forward[r];
    const int delay = r < static_cast<int>(pol.w_delay.size()) ? pol.w_delay[r] : -1;
    kind op;
    int c;
    int pending_total = 0;
    for (int q = 0; q < v; ++q) pending_total += static_cast<int>(pend[r][q].size());
    // W passes fill idle time, unless more than `delay` of them are pending: then they go before F.
    const bool w_urgent = best_w >= 0 && delay >= 0 && pending_total > delay;
    if (best_b >= 0 && (!fwd_first || best_f < 0)) {
      op = pol.split_backward ? kind::I : kind::B, c = best_b;
    } else if (best_f >= 0 && !w_urgent) {
      op = kind::F, c = best_f;
    } else if (best_w >= 0) {
      op = kind::W, c = best_w;
    } else {
      // Idle until the next known arrival, but not past another rank's clock: what that rank does
      // next may feed this one. A rank tied at `now` acts first; this one waits for it.
      bool tied = false;
      for (int q = 0; q < p; ++q) {
        if (q == r || blocked[q]) continue;
        if (clock[q] == now) tied = true;
        else next_event = std::min(next_event, clock[q]);
      }
      if (tied || next_event == never) blocked[r] = 1;
      else clock[r] = next_event;
      continue;
    }
    const int s = stages_of[r][c];
    double dur = 0;
    int k = 0;
    switch (op) {
      case kind::F: {
        k = nf[r][c]++;
        dur = stage[s].t_f;
        mem[r] += stage[s].mem;
        ++inflight[r];
        f_end(s, k) = now + dur;
        if (s + 1 < S) f_in(s + 1, k) = now + dur + transfer(s, s + 1, s);
        break;
      }
      case kind::B:
      case kind::I: {
        k = nb[r][c]++;
        dur = op == kind::B ? stage[s].t_b : stage[s].t_i;
        if (s > 0) b_in(s - 1, k) = now + dur + transfer(s, s - 1, s - 1);
        --inflight[r];
        if (op == kind::B) mem[r] -= stage[s].mem;
        else pend[r][c].push_back(k);
        break;
      }
      case kind::W: {
        k = pend[r][c].front();
        pend[r][c].pop_front();
        dur = stage[s].t_w;
        mem[r] -= stage[s].mem;
        break;
      }
      default: break;
    }
    t.ranks[r].push_back({s, k, op});
    std::fill(blocked.begin(), blocked.end(), 0);
    clock[r] = now + dur;
    ++done;
  }
  return t;
}

}  // namespace banyan::pipeline
