#include <banyan/pipeline/lower.hpp>

namespace banyan::pipeline {

table strip_comms(const table& t) {
  table out = t;
  for (auto& row : out.ranks) std::erase_if(row, [](const action& a) { return !is_compute(a.op); });
  return out;
}

table lower_comms(const table& compute_only) {
  table out = strip_comms(compute_only);
  const int S = out.stages;
  for (int r = 0; r < out.num_ranks(); ++r) {
    std::vector<action> row;
    row.reserve(out.ranks[r].size() * 3);
    for (const action& a : out.ranks[r]) {
      const int s = a.stage, k = a.microbatch;
      const bool fwd = a.op == kind::F, bwd = is_backward(a.op);
      if (fwd && s > 0 && out.stage_rank[s - 1] != r) row.push_back({s, k, kind::recv_f, out.stage_rank[s - 1]});
      if (bwd && s < S - 1 && out.stage_rank[s + 1] != r) row.push_back({s, k, kind::recv_b, out.stage_rank[s + 1]});
      row.push_back(a);
      if (fwd && s < S - 1 && out.stage_rank[s + 1] != r) row.push_back({s, k, kind::send_f, out.stage_rank[s + 1]});
      if (bwd && s > 0 && out.stage_rank[s - 1] != r) row.push_back({s, k, kind::send_b, out.stage_rank[s - 1]});
    }
    out.ranks[r] = std::move(row);
  }
  return out;
}

}  // namespace banyan::pipeline
