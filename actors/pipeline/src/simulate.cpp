#include <banyan/pipeline/simulate.hpp>

#include <banyan/pipeline/lower.hpp>
#include <banyan/pipeline/validate.hpp>

#include "grid.hpp"

#include <algorithm>
#include <array>
#include <limits>

namespace banyan::pipeline {

double sim_result::max_peak_memory() const {
  return peak_memory.empty() ? 0.0 : *std::max_element(peak_memory.begin(), peak_memory.end());
}

namespace {

using detail::grid;
constexpr double not_yet = -1;  // completion times are >= 0

struct times {
  times(int S, int m)
      : f(S, m, not_yet), bwd(S, m, not_yet), i(S, m, not_yet), sent_f(S, m, not_yet), sent_b(S, m, not_yet) {}
  grid<double> f, bwd, i, sent_f, sent_b;  // bwd: end of B or I; sent_*: arrival time of the message
};

}  // namespace

result<sim_result> simulate(const table& input, const std::vector<stage_cost>& stage, const link_model& link,
                            const sim_options& opt) {
  if (static_cast<int>(stage.size()) != input.stages)
    return error{errc::invalid, "costs give " + std::to_string(stage.size()) + " stages, the table has " +
                                    std::to_string(input.stages)};
  if (opt.validate)
    if (auto v = validate(input)) return error{errc::invalid, v->message};
  const table lowered = input.has_comms() ? input : lower_comms(input);
  const table& t = lowered;
  const int R = t.num_ranks(), S = t.stages;
  times tm(S, t.microbatches);
  sim_result out;
  out.busy.assign(R, 0);
  out.start.assign(R, std::numeric_limits<double>::infinity());
  out.end.assign(R, 0);
  out.peak_memory.assign(R, 0);
  std::vector<double> clock(R, 0), mem(R, 0);
  for (int s = 0; s < S; ++s) mem[t.stage_rank[s]] += stage[s].static_mem;
  for (int r = 0; r < R; ++r) out.peak_memory[r] = mem[r];
  auto transfer = [&](int s) {
    return link.latency + (link.bandwidth > 0 ? stage[s].comm_bytes / link.bandwidth : 0.0);
  };

  std::vector<std::size_t> pc(R, 0);
  std::size_t total = 0, executed = 0;
  for (const auto& row : t.ranks) total += row.size();
  bool progress = true;
  while (executed < total && progress) {
    progress = false;
    for (int r = 0; r < R; ++r) {
      while (pc[r] < t.ranks[r].size()) {
        const action& a = t.ranks[r][pc[r]];
        const int s = a.stage, k = a.microbatch;
        const stage_cost& c = stage[s];
        double ready = clock[r], duration = 0;
        bool can = true;
        switch (a.op) {
          case kind::F:
            if (s > 0 && t.stage_rank[s - 1] == r)
              can = tm.f(s - 1, k) != not_yet, ready = std::max(ready, tm.f(s - 1, k));
            duration = c.t_f;
            break;
          case kind::B:
          case kind::I:
            can = tm.f(s, k) != not_yet;
            if (s + 1 < S && t.stage_rank[s + 1] == r)
              can = can && tm.bwd(s + 1, k) != not_yet, ready = std::max(ready, tm.bwd(s + 1, k));
            duration = a.op == kind::B ? c.t_b : c.t_i;
            break;
          case kind::W:
            can = tm.i(s, k) != not_yet;
            duration = c.t_w;
            break;
          case kind::send_f: can = tm.f(s, k) != not_yet; break;
          case kind::send_b: can = tm.bwd(s, k) != not_yet; break;
          case kind::recv_f: can = tm.sent_f(s - 1, k) != not_yet, ready = std::max(ready, tm.sent_f(s - 1, k)); break;
          case kind::recv_b: can = tm.sent_b(s + 1, k) != not_yet, ready = std::max(ready, tm.sent_b(s + 1, k)); break;
        }
        if (!can) break;
        const double start = ready, end = ready + duration;
        switch (a.op) {
          case kind::F:
            tm.f(s, k) = end;
            mem[r] += c.mem;
            out.peak_memory[r] = std::max(out.peak_memory[r], mem[r]);
            break;
          case kind::B: tm.bwd(s, k) = end, mem[r] -= c.mem; break;
          case kind::I: tm.bwd(s, k) = tm.i(s, k) = end; break;
          case kind::W: mem[r] -= c.mem; break;
          case kind::send_f: tm.sent_f(s, k) = start + transfer(s); break;
          case kind::send_b: tm.sent_b(s, k) = start + transfer(s - 1); break;
          case kind::recv_f:
          case kind::recv_b: break;
        }
        if (is_compute(a.op)) {
          out.busy[r] += duration;
          out.start[r] = std::min(out.start[r], start);
          out.end[r] = std::max(out.end[r], end);
        }
        if (opt.record_events)
          out.events.push_back({r, a, a.op == kind::recv_f || a.op == kind::recv_b ? clock[r] : start, end});
        clock[r] = end;
        ++pc[r];
        ++executed;
        progress = true;
      }
    }
  }
  if (executed < total) {
    for (int r = 0; r < R; ++r)
      if (pc[r] < t.ranks[r].size())
        return error{errc::deadlock, "rank " + std::to_string(r) + " step " + std::to_string(pc[r]) + " (" +
                                         to_string(t.ranks[r][pc[r]]) +
                                         "): deadlock: the schedule cannot make progress"};
  }
  double busy_total = 0, idle = 0, span_idle = 0;
  for (int r = 0; r < R; ++r) out.makespan = std::max(out.makespan, out.end[r]);
  for (int r = 0; r < R; ++r) {
    if (out.busy[r] == 0) out.start[r] = 0;
    busy_total += out.busy[r];
    idle += out.makespan - out.busy[r];
    span_idle += out.end[r] - out.start[r] - out.busy[r];
  }
  out.bubble_ratio = busy_total > 0 ? idle / busy_total : 0;
  out.span_bubble_ratio = busy_total > 0 ? span_idle / busy_total : 0;
  return out;
}

}  // namespace banyan::pipeline
