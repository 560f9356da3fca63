#include "dsl_ast.hpp"

#include <banyan/base/log.hpp>
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

// The microbatches of one chunk issued so far for one pass (forward, or backward): an op takes the
// lowest one left, or with `[desc]` the highest, so the issued ones are [0, lo) and (hi, m-1].
struct issued {
  int lo = 0, hi = -1;
  bool last_desc = false;  // the direction of the last take (explicit_program keeps a run going)
  bool has(int mb) const { return mb < lo || mb > hi; }
  bool done() const { return lo > hi; }
  int left() const { return hi - lo + 1; }
  int take(bool descending) {
    last_desc = descending;
    return descending ? hi-- : lo++;
  }
  int peek(bool descending) const { return descending ? hi : lo; }
};

// What one rank has issued so far; W follows the order of the I's (FIFO).
struct rank_state {
  std::vector<issued> f, b;  // per chunk
  // Everything before these positions of the unit orders (ascending, then descending) is issued (a
  // unit stays issued), so finding the next unit is amortised O(1) and compiling is linear in m.
  std::size_t f_cursor[2] = {0, 0}, b_cursor[2] = {0, 0};
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
  // The last op that could not run and why: when a plain top-level item fails, this is the op that
  // made it fail (repeats never fail, so the failure comes straight from it).
  const seq_item* refused = nullptr;
  std::string refusal;

  bool refuse(const seq_item& it, std::string why) {
    refused = &it;
    refusal = std::move(why);
    return false;
  }

  // The chunk of the next unit in the unit order (`desc`: the order with microbatch k read m-1-k).
  int next_chunk(const std::vector<unit>& order, std::size_t& cursor, const std::vector<issued>& done,
                 bool desc) const {
    auto mb = [&](const unit& u) { return desc ? m - 1 - u.mb : u.mb; };
    while (cursor < order.size() && done[order[cursor].chunk].has(mb(order[cursor]))) ++cursor;
    return cursor < order.size() ? order[cursor].chunk : -1;
  }

  std::string where(const seq_item& it) const {
    return prog.source + ":" + std::to_string(it.line) + ":" + std::to_string(it.col) + ": ";
  }

  // Runs one op; false when it cannot run now (nothing left, or its forward not issued yet), with the
  // reason in `refusal`.
  bool op(const seq_item& it, rank_state& st) {
    int chunk = -1;
    if (it.chunk) {
      auto c = eval(it.chunk, vars, prog.source);
      if (!c) return failure = c.error(), false;
      if (*c < 0 || *c >= v)
        return failure = error{errc::invalid, where(it) + "rank " + std::to_string(r) + ": chunk " +
                                                  std::to_string(*c) + " out of range 0.." + std::to_string(v - 1)},
               false;
      chunk = static_cast<int>(*c);
    }
    const bool desc = it.descending;
    const std::string of_chunk = chunk < 0 ? std::string() : " of chunk " + std::to_string(chunk);
    switch (it.op) {
      case kind::F: {
        if (chunk < 0) chunk = next_chunk(forder, st.f_cursor[desc], st.f, desc);
        if (chunk < 0 || st.f[chunk].done()) return refuse(it, "every forward" + of_chunk + " is issued");
        out.push_back({kind::F, {chunk, st.f[chunk].take(desc)}});
        break;
      }
      case kind::B:
      case kind::I: {
        if (chunk < 0) chunk = next_chunk(border, st.b_cursor[desc], st.b, desc);
        if (chunk < 0 || st.b[chunk].done()) return refuse(it, "every backward" + of_chunk + " is issued");
        const int mb = st.b[chunk].peek(desc);
        if (!st.f[chunk].has(mb))
          return refuse(it, "its forward (chunk " + std::to_string(chunk) + ", microbatch " + std::to_string(mb) +
                                ") is not issued yet on this rank");
        st.b[chunk].take(desc);
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
        if (chunk < 0 || st.pending_w[chunk].empty())
          return refuse(it, "no weight gradient" + of_chunk + " is pending (every `I` has had its `W`)");
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

  // A top-level item, with its repeat. False when a plain item cannot run (a repeat may run zero
  // times): that is an error, not a skip, so `B F* B*` does not quietly compile to GPipe.
  bool top(const seq_item& it, rank_state& st) {
    refused = nullptr;
    return item(it, st) || failure;
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
  if (*c < 1 || *c > 64)
    return error{errc::invalid, prog.source + ": `chunks` evaluates to " + std::to_string(*c) + "; expected 1..64"};
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
      return error{errc::unsupported, prog.source + ":" + std::to_string(cond->line) +
                                          ": this program does not support p=" + std::to_string(p) +
                                          " m=" + std::to_string(m) + " v=" + std::to_string(v) +
                                          " (a `require` condition is false)"};
  }
  long long g = p;
  if (prog.group) {
    auto e = eval(prog.group, base, prog.source);
    if (!e) return e.error();
    g = *e;
    if (g < 1)
      return error{errc::invalid, prog.source + ":" + std::to_string(prog.group->line) + ":" +
                                      std::to_string(prog.group->col) + ": `group` evaluates to " + std::to_string(g) +
                                      " for p=" + std::to_string(p) + " m=" + std::to_string(m) + " v=" +
                                      std::to_string(v) + "; expected 1 or more (a group larger than m is all of m)"};
  }
  g = std::min<long long>(g, m);
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
        return error{errc::invalid, prog.source + ":" + std::to_string(rule.line) + ": rank range " +
                                        std::to_string(lo) + ".." + std::to_string(hi) + " is not inside 0.." +
                                        std::to_string(p - 1)};
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
    st.f.assign(v, issued{0, m - 1});
    st.b.assign(v, issued{0, m - 1});
    st.pending_w.resize(v);
    const auto& sequence = rule_of[r]->sequence;
    for (std::size_t i = 0; i < sequence.size(); ++i) {
      const seq_item& it = sequence[i];
      const bool ran = cc.top(it, st);
      if (cc.failure) return *cc.failure;
      if (ran) continue;
      std::string why = "`" + log::escape(it.text, 40) + "` (item " + std::to_string(i + 1) + ") cannot run here: ";
      if (cc.refused && cc.refused != &it)
        why += "`" + log::escape(cc.refused->text, 40) + "` at " + std::to_string(cc.refused->line) + ":" +
               std::to_string(cc.refused->col) + ": ";
      why += cc.refusal + "; only `X*`, `X^n` and `X?` may run zero times";
      return error{errc::invalid, cc.where(it) + "rank " + std::to_string(r) + " (p=" + std::to_string(p) +
                                      " m=" + std::to_string(m) + " v=" + std::to_string(v) + "): " + why};
    }
    int left_f = 0, left_b = 0, left_w = 0;
    for (int c = 0; c < v; ++c)
      left_f += st.f[c].left(), left_b += st.b[c].left(), left_w += static_cast<int>(st.pending_w[c].size());
    if (left_f || left_b || left_w)
      return error{errc::invalid, prog.source + ":" + std::to_string(rule_of[r]->line) + ": rank " + std::to_string(r) +
                                      " (p=" + std::to_string(p) + " m=" + std::to_string(m) +
                                      " v=" + std::to_string(v) + "): the sequence leaves " + std::to_string(left_f) +
                                      " forwards, " + std::to_string(left_b) + " backwards and " +
                                      std::to_string(left_w) + " weight gradients unscheduled"};
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
  if (t.num_ranks() != p || t.stages != p * v)
    return error{errc::invalid, "explicit_program: table has " + std::to_string(t.num_ranks()) + " ranks and " +
                                    std::to_string(t.stages) + " stages, expected p=" + std::to_string(p) +
                                    " and p*v=" + std::to_string(p * v)};
  std::string out = "name \"" + name + "\"\n";
  if (v > 1) out += "chunks " + std::to_string(v) + "\n";
  if (place == placement::vshape) out += "place vshape\n";
  for (int r = 0; r < p; ++r) {
    std::vector<int> chunk_of(t.stages, -1);
    for (int c = 0; c < v; ++c) chunk_of[stage_of(place, p, c, r)] = c;
    std::vector<issued> done_f(v, issued{0, t.microbatches - 1}), done_b(v, issued{0, t.microbatches - 1});
    std::vector<std::deque<int>> pending(v);
    std::vector<std::string> tokens;
    for (std::size_t i = 0; i < t.ranks[r].size(); ++i) {
      const action& a = t.ranks[r][i];
      const int c = a.stage < t.stages ? chunk_of[a.stage] : -1;
      const std::string here = "rank " + std::to_string(r) + " step " + std::to_string(i) + " (" + to_string(a) + "): ";
      if (c < 0) return error{errc::unsupported, here + "stage is not one of this rank's chunks under this placement"};
      bool in_order = false, desc = false;
      // The lowest microbatch left, or else the highest (`[desc]`); the last one left either way,
      // written in the direction of the one before.
      auto take = [&](issued& d) {
        desc = !d.done() && a.microbatch == d.hi && (a.microbatch != d.lo || d.last_desc);
        in_order = !d.done() && a.microbatch == d.peek(desc);
        if (in_order) d.take(desc);
      };
      switch (a.op) {
        case kind::F: take(done_f[c]); break;
        case kind::B:
        case kind::I:
          take(done_b[c]);
          if (a.op == kind::I) pending[c].push_back(a.microbatch);
          break;
        case kind::W:
          in_order = !pending[c].empty() && pending[c].front() == a.microbatch;
          if (in_order) pending[c].pop_front();
          break;
        default: break;
      }
      if (!in_order)
        return error{
            errc::unsupported,
            here + "the microbatch is neither the lowest nor the highest one left, the only ones the DSL issues"};
      std::string tok(kind_name(a.op));
      if (v > 1) tok += "[" + std::to_string(c) + (desc ? ", desc]" : "]");
      else if (desc) tok += "[desc]";
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
