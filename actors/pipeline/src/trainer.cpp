// The pipeline trainer's components (trainer.hpp): the composite that coordinates steps and the stage
// leaves that walk their rank's actions.
#include "banyan/pipeline/trainer.hpp"

#include <banyan/base/log.hpp>
#include <banyan/nn/checkpoint.hpp>
#include <banyan/nn/checkpoint_store.hpp>
#include <banyan/pipeline/lower.hpp>
#include <banyan/pipeline/validate.hpp>
#include <banyan/sdk/component.hpp>
#include <banyan/sdk/context.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <tuple>

namespace banyan::pipeline {

namespace {

// Control messages: small fixed structs in native byte order, on one node or across nodes (every node
// of a deployment is assumed to share the byte order and layout, as for the tensor payloads: trainer.hpp).
struct done_msg {  // ctl/done, leaf -> composite: the rank finished its actions of `step`
  std::int64_t step;
  std::int32_t rank, losses;
  double loss_sum;
};
struct reduce_msg {  // ctl/reduce, composite -> leaves: add the forwarded tied parts, send the sum of squares
  std::int64_t step;
};
struct sumsq_msg {  // ctl/sumsq, leaf -> composite
  std::int64_t step;
  std::int32_t rank, pad;
  double sumsq;
};
struct step_msg {  // ctl/step, composite -> leaves: apply step-1's update if `apply`, then run `step` if `run`
  std::int64_t step;
  double coef;  // the clip coefficient for step-1's gradients (1: no clipping)
  std::int32_t run, apply;
};
// ctl/saved/<stage>/<step>, leaf -> composite: the stage's checkpoint after `step` steps, encoded
// (nn::encode_checkpoint); the payload is the blob.
struct committed_msg {  // ctl/committed, composite -> leaves: every stage of `step` is in the store
  std::int64_t step;
};
// ctl/stats, leaf -> composite, before its ctl/done: a stats_head, `chunks` chunk_stat, `events` event_rec.
struct stats_head {
  std::int64_t step;
  std::int64_t walk_start_ns;  // steady clock: when the rank began this step's actions
  std::int32_t rank, chunks, events, pad;
};
struct chunk_stat {
  std::int32_t stage, peak_slots;
};
struct event_rec {
  std::int32_t stage, microbatch, op, pad;
  std::int64_t start_ns, end_ns;  // steady clock
};

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct applied_msg {  // ctl/applied, leaf -> composite, after the last update
  std::int64_t step;
  std::int32_t rank, pad;
};

template <class T>
payload encode(const T& v) {
  return payload::copy_of(std::span<const std::byte>(reinterpret_cast<const std::byte*>(&v), sizeof v));
}
template <class T>
T decode(const delivery& d) {
  if (d.data().size() < sizeof(T)) {
    throw std::runtime_error("topic `" + d.topic() + "` from `" + d.sender() + "`: " + std::to_string(d.data().size()) +
                             " bytes, expected " + std::to_string(sizeof(T)));
  }
  T v;
  std::memcpy(&v, d.bytes().data(), sizeof v);
  return v;
}

// Shares the floats with every subscriber: the payload is a view of the vector, kept alive by it.
payload share(std::vector<float>&& values) {
  auto owner = std::make_shared<const std::vector<float>>(std::move(values));
  return payload::view_of(owner, reinterpret_cast<const std::byte*>(owner->data()), owner->size() * sizeof(float));
}

const float* floats_of(const payload& p, std::size_t n, const std::string& what) {
  if (p.size() != n * sizeof(float)) {
    throw std::runtime_error(what + ": " + std::to_string(p.size()) + " bytes, expected " +
                             std::to_string(n * sizeof(float)));
  }
  return reinterpret_cast<const float*>(p.bytes().data());
}

int last_level(const std::string& topic) { return std::stoi(topic.substr(topic.rfind('/') + 1)); }

enum arrival_kind { act = 0, grad = 1 };

// A checkpoint after `done` steps (the update of step done-1 applied)?
bool checkpoint_due(const trainer_options& o, std::int64_t done) {
  const auto& c = o.checkpoints;
  if (c.path.empty() || done <= c.resume_step) return false;
  return done == o.steps || (c.every > 0 && done % c.every == 0);
}

constexpr const char* manifest_format = "banyan pipeline checkpoint";
constexpr int manifest_version = 2;  // 1: a JSON file naming one file per stage (before checkpoint folders)
constexpr const char* manifest_blob = "manifest";
// How long a failing pipeline waits for its committed checkpoints to be durable before it reports
// which one is.
constexpr std::chrono::seconds checkpoint_flush_on_failure{30};

std::string stage_blob(int stage) { return "stage" + std::to_string(stage); }

// What every incarnation of the trainer's components shares: read-only after add_trainer.
struct setup {
  trainer_options opt;
  trainer_hooks hooks;
  std::vector<nn::stage_slice> slices;     // per stage
  std::vector<int> slots;                  // per stage: the schedule's peak of in-flight microbatches
  std::vector<std::vector<action>> ranks;  // compute actions only
  std::vector<int> cuts;                   // the blocks' cuts, for the manifest
  int stages() const { return opt.schedule.stages; }
  nn::checkpoint_identity identity(int stage) const {
    nn::checkpoint_identity id{"gpt_stage", opt.model.to_vector(), nn::gpt_config::field_names(), 0, {}};
    const nn::stage_slice& sl = slices[stage];
    for (std::int64_t v :
         {std::int64_t{stages()}, std::int64_t{stage}, std::int64_t{sl.first_block}, std::int64_t{sl.last_block}}) {
      id.config.push_back(v);
    }
    for (const char* f : {"stages", "stage", "first_block", "last_block"}) id.config_fields.emplace_back(f);
    return id;
  }
  int microbatches() const { return opt.schedule.microbatches; }
  int num_ranks() const { return static_cast<int>(ranks.size()); }
};

class stage_leaf : public leaf {
 public:
  stage_leaf(int rank, std::shared_ptr<const setup> s) : rank_(rank), s_(std::move(s)) {}

  void on_start(context& ctx) override {
    const auto& o = s_->opt;
    auto be = nn::make_backend(o.device);
    if (!be) throw std::runtime_error(be.error().what());
    be_ = std::move(be).value();
    for (int st = 0; st < s_->stages(); ++st) {
      if (s_->opt.schedule.stage_rank[st] != rank_) continue;
      auto c = std::make_unique<chunk>();
      c->stage = st;
      auto made = nn::gpt_stage::create(
          o.model, s_->slices[st],
          {.batch = o.batch, .seq_len = o.seq_len, .slots = s_->slots[st], .microbatches = s_->microbatches()}, *be_);
      if (!made) throw std::runtime_error(made.error().what());
      c->model.emplace(std::move(made).value());
      c->model->init(o.seed);
      c->model->zero_grad();
      c->opt = std::make_unique<nn::adamw>(*be_, c->model->params());
      for (int i = s_->slots[st] - 1; i >= 0; --i) c->free_slots.push_back(i);
      if (o.checkpoints.resume_step > 0) {
        if (auto restored = restore(*c); !restored) {
          // A stage file that cannot be resumed from is a bad input file (exit 2), not a failed run.
          if (!o.quit_when_done) throw std::runtime_error(restored.error().message);
          log::error(ctx.path(), restored.error().message);
          return ctx.quit(2);
        }
      }
      chunks_[st] = std::move(c);
      subscribe(ctx, st);
    }
    // For the profile's loads: parameters, gradients and the two AdamW moments of every chunk, and
    // its slots (allocated whole at create: the table's peak in flight x gpt_stage::slot_bytes).
    std::uint64_t bytes = 0;
    for (const auto& [st, c] : chunks_) {
      bytes +=
          4 * c->model->params().bytes() + static_cast<std::uint64_t>(s_->slots[st]) *
                                               nn::gpt_stage::slot_bytes(o.model, s_->slices[st], o.batch, o.seq_len);
    }
    ctx.report_memory(bytes);
    sub(ctx, "ctl/reduce", [this](context& cx, const delivery& d) { reduce(cx, decode<reduce_msg>(d)); });
    sub(ctx, "ctl/step", [this](context& cx, const delivery& d) { step(cx, decode<step_msg>(d)); });
    sub(ctx, "ctl/committed", [this](context& cx, const delivery& d) { committed(cx, decode<committed_msg>(d)); });
  }

 private:
  struct chunk {
    int stage = 0;
    std::optional<nn::gpt_stage> model;
    std::unique_ptr<nn::adamw> opt;
    std::vector<int> free_slots;
    std::map<int, int> slot_of;  // microbatch -> slot, from F to B or W
    int peak_slots = 0;          // this step's most slots in use at once
  };

  void sub(context& ctx, const std::string& filter, std::function<void(context&, const delivery&)> fn) {
    auto ok = ctx.subscribe(filter, [&ctx, fn = std::move(fn)](const delivery& d) { fn(ctx, d); });
    if (!ok) throw std::runtime_error(ok.error().what());
  }

  void subscribe(context& ctx, int st) {
    const int S = s_->stages();
    if (st > 0)
      sub(ctx, "act/" + std::to_string(st) + "/+",
          [this, st](context& cx, const delivery& d) { arrived(cx, st, last_level(d.topic()), act, d.data()); });
    if (st < S - 1)
      sub(ctx, "grad/" + std::to_string(st) + "/+",
          [this, st](context& cx, const delivery& d) { arrived(cx, st, last_level(d.topic()), grad, d.data()); });
    if (S > 1 && (st == 0 || st == S - 1)) {
      sub(ctx, "tied/down/" + std::to_string(st), [this, st](context&, const delivery& d) { tied_[st] = d.data(); });
    }
  }

  void arrived(context& ctx, int st, int mb, arrival_kind k, const payload& p) {
    const std::size_t n = static_cast<std::size_t>(s_->opt.batch) * s_->opt.seq_len * s_->opt.model.channels;
    (void)floats_of(p, n, std::string(k == act ? "act/" : "grad/") + std::to_string(st) + "/" + std::to_string(mb));
    in_[{st, mb, k}] = p;
    walk(ctx);
  }

  // Sends `values` to stage `st`'s owner: kept here when this rank owns it, else published.
  void send(context& ctx, int st, int mb, arrival_kind k, std::vector<float>&& values) {
    payload p = share(std::move(values));
    if (chunks_.count(st)) {
      in_[{st, mb, k}] = std::move(p);
      return;
    }
    const std::string topic = std::string(k == act ? "act/" : "grad/") + std::to_string(st) + "/" + std::to_string(mb);
    auto ok = ctx.publish(topic, p, scope::parent());
    if (!ok) throw std::runtime_error(ok.error().what());
  }

  std::string where(const action& a) const {
    return "rank " + std::to_string(rank_) + " step " + std::to_string(step_) + " action " + std::to_string(pc_) +
           " (" + to_string(a) + ")";
  }
  static void check(const result<void>& r, const std::string& what) {
    if (!r) throw std::runtime_error(what + ": " + r.error().what());
  }

  bool ready(const action& a) const {
    const int S = s_->stages();
    switch (a.op) {
      case kind::F: return a.stage == 0 || in_.count({a.stage, a.microbatch, act});
      case kind::B:
      case kind::I: return a.stage == S - 1 || in_.count({a.stage, a.microbatch, grad});
      default: return true;
    }
  }

  void walk(context& ctx) {
    const auto& actions = s_->ranks[rank_];
    while (running_ && pc_ < actions.size()) {
      const action& a = actions[pc_];
      if (!ready(a)) return;
      if (s_->opt.record_timeline) {
        const std::int64_t start = now_ns();
        run(ctx, a);
        events_.push_back({a.stage, a.microbatch, static_cast<std::int32_t>(a.op), 0, start, now_ns()});
      } else {
        run(ctx, a);
      }
      ++pc_;
    }
    if (running_ && pc_ == actions.size()) finish(ctx);
  }

  void run(context& ctx, const action& a) {
    const int S = s_->stages();
    chunk& c = *chunks_.at(a.stage);
    nn::gpt_stage& m = *c.model;
    const std::string what = where(a);
    switch (a.op) {
      case kind::F: {
        if (c.free_slots.empty()) throw std::runtime_error(what + ": no free slot");
        const int slot = c.free_slots.back();
        c.free_slots.pop_back();
        c.slot_of[a.microbatch] = slot;
        c.peak_slots = std::max(c.peak_slots, static_cast<int>(c.slot_of.size()));
        nn::stage_input in;
        const std::size_t n = static_cast<std::size_t>(s_->opt.batch) * s_->opt.seq_len;
        std::vector<int> tokens(n), targets(n);
        if (a.stage == 0 || a.stage == S - 1) s_->hooks.data(step_, a.microbatch, tokens.data(), targets.data());
        std::optional<payload> input;
        if (a.stage == 0) {
          in.tokens = tokens.data();
        } else {
          auto it = in_.find({a.stage, a.microbatch, act});
          input = std::move(it->second);
          in_.erase(it);
          in.activations = reinterpret_cast<const float*>(input->bytes().data());
        }
        if (a.stage == S - 1) in.targets = targets.data();
        auto loss = m.forward(slot, in);
        if (!loss) throw std::runtime_error(what + ": " + loss.error().what());
        if (a.stage == S - 1) {
          loss_sum_ += *loss;
          ++losses_;
        } else {
          auto out = m.output_host(slot);
          if (!out) throw std::runtime_error(what + ": " + out.error().what());
          send(ctx, a.stage + 1, a.microbatch, act, std::move(out).value());
        }
        return;
      }
      case kind::B:
      case kind::I: {
        const auto slot_it = c.slot_of.find(a.microbatch);
        if (slot_it == c.slot_of.end()) throw std::runtime_error(what + ": no forward before it");
        std::optional<payload> g;
        const float* grad_in = nullptr;
        if (a.stage < S - 1) {
          auto it = in_.find({a.stage, a.microbatch, grad});
          g = std::move(it->second);
          in_.erase(it);
          grad_in = reinterpret_cast<const float*>(g->bytes().data());
        }
        if (a.op == kind::B) {
          check(m.backward(slot_it->second, grad_in), what);
        } else {
          check(m.backward_input(slot_it->second, grad_in), what);
        }
        if (a.stage > 0) {
          auto dx = m.input_grad_host(slot_it->second);
          if (!dx) throw std::runtime_error(what + ": " + dx.error().what());
          send(ctx, a.stage - 1, a.microbatch, grad, std::move(dx).value());
        }
        if (a.op == kind::B) {
          c.free_slots.push_back(slot_it->second);
          c.slot_of.erase(slot_it);
        }
        return;
      }
      case kind::W: {
        const auto slot_it = c.slot_of.find(a.microbatch);
        if (slot_it == c.slot_of.end()) throw std::runtime_error(what + ": no forward before it");
        check(m.backward_weight(slot_it->second), what);
        c.free_slots.push_back(slot_it->second);
        c.slot_of.erase(slot_it);
        return;
      }
      default: throw std::runtime_error(what + ": a communication action reached the executor");
    }
  }

  // The rank's actions of this step are done: the tied parts and the losses go to the composite.
  void finish(context& ctx) {
    running_ = false;
    const int S = s_->stages();
    for (auto& [st, c] : chunks_) {
      if (S == 1 || (st != 0 && st != S - 1)) continue;
      auto part = c->model->tied_embedding_grad_host();
      if (!part) throw std::runtime_error(part.error().what());
      auto ok = ctx.publish("tied/up/" + std::to_string(st), share(std::move(part).value()), scope::parent());
      if (!ok) throw std::runtime_error(ok.error().what());
    }
    publish_stats(ctx);
    auto ok = ctx.publish("ctl/done", encode(done_msg{step_, rank_, losses_, loss_sum_}), scope::parent());
    if (!ok) throw std::runtime_error(ok.error().what());
  }

  void publish_stats(context& ctx) {
    const stats_head h{step_,
                       walk_start_ns_,
                       rank_,
                       static_cast<std::int32_t>(chunks_.size()),
                       static_cast<std::int32_t>(events_.size()),
                       0};
    std::vector<std::byte> bytes(sizeof h + chunks_.size() * sizeof(chunk_stat) + events_.size() * sizeof(event_rec));
    std::byte* out = bytes.data();
    std::memcpy(out, &h, sizeof h);
    out += sizeof h;
    for (const auto& [st, c] : chunks_) {
      const chunk_stat cs{st, c->peak_slots};
      std::memcpy(out, &cs, sizeof cs);
      out += sizeof cs;
    }
    if (!events_.empty()) std::memcpy(out, events_.data(), events_.size() * sizeof(event_rec));
    auto ok = ctx.publish("ctl/stats", payload::copy_of(bytes), scope::parent());
    if (!ok) throw std::runtime_error(ok.error().what());
  }

  void reduce(context& ctx, const reduce_msg& r) {
    const int S = s_->stages();
    double sumsq = 0;
    for (auto& [st, c] : chunks_) {
      nn::gpt_stage& m = *c->model;
      if (S > 1 && (st == 0 || st == S - 1)) {
        auto it = tied_.find(st);
        if (it == tied_.end()) throw std::runtime_error("stage " + std::to_string(st) + ": no tied/down part");
        const std::size_t n = static_cast<std::size_t>(s_->opt.model.vocab_size) * s_->opt.model.channels;
        check(m.add_tied_embedding_grad({floats_of(it->second, n, "tied/down/" + std::to_string(st)), n}),
              "stage " + std::to_string(st));
        tied_.erase(it);
      }
      if (s_->hooks.on_gradients) s_->hooks.on_gradients(r.step, st, m);
      // wte's gradient is counted once, on stage 0: the head's copy holds the same sum.
      for (const auto& t : m.grads().tensors()) {
        if (S > 1 && st == S - 1 && t.name == "wte") continue;
        sumsq += be_->sum_squares(m.grads().base() + t.offset, t.numel);
      }
    }
    auto ok = ctx.publish("ctl/sumsq", encode(sumsq_msg{r.step, rank_, 0, sumsq}), scope::parent());
    if (!ok) throw std::runtime_error(ok.error().what());
  }

  void step(context& ctx, const step_msg& s) {
    if (s.apply) {
      for (auto& [st, c] : chunks_) {
        nn::arena& p = c->model->params();
        nn::arena& g = c->model->grads();
        if (s.coef < 1.0) be_->scale(g.base(), static_cast<float>(s.coef), g.numel());
        const int t = static_cast<int>(s.step);
        c->opt->update_range(p.base(), g.base(), 0, p.numel(), s_->opt.optimizer, t);
        c->opt->set_steps(t);
      }
    }
    const bool saving = s.apply && checkpoint_due(s_->opt, s.step);
    if (saving) save(ctx, s.step);
    if (!s.run) {
      // The last step's files are named by the manifest before the run may end.
      if (saving) {
        applied_after_commit_ = s.step;
      } else {
        applied(ctx, s.step);
      }
      return;
    }
    for (auto& [st, c] : chunks_) {
      c->model->zero_grad();
      c->peak_slots = 0;
    }
    events_.clear();
    walk_start_ns_ = now_ns();
    step_ = s.step;
    pc_ = 0;
    loss_sum_ = 0;
    losses_ = 0;
    running_ = true;
    walk(ctx);
  }

  void applied(context& ctx, std::int64_t step) {
    auto ok = ctx.publish("ctl/applied", encode(applied_msg{step, rank_, 0}), scope::parent());
    if (!ok) throw std::runtime_error(ok.error().what());
  }

  // Errors name the stage and the folder: missing, corrupt, saved for another model or split, or at
  // another step than the manifest's.
  result<void> restore(chunk& c) {
    const std::int64_t done = s_->opt.checkpoints.resume_step;
    const std::string& folder = s_->opt.checkpoints.path;
    const std::string stage = "stage " + std::to_string(c.stage) + ": ";
    auto bad = [](const std::string& m) { return error{errc::invalid, m}; };
    auto ck = nn::read_checkpoint(folder, stage_blob(c.stage));
    if (!ck) return bad(stage + ck.error().message);
    nn::checkpoint_identity id = s_->identity(c.stage);
    id.stored_floats = c.model->params().numel();
    if (auto same = nn::check_matches(*ck, folder, id); !same) return bad(stage + same.error().message);
    if (static_cast<std::int64_t>(ck->step) != done) {
      return bad(stage + "`" + folder + "` holds step " + std::to_string(ck->step) + ", the manifest says " +
                 std::to_string(done));
    }
    c.model->params().from_host(*be_, ck->params);
    c.opt->restore(ck->m, ck->v, static_cast<int>(done));
    return {};
  }

  // Sends each stage's state after `done` steps, encoded, to the composite, which stores every stage
  // of the step in one transaction.
  void save(context& ctx, std::int64_t done) {
    for (const auto& [st, c] : chunks_) {
      const nn::checkpoint_identity id = s_->identity(st);
      const nn::checkpoint ck{id.model,
                              id.config,
                              static_cast<std::uint64_t>(done),
                              c->model->params().to_host(*be_),
                              c->opt->m_host(),
                              c->opt->v_host(),
                              {}};
      auto bytes =
          nn::encode_checkpoint(ck, "stage " + std::to_string(st) + " checkpoint", false);  // the store checks it
      if (!bytes) throw std::runtime_error(bytes.error().what());
      auto owner = std::make_shared<const std::vector<std::byte>>(std::move(bytes).value());
      const payload blob = payload::view_of(owner, owner->data(), owner->size());
      auto ok = ctx.publish("ctl/saved/" + std::to_string(st) + "/" + std::to_string(done), blob, scope::parent());
      if (!ok) throw std::runtime_error(ok.error().what());
    }
  }

  void committed(context& ctx, const committed_msg& m) {
    if (applied_after_commit_ == m.step) applied(ctx, m.step);
  }

  int rank_;
  std::shared_ptr<const setup> s_;
  std::unique_ptr<nn::backend> be_;  // before the chunks: they use it until they go
  std::map<int, std::unique_ptr<chunk>> chunks_;
  std::map<std::tuple<int, int, int>, payload> in_;  // (stage, microbatch, kind) -> arrived floats
  std::map<int, payload> tied_;                      // end stage -> the other end's part
  std::int64_t step_ = -1;
  std::size_t pc_ = 0;
  bool running_ = false;
  double loss_sum_ = 0;
  std::int32_t losses_ = 0;
  std::vector<event_rec> events_;  // this step's actions, with record_timeline
  std::int64_t walk_start_ns_ = 0;
  std::int64_t applied_after_commit_ = -1;  // the last step: ctl/applied waits for its ctl/committed
};

std::vector<std::uint64_t> slot_bytes_of(const setup& s) {
  std::vector<std::uint64_t> out;
  for (const auto& slice : s.slices)
    out.push_back(nn::gpt_stage::slot_bytes(s.opt.model, slice, s.opt.batch, s.opt.seq_len));
  return out;
}

class trainer_composite : public composite {
 public:
  explicit trainer_composite(std::shared_ptr<const setup> s) : s_(std::move(s)) {}

  void on_start(context& ctx) override {
    sub(ctx, "tied/up/+", [this](context&, const delivery& d) { tied_[last_level(d.topic())] = d.data(); });
    sub(ctx, "ctl/stats", [this](context&, const delivery& d) { stats(d); });
    sub(ctx, "ctl/done", [this](context& cx, const delivery& d) { done(cx, decode<done_msg>(d)); });
    sub(ctx, "ctl/sumsq", [this](context& cx, const delivery& d) { sumsq(cx, decode<sumsq_msg>(d)); });
    sub(ctx, "ctl/applied", [this](context& cx, const delivery& d) { applied(cx, decode<applied_msg>(d)); });
    sub(ctx, "ctl/saved/+/+", [this](context& cx, const delivery& d) { saved(cx, d); });
    const auto& c = s_->opt.checkpoints;
    if (!c.path.empty() && !store_) {
      auto store = nn::checkpoint_store::open(c.path, {.synchronous = c.synchronous});
      if (!store) return fail(ctx, "checkpoint folder: " + store.error().message, 2);
      store_ = std::move(store).value();
    }
  }

  void on_children_started(context& ctx) override {
    if (started_) return;  // a restart's children rejoin the step in flight: not supported (header)
    started_ = true;
    publish(ctx, "ctl/step", encode(step_msg{s_->opt.checkpoints.resume_step, 1.0, 1, 0}));
  }

  // A stage leaf failed or its node is gone: the pipeline cannot go on (header).
  void on_child_failure(context& ctx, const std::string& child_path, const std::string& reason) override {
    const std::string leaf = child_path.substr(child_path.rfind('/') + 1);
    std::string stages;
    if (leaf.size() > 1 && leaf[0] == 'r') {
      const int rank = std::atoi(leaf.c_str() + 1);
      for (int st = 0; st < s_->stages(); ++st) {
        if (s_->opt.schedule.stage_rank[st] == rank) stages += (stages.empty() ? "" : ", ") + std::to_string(st);
      }
    }
    std::string message = "pipeline stage" + std::string(stages.find(',') == std::string::npos ? " " : "s ") + stages +
                          " (`" + child_path + "`) failed: " + reason + "; the pipeline cannot go on without it";
    const auto& c = s_->opt.checkpoints;
    if (store_) {
      (void)store_->flush(checkpoint_flush_on_failure);  // what was committed, durable before saying so
      const std::int64_t durable = std::max(store_->durable_step(), c.resume_step);
      message += durable > 0
                     ? "; the last durable checkpoint in `" + c.path + "` is after step " + std::to_string(durable)
                     : "; no checkpoint is durable yet";
    } else {
      message += "; no checkpoints were asked for";
    }
    fail(ctx, message, 1);
  }

 private:
  void sub(context& ctx, const std::string& filter, std::function<void(context&, const delivery&)> fn) {
    auto ok = ctx.subscribe(filter, [&ctx, fn = std::move(fn)](const delivery& d) { fn(ctx, d); });
    if (!ok) throw std::runtime_error(ok.error().what());
  }
  void publish(context& ctx, const std::string& topic, const payload& p) {
    auto ok = ctx.publish(topic, p, scope::self());
    if (!ok) throw std::runtime_error(ok.error().what());
  }
  // Ends the run with `exit_code` (quit_when_done), else fails the component.
  void fail(context& ctx, const std::string& message, int exit_code) {
    if (!s_->opt.quit_when_done) throw std::runtime_error(message);
    log::error(ctx.path(), message);
    ctx.quit(exit_code);
  }

  void stats(const delivery& d) {
    const auto h = decode<stats_head>(d);
    const std::size_t want = sizeof h + h.chunks * sizeof(chunk_stat) + h.events * sizeof(event_rec);
    if (h.rank < 0 || h.rank >= s_->num_ranks() || h.chunks < 0 || h.events < 0 || d.data().size() != want) {
      throw std::runtime_error("ctl/stats from `" + d.sender() + "`: " + std::to_string(d.data().size()) +
                               " bytes, expected " + std::to_string(want));
    }
    rank_stats& rs = stats_[h.rank];
    rs.walk_start_ns = h.walk_start_ns;
    const std::byte* in = d.bytes().data() + sizeof h;
    rs.chunks.resize(h.chunks);
    std::memcpy(rs.chunks.data(), in, h.chunks * sizeof(chunk_stat));
    in += h.chunks * sizeof(chunk_stat);
    rs.events.resize(h.events);
    if (h.events > 0) std::memcpy(rs.events.data(), in, h.events * sizeof(event_rec));
  }

  // The step's peak slots per stage and, when recorded, its timeline (trainer.hpp's step_report).
  void fill_stats(step_report& r) {
    const int S = s_->stages(), P = s_->num_ranks();
    r.peak_slots.assign(S, 0);
    r.activation_bytes.assign(S, 0);
    for (const auto& [rank, rs] : stats_) {
      for (const auto& c : rs.chunks) {
        if (c.stage < 0 || c.stage >= S) throw std::runtime_error("ctl/stats: stage " + std::to_string(c.stage));
        r.peak_slots[c.stage] = c.peak_slots;
        r.activation_bytes[c.stage] = static_cast<std::uint64_t>(c.peak_slots) * slot_bytes_[c.stage];
      }
    }
    if (!s_->opt.record_timeline) return;
    std::int64_t origin = 0;
    bool first = true;
    for (const auto& [rank, rs] : stats_) {
      if (first || rs.walk_start_ns < origin) origin = rs.walk_start_ns;
      first = false;
    }
    sim_result& t = r.timeline;
    t.busy.assign(P, 0);
    t.start.assign(P, 0);
    t.end.assign(P, 0);
    t.peak_memory.assign(P, 0);
    for (int st = 0; st < S; ++st)
      t.peak_memory[s_->opt.schedule.stage_rank[st]] += static_cast<double>(r.activation_bytes[st]);
    auto ms = [origin](std::int64_t ns) { return static_cast<double>(ns - origin) / 1e6; };
    for (const auto& [rank, rs] : stats_) {
      bool any = false;
      for (const auto& e : rs.events) {
        sim_event ev;
        ev.rank = rank;
        ev.a = action{e.stage, e.microbatch, static_cast<kind>(e.op), -1};
        ev.start = ms(e.start_ns);
        ev.end = ms(e.end_ns);
        t.busy[rank] += ev.end - ev.start;
        t.start[rank] = any ? std::min(t.start[rank], ev.start) : ev.start;
        t.end[rank] = any ? std::max(t.end[rank], ev.end) : ev.end;
        any = true;
        t.makespan = std::max(t.makespan, ev.end);
        t.events.push_back(ev);
      }
    }
    std::stable_sort(t.events.begin(), t.events.end(), [](const sim_event& a, const sim_event& b) {
      return std::tie(a.rank, a.start) < std::tie(b.rank, b.start);
    });
    double busy = 0, idle = 0, span_idle = 0;
    for (int q = 0; q < P; ++q) {
      busy += t.busy[q];
      idle += t.makespan - t.busy[q];
      span_idle += t.end[q] - t.start[q] - t.busy[q];
    }
    t.bubble_ratio = busy > 0 ? idle / busy : 0;
    t.span_bubble_ratio = busy > 0 ? span_idle / busy : 0;
    r.bubble = t.makespan > 0 ? 1.0 - busy / (P * t.makespan) : 0;
  }

  void done(context& ctx, const done_msg& d) {
    loss_sum_ += d.loss_sum;
    losses_ += d.losses;
    if (++arrived_ < s_->num_ranks()) return;
    arrived_ = 0;
    const int S = s_->stages();
    if (S > 1) {
      if (!tied_.count(0) || !tied_.count(S - 1))
        throw std::runtime_error("step " + std::to_string(d.step) + ": a tied part is missing");
      // Each end gets the other's part (the same shared bytes, forwarded).
      publish(ctx, "tied/down/0", tied_.at(S - 1));
      publish(ctx, "tied/down/" + std::to_string(S - 1), tied_.at(0));
      tied_.clear();
    }
    report_ = {};
    report_.step = d.step;
    report_.loss = static_cast<float>(loss_sum_ / std::max(1, losses_));
    fill_stats(report_);
    stats_.clear();
    loss_sum_ = 0;
    losses_ = 0;
    publish(ctx, "ctl/reduce", encode(reduce_msg{d.step}));
  }

  void sumsq(context& ctx, const sumsq_msg& m) {
    by_rank_.resize(s_->num_ranks());
    by_rank_[m.rank] = m.sumsq;
    if (++arrived_ < s_->num_ranks()) return;
    arrived_ = 0;
    double total = 0;
    for (double v : by_rank_) total += v;  // in rank order: the same bits every run
    const double norm = std::sqrt(total);
    double coef = 1.0;
    const float clip = s_->opt.optimizer.grad_clip;
    if (clip > 0.0f) coef = std::min(1.0, clip / (norm + 1e-6));
    report_.grad_norm = norm;
    if (s_->hooks.on_step) s_->hooks.on_step(report_);
    const std::int64_t next = m.step + 1;
    publish(ctx, "ctl/step", encode(step_msg{next, coef, next < s_->opt.steps ? 1 : 0, 1}));
  }

  // A stage's checkpoint of `step`. Once every stage's is here, they and the manifest are one store
  // transaction: a crash keeps all of them or none, so every stage resumes from the same step.
  void saved(context& ctx, const delivery& d) {
    const std::string& topic = d.topic();
    const std::size_t slash = topic.rfind('/');
    const int stage = std::stoi(topic.substr(topic.rfind('/', slash - 1) + 1));
    const std::int64_t step = std::stoll(topic.substr(slash + 1));
    if (!store_ || stage < 0 || stage >= s_->stages() || (!saving_.empty() && step != saving_step_))
      throw std::runtime_error("`" + topic + "` from `" + d.sender() + "`: not a checkpoint this run asked for");
    saving_step_ = step;
    saving_[stage] = d.data();
    if (static_cast<int>(saving_.size()) < s_->stages()) return;
    store::transaction txn = store_->begin();
    for (const auto& [st, blob] : saving_) txn.put(stage_blob(st), blob.bytes());
    const nlohmann::json manifest{{"format", manifest_format},
                                  {"version", manifest_version},
                                  {"step", step},
                                  {"stages", s_->stages()},
                                  {"cuts", s_->cuts}};
    txn.put(manifest_blob, std::string_view(manifest.dump(2)));
    saving_.clear();
    if (auto ok = store_->save(std::move(txn), step); !ok) {
      return fail(ctx, "checkpoint of step " + std::to_string(step) + ": " + ok.error().message, 1);
    }
    publish(ctx, "ctl/committed", encode(committed_msg{step}));
    if (s_->hooks.on_checkpoint) s_->hooks.on_checkpoint(step, s_->opt.checkpoints.path);
  }

  void applied(context& ctx, const applied_msg&) {
    if (++arrived_ < s_->num_ranks()) return;
    arrived_ = 0;
    if (store_) {  // the run is done once its checkpoints are on disk
      if (auto ok = store_->flush(std::chrono::hours(1)); !ok) {
        return fail(ctx, "checkpoint folder `" + s_->opt.checkpoints.path + "`: " + ok.error().message, 1);
      }
    }
    if (s_->hooks.on_done) s_->hooks.on_done();
    if (s_->opt.quit_when_done) ctx.quit(0);
  }

  std::shared_ptr<const setup> s_;
  bool started_ = false;
  int arrived_ = 0;
  std::unique_ptr<nn::checkpoint_store> store_;  // with checkpoints
  std::map<int, payload> saving_;                // the checkpoint in progress, by stage
  std::int64_t saving_step_ = 0;
  double loss_sum_ = 0;
  int losses_ = 0;
  std::map<int, payload> tied_;
  std::vector<double> by_rank_;
  step_report report_;
  struct rank_stats {
    std::int64_t walk_start_ns = 0;
    std::vector<chunk_stat> chunks;
    std::vector<event_rec> events;
  };
  std::map<int, rank_stats> stats_;  // this step's ctl/stats, by rank
  std::vector<std::uint64_t> slot_bytes_ = slot_bytes_of(*s_);
};

error bad(const std::string& m) { return error{errc::invalid, m}; }

}  // namespace

result<checkpoint_manifest> read_manifest(const std::filesystem::path& folder) {
  const std::string name = "checkpoint folder `" + folder.string() + "`";
  std::error_code ec;
  if (!std::filesystem::is_directory(folder, ec)) {
    return bad(name + (std::filesystem::exists(folder, ec) ? ": not a folder (a manifest file from before checkpoint "
                                                             "folders? docs/store.md)"
                                                           : ": does not exist"));
  }
  auto reader = store::blob_reader::open(folder.string());
  if (!reader) return bad(reader.error().message);
  auto bytes = reader->read(manifest_blob);
  if (!bytes) return bad(name + ": no pipeline checkpoint in it (" + bytes.error().message + ")");
  const nlohmann::json j =
      nlohmann::json::parse(reinterpret_cast<const char*>(bytes->data()),
                            reinterpret_cast<const char*>(bytes->data() + bytes->size()), nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("format", "") != manifest_format) {
    return bad(name + ": not a pipeline checkpoint manifest (written by train_gpt --pipeline)");
  }
  checkpoint_manifest m;
  try {
    if (j.at("version").get<int>() != manifest_version) {
      return bad(name + ": manifest version " + j.at("version").dump() + ", this build reads " +
                 std::to_string(manifest_version));
    }
    m.step = j.at("step").get<std::int64_t>();
    m.stages = j.at("stages").get<int>();
    m.cuts = j.at("cuts").get<std::vector<int>>();
  } catch (const nlohmann::json::exception& e) {
    return bad(name + ": " + e.what());
  }
  if (m.step < 1 || m.stages < 1 || static_cast<int>(m.cuts.size()) != m.stages - 1) {
    return bad(name + ": step " + std::to_string(m.step) + ", " + std::to_string(m.stages) + " stages and " +
               std::to_string(m.cuts.size()) + " cuts do not fit together");
  }
  return m;
}

bool has_checkpoint(const std::filesystem::path& folder) {
  std::error_code ec;
  if (!std::filesystem::exists(folder, ec)) return false;
  if (!std::filesystem::is_directory(folder, ec)) return true;
  auto reader = store::blob_reader::open(folder.string());
  return !reader || !reader->blobs().empty();  // any checkpoint: read_manifest says whether it is one
}

result<void> check_resumable(const checkpoint_manifest& m, const std::filesystem::path& folder,
                             const trainer_options& options) {
  const std::string name = "checkpoint folder `" + folder.string() + "`";
  const int stages = options.schedule.stages;
  std::vector<int> cuts = options.cuts;
  if (cuts.empty()) {
    auto even = even_cuts(options.model.num_layers, stages);
    if (!even) return even.error();
    cuts = *even;
  }
  auto list = [](const std::vector<int>& v) {
    std::string out;
    for (int x : v) out += (out.empty() ? "" : ",") + std::to_string(x);
    return "[" + out + "]";
  };
  if (m.stages != stages || m.cuts != cuts) {
    return bad(name + ": saved for " + std::to_string(m.stages) + " stages cut before blocks " + list(m.cuts) +
               ", this run has " + std::to_string(stages) + " cut before " + list(cuts));
  }
  if (m.step >= options.steps) {
    return bad(name + ": saved after step " + std::to_string(m.step) + " of --steps " + std::to_string(options.steps) +
               ": nothing left to train");
  }
  return {};
}

result<traffic_map> predict_traffic(const trainer_options& options, const std::string& composite_node,
                                    const std::vector<std::string>& node_of_rank) {
  const table t = options.schedule.has_comms() ? strip_comms(options.schedule) : options.schedule;
  if (auto v = validate(t)) return bad("schedule: " + v->message);
  const int S = t.stages, P = t.num_ranks();
  if (static_cast<int>(node_of_rank.size()) != P) {
    return bad(std::to_string(node_of_rank.size()) + " nodes for " + std::to_string(P) + " ranks");
  }
  traffic_map links;
  auto cross = [&](const std::string& from, const std::string& to, std::uint64_t n, std::uint64_t bytes, bool tensor) {
    if (from == to || n == 0) return;
    link_traffic& l = links[{from, to}];
    l.messages += n;
    l.bytes += n * bytes;
    if (tensor) {
      l.tensor_messages += n;
      l.tensor_bytes += n * bytes;
    }
  };
  // n messages from rank `from`'s leaf (-1: the composite) to the leaves `to` (-1: the composite).
  auto send = [&](int from, const std::vector<int>& to, std::uint64_t n, std::uint64_t bytes, bool tensor) {
    const std::string& origin = from < 0 ? composite_node : node_of_rank[from];
    cross(origin, composite_node, n, bytes, tensor);
    for (int r : to) {
      if (r >= 0) cross(composite_node, node_of_rank[r], n, bytes, tensor);
    }
  };
  std::vector<int> every_rank(P);
  for (int r = 0; r < P; ++r) every_rank[r] = r;
  const std::uint64_t steps = static_cast<std::uint64_t>(options.steps - options.checkpoints.resume_step);
  const std::uint64_t M = static_cast<std::uint64_t>(t.microbatches);
  const std::uint64_t activation =
      static_cast<std::uint64_t>(options.batch) * options.seq_len * options.model.channels * sizeof(float);
  for (int st = 0; st + 1 < S; ++st) {
    const int a = t.stage_rank[st], b = t.stage_rank[st + 1];
    if (a == b) continue;
    send(a, {b}, steps * M, activation, true);  // act/<st+1>/<i>
    send(b, {a}, steps * M, activation, true);  // grad/<st>/<i>
  }
  if (S > 1) {
    const std::uint64_t tied =
        static_cast<std::uint64_t>(options.model.vocab_size) * options.model.channels * sizeof(float);
    for (int end : {0, S - 1}) {
      send(t.stage_rank[end], {-1}, steps, tied, false);  // tied/up/<end>
      send(-1, {t.stage_rank[end]}, steps, tied, false);  // tied/down/<end>
    }
  }
  for (int r = 0; r < P; ++r) {
    std::uint64_t chunks = 0, actions = 0;
    for (int st = 0; st < S; ++st) chunks += t.stage_rank[st] == r ? 1 : 0;
    for (const auto& a : t.ranks[r]) actions += is_compute(a.op) ? 1 : 0;
    const std::uint64_t stats =
        sizeof(stats_head) + chunks * sizeof(chunk_stat) + (options.record_timeline ? actions * sizeof(event_rec) : 0);
    send(r, {-1}, steps, stats, false);              // ctl/stats
    send(r, {-1}, steps, sizeof(done_msg), false);   // ctl/done
    send(r, {-1}, steps, sizeof(sumsq_msg), false);  // ctl/sumsq
    send(r, {-1}, 1, sizeof(applied_msg), false);    // ctl/applied, after the last update
  }
  send(-1, every_rank, steps, sizeof(reduce_msg), false);    // ctl/reduce
  send(-1, every_rank, steps + 1, sizeof(step_msg), false);  // ctl/step: the first, then after each step
  std::uint64_t checkpoints = 0;
  for (std::int64_t done = 1; done <= options.steps; ++done) checkpoints += checkpoint_due(options, done) ? 1 : 0;
  // ctl/saved/<stage>/<step>: each stage's encoded checkpoint (nn/checkpoint.hpp's format, no vocabulary).
  std::vector<int> cuts = options.cuts;
  if (cuts.empty() && checkpoints > 0) {
    auto even = even_cuts(options.model.num_layers, S);
    if (!even) return even.error();
    cuts = *even;
  }
  auto slices = checkpoints > 0 ? nn::cut_stages(options.model.num_layers, cuts) : std::vector<nn::stage_slice>{};
  if (!slices) return bad("cuts: " + slices.error().message);
  const std::size_t config_values = options.model.to_vector().size() + 4;  // setup::identity's
  for (int st = 0; st < S && checkpoints > 0; ++st) {
    const std::uint64_t floats = nn::gpt_stage::param_floats(options.model, (*slices)[st]);
    const std::uint64_t encoded = 56 + 8 * config_values + std::string_view("gpt_stage").size() + 12 * floats + 4;
    send(t.stage_rank[st], {-1}, checkpoints, encoded, false);
  }
  send(-1, every_rank, checkpoints, sizeof(committed_msg), false);  // ctl/committed
  return links;
}

result<std::vector<int>> even_cuts(int num_layers, int stages) {
  if (stages < 1 || num_layers < stages) {
    return error{errc::invalid, std::to_string(stages) + " stages need at least as many blocks, the model has " +
                                    std::to_string(num_layers)};
  }
  std::vector<int> cuts;
  for (int s = 1; s < stages; ++s) cuts.push_back(s * num_layers / stages);
  return cuts;
}

result<void> add_trainer(spec& parent, const std::string& name, const trainer_options& options,
                         const trainer_hooks& hooks) {
  auto s = std::make_shared<setup>();
  s->opt = options;
  s->hooks = hooks;
  if (auto ok = options.model.validate(); !ok) return ok.error();
  if (auto ok = options.optimizer.validate(); !ok) return ok.error();
  if (options.batch < 1 || options.seq_len < 1 || options.seq_len > options.model.max_seq_len) {
    return bad("batch " + std::to_string(options.batch) + ", seq_len " + std::to_string(options.seq_len) +
               ": need batch >= 1 and 1 <= seq_len <= max_seq_len " + std::to_string(options.model.max_seq_len));
  }
  if (options.steps < 1) return bad("steps " + std::to_string(options.steps) + ": need at least 1");
  if (!hooks.data) return bad("trainer `" + name + "`: no batch source");
  const table t = options.schedule.has_comms() ? strip_comms(options.schedule) : options.schedule;
  if (auto v = validate(t)) return bad("schedule: " + v->message);
  s->opt.schedule = t;
  std::vector<int> cuts = options.cuts;
  if (cuts.empty()) {
    auto even = even_cuts(options.model.num_layers, t.stages);
    if (!even) return even.error();
    cuts = *even;
  }
  if (static_cast<int>(cuts.size()) != t.stages - 1) {
    return bad(std::to_string(cuts.size()) + " cuts for " + std::to_string(t.stages) + " stages: need " +
               std::to_string(t.stages - 1));
  }
  auto slices = nn::cut_stages(options.model.num_layers, cuts);
  if (!slices) return slices.error();
  s->slices = *slices;
  s->cuts = cuts;
  const auto& ck = options.checkpoints;
  if (ck.every < 0)
    return bad("checkpoint every " + std::to_string(ck.every) + " steps: need 0 (the end only) or more");
  if (ck.resume_step < 0 || ck.resume_step >= options.steps || (ck.resume_step > 0 && ck.path.empty())) {
    return bad("resume from step " + std::to_string(ck.resume_step) + " of " + std::to_string(options.steps) +
               (ck.path.empty() ? " without a checkpoint" : ": nothing left to train"));
  }
  // Slots per stage: the peak of microbatches between F and B (or W) in the rank's order.
  s->slots.assign(t.stages, 1);
  std::vector<int> live(t.stages, 0);
  for (const auto& rank : t.ranks) {
    for (const auto& a : rank) {
      if (a.op == kind::F) s->slots[a.stage] = std::max(s->slots[a.stage], ++live[a.stage]);
      if (a.op == kind::B || a.op == kind::W) --live[a.stage];
    }
  }
  s->ranks = t.ranks;
  auto& node = parent.add_composite<trainer_composite>(name, supervision{restart_strategy::one_for_all, 0},
                                                       std::shared_ptr<const setup>(s));
  for (int r = 0; r < t.num_ranks(); ++r) {
    node.add_leaf<stage_leaf>("r" + std::to_string(r), r, std::shared_ptr<const setup>(s));
  }
  return {};
}

}  // namespace banyan::pipeline
