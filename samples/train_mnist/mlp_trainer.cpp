#include "mlp_trainer.hpp"

#include <banyan/nn/checkpoint.hpp>
#include <banyan/nn/rng.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unistd.h>

namespace nn = banyan::nn;

void mlp_trainer::fail(banyan::context& ctx, const std::string& message) {
  std::fprintf(stderr, "train_mnist: %s\n", message.c_str());
  ctx.quit(1);
}

void mlp_trainer::on_start(banyan::context& ctx) {
  const auto& o = *opts_;
  auto train = nn::load_fashion_mnist(o.data_dir, "train");
  if (!train) return fail(ctx, train.err().message);
  auto test = nn::load_fashion_mnist(o.data_dir, "t10k");
  if (!test) return fail(ctx, test.err().message);
  train_ = std::move(train).value();
  test_ = std::move(test).value();
  auto be = nn::make_backend({.name = o.backend, .threads = o.nn_threads});
  if (!be) return fail(ctx, be.err().message);
  be_ = std::move(be).value();
  auto model = nn::mlp::create({.inputs = train_.rows * train_.cols, .hidden = o.hidden, .classes = 10}, o.batch, *be_);
  if (!model) return fail(ctx, model.err().message);
  model_.emplace(std::move(model).value());
  model_->init(o.seed);
  if (auto s = nn::adamw_config{.lr = o.lr, .weight_decay = o.weight_decay}.validate(); !s) return fail(ctx, s.err().message);
  opt_.emplace(*be_, model_->num_params());
  order_.resize(train_.count);
  for (int i = 0; i < train_.count; ++i) order_[i] = i;
  shuffle();
  total_steps_ = static_cast<long long>(o.epochs) * (train_.count / o.batch);
  if (!o.json) {
    std::fprintf(stderr, "train_mnist: %d training and %d test images, %zu parameters, backend %s\n", train_.count,
                 test_.count, model_->num_params(), be_->name().c_str());
  }
  started_ = last_print_ = std::chrono::steady_clock::now();
  ctx.post([this, &ctx] { step(ctx); });
}

void mlp_trainer::shuffle() {
  nn::rng r(opts_->seed * 7919ull + static_cast<std::uint64_t>(epoch_));
  for (std::size_t i = order_.size() - 1; i > 0; --i) std::swap(order_[i], order_[r.below(static_cast<std::uint32_t>(i + 1))]);
}

void mlp_trainer::step(banyan::context& ctx) {
  const auto& o = *opts_;
  if (epoch_ >= o.epochs) return finish(ctx);
  const int D = train_.rows * train_.cols;
  xb_.resize(static_cast<std::size_t>(o.batch) * D);
  yb_.resize(o.batch);
  for (int b = 0; b < o.batch; ++b) {
    const int i = order_[pos_ + b];
    std::copy_n(train_.pixels.begin() + static_cast<std::ptrdiff_t>(i) * D, D, xb_.begin() + static_cast<std::ptrdiff_t>(b) * D);
    yb_[b] = train_.labels[i];
  }
  last_loss_ = model_->forward(xb_.data(), yb_.data(), o.batch);
  model_->zero_grad();
  model_->backward();
  opt_->step(model_->params().base(), model_->grads().base(), {.lr = o.lr, .weight_decay = o.weight_decay, .grad_clip = 0.0f});
  ++steps_;
  pos_ += o.batch;
  if (pos_ + o.batch > train_.count) {  // epoch done (the last partial batch is dropped)
    ++epoch_;
    pos_ = 0;
    shuffle();
    last_acc_ = evaluate();
    if (!o.json) {
      std::fprintf(stderr, "%sepoch %d: train loss %.4f, test accuracy %.4f%s\n", isatty(2) ? "\r" : "", epoch_, last_loss_,
                   last_acc_, isatty(2) ? "\x1b[K" : "");
    }
  }
  progress(false);
  ctx.post([this, &ctx] { step(ctx); });
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

void mlp_trainer::progress(bool final) {
  const auto now = std::chrono::steady_clock::now();
  if (!final && now - last_print_ < std::chrono::milliseconds(isatty(2) ? 200 : 5000)) return;
  last_print_ = now;
  if (opts_->json && !final) return;
  const double secs = std::chrono::duration<double>(now - started_).count();
  const double rate = secs > 0 ? steps_ / secs : 0.0;
  const double eta = rate > 0 ? (total_steps_ - steps_) / rate : 0.0;
  constexpr int width = 30;
  std::string bar(total_steps_ > 0 ? static_cast<std::size_t>(width * steps_ / total_steps_) : width, '=');
  bar.resize(width, ' ');
  std::fprintf(stderr, "%strain_mnist [%s] epoch %d/%d  step %lld/%lld  loss %.4f  %.0f steps/s  ETA %.0fs%s",
               isatty(2) ? "\r" : "", bar.c_str(), std::min(epoch_ + 1, opts_->epochs), opts_->epochs, steps_, total_steps_,
               last_loss_, rate, eta, isatty(2) && !final ? "\x1b[K" : "\n");
}

void mlp_trainer::finish(banyan::context& ctx) {
  const auto& o = *opts_;
  progress(true);
  if (isatty(2)) std::fprintf(stderr, "\n");
  if (!o.checkpoint.empty()) {
    nn::checkpoint ck{"mlp", model_->config().to_vector(), static_cast<std::uint64_t>(opt_->steps()),
                      model_->params().to_host(*be_), opt_->m_host(), opt_->v_host()};
    if (auto s = nn::save_checkpoint(o.checkpoint, ck); !s) return fail(ctx, s.err().message);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  if (o.json) {
    nlohmann::json j{{"epochs", o.epochs}, {"steps", steps_}, {"train_loss", last_loss_}, {"test_accuracy", last_acc_},
                     {"seconds", secs}, {"parameters", model_->num_params()}, {"backend", be_->name()}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("train_mnist: %d epochs (%lld steps) in %.1fs, final train loss %.4f, test accuracy %.4f\n", o.epochs, steps_,
                secs, last_loss_, last_acc_);
  }
  std::fflush(stdout);
  ctx.quit(0);
}
