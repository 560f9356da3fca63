#include <banyan/pipeline/validate.hpp>

#include "grid.hpp"

#include <array>

namespace banyan::pipeline {

namespace {

using detail::grid;

std::string where(int r, int i, const action& a) {
  return "rank " + std::to_string(r) + " step " + std::to_string(i) + " (" + to_string(a) + "): ";
}
violation at(int r, int i, const action& a, const std::string& what) { return {r, i, where(r, i, a) + what}; }
std::string name(int s, kind k, int mb) { return to_string(action{s, mb, k}); }

// Per (stage, microbatch) flags of what has executed so far; indexed by kind.
struct state {
  explicit state(int S, int m)
      : done{{{S, m, 0}, {S, m, 0}, {S, m, 0}, {S, m, 0}, {S, m, 0}, {S, m, 0}, {S, m, 0}, {S, m, 0}}} {}
  std::array<grid<char>, 8> done;
  grid<char>& operator[](kind k) { return done[static_cast<int>(k)]; }
  bool backward_done(int s, int k) { return (*this)[kind::B](s, k) || (*this)[kind::I](s, k); }
};

std::optional<violation> check_structure(const table& t) {
  const int S = t.stages, m = t.microbatches, R = t.num_ranks();
  if (S <= 0 || m <= 0 || R <= 0) return violation{-1, -1, "table is empty: need stages, microbatches and ranks > 0"};
  if (static_cast<int>(t.stage_rank.size()) != S)
    return violation{
        -1, -1, "placement lists " + std::to_string(t.stage_rank.size()) + " stages, table has " + std::to_string(S)};
  for (int s = 0; s < S; ++s)
    if (t.stage_rank[s] < 0 || t.stage_rank[s] >= R)
      return violation{-1, -1,
                       "stage " + std::to_string(s) + " is placed on rank " + std::to_string(t.stage_rank[s]) +
                           ", which does not exist"};
  std::array<grid<int>, 8> count{
      {{S, m, 0}, {S, m, 0}, {S, m, 0}, {S, m, 0}, {S, m, 0}, {S, m, 0}, {S, m, 0}, {S, m, 0}}};
  for (int r = 0; r < R; ++r) {
    for (int i = 0; i < static_cast<int>(t.ranks[r].size()); ++i) {
      const action& a = t.ranks[r][i];
      if (a.stage < 0 || a.stage >= S) return at(r, i, a, "stage out of range 0.." + std::to_string(S - 1));
      if (a.microbatch < 0 || a.microbatch >= m)
        return at(r, i, a, "microbatch out of range 0.." + std::to_string(m - 1));
      if (is_compute(a.op)) {
        if (t.stage_rank[a.stage] != r)
          return at(r, i, a,
                    "stage " + std::to_string(a.stage) + " is placed on rank " + std::to_string(t.stage_rank[a.stage]));
      } else {
        const int other = (a.op == kind::send_f || a.op == kind::recv_b) ? a.stage + 1 : a.stage - 1;
        if (t.stage_rank[a.stage] != r)
          return at(r, i, a,
                    "stage " + std::to_string(a.stage) + " is placed on rank " + std::to_string(t.stage_rank[a.stage]));
        if (other < 0 || other >= S) return at(r, i, a, "no neighbour stage " + std::to_string(other) + " to talk to");
        if (t.stage_rank[other] == r)
          return at(r, i, a, "stage " + std::to_string(other) + " is on this rank; no communication is needed");
        if (a.peer != -1 && a.peer != t.stage_rank[other])
          return at(r, i, a,
                    "peer is rank " + std::to_string(a.peer) + " but stage " + std::to_string(other) + " is on rank " +
                        std::to_string(t.stage_rank[other]));
      }
      int& n = count[static_cast<int>(a.op)](a.stage, a.microbatch);
      if (++n > 1) return at(r, i, a, "appears twice on this rank");
      // Order on the rank (the stage lives here, so its F/I are earlier in this same list).
      auto seen = [&](kind k) { return count[static_cast<int>(k)](a.stage, a.microbatch) > 0; };
      switch (a.op) {
        case kind::F: break;
        case kind::B:
        case kind::I:
          if (seen(a.op == kind::B ? kind::I : kind::B))
            return at(r, i, a, "backward already ran as " + std::string(a.op == kind::B ? "I" : "B"));
          if (!seen(kind::F)) return at(r, i, a, "backward before its forward " + name(a.stage, kind::F, a.microbatch));
          break;
        case kind::W:
          if (seen(kind::B)) return at(r, i, a, "W after a full B, which already computed the weight gradient");
          if (!seen(kind::I)) return at(r, i, a, "W before its backward-input " + name(a.stage, kind::I, a.microbatch));
          break;
        case kind::send_f:
          if (!seen(kind::F))
            return at(r, i, a, "sends the output of " + name(a.stage, kind::F, a.microbatch) + " before computing it");
          break;
        case kind::send_b:
          if (!seen(kind::B) && !seen(kind::I))
            return at(r, i, a,
                      "sends the gradient of microbatch " + std::to_string(a.microbatch) + " before its backward ran");
          break;
        case kind::recv_f:
        case kind::recv_b: break;
      }
    }
  }
  // Completeness, reported at the end of the owning rank.
  for (int s = 0; s < S; ++s) {
    const int r = t.stage_rank[s];
    const int end = static_cast<int>(t.ranks[r].size());
    const std::string head =
        "rank " + std::to_string(r) + " step " + std::to_string(end) + " (end): stage " + std::to_string(s);
    for (int k = 0; k < m; ++k) {
      if (!count[static_cast<int>(kind::F)](s, k))
        return violation{r, end, head + " never runs forward of microbatch " + std::to_string(k)};
      const bool b = count[static_cast<int>(kind::B)](s, k), in = count[static_cast<int>(kind::I)](s, k),
                 w = count[static_cast<int>(kind::W)](s, k);
      if (!b && !in) return violation{r, end, head + " never runs backward of microbatch " + std::to_string(k)};
      if (in && !w) return violation{r, end, head + " runs I but never W for microbatch " + std::to_string(k)};
    }
  }
  // Every send has its receive and back.
  if (t.has_comms()) {
    for (int s = 0; s < S; ++s)
      for (int k = 0; k < m; ++k) {
        auto has = [&](kind op, int st) { return count[static_cast<int>(op)](st, k) > 0; };
        if (s + 1 < S && t.stage_rank[s] != t.stage_rank[s + 1]) {
          if (!has(kind::send_f, s))
            return violation{t.stage_rank[s], -1,
                             "rank " + std::to_string(t.stage_rank[s]) + ": missing " + name(s, kind::send_f, k) +
                                 " for " + name(s + 1, kind::recv_f, k) + " on rank " +
                                 std::to_string(t.stage_rank[s + 1])};
          if (!has(kind::recv_f, s + 1))
            return violation{t.stage_rank[s + 1], -1,
                             "rank " + std::to_string(t.stage_rank[s + 1]) + ": missing " +
                                 name(s + 1, kind::recv_f, k) + " for " + name(s, kind::send_f, k) + " on rank " +
                                 std::to_string(t.stage_rank[s])};
        }
        if (s > 0 && t.stage_rank[s] != t.stage_rank[s - 1]) {
          if (!has(kind::send_b, s))
            return violation{t.stage_rank[s], -1,
                             "rank " + std::to_string(t.stage_rank[s]) + ": missing " + name(s, kind::send_b, k) +
                                 " for " + name(s - 1, kind::recv_b, k) + " on rank " +
                                 std::to_string(t.stage_rank[s - 1])};
          if (!has(kind::recv_b, s - 1))
            return violation{t.stage_rank[s - 1], -1,
                             "rank " + std::to_string(t.stage_rank[s - 1]) + ": missing " +
                                 name(s - 1, kind::recv_b, k) + " for " + name(s, kind::send_b, k) + " on rank " +
                                 std::to_string(t.stage_rank[s])};
        }
      }
  }
  return std::nullopt;
}

// What action `a` on rank r waits for; empty when it can run now. `local_missing` is set when the
// dependency is on this same rank but has not run yet (it can only come later: a self-deadlock).
struct wait_for {
  std::string what;
  int rank = -1;
};

wait_for dependency(const table& t, state& st, int r, const action& a, bool lowered) {
  const int s = a.stage, k = a.microbatch, S = t.stages;
  switch (a.op) {
    case kind::F:
      if (s == 0) return {};
      if (t.stage_rank[s - 1] == r || !lowered)
        return st[kind::F](s - 1, k) ? wait_for{} : wait_for{name(s - 1, kind::F, k), t.stage_rank[s - 1]};
      return st[kind::recv_f](s, k) ? wait_for{} : wait_for{name(s, kind::recv_f, k), r};
    case kind::B:
    case kind::I:
      if (!st[kind::F](s, k)) return {name(s, kind::F, k), r};
      if (s == S - 1) return {};
      if (t.stage_rank[s + 1] == r || !lowered)
        return st.backward_done(s + 1, k)
                   ? wait_for{}
                   : wait_for{name(s + 1, kind::B, k) + " or " + name(s + 1, kind::I, k), t.stage_rank[s + 1]};
      return st[kind::recv_b](s, k) ? wait_for{} : wait_for{name(s, kind::recv_b, k), r};
    case kind::W: return st[kind::I](s, k) ? wait_for{} : wait_for{name(s, kind::I, k), r};
    case kind::send_f: return st[kind::F](s, k) ? wait_for{} : wait_for{name(s, kind::F, k), r};
    case kind::send_b: return st.backward_done(s, k) ? wait_for{} : wait_for{name(s, kind::I, k), r};
    case kind::recv_f:
      return st[kind::send_f](s - 1, k) ? wait_for{} : wait_for{name(s - 1, kind::send_f, k), t.stage_rank[s - 1]};
    case kind::recv_b:
      return st[kind::send_b](s + 1, k) ? wait_for{} : wait_for{name(s + 1, kind::send_b, k), t.stage_rank[s + 1]};
  }
  return {};
}

}  // namespace

std::optional<violation> validate(const table& t) {
  if (auto v = check_structure(t)) return v;
  const int R = t.num_ranks();
  const bool lowered = t.has_comms();
  state st(t.stages, t.microbatches);
  std::vector<int> pc(R, 0);
  std::size_t total = 0, executed = 0;
  for (const auto& row : t.ranks) total += row.size();
  bool progress = true;
  while (executed < total && progress) {
    progress = false;
    for (int r = 0; r < R; ++r) {
      while (pc[r] < static_cast<int>(t.ranks[r].size())) {
        const action& a = t.ranks[r][pc[r]];
        wait_for w = dependency(t, st, r, a, lowered);
        if (!w.what.empty()) {
          if (w.rank == r) {  // it has not run on this rank yet, so it can only come later
            // A missing RECV in a lowered table is a lowering error, not a wait.
            return at(r, pc[r], a, "needs " + w.what + ", which does not run before it on this rank");
          }
          break;
        }
        st[a.op](a.stage, a.microbatch) = 1;
        ++pc[r];
        ++executed;
        progress = true;
      }
    }
  }
  if (executed == total) return std::nullopt;
  // Deadlock: every unfinished rank waits on another. Report the lowest such rank.
  for (int r = 0; r < R; ++r) {
    if (pc[r] >= static_cast<int>(t.ranks[r].size())) continue;
    const action& a = t.ranks[r][pc[r]];
    wait_for w = dependency(t, st, r, a, lowered);
    std::string other = "rank " + std::to_string(w.rank);
    if (w.rank >= 0 && pc[w.rank] < static_cast<int>(t.ranks[w.rank].size()))
      other += ", which is itself blocked at step " + std::to_string(pc[w.rank]) + " (" +
               to_string(t.ranks[w.rank][pc[w.rank]]) + ")";
    else other += ", which has finished without it";
    return at(r, pc[r], a, "deadlock: waits for " + w.what + " on " + other);
  }
  return std::nullopt;
}

}  // namespace banyan::pipeline
