#include "banyan/trainer/mlp_trainer.hpp"

#include "banyan/trainer/state.hpp"
#include "format.hpp"
#include "workers.hpp"

#include <banyan/cpu/replicas.hpp>

#include <banyan/base/log.hpp>
#include <banyan/nn/rng.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

namespace banyan::trainer {

void mlp_trainer::on_start(context& ctx) {
  app_ = app_name(ctx.path());
  if (auto ready = prepare(ctx); !ready) {
    if (hub_) hub_->give_up();  // before its worker leaves start
    return fail(ctx, ready.error());
  }
  if (!opts_->common.json) {
    log::info(ctx.path(), format("%d training and %d test images, %zu parameters, backend %s", train_.count,
                                 test_.count, model_->num_params(), be_->name().c_str()));
  }
  progress_.emplace(app_, static_cast<std::uint64_t>(total_steps_), progress_style(opts_->common.json, 0));
  if (!driver_) ctx.post([this, &ctx] { step(ctx); });  // with workers: once they are all ready
}

result<void> mlp_trainer::prepare(context& ctx) {
  const auto& o = *opts_;
  std::optional<worker_plan> plan;
  if (!o.common.workers.empty() || o.common.share_params) {
    auto p = plan_workers(o.common, o.batch);
    if (!p) return std::move(p).error();
    plan = std::move(p).value();
  }
  if (!o.common.checkpoint.empty()) {
    auto store = open_checkpoints(o.common);
    if (!store) return std::move(store).error();
    checkpoints_ = std::move(store).value();
  }
  auto train = nn::load_fashion_mnist(o.data_dir, "train");
  if (!train) return input_error("--data", train.error());
  auto test = nn::load_fashion_mnist(o.data_dir, "t10k");
  if (!test) return input_error("--data", test.error());
  train_ = std::move(train).value();
  test_ = std::move(test).value();
  if (o.batch > train_.count) {
    return error{nn::errc::invalid_argument, "--batch " + std::to_string(o.batch) + ": larger than the training set (" +
                                                 std::to_string(train_.count) + " images)"};
  }
  auto be = nn::make_backend(o.common.backend_config());
  if (!be) return std::move(be).error();
  be_ = std::move(be).value();
  auto model = nn::mlp::create({.inputs = train_.rows * train_.cols, .hidden = o.hidden, .classes = 10}, o.batch, *be_);
  if (!model) return std::move(model).error();
  model_.emplace(std::move(model).value());
  model_->init(o.common.seed);
  if (auto s = o.common.optimizer(0.0f).validate(); !s) return s;
  opt_.emplace(*be_, model_->params());
  order_.resize(train_.count);
  for (int i = 0; i < train_.count; ++i) order_[i] = i;
  shuffle();
  total_steps_ = static_cast<long long>(o.epochs) * (train_.count / o.batch);
  if (plan) {
    log::info(ctx.path(), describe(*plan, o.common));
    const int b = plan->per_worker_batch, D = train_.rows * train_.cols;
    // Worker w's rows of global step `step`: the ones the single instance would train on.
    auto slice = [this, b, D](std::int64_t step, int w, std::vector<float>& x, std::vector<int>& y) {
      const auto first = static_cast<std::size_t>(run_first_pos_) +
                         static_cast<std::size_t>(step - run_first_step_) * static_cast<std::size_t>(opts_->batch) +
                         static_cast<std::size_t>(w) * static_cast<std::size_t>(b);
      x.resize(static_cast<std::size_t>(b) * D);
      y.resize(static_cast<std::size_t>(b));
      for (int i = 0; i < b; ++i) {
        const int img = order_[first + static_cast<std::size_t>(i)];
        std::copy_n(train_.pixels.begin() + static_cast<std::ptrdiff_t>(img) * D, D,
                    x.begin() + static_cast<std::ptrdiff_t>(i) * D);
        y[static_cast<std::size_t>(i)] = train_.labels[static_cast<std::size_t>(img)];
      }
    };
    if (auto wrong = check_worker_leaves(hub_.get(), *plan, o.common, ctx.path()); !wrong) return wrong;
    auto group = cpu::worker_group::start({.where = plan->where,
                                           .topo = plan->topo,
                                           .optimizer = o.common.optimizer(0.0f),
                                           .share_params = o.common.share_params,
                                           .external_threads = true},
                                          model_->params(), *opt_, cpu::mlp_replicas(model_->config(), b, slice));
    if (!group) return std::move(group).error();
    group_ = std::move(group).value();
    driver_ = std::make_unique<worker_driver>(
        ctx, hub_, *group_,
        [this, &ctx] {
          const auto mem = group_->memory();
          log::info(ctx.path(), describe(mem, opts_->common.share_params));
          ctx.report_memory(mem.total());
          step(ctx);
        },
        [&ctx](const error& e) { fail(ctx, e); });
  }
  return {};
}

void mlp_trainer::shuffle() {
  nn::rng r(opts_->common.seed * 7919ull + static_cast<std::uint64_t>(epoch_));
  for (std::size_t i = order_.size() - 1; i > 0; --i)
    std::swap(order_[i], order_[r.below(static_cast<std::uint32_t>(i + 1))]);
}

void mlp_trainer::step(context& ctx) {
  const auto& o = *opts_;
  if (epoch_ >= o.epochs) return finish(ctx);
  if (group_) {
    // Up to 20 steps per message, never past the end of the epoch.
    const int n = std::min(20, (train_.count - pos_) / o.batch);
    run_first_step_ = steps_;
    run_first_pos_ = pos_;
    return driver_->run(steps_, n, [this, &ctx, n](std::vector<float> losses) {
      for (float loss : losses) last_loss_ = loss;
      steps_ += n;
      pos_ += n * opts_->batch;
      after_step(ctx);
    });
  }
  const int D = train_.rows * train_.cols;
  xb_.resize(static_cast<std::size_t>(o.batch) * D);
  yb_.resize(o.batch);
  for (int b = 0; b < o.batch; ++b) {
    const int i = order_[pos_ + b];
    std::copy_n(train_.pixels.begin() + static_cast<std::ptrdiff_t>(i) * D, D,
                xb_.begin() + static_cast<std::ptrdiff_t>(b) * D);
    yb_[b] = train_.labels[i];
  }
  last_loss_ = model_->forward(xb_.data(), yb_.data(), o.batch);
  model_->zero_grad();
  model_->backward();
  opt_->step(model_->params().base(), model_->grads().base(), o.common.optimizer(0.0f));
  ++steps_;
  pos_ += o.batch;
  after_step(ctx);
}

void mlp_trainer::after_step(context& ctx) {
  const auto& o = *opts_;
  if (pos_ + o.batch > train_.count) {  // epoch done (the last partial batch is dropped)
    ++epoch_;
    pos_ = 0;
    shuffle();
    last_acc_ = evaluate();
    progress_->event(format("epoch %d: train loss %.4f, test accuracy %.4f", epoch_, last_loss_, last_acc_));
  }
  progress_->update(static_cast<std::uint64_t>(steps_), format("%s  loss %.4f", position().c_str(), last_loss_));
  ctx.post([this, &ctx] { step(ctx); });
}

std::string mlp_trainer::position() const {
  return format("epoch %d/%d  step %lld/%lld", std::min(epoch_ + 1, opts_->epochs), opts_->epochs, steps_,
                total_steps_);
}

double mlp_trainer::evaluate() {
  const int D = test_.rows * test_.cols, B = opts_->batch;
  long correct = 0;
  for (int start = 0; start < test_.count; start += B) {
    const int n = std::min(B, test_.count - start);
    model_->forward(test_.pixels.data() + static_cast<std::size_t>(start) * D, nullptr, n);
    const auto pred = model_->predictions();
    for (int i = 0; i < n; ++i) correct += pred[i] == test_.labels[start + i];
  }
  return static_cast<double>(correct) / test_.count;
}

void mlp_trainer::finish(context& ctx) {
  const auto& o = *opts_;
  progress_->finish(format("%s  loss %.4f", position().c_str(), last_loss_));
  if (checkpoints_) {
    const nn::checkpoint_identity id{
        .model = "mlp", .config = model_->config().to_vector(), .config_fields = model_->config().field_names()};
    if (auto s = save_state(*checkpoints_, id, model_->params(), *be_, *opt_); !s) return fail(ctx, s.error());
    if (auto s = finish_checkpoints(*checkpoints_); !s) return fail(ctx, s.error());
  }
  const double secs = progress_->elapsed_seconds();
  if (o.common.json) {
    nlohmann::json j{
        {"epochs", o.epochs},
        {"steps", steps_},
        {"train_loss", last_loss_},
        {"test_accuracy", last_acc_},
        {"seconds", secs},
        {"parameters", model_->num_params()},
        {"backend", be_->name()},
        {"workers", group_ ? group_->size() : 0},
        {"worker_wait_ms_per_step",
         group_ ? group_->stats().wait_ms / group_->size() / static_cast<double>(std::max(1LL, steps_)) : 0.0},
        {"worker_aggregate_ms_per_step",
         group_ ? group_->stats().aggregate_ms / group_->size() / static_cast<double>(std::max(1LL, steps_)) : 0.0}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%s: %d epochs (%lld steps) in %.1fs, final train loss %.4f, test accuracy %.4f\n", app_.c_str(),
                o.epochs, steps_, secs, last_loss_, last_acc_);
  }
  std::fflush(stdout);
  ctx.quit(0);
}

spec& add_mlp_trainer(spec& parent, const std::string& name, std::shared_ptr<const mlp_options> opts) {
  std::optional<worker_plan> plan;
  if (!opts->common.workers.empty()) {
    if (auto p = plan_workers(opts->common, opts->batch)) plan = std::move(p).value();
  }
  if (!plan) return parent.add_composite<mlp_trainer>(name, {}, opts, std::shared_ptr<worker_hub>());
  auto hub = std::make_shared<worker_hub>(plan->where.size());
  auto& trainer = parent.add_composite<mlp_trainer>(
      name, supervision{.strategy = restart_strategy::one_for_all, .max_restarts = 0}, opts, hub);
  add_worker_leaves(trainer, plan->where, hub);
  return trainer;
}

}  // namespace banyan::trainer
