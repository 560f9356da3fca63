#include "dsl_ast.hpp"

#include <banyan/pipeline/validate.hpp>

#include <algorithm>
#include <deque>
#include <optional>

namespace banyan::pipeline {

namespace {

using detail::env;
using detail::eval;

struct unit {
  int chunk, mb;
};

// What one rank has issued so far. Per chunk, forwards and backwards are issued in ascending
// microbatch order, so "issued" is a counter; W follows the order of the I's (FIFO).
struct rank_state {
  std::vector<int> next_f, next_b;
  // Everything before these positions of the forward and backward unit orders is issued (the counters
  // only grow), so finding the next unit is amortised O(1) and compiling is linear in m.
  std::size_t f_cursor = 0, b_cursor = 0;
  std::vector<std::deque<std::pair<long, int>>> pending_w;  // (issue sequence, microbatch) per chunk
  long seq = 0;
  int consumed = 0;
};

struct compiler {
  const program& prog;
  int p, m, v, r;
  const std::vector<unit>& forder;
  const std::vector<unit>& border;
  env vars;
  std::vector<std::pair<kind, unit>> out;
  std::optional<error> failure;  // a hard error (bad expression, chunk out of range)

  std::string where(const seq_item& it) const {
    return prog.source + ":" + std::to_string(it.line) + ":" + std::to_string(it.col) + ": ";
  }

  // Runs one op; false when it cannot run now (nothing left, or its forward not issued yet).
  bool op(const seq_item& it, rank_state& st) {
    int chunk = -1;
    if (it.chunk) {
      auto c = eval(it.chunk, vars, prog.source);
      if (!c) return failure = c.error(), false;
      if (*c < 0 || *c >= v)
        return failure = error{errc::invalid, where(it) + "rank " + std::to_string(r) + ": chunk " + std::to_string(*c) + " out of range 0.." + std::to_string(v - 1)}, false;
      chunk = static_cast<int>(*c);
    }
    switch (it.op) {
      case kind::F: {
        if (chunk < 0) {
          while (st.f_cursor < forder.size() && forder[st.f_cursor].mb < st.next_f[forder[st.f_cursor].chunk]) ++st.f_cursor;
          if (st.f_cursor < forder.size()) chunk = forder[st.f_cursor].chunk;
        }
        if (chunk < 0 || st.next_f[chunk] >= m) return false;
        out.push_back({kind::F, {chunk, st.next_f[chunk]++}});
        break;
      }
      case kind::B:
      case kind::I: {
        if (chunk < 0) {
          while (st.b_cursor < border.size() && border[st.b_cursor].mb < st.next_b[border[st.b_cursor].chunk]) ++st.b_cursor;
          if (st.b_cursor < border.size()) chunk = border[st.b_cursor].chunk;
        }
        if (chunk < 0 || st.next_b[chunk] >= m || st.next_b[chunk] >= st.next_f[chunk]) return false;
        const int mb = st.next_b[chunk]++;
        out.push_back({it.op, {chunk, mb}});
        if (it.op == kind::I) st.pending_w[chunk].push_back({st.seq++, mb});
        break;
      }
      case kind::W: {
        if (chunk < 0) {
          long best = -1;
          for (int c = 0; c < v; ++c)
            if (!st.pending_w[c].empty() && (best < 0 || st.pending_w[c].front().first < best))
              best = st.pending_w[c].front().first, chunk = c;
        }
        if (chunk < 0 || st.pending_w[chunk].empty()) return false;
        out.push_back({kind::W, {chunk, st.pending_w[chunk].front().second}});
        st.pending_w[chunk].pop_front();
        break;
      }
      default: return false;
    }
    ++st.consumed;
    return true;
  }

  bool once(const seq_item& it, rank_state& st) {
    if (!it.is_group) return op(it, st);
    for (const auto& child : it.children)
      if (!item(child, st)) return false;
    return true;
  }

  // All or nothing: on failure the state and output are rolled back.
  bool attempt(const seq_item& it, rank_state& st) {
    rank_state saved = st;
    const std::size_t n = out.size();
    if (once(it, st)) return true;
    st = std::move(saved);
    out.resize(n);
    return false;
  }

  // A top-level item: with its repeat, all or nothing; one that cannot run is skipped.
  void top(const seq_item& it, rank_state& st) {
    rank_state saved = st;
    const std::size_t n = out.size();
    if (item(it, st) || failure) return;
    st = std::move(saved);
    out.resize(n);
  }

  bool item(const seq_item& it, rank_state& st) {
    if (failure) return false;
    switch (it.rep) {
      case seq_item::repeat::once: return once(it, st);
      case seq_item::repeat::star:
        while (true) {
          const int before = st.consumed;
          if (!attempt(it, st) || st.consumed == before) break;
        }
        return !failure;
      case seq_item::repeat::count: {
        auto n = eval(it.count, vars, prog.source);
        if (!n) return failure = n.error(), false;
        for (long long i = 0; i < *n; ++i) {
          const int before = st.consumed;
          if (!attempt(it, st) || st.consumed == before) break;
        }
        return !failure;
      }
    }
    return false;
  }
};

int stage_of(placement place, int p, int chunk, int r) {
  return chunk * p + ((place == placement::vshape && chunk % 2 == 1) ? p - 1 - r : r);
}

}  // namespace

result<int> chunks_of(const program& prog, const shape& s) {
  if (!prog.chunks) return 1;
  env vars{{"p", s.p}, {"m", s.m}, {"v", s.v}};
  auto c = eval(prog.chunks, vars, prog.source);
  if (!c) return c.error();
  if (*c < 1 || *c > 64) return error{errc::invalid, prog.source + ": `chunks` evaluates to " + std::to_string(*c) + "; expected 1..64"};
  return static_cast<int>(*c);
}

result<table> compile(const program& prog, const shape& s) {
  if (s.p < 1 || s.m < 1 || s.v < 1) return error{errc::invalid, prog.source + ": p, m and v must be at least 1"};
  auto vc = chunks_of(prog, s);
  if (!vc) return vc.error();
  const int p = s.p, m = s.m, v = *vc, S = p * v;
  env base{{"p", p}, {"m", m}, {"v", v}};
  for (const expr& cond : prog.requires_) {
    auto ok = eval(cond, base, prog.source);
    if (!ok) return ok.error();
    if (*ok == 0)
      return error{errc::unsupported, prog.source + ":" + std::to_string(cond->line) + ": this program does not support p=" + std::to_string(p) +
                   " m=" + std::to_string(m) + " v=" + std::to_string(v) + " (a `require` condition is false)"};
  }
  long long g = p;
  if (prog.group) {
    auto e = eval(prog.group, base, prog.source);
    if (!e) return e.error();
    g = *e;
  }
  g = std::clamp<long long>(g, 1, m);
  // Unit order: groups of g microbatches, chunk by chunk inside a group; backwards visit the chunks
  // in reverse (the last stage's backward comes first).
  std::vector<unit> forder, border;
  for (int g0 = 0; g0 < m; g0 += static_cast<int>(g))
    for (int c = 0; c < v; ++c)
      for (int k = g0; k < std::min<long long>(g0 + g, m); ++k) {
        forder.push_back({c, k});
        border.push_back({v - 1 - c, k});
      }
  // Which rule applies to each rank: the last one that selects it.
  std::vector<const rank_rule*> rule_of(p, nullptr);
  for (const auto& rule : prog.rules) {
    long long lo = 0, hi = p - 1;
    if (rule.lo) {
      auto a = eval(rule.lo, base, prog.source);
      if (!a) return a.error();
      auto b = eval(rule.hi, base, prog.source);
      if (!b) return b.error();
      lo = *a, hi = *b;
      if (lo < 0 || hi >= p || lo > hi)
        return error{errc::invalid, prog.source + ":" + std::to_string(rule.line) + ": rank range " + std::to_string(lo) + ".." + std::to_string(hi) + " is not inside 0.." + std::to_string(p - 1)};
    }
    for (long long r = lo; r <= hi; ++r) rule_of[r] = &rule;
  }
  table t;
  t.stages = S;
  t.microbatches = m;
  t.stage_rank.assign(S, 0);
  for (int c = 0; c < v; ++c)
    for (int r = 0; r < p; ++r) t.stage_rank[stage_of(prog.place, p, c, r)] = r;
  t.ranks.resize(p);
  for (int r = 0; r < p; ++r) {
    if (!rule_of[r]) return error{errc::invalid, prog.source + ": no `rank` line selects rank " + std::to_string(r)};
    compiler cc{prog, p, m, v, r, forder, border, base, {}, std::nullopt};
    cc.vars["r"] = r;
    for (const auto& [name, e] : prog.lets) {
      auto x = eval(e, cc.vars, prog.source);
      if (!x) return x.error();
      cc.vars[name] = *x;
    }
    rank_state st;
    st.next_f.assign(v, 0);
    st.next_b.assign(v, 0);
    st.pending_w.resize(v);
    for (const auto& it : rule_of[r]->sequence) {
      cc.top(it, st);
      if (cc.failure) return *cc.failure;
    }
    int left_f = 0, left_b = 0, left_w = 0;
    for (int c = 0; c < v; ++c) left_f += m - st.next_f[c], left_b += m - st.next_b[c], left_w += static_cast<int>(st.pending_w[c].size());
    if (left_f || left_b || left_w)
      return error{errc::invalid, prog.source + ":" + std::to_string(rule_of[r]->line) + ": rank " + std::to_string(r) + " (p=" + std::to_string(p) +
                   " m=" + std::to_string(m) + " v=" + std::to_string(v) + "): the sequence leaves " + std::to_string(left_f) +
                   " forwards, " + std::to_string(left_b) + " backwards and " + std::to_string(left_w) + " weight gradients unscheduled"};
    for (const auto& [k, u] : cc.out) t.ranks[r].push_back({stage_of(prog.place, p, u.chunk, r), u.mb, k});
  }
  // A program may fit some shapes only (Megatron's interleaved warm-up deadlocks for some partial
  // groups): refuse exactly the shapes whose table cannot run, with the validator's reason.
  if (auto wrong = validate(t)) {
    return error{errc::unsupported, prog.source + ": this program does not support p=" + std::to_string(p) +
                                        " m=" + std::to_string(m) + " v=" + std::to_string(v) + ": " + wrong->message};
  }
  return t;
}

result<std::string> explicit_program(const table& t, int p, int v, placement place, const std::string& name) {
  if (t.has_comms()) return error{errc::invalid, "explicit_program: give a compute-only table (strip_comms)"};
  if (t.num_ranks() != p || t.stages != p * v) return error{errc::invalid, "explicit_program: table has " + std::to_string(t.num_ranks()) + " ranks and " + std::to_string(t.stages) + " stages, expected p=" + std::to_string(p) + " and p*v=" + std::to_string(p * v)};
  std::string out = "name \"" + name + "\"\n";
  if (v > 1) out += "chunks " + std::to_string(v) + "\n";
  if (place == placement::vshape) out += "place vshape\n";
  for (int r = 0; r < p; ++r) {
    std::vector<int> chunk_of(t.stages, -1);
    for (int c = 0; c < v; ++c) chunk_of[stage_of(place, p, c, r)] = c;
    std::vector<int> next_f(v, 0), next_b(v, 0);
    std::vector<std::deque<int>> pending(v);
    std::vector<std::string> tokens;
    for (std::size_t i = 0; i < t.ranks[r].size(); ++i) {
      const action& a = t.ranks[r][i];
      const int c = a.stage < t.stages ? chunk_of[a.stage] : -1;
      const std::string here = "rank " + std::to_string(r) + " step " + std::to_string(i) + " (" + to_string(a) + "): ";
      if (c < 0) return error{errc::unsupported, here + "stage is not one of this rank's chunks under this placement"};
      bool in_order = false;
      switch (a.op) {
        case kind::F: in_order = a.microbatch == next_f[c]++; break;
        case kind::B:
        case kind::I:
          in_order = a.microbatch == next_b[c]++;
          if (a.op == kind::I) pending[c].push_back(a.microbatch);
          break;
        case kind::W:
          in_order = !pending[c].empty() && pending[c].front() == a.microbatch;
          if (in_order) pending[c].pop_front();
          break;
        default: break;
      }
      if (!in_order) return error{errc::unsupported, here + "microbatches are not in the ascending order the DSL issues them in"};
      std::string tok(kind_name(a.op));
      if (v > 1) tok += "[" + std::to_string(c) + "]";
      tokens.push_back(tok);
    }
    out += "rank " + std::to_string(r) + ":";
    for (std::size_t i = 0; i < tokens.size();) {
      std::size_t j = i;
      while (j < tokens.size() && tokens[j] == tokens[i]) ++j;
      out += " " + tokens[i] + (j - i > 1 ? "^" + std::to_string(j - i) : "");
      i = j;
    }
    out += "\n";
  }
  return out;
}

}  // namespace banyan::pipeline
