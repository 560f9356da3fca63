#include <banyan/pipeline/search.hpp>

#include <banyan/pipeline/greedy.hpp>
#include <banyan/pipeline/validate.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <random>

namespace banyan::pipeline {

namespace {

using clock_type = std::chrono::steady_clock;

struct shape_info {
  int v;
  placement place;
  std::vector<stage_cost> stages;
  std::vector<int> cuts;  // per-layer costs only
  bool active = true;     // taken by the genetic phase
  std::string split;      // per-layer costs: "" for the balanced split, else which reference split
};

// Per-layer costs: the splits besides the balanced one on which the seeds run every shipped program,
// so the result is never worse than a shipped program on any of them: the even split (stage j from
// layer j*n/S) and the even split of the inner layers with the first and the last layer on the first
// and the last stage (train_gpt's default: embedding and head outside the blocks it splits evenly).
// Those equal to the balanced split or to one before are left out.
std::vector<std::pair<std::string, std::vector<int>>> reference_splits(int n, int S, const std::vector<int>& balanced) {
  std::vector<std::pair<std::string, std::vector<int>>> out;
  auto add = [&](const char* name, std::vector<int> cuts) {
    if (cuts == balanced) return;
    for (const auto& [_, c] : out)
      if (c == cuts) return;
    out.emplace_back(name, std::move(cuts));
  };
  if (n >= S) {
    std::vector<int> even;
    for (int j = 0; j <= S; ++j) even.push_back(static_cast<int>(static_cast<long long>(j) * n / S));
    add("even split", std::move(even));
  }
  if (n >= S + 2) {
    std::vector<int> blocks{0};
    for (int j = 1; j < S; ++j) blocks.push_back(1 + static_cast<int>(static_cast<long long>(j) * (n - 2) / S));
    blocks.push_back(n);
    add("even split of the inner layers", std::move(blocks));
  }
  return out;
}

int stage_of(placement place, int p, int chunk, int r) {
  return chunk * p + ((place == placement::vshape && chunk % 2 == 1) ? p - 1 - r : r);
}

// Per rank, the order of (kind, chunk); microbatches follow from it (ascending per chunk).
using tokens = std::vector<std::vector<std::pair<kind, int>>>;

tokens to_tokens(const table& t, int p, const shape_info& sh) {
  tokens out(p);
  for (int r = 0; r < p; ++r) {
    std::vector<int> chunk_of(t.stages, -1);
    for (int c = 0; c < sh.v; ++c) chunk_of[stage_of(sh.place, p, c, r)] = c;
    for (const action& a : t.ranks[r]) out[r].push_back({a.op, chunk_of[a.stage]});
  }
  return out;
}

// Rebuilds a table from tokens of one rank; false when an action would precede what it needs on
// this rank (a backward before its forward, a W before its I).
bool decode_rank(const std::vector<std::pair<kind, int>>& seq, int p, int r, const shape_info& sh,
                 std::vector<action>& out) {
  std::vector<int> nf(sh.v, 0), nb(sh.v, 0);
  std::vector<std::deque<int>> pend(sh.v);
  out.clear();
  for (const auto& [op, c] : seq) {
    const int s = stage_of(sh.place, p, c, r);
    switch (op) {
      case kind::F: out.push_back({s, nf[c]++, op}); break;
      case kind::B:
      case kind::I:
        if (nb[c] >= nf[c]) return false;
        if (op == kind::I) pend[c].push_back(nb[c]);
        out.push_back({s, nb[c]++, op});
        break;
      case kind::W:
        if (pend[c].empty()) return false;
        out.push_back({s, pend[c].front(), op});
        pend[c].pop_front();
        break;
      default: return false;
    }
  }
  return true;
}

struct individual {
  int shape = 0;
  greedy_policy policy;
  double makespan = INFINITY;
  table t;
  sim_result sim;
};

class searcher {
 public:
  searcher(const costs& c, const search_options& opt) : c_(c), opt_(opt), rng_(opt.seed), start_(clock_type::now()) {
    link_ = {c.latency, c.bandwidth};
  }

  result<search_result> run() {
    const int p = opt_.p;
    if (p < 1 || opt_.m < 1) return error{errc::invalid, "search: p and m must be at least 1"};
    std::string shape_errors;
    for (int v : opt_.chunk_options) {
      auto st = stage_costs(c_, p * v);
      if (!st) {
        shape_errors += " v=" + std::to_string(v) + ": " + st.error().message + ";";
        continue;
      }
      std::vector<int> cuts;
      if (c_.per_layer) cuts = *balanced_cuts(c_, p * v);
      shapes_.push_back({v, placement::loop, *st, cuts});
      if (v % 2 == 0) shapes_.push_back({v, placement::vshape, *st, cuts});
    }
    if (shapes_.empty()) return error{errc::invalid, "search: no usable chunk count:" + shape_errors};
    // The reference splits come after the balanced shapes: the genetic phase and the split climb
    // start from the balanced ones; a reference split joins the genetic phase when a seed wins on it.
    balanced_shapes_ = static_cast<int>(shapes_.size());
    for (int i = 0; i < balanced_shapes_; ++i) {
      if (!c_.per_layer) break;
      const shape_info base = shapes_[i];
      for (auto& [name, cuts] : reference_splits(static_cast<int>(c_.units.size()), p * base.v, base.cuts))
        shapes_.push_back({base.v, base.place, stages_from_cuts(c_, cuts), cuts, false, name});
    }
    seeds();
    if (c_.per_layer && opt_.search_splits) splits();
    genetic();
    local();
    if (!best_)
      return error{errc::infeasible, "search: no schedule fits the memory cap " + std::to_string(opt_.mem_cap) +
                                         " (even 1F1B-like policies need more)"};
    search_result out;
    out.best = *best_;
    out.best_predefined = best_predefined_;
    out.best_predefined_any_split = best_shipped_any_ ? best_shipped_any_ : best_predefined_;
    out.time_cut = time_cut_;
    out.evaluations = evaluations_;
    out.seconds = elapsed();
    out.notes = notes_;
    if (best_->origin.rfind("program ", 0) == 0 && best_program_text_) {
      out.dsl = *best_program_text_;
    } else {
      auto text = explicit_program(best_->t, p, best_->v, best_->place, "searched");
      if (!text) return error{text.error().code, "search: " + text.error().message};
      out.dsl = "# found by `banyan pipeline search` (" + best_->origin + "), p=" + std::to_string(p) +
                " m=" + std::to_string(opt_.m) + "\n" + *text;
    }
    return out;
  }

 private:
  double elapsed() const { return std::chrono::duration<double>(clock_type::now() - start_).count(); }
  bool out_of_budget() const { return opt_.max_evaluations > 0 && evaluations_ >= opt_.max_evaluations; }
  // The budget ends a phase reproducibly; the clock only as an outer cap, and it says so.
  bool out_of_time() {
    if (out_of_budget()) return true;
    if (elapsed() < opt_.time_limit_s) return false;
    time_cut_ = true;
    return true;
  }
  bool fits(const sim_result& s) const { return opt_.mem_cap <= 0 || s.max_peak_memory() <= opt_.mem_cap + 1e-9; }

  void report(const std::string& phase, int step, int steps) {
    if (!opt_.progress) return;
    opt_.progress({phase, step, steps, elapsed(), best_ ? best_->sim.makespan : 0, evaluations_});
  }

  // Simulates and records the candidate if it is the best so far. Returns the makespan (inf when it
  // deadlocks or breaks the cap).
  double consider(const table& t, int shape, const std::string& origin, sim_result* keep = nullptr) {
    ++evaluations_;
    sim_options so;
    so.validate = false;  // built to be complete and in order per rank; deadlocks still surface
    auto s = simulate(t, shapes_[shape].stages, link_, so);
    if (!s || !fits(*s)) return INFINITY;
    if (keep) *keep = *s;
    if (!best_ || s->makespan < best_->sim.makespan - 1e-12) {
      best_ = scored_schedule{origin, shapes_[shape].v, shapes_[shape].place, t, *s, shapes_[shape].cuts};
      best_shape_ = shape;
    }
    return s->makespan;
  }

  void seeds() {
    for (const auto& b : builtin_programs()) {
      auto prog = parse_program(b.text, b.name);
      if (!prog) continue;
      for (int i = 0; i < static_cast<int>(shapes_.size()); ++i) {
        const auto& sh = shapes_[i];
        auto vc = chunks_of(*prog, {opt_.p, opt_.m, sh.v});
        if (!vc || *vc != sh.v || prog->place != sh.place) continue;
        auto t = compile(*prog, {opt_.p, opt_.m, sh.v});
        if (!t || validate(*t)) continue;
        const std::string origin =
            "program " + b.name + " v=" + std::to_string(sh.v) + (sh.split.empty() ? "" : ", " + sh.split);
        const auto before = best_ ? best_->sim.makespan : INFINITY;
        sim_result s;
        const double ms = consider(*t, i, origin, &s);
        if (std::isinf(ms)) continue;
        if (!best_predefined_ || ms < best_predefined_->sim.makespan - 1e-12) {
          best_predefined_ = scored_schedule{origin, sh.v, sh.place, *t, s, sh.cuts};
          best_program_text_ = "# shipped program " + b.name + ", run with v=" + std::to_string(sh.v) + "\n" + b.text;
        }
        if (ms < before) pool_.push_back({i, {}, ms, *t, s});
      }
    }
    if (best_) shapes_[best_shape_].active = true;  // a reference split that a seed won on
    notes_.push_back(best_predefined_ ? "best shipped program within the cap: " + best_predefined_->origin +
                                            ", makespan " + std::to_string(best_predefined_->sim.makespan)
                                      : "no shipped program fits the cap");
    report("seeds", 1, 1);
  }

  // Scores a split: every shipped program that fits its shape, then the list scheduler's default
  // policies (1F1B-like depth or not, split backward or not). Returns the best makespan within the cap.
  double score_split(int shape) {
    double best = INFINITY;
    const auto& sh = shapes_[shape];
    for (const auto& [name, t] : program_tables_) {
      if (t.first != sh.v || t.second.place != sh.place) continue;
      sim_result s;
      const double ms =
          consider(t.second.t, shape, "program " + name + " v=" + std::to_string(sh.v) + " (split search)", &s);
      if (!std::isinf(ms) && (!best_shipped_any_ || ms < best_shipped_any_->sim.makespan - 1e-12))
        best_shipped_any_ =
            scored_schedule{"program " + name + " v=" + std::to_string(sh.v), sh.v, sh.place, t.second.t, s, sh.cuts};
      best = std::min(best, ms);
    }
    for (bool like_1f1b : {false, true})
      for (bool split : {true, false}) {
        individual ind{shape, default_policy(shape, like_1f1b)};
        ind.policy.split_backward = split;
        auto t = greedy_schedule(opt_.p, opt_.m, sh.stages, link_, opt_.mem_cap, ind.policy);
        if (!t) continue;
        ind.t = std::move(*t);
        ind.makespan = consider(ind.t, shape, "list scheduler on a searched split", &ind.sim);
        best = std::min(best, ind.makespan);
        if (!std::isinf(ind.makespan)) split_pool_.push_back(std::move(ind));
      }
    return best;
  }

  // Hill climb over splits, per (v, placement): from the balanced split, try moving one boundary by
  // one layer (the boundaries and directions in a seeded random order), take the first move to an
  // untried split that lowers the split's score (or keeps it, 4S times at most), stop when no move
  // does or when the split budget is spent. The best
  // split of each shape joins the genetic phase; the balanced one stays too.
  void splits() {
    for (const auto& b : builtin_programs()) {
      auto prog = parse_program(b.text, b.name);
      if (!prog) continue;
      for (int v : opt_.chunk_options) {
        auto vc = chunks_of(*prog, {opt_.p, opt_.m, v});
        if (!vc || *vc != v) continue;
        auto t = compile(*prog, {opt_.p, opt_.m, v});
        if (!t || validate(*t)) continue;
        program_tables_.push_back({b.name, {v, {b.name, v, prog->place, *t, {}}}});
      }
    }
    best_shipped_any_ = best_predefined_;
    const int base_shapes = balanced_shapes_;
    const int stop_at = evaluations_ + std::max(0, opt_.split_evaluations);
    int tried = 0, moved = 0;
    for (int base = 0; base < base_shapes; ++base) {
      std::vector<int> cur = shapes_[base].cuts;
      double cur_score = score_split(base);
      int cur_shape = base;
      const int S = static_cast<int>(cur.size()) - 1;
      int plateau = 4 * S;
      bool improved = true;
      while (improved && evaluations_ < stop_at && !out_of_time()) {
        improved = false;
        std::vector<std::pair<int, int>> moves;
        for (int j = 1; j < S; ++j) moves.push_back({j, -1}), moves.push_back({j, +1});
        std::shuffle(moves.begin(), moves.end(), rng_);
        for (const auto& [j, d] : moves) {
          if (evaluations_ >= stop_at || out_of_time()) break;
          auto next = cur;
          next[j] += d;
          if (next[j] <= next[j - 1] || next[j] >= next[j + 1]) continue;
          if (std::find_if(tried_cuts_.begin(), tried_cuts_.end(),
                           [&](const auto& tc) { return tc.first == base && tc.second == next; }) != tried_cuts_.end())
            continue;
          tried_cuts_.push_back({base, next});
          shapes_.push_back({shapes_[base].v, shapes_[base].place, stages_from_cuts(c_, next), next, false});
          ++tried;
          const double sc = score_split(static_cast<int>(shapes_.size()) - 1);
          // Equal scores move too (the split's tried set keeps the walk from cycling): a plateau of
          // splits that the programs and default policies score alike is common on jagged layers.
          if (sc < cur_score - 1e-12 || (sc <= cur_score + 1e-12 && plateau-- > 0)) {
            cur = next, cur_score = sc, cur_shape = static_cast<int>(shapes_.size()) - 1;
            ++moved, improved = true;
            break;
          }
        }
      }
      if (cur_shape != base) shapes_[cur_shape].active = true;
    }
    for (auto& ind : split_pool_)
      if (shapes_[ind.shape].active) pool_.push_back(std::move(ind));
    split_pool_.clear();
    std::string cuts_text;
    if (best_)
      for (std::size_t j = 0; j + 1 < best_->cuts.size(); ++j)
        cuts_text += (j ? "," : "") + std::to_string(best_->cuts[j + 1] - best_->cuts[j]);
    notes_.push_back(
        "split search: " + std::to_string(tried) + " splits tried, " + std::to_string(moved) +
        " boundary moves taken; best so far " +
        (best_ ? best_->origin + " makespan " + std::to_string(best_->sim.makespan) + ", layers per stage " + cuts_text
               : std::string("none")));
    report("splits", 1, 1);
  }

  greedy_policy random_policy(int shape) {
    const int p = opt_.p, v = shapes_[shape].v;
    greedy_policy pol;
    pol.v = v;
    pol.place = shapes_[shape].place;
    pol.split_backward = std::bernoulli_distribution(0.75)(rng_);
    pol.deep_chunk_first = std::bernoulli_distribution(0.5)(rng_);
    for (int r = 0; r < p; ++r) {
      pol.max_inflight.push_back(
          std::bernoulli_distribution(0.3)(rng_) ? 0 : std::uniform_int_distribution<int>(1, 2 * p * v)(rng_));
      pol.prefer_forward.push_back(std::bernoulli_distribution(0.15)(rng_));
      pol.w_delay.push_back(
          std::bernoulli_distribution(0.5)(rng_) ? -1 : std::uniform_int_distribution<int>(0, 2 * p)(rng_));
    }
    return pol;
  }

  greedy_policy default_policy(int shape, bool depth_like_1f1b) {
    const int p = opt_.p, v = shapes_[shape].v;
    greedy_policy pol;
    pol.v = v;
    pol.place = shapes_[shape].place;
    for (int r = 0; r < p; ++r) {
      pol.max_inflight.push_back(depth_like_1f1b ? (p - r) * v : 0);
      pol.prefer_forward.push_back(0);
      pol.w_delay.push_back(-1);
    }
    return pol;
  }

  void evaluate(individual& ind) {
    auto t = greedy_schedule(opt_.p, opt_.m, shapes_[ind.shape].stages, link_, opt_.mem_cap, ind.policy);
    if (!t) {
      ind.makespan = INFINITY;
      return;
    }
    ind.t = std::move(*t);
    ind.makespan = consider(ind.t, ind.shape, "genetic search over list-scheduler policies", &ind.sim);
  }

  individual crossover(const individual& a, const individual& b) {
    individual child = a;
    child.makespan = INFINITY;
    if (a.shape != b.shape) return child;
    std::bernoulli_distribution coin(0.5);
    if (coin(rng_)) child.policy.split_backward = b.policy.split_backward;
    if (coin(rng_)) child.policy.deep_chunk_first = b.policy.deep_chunk_first;
    for (int r = 0; r < opt_.p; ++r) {
      if (coin(rng_)) child.policy.max_inflight[r] = b.policy.max_inflight[r];
      if (coin(rng_)) child.policy.prefer_forward[r] = b.policy.prefer_forward[r];
      if (coin(rng_)) child.policy.w_delay[r] = b.policy.w_delay[r];
    }
    return child;
  }

  void mutate(individual& ind) {
    const int p = opt_.p, v = shapes_[ind.shape].v;
    std::uniform_int_distribution<int> rank(0, p - 1);
    std::bernoulli_distribution rare(1.0 / (p + 1));
    if (rare(rng_)) ind.policy.split_backward = !ind.policy.split_backward;
    if (rare(rng_)) ind.policy.deep_chunk_first = !ind.policy.deep_chunk_first;
    const int changes = 1 + std::uniform_int_distribution<int>(0, 2)(rng_);
    for (int i = 0; i < changes; ++i) {
      const int r = rank(rng_);
      switch (std::uniform_int_distribution<int>(0, 2)(rng_)) {
        case 0: {
          int& d = ind.policy.max_inflight[r];
          d = std::clamp(d + std::uniform_int_distribution<int>(-2, 2)(rng_), 0, 2 * p * v);
          break;
        }
        case 1: ind.policy.prefer_forward[r] ^= 1; break;
        case 2: {
          int& w = ind.policy.w_delay[r];
          w = std::clamp(w + std::uniform_int_distribution<int>(-2, 2)(rng_), -1, 2 * p * v);
          break;
        }
      }
    }
  }

  void genetic() {
    std::vector<individual> pop;
    std::vector<int> active;
    for (int i = 0; i < static_cast<int>(shapes_.size()); ++i)
      if (shapes_[i].active) active.push_back(i);
    for (int i : active)
      for (bool like_1f1b : {false, true})
        for (bool split : {true, false}) {
          individual ind{i, default_policy(i, like_1f1b)};
          ind.policy.split_backward = split;
          pop.push_back(std::move(ind));
        }
    while (static_cast<int>(pop.size()) < std::max(opt_.population, 4)) {
      const int shape = active[std::uniform_int_distribution<int>(0, static_cast<int>(active.size()) - 1)(rng_)];
      pop.push_back({shape, random_policy(shape)});
    }
    for (auto& ind : pop) evaluate(ind);
    const auto by_makespan = [](const individual& a, const individual& b) { return a.makespan < b.makespan; };
    int gen = 0;
    for (; gen < opt_.generations && !out_of_time(); ++gen) {
      std::sort(pop.begin(), pop.end(), by_makespan);
      std::vector<individual> next(pop.begin(), pop.begin() + 2);  // elitism
      std::uniform_int_distribution<int> pick(0, static_cast<int>(pop.size()) - 1);
      auto tournament = [&]() -> const individual& {
        const individual& a = pop[pick(rng_)];
        const individual& b = pop[pick(rng_)];
        return a.makespan <= b.makespan ? a : b;
      };
      while (next.size() < pop.size()) {
        individual child = crossover(tournament(), tournament());
        mutate(child);
        evaluate(child);
        next.push_back(std::move(child));
      }
      pop = std::move(next);
      report("genetic", gen + 1, opt_.generations);
    }
    std::sort(pop.begin(), pop.end(), by_makespan);
    for (int i = 0; i < std::min<int>(3, static_cast<int>(pop.size())); ++i)
      if (!std::isinf(pop[i].makespan)) pool_.push_back(pop[i]);
    notes_.push_back(
        "genetic search: " + std::to_string(gen) + " generations, best so far " +
        (best_ ? best_->origin + " makespan " + std::to_string(best_->sim.makespan) : std::string("none")));
  }

  // Try-test local search on action orders: move one action of one rank a few places, keep the move
  // when the simulated makespan is no worse and the cap holds.
  void local() {
    if (!best_ || opt_.local_steps <= 0) return;
    struct walker {
      int shape;
      tokens seq;
      table t;
      double makespan;
    };
    std::vector<walker> walkers;
    walkers.push_back({best_shape_, to_tokens(best_->t, opt_.p, shapes_[best_shape_]), best_->t, best_->sim.makespan});
    std::sort(pool_.begin(), pool_.end(),
              [](const individual& a, const individual& b) { return a.makespan < b.makespan; });
    for (const auto& ind : pool_) {
      if (walkers.size() >= 3) break;
      if (std::abs(ind.makespan - walkers.front().makespan) < 1e-12) continue;
      walkers.push_back({ind.shape, to_tokens(ind.t, opt_.p, shapes_[ind.shape]), ind.t, ind.makespan});
    }
    const double start_best = best_->sim.makespan;
    std::uniform_int_distribution<int> rank(0, opt_.p - 1);
    std::uniform_int_distribution<int> shift(-6, 6);
    std::uniform_real_distribution<double> unit(0, 1);
    // Mostly short moves; one in four goes anywhere up to a few warm-ups away (W passes and
    // warm-up forwards often belong far from where a program put them).
    const int far = std::max(8, 2 * opt_.p * shapes_[best_shape_].v);
    std::uniform_int_distribution<int> far_shift(-far, far);
    int step = 0;
    for (; step < opt_.local_steps && !out_of_time(); ++step) {
      walker& w = walkers[step % walkers.size()];
      const int r = rank(rng_);
      auto& seq = w.seq[r];
      if (seq.size() < 2) continue;
      const int from = std::uniform_int_distribution<int>(0, static_cast<int>(seq.size()) - 1)(rng_);
      int d = unit(rng_) < 0.25 ? far_shift(rng_) : shift(rng_);
      if (d == 0) d = 1;
      const int to = std::clamp(from + d, 0, static_cast<int>(seq.size()) - 1);
      if (to == from) continue;
      auto moved = seq;
      const auto tok = moved[from];
      moved.erase(moved.begin() + from);
      moved.insert(moved.begin() + to, tok);
      std::vector<action> row;
      if (!decode_rank(moved, opt_.p, r, shapes_[w.shape], row)) continue;
      table cand = w.t;
      cand.ranks[r] = std::move(row);
      const double ms = consider(cand, w.shape, "try-test local search on action order");
      if (ms <= w.makespan + 1e-12) {
        w.seq[r] = std::move(moved);
        w.t = std::move(cand);
        w.makespan = ms;
      }
      if (step % 200 == 0) report("local", step, opt_.local_steps);
    }
    report("local", step, opt_.local_steps);
    notes_.push_back("local search: " + std::to_string(step) + " moves, makespan " + std::to_string(start_best) +
                     " -> " + std::to_string(best_->sim.makespan));
  }

  const costs& c_;
  search_options opt_;
  std::mt19937_64 rng_;
  clock_type::time_point start_;
  link_model link_;
  std::vector<shape_info> shapes_;
  int balanced_shapes_ = 0;  // shapes_[0, balanced_shapes_) are the balanced splits; reference splits follow
  std::optional<scored_schedule> best_, best_predefined_;
  std::optional<std::string> best_program_text_;
  int best_shape_ = 0;
  std::vector<individual> pool_;
  std::vector<std::string> notes_;
  int evaluations_ = 0;
  bool time_cut_ = false;
  std::vector<std::pair<std::string, std::pair<int, scored_schedule>>> program_tables_;  // name, (v, table)
  std::optional<scored_schedule> best_shipped_any_;
  std::vector<individual> split_pool_;
  std::vector<std::pair<int, std::vector<int>>> tried_cuts_;  // (base shape, cuts) already scored
};

}  // namespace

result<search_result> search(const costs& c, const search_options& opt) { return searcher(c, opt).run(); }

double makespan_lower_bound(const costs& c, int p, int m) {
  // Work and fill: the ranks together do m * sum(t_f + t_b). A rank's first action is a forward of
  // one of its stages, which waits for the forwards of every layer before that stage: at least
  // F(a_r) = sum_{l < a_r} t_f with a_r the first layer of the rank's lowest stage. The a_r are
  // distinct layers and F does not decrease, so the ranks idle at least F(0) + ... + F(p-1) in all.
  double work = 0;
  for (const auto& u : c.units) work += m * (u.t_f + u.t_b);
  const double t_f0 = c.units.front().t_f, t_w0 = c.units.front().t_w;
  double fill = 0, prefix = 0;
  for (int j = 0; j < p && j < static_cast<int>(c.units.size()); ++j) fill += prefix, prefix += c.units[j].t_f;
  double bound = (work + (c.per_layer ? fill : 0.0)) / p;
  if (!c.per_layer) return bound;  // a given stage may be cut into chunks on different ranks
  // Per layer k, on the one rank that holds it (a layer is never split): its forwards wait for the
  // forwards of the layers before it, then that rank does m (t_f + t_b) of k; or m (t_f + t_i) of k,
  // after which the last microbatch's backward-input runs down layers k-1..0 and layer 0's weight
  // gradient follows.
  double f_before = 0, i_before = 0, chain = 0;
  for (const auto& u : c.units) chain += u.t_f + u.t_i;
  for (const auto& u : c.units) {
    bound = std::max(bound, f_before + m * (u.t_f + u.t_b));
    bound = std::max(bound, f_before + i_before + m * (u.t_f + u.t_i) + t_w0);
    f_before += u.t_f, i_before += u.t_i;
  }
  // Chain: layer 0's rank starts its last forward at >= (m-1) t_f(0); that microbatch then needs every
  // forward and backward-input in sequence, and layer 0's weight gradient.
  return std::max(bound, (m - 1) * t_f0 + chain + t_w0);
}

}  // namespace banyan::pipeline
