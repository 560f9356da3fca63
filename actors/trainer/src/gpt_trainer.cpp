#include "banyan/trainer/gpt_trainer.hpp"

#include "banyan/trainer/state.hpp"
#include "device_memory.hpp"
#include "format.hpp"
#include "workers.hpp"

#include <banyan/cpu/replicas.hpp>

#include <banyan/base/log.hpp>
#include <banyan/nn/rng.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

namespace banyan::trainer {

gpt_trainer::~gpt_trainer() {
  // This incarnation may end mid-run (an ancestor failed): its workers' threads go on in the group
  // until their run returns, and the group, the model and the exchange they use must outlive that.
  // The driver's end waits for them; a worker blocked in the exchange would wait for a server that
  // may be gone, so the exchange lets it go first.
  if (exchange_) exchange_->cancel();
}

void gpt_trainer::on_start(context& ctx) {
  app_ = app_name(ctx.path());
  if (auto ready = prepare(ctx); !ready) {
    if (hub_) hub_->give_up();  // before its worker leaves start
    return fail(ctx, ready.error());
  }
  // Rank 0 speaks for the cluster; the other node trainers train silently.
  progress_.emplace(app_, static_cast<std::uint64_t>(opts_->steps - start_step_),
                    progress_style(opts_->common.json || rank_ > 0));  // ranks > 0 never update it
  if (!driver_) ctx.post([this, &ctx] { step(ctx); });                 // with workers: once they are all ready
}

namespace {

// The argument checks that read no file: the whole of check_gpt_options, and the worker plan they
// imply (nullopt without --workers).
result<std::optional<worker_plan>> check_arguments(const gpt_options& o) {
  auto bad = [](const std::string& what) { return error{nn::errc::invalid_argument, what}; };
  if (o.val_batches < 1) return bad("--val-batches " + std::to_string(o.val_batches) + ": must be at least 1");
  if (o.data_parallel < 1 || (o.data_parallel > 1 && o.common.workers.empty())) {
    return bad("--data-parallel " + std::to_string(o.data_parallel) +
               (o.data_parallel < 1 ? ": must be at least 1" : ": needs --workers"));
  }
  if (const auto& e = o.elastic; e.virtual_workers != 0) {
    if (e.virtual_workers < 0)
      return bad("--virtual-workers " + std::to_string(e.virtual_workers) + ": must be positive");
    if (!o.common.workers.empty() || o.data_parallel > 1)
      return bad("--elastic: not with --workers or --data-parallel (its physical workers replace them)");
    if (o.batch % e.virtual_workers != 0)
      return bad("--batch " + std::to_string(o.batch) + ": must be a multiple of --virtual-workers " +
                 std::to_string(e.virtual_workers));
    if (e.physical_workers < 1 || e.worker_threads < 1)
      return bad("--physical-workers and --worker-threads must be at least 1");
    if (e.min_workers < 0 || e.min_workers > e.physical_workers)
      return bad("--min-workers " + std::to_string(e.min_workers) + ": must be 0..--physical-workers (" +
                 std::to_string(e.physical_workers) + ")");
    if (e.balance != "measured" && e.balance != "even") return bad("--balance `" + e.balance + "`: measured or even");
    for (int k = 0; k < e.physical_workers; ++k)
      if (auto f = throttle_of(e, k); !f) return std::move(f).error();
  }
  if (o.batch % o.data_parallel != 0) {
    return bad("--batch " + std::to_string(o.batch) + ": must be a multiple of --data-parallel " +
               std::to_string(o.data_parallel));
  }
  std::optional<worker_plan> plan;
  if (!o.common.workers.empty() || o.common.share_params) {
    auto p = plan_workers(o.common, o.batch / o.data_parallel);
    if (!p) return std::move(p).error();
    plan = std::move(p).value();
  }
  auto memory = memory_budget(o.device_memory, o.memory_policy);
  if (!memory) return std::move(memory).error();
  if (*memory && (plan || o.elastic.virtual_workers > 0)) {
    return bad("--device-memory " + o.device_memory + ": not with " + (plan ? "--workers" : "--elastic") +
               " (a budget is per model instance)");
  }
  return plan;
}

}  // namespace

result<void> check_gpt_options(const gpt_options& o) {
  auto checked = check_arguments(o);
  if (!checked) return std::move(checked).error();
  return {};
}

result<void> gpt_trainer::prepare(context& ctx) {
  const auto& o = *opts_;
  auto checked = check_arguments(o);  // argument errors before any work
  if (!checked) return std::move(checked).error();
  if (*checked) plan_ = std::make_shared<const worker_plan>(std::move(**checked));
  auto memory = memory_budget(o.device_memory, o.memory_policy);  // checked above: a value
  if (!memory) return std::move(memory).error();
  if (!o.common.checkpoint.empty() && rank_ == 0) {  // rank 0 alone saves
    // A device-memory plan may offload to a host pool: it and the checkpoint buffer share one host
    // budget, so the pool's bytes come from the buffer flushing, never from dropping a checkpoint.
    std::shared_ptr<store::memory_budget> host;
    if (*memory) (*memory)->host_budget = host = shared_host_budget();
    auto store = open_checkpoints(o.common, "--checkpoint", host);
    if (!store) return std::move(store).error();
    checkpoints_ = std::move(store).value();
  }
  auto corpus = nn::load_fortunes(o.data_dir);
  if (!corpus) return input_error("--data", corpus.error());
  corpus_ = std::move(corpus).value();
  const std::size_t n = corpus_.ids.size(), split = n * 9 / 10;
  if (split <= static_cast<std::size_t>(o.seq_len) + 1 || n - split <= static_cast<std::size_t>(o.seq_len) + 1) {
    return error{nn::errc::invalid_argument, "corpus `" + o.data_dir + "`: " + std::to_string(n) +
                                                 " characters, too few for --seq " + std::to_string(o.seq_len)};
  }
  train_.emplace(corpus_.ids, 0, split, o.batch, o.seq_len);
  val_.emplace(corpus_.ids, split, n, o.batch, o.seq_len);

  auto be = nn::make_backend(o.common.backend_config());
  if (!be) return std::move(be).error();
  be_ = std::move(be).value();
  const nn::gpt_config cfg{.vocab_size = static_cast<int>(corpus_.vocab.size()),
                           .max_seq_len = o.seq_len,
                           .num_layers = o.layers,
                           .num_heads = o.heads,
                           .channels = o.channels};
  auto model = nn::gpt::create(cfg, o.batch, o.seq_len, *be_, *memory);
  if (!model && *memory) {
    return error{model.error().code, "--device-memory " + o.device_memory + " at --batch " + std::to_string(o.batch) +
                                         " --seq " + std::to_string(o.seq_len) + ": " + model.error().message};
  }
  if (!model) return std::move(model).error();
  model_.emplace(std::move(model).value());
  model_->init(o.common.seed);
  opt_.emplace(*be_, model_->params());
  if (auto s = o.common.optimizer(o.grad_clip).validate(); !s) return s;
  if (o.resume || o.require_resume) {
    const std::string flag = o.require_resume ? "--require-resume" : "--resume";
    if (o.common.checkpoint.empty()) {
      return error{nn::errc::invalid_argument, flag + ": no --checkpoint to resume from"};
    } else if (nn::has_checkpoint(o.common.checkpoint, state_blob)) {
      auto step = restore_state(o.common.checkpoint, identity(), model_->params(), *be_, *opt_);
      if (!step) return input_error(flag, step.error());
      step_ = *step;
      log::info(ctx.path(), "resumed from `" + o.common.checkpoint + "` at step " + std::to_string(step_));
    } else if (o.require_resume) {
      return error{nn::errc::invalid_argument,
                   flag + ": checkpoint folder `" + o.common.checkpoint + "` holds no checkpoint"};
    } else {
      log::warning(ctx.path(),
                   flag + ": checkpoint folder `" + o.common.checkpoint +
                       "` holds no checkpoint; training from scratch (--require-resume makes this an error)");
    }
  }
  start_step_ = step_;
  if (plan_) return start_workers(ctx);
  if (o.elastic.virtual_workers > 0) {
    // Checked here too, so a bad --virtual-workers is an argument error before any worker starts.
    auto shards = virtual_shards::make(corpus_.ids, split, o.elastic.virtual_workers,
                                       o.batch / o.elastic.virtual_workers, o.seq_len, o.common.seed);
    if (!shards) return std::move(shards).error();
    elastic_ =
        std::make_unique<elastic_scheduler>(ctx, o.elastic, [this, &ctx](const std::string& why) { fail(ctx, why); });
    if (auto ok = elastic_->start(); !ok) return ok;
  }
  ctx.report_memory(4 * model_->num_params() * sizeof(float) +
                    (model_->memory() ? model_->memory()->options().budget : 2 * model_->activations().bytes()));
  if (!o.common.json) {
    log::info(ctx.path(), format("%zu characters, vocab %zu, %zu parameters, backend %s", n, corpus_.vocab.size(),
                                 model_->num_params(), be_->name().c_str()));
  }
  return {};
}

result<void> gpt_trainer::start_workers(context& ctx) {
  const auto& o = *opts_;
  const auto* plan = plan_.get();
  // Worker w's slice of the global batch the single instance would train on at `step`.
  const int b = plan->per_worker_batch, T = o.seq_len, first_worker = rank_ * plan->where.size();
  const std::uint64_t seed = o.common.seed;
  const nn::text_batcher* batcher = &*train_;
  auto slice = [=](std::int64_t step, int w, std::vector<int>& tok, std::vector<int>& tgt) {
    nn::rng r(seed * 1000003ull + static_cast<std::uint64_t>(step));
    std::vector<int> in, out;
    batcher->next(r, in, out);
    const auto off = static_cast<std::ptrdiff_t>(first_worker + w) * b * T;
    tok.assign(in.begin() + off, in.begin() + off + static_cast<std::ptrdiff_t>(b) * T);
    tgt.assign(out.begin() + off, out.begin() + off + static_cast<std::ptrdiff_t>(b) * T);
  };
  log::info(ctx.path(), describe(*plan, o.common));
  if (o.data_parallel > 1) {
    exchange_ = std::make_unique<node_exchange>(ctx, static_cast<std::uint32_t>(rank_), std::chrono::seconds(60));
    log::info(ctx.path(), format("data-parallel: node trainer %d of %d, rows %d..%d of each batch of %d; "
                                 "%zu gradient bytes up and down per step",
                                 rank_, o.data_parallel, first_worker * b, (first_worker + plan->where.size()) * b - 1,
                                 o.batch, gradient_header_bytes + model_->params().bytes()));
  }
  if (auto wrong = check_worker_leaves(hub_.get(), *plan, o.common, ctx.path()); !wrong) return wrong;
  auto group = cpu::worker_group::start({.where = plan->where,
                                         .topo = plan->topo,
                                         .optimizer = o.common.optimizer(o.grad_clip),
                                         .share_params = o.common.share_params,
                                         .exchange = exchange_ ? exchange_->function() : cpu::cluster_exchange{},
                                         .external_threads = true},
                                        model_->params(), *opt_, cpu::gpt_replicas(model_->config(), b, T, slice));
  if (!group) return std::move(group).error();
  group_ = std::move(group).value();
  // The worker leaves start after this on_start, attach to the group on their own threads, and say
  // ready; then the steps begin.
  driver_ = std::make_unique<worker_driver>(
      ctx, hub_, *group_,
      [this, &ctx] {
        const auto mem = group_->memory();
        log::info(ctx.path(), describe(mem, opts_->common.share_params));
        ctx.report_memory(mem.total() + 2 * model_->activations().bytes());
        step(ctx);
      },
      [this, &ctx](const error& e) { fail(ctx, e); });
  return {};
}

void gpt_trainer::step(context& ctx) {
  const auto& o = *opts_;
  if (step_ >= o.steps) return finish(ctx);
  if (group_) {
    // Up to 10 steps per message, never past a validation or checkpoint step.
    int n = std::min(10, o.steps - step_);
    if (o.val_every > 0) n = std::min(n, o.val_every - step_ % o.val_every);
    if (o.checkpoint_every > 0 && !o.common.checkpoint.empty())
      n = std::min(n, o.checkpoint_every - step_ % o.checkpoint_every);
    // The worker leaves run them; this actor stays free (the cluster exchange goes through it).
    return driver_->run(step_, n, [this, &ctx](std::vector<float> losses) { ran(ctx, losses); });
  }
  if (elastic_) {
    // The physical workers compute; the scheduler folds their gradients into host_grads_.
    const std::size_t n = model_->params().numel();
    host_params_.resize(n);
    host_grads_.resize(n);
    be_->download(host_params_.data(), model_->params().base(), n * sizeof(float));
    return elastic_->run(step_, host_params_.data(), n, host_grads_.data(),
                         [this, &ctx](float loss) { elastic_step(ctx, loss); });
  }
  // Batches depend only on (seed, step), so a resumed run sees the same data as an uninterrupted one.
  nn::rng r(o.common.seed * 1000003ull + static_cast<std::uint64_t>(step_));
  std::vector<int> in, tgt;
  train_->next(r, in, tgt);
  last_loss_ = model_->forward(in.data(), tgt.data(), o.batch, o.seq_len);
  model_->zero_grad();
  model_->backward();
  opt_->step(model_->params().base(), model_->grads().base(), o.common.optimizer(o.grad_clip));
  ++step_;
  losses_.push_back(last_loss_);
  if (!std::isfinite(last_loss_))
    return fail(ctx, "loss is not finite at step " + std::to_string(step_) + " (lower --lr)");
  // The plan made from the first step's measured layer times.
  if (step_ == start_step_ + 1 && o.print_memory_plan && model_->memory() && !o.common.json) {
    std::printf("%s", nn::format_plan(model_->memory()->graph(), model_->memory()->plan()).c_str());
    std::fflush(stdout);
  }
  after_step(ctx);
}

void gpt_trainer::elastic_step(context& ctx, float loss) {
  be_->upload(model_->grads().base(), host_grads_.data(), host_grads_.size() * sizeof(float));
  opt_->step(model_->params().base(), model_->grads().base(), opts_->common.optimizer(opts_->grad_clip));
  ++step_;
  last_loss_ = loss;
  losses_.push_back(loss);
  if (!std::isfinite(loss)) return fail(ctx, "loss is not finite at step " + std::to_string(step_) + " (lower --lr)");
  after_step(ctx);
}

void gpt_trainer::on_child_failure(context&, const std::string& child_path, const std::string& reason) {
  if (elastic_) elastic_->worker_ended(child_path, reason);
}

void gpt_trainer::ran(context& ctx, const std::vector<float>& losses) {
  if (exchange_) {
    if (auto failed = exchange_->failure()) return fail(ctx, "data-parallel: " + std::string(failed->what()));
  }
  for (float loss : losses) {
    ++step_;
    last_loss_ = loss;
    losses_.push_back(loss);
    if (!std::isfinite(loss)) return fail(ctx, "loss is not finite at step " + std::to_string(step_) + " (lower --lr)");
  }
  after_step(ctx);
}

void gpt_trainer::after_step(context& ctx) {
  const auto& o = *opts_;
  if (rank_ > 0) {  // rank 0 validates, saves and reports for every node trainer
    ctx.post([this, &ctx] { step(ctx); });
    return;
  }
  if (o.val_every > 0 && step_ % o.val_every == 0) {
    last_val_ = validate();
    progress_->event(format("step %d: train loss %.4f, val loss %.4f", step_, last_loss_, last_val_));
  }
  if (o.checkpoint_every > 0 && step_ % o.checkpoint_every == 0 && checkpoints_) {
    if (auto s = save(); !s) return fail(ctx, s.error());
  }
  progress_->update(static_cast<std::uint64_t>(step_ - start_step_),
                    format("%s  loss %.4f", position().c_str(), last_loss_));
  ctx.post([this, &ctx] { step(ctx); });
}

std::string gpt_trainer::position() const { return format("step %d/%d", step_, opts_->steps); }

nn::checkpoint_identity gpt_trainer::identity() const {
  return {.model = "gpt",
          .config = model_->config().to_vector(),
          .config_fields = nn::gpt_config::field_names(),
          .vocabulary = corpus_.vocab};
}

result<void> gpt_trainer::save() { return save_state(*checkpoints_, identity(), model_->params(), *be_, *opt_); }

float gpt_trainer::validate() {
  const auto& o = *opts_;
  nn::rng r(o.common.seed ^ 0x5eedull);  // the same validation batches every time
  std::vector<int> in, tgt;
  double sum = 0.0;
  for (int i = 0; i < o.val_batches; ++i) {
    val_->next(r, in, tgt);
    sum += model_->forward(in.data(), tgt.data(), o.batch, o.seq_len);
  }
  return static_cast<float>(sum / o.val_batches);
}

std::string gpt_trainer::generate() {
  const auto& o = *opts_;
  nn::rng r(o.common.seed + 17);
  std::vector<int> ctx_ids{corpus_.id_of('\n') >= 0 ? corpus_.id_of('\n') : 0};
  std::vector<int> out;
  for (int i = 0; i < o.sample_chars; ++i) {
    const int T = static_cast<int>(std::min<std::size_t>(ctx_ids.size(), o.seq_len));
    std::vector<int> window(ctx_ids.end() - T, ctx_ids.end());
    model_->forward(window.data(), nullptr, 1, T);
    auto logits = model_->logits_row(0, T - 1);
    const float maxv = *std::max_element(logits.begin(), logits.end());
    double sum = 0.0;
    for (auto& l : logits) sum += (l = std::exp((l - maxv) / o.temperature));
    double u = r.uniform() * sum;
    int next = static_cast<int>(logits.size()) - 1;
    for (std::size_t k = 0; k < logits.size(); ++k) {
      u -= logits[k];
      if (u <= 0) {
        next = static_cast<int>(k);
        break;
      }
    }
    ctx_ids.push_back(next);
    out.push_back(next);
  }
  return corpus_.decode(out);
}

void gpt_trainer::finish(context& ctx) {
  const auto& o = *opts_;
  if (rank_ > 0) return log::info(ctx.path(), format("done: %d steps, train loss %.6f", step_, last_loss_));
  progress_->finish(format("%s  loss %.4f", position().c_str(), last_loss_));
  last_val_ = validate();
  if (checkpoints_) {
    if (auto s = save(); !s) return fail(ctx, s.error());
    if (auto s = finish_checkpoints(*checkpoints_); !s) return fail(ctx, s.error());
  }
  const std::string sample = generate();
  const double secs = progress_->elapsed_seconds();
  const double tokens = static_cast<double>(step_ - start_step_) * o.batch * o.seq_len;
  if (o.common.json) {
    nlohmann::json j{
        {"steps", step_},
        {"train_loss", last_loss_},
        {"val_loss", last_val_},
        {"seconds", secs},
        {"tokens_per_s", secs > 0 ? tokens / secs : 0.0},
        {"parameters", model_->num_params()},
        {"backend", be_->name()},
        {"workers", group_ ? group_->size() : 0},
        {"worker_wait_ms_per_step",
         group_ ? group_->stats().wait_ms / group_->size() / std::max(1, step_ - start_step_) : 0.0},
        {"worker_aggregate_ms_per_step",
         group_ ? group_->stats().aggregate_ms / group_->size() / std::max(1, step_ - start_step_) : 0.0},
        {"data_parallel", o.data_parallel},
        {"gradient_bytes", model_->params().bytes()},  // one gradient, as the exchange sends it
        {"checkpoint", o.common.checkpoint},
        {"checkpoints", checkpoints_ ? checkpoint_json(*checkpoints_, o.common.checkpoint_sync) : nlohmann::json()},
        {"sample", sample},
        {"losses", losses_}};
    if (elastic_) {
      const auto& e = elastic_->stats();
      j["elastic"] = {{"virtual_workers", o.elastic.virtual_workers},
                      {"physical_workers", o.elastic.physical_workers},
                      {"balance", o.elastic.balance},
                      {"step_ms", e.steps ? e.step_ms_total / e.steps : 0.0},
                      {"joins", e.joins},
                      {"leaves", e.leaves},
                      {"redone", e.redone},
                      {"reassignments", e.reassignments},
                      {"assignment", e.assignment}};
    }
    if (model_->memory()) j["memory"] = memory_json(*model_->memory(), o.print_memory_plan);
    // Sampled bytes need not form valid UTF-8: replace invalid sequences rather than throw.
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("--- sample (%d chars, temperature %.2f) ---\n%s\n---\n", o.sample_chars, o.temperature,
                sample.c_str());
    std::printf("%s: %d steps in %.1fs (%.0f tokens/s), train loss %.4f, val loss %.4f, checkpoint `%s`\n",
                app_.c_str(), step_ - start_step_, secs, secs > 0 ? tokens / secs : 0.0, last_loss_, last_val_,
                o.common.checkpoint.c_str());
    if (const auto* m = model_->memory()) {
      std::printf("device memory: peak %s measured of a %s budget (%s plan), %s on the host, %llu late copies\n",
                  nn::format_bytes(m->stats().peak_bytes).c_str(), nn::format_bytes(m->options().budget).c_str(),
                  nn::to_string(m->plan().policy), nn::format_bytes(m->plan().host_bytes).c_str(),
                  static_cast<unsigned long long>(m->stats().late_copies));
    }
  }
  std::fflush(stdout);
  ctx.quit(0);
}

spec& add_gpt_trainer(spec& parent, const std::string& name, std::shared_ptr<const gpt_options> opts) {
  const auto& o = *opts;
  const int nodes = std::max(1, o.data_parallel);
  // A node trainer that gives up (its workers failed) is not restarted mid-step: it escalates.
  const supervision give_up{.strategy = restart_strategy::one_for_all, .max_restarts = 0};
  auto node_trainer = [&](spec& at, const std::string& node_name, int rank) -> spec& {
    std::optional<worker_plan> plan;
    if (!o.common.workers.empty() && o.batch % nodes == 0) {
      if (auto p = plan_workers(o.common, o.batch / nodes)) plan = std::move(p).value();
    }
    if (!plan) return at.add_composite<gpt_trainer>(node_name, give_up, opts, rank, std::shared_ptr<worker_hub>());
    auto hub = std::make_shared<worker_hub>(plan->where.size());
    auto& trainer = at.add_composite<gpt_trainer>(node_name, give_up, opts, rank, hub);
    add_worker_leaves(trainer, plan->where, hub);
    return trainer;
  };
  if (o.elastic.virtual_workers > 0) {
    // The scheduler and its physical workers: dynamic (it starts them, and asks again for one that
    // ended), never restarted by supervision (their virtual workers move instead), own threads.
    auto& trainer = parent.add_composite<gpt_trainer>(name, give_up, opts, 0, std::shared_ptr<worker_hub>());
    for (int k = 0; k < std::max(1, o.elastic.physical_workers); ++k)
      trainer.add_leaf<elastic_worker>("p" + std::to_string(k), opts, k)
          .dynamic()
          .restart(restart_type::temporary)
          .own_thread();
    return trainer;
  }
  if (nodes == 1) return node_trainer(parent, name, 0);
  auto& server = parent.add_composite<gradient_server>(name, give_up, nodes);
  for (int rank = 0; rank < nodes; ++rank) node_trainer(server, "n" + std::to_string(rank), rank);
  return server;
}

}  // namespace banyan::trainer
