#include "gpt_trainer.hpp"

#include <banyan/nn/checkpoint.hpp>
#include <banyan/nn/rng.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <unistd.h>

namespace nn = banyan::nn;

void gpt_trainer::fail(banyan::context& ctx, const std::string& message) {
  std::fprintf(stderr, "train_gpt: %s\n", message.c_str());
  ctx.quit(1);
}

void gpt_trainer::on_start(banyan::context& ctx) {
  const auto& o = *opts_;
  auto corpus = nn::load_fortunes(o.data_dir);
  if (!corpus) return fail(ctx, corpus.err().message);
  corpus_ = std::move(corpus).value();
  const std::size_t n = corpus_.ids.size(), split = n * 9 / 10;
  if (split <= static_cast<std::size_t>(o.seq_len) + 1 || n - split <= static_cast<std::size_t>(o.seq_len) + 1) {
    return fail(ctx, "corpus `" + o.data_dir + "`: " + std::to_string(n) + " characters, too few for --seq " + std::to_string(o.seq_len));
  }
  train_.emplace(corpus_.ids, 0, split, o.batch, o.seq_len);
  val_.emplace(corpus_.ids, split, n, o.batch, o.seq_len);

  auto be = nn::make_backend({.name = o.backend, .threads = o.nn_threads});
  if (!be) return fail(ctx, be.err().message);
  be_ = std::move(be).value();
  const nn::gpt_config cfg{.vocab_size = static_cast<int>(corpus_.vocab.size()), .max_seq_len = o.seq_len,
                           .num_layers = o.layers, .num_heads = o.heads, .channels = o.channels};
  auto model = nn::gpt::create(cfg, o.batch, o.seq_len, *be_);
  if (!model) return fail(ctx, model.err().message);
  model_.emplace(std::move(model).value());
  model_->init(o.seed);
  opt_.emplace(*be_, model_->num_params());
  if (auto s = nn::adamw_config{.lr = o.lr, .weight_decay = o.weight_decay, .grad_clip = o.grad_clip}.validate(); !s) {
    return fail(ctx, s.err().message);
  }
  if (o.resume && std::filesystem::exists(o.checkpoint)) {
    auto ck = nn::load_checkpoint(o.checkpoint);
    if (!ck) return fail(ctx, ck.err().message);
    if (auto s = nn::check_matches(*ck, o.checkpoint, "gpt", cfg.to_vector(), model_->num_params()); !s) {
      return fail(ctx, s.err().message);
    }
    model_->params().from_host(*be_, ck->params);
    opt_->restore(ck->m, ck->v, static_cast<int>(ck->step));
    step_ = static_cast<int>(ck->step);
    std::fprintf(stderr, "train_gpt: resumed from `%s` at step %d\n", o.checkpoint.c_str(), step_);
  }
  start_step_ = step_;
  ctx.report_memory(4 * model_->num_params() * sizeof(float) + 2 * model_->activations().bytes());
  if (!o.json) {
    std::fprintf(stderr, "train_gpt: %zu characters, vocab %zu, %zu parameters, backend %s\n", n, corpus_.vocab.size(),
                 model_->num_params(), be_->name().c_str());
  }
  started_ = last_print_ = std::chrono::steady_clock::now();
  ctx.post([this, &ctx] { step(ctx); });
}

void gpt_trainer::step(banyan::context& ctx) {
  const auto& o = *opts_;
  if (step_ >= o.steps) return finish(ctx);
  // Batches depend only on (seed, step), so a resumed run sees the same data as an uninterrupted one.
  nn::rng r(o.seed * 1000003ull + static_cast<std::uint64_t>(step_));
  std::vector<int> in, tgt;
  train_->next(r, in, tgt);
  last_loss_ = model_->forward(in.data(), tgt.data(), o.batch, o.seq_len);
  model_->zero_grad();
  model_->backward();
  opt_->step(model_->params().base(), model_->grads().base(),
             {.lr = o.lr, .weight_decay = o.weight_decay, .grad_clip = o.grad_clip});
  ++step_;
  if (!std::isfinite(last_loss_)) return fail(ctx, "loss is not finite at step " + std::to_string(step_) + " (lower --lr)");
  if (o.val_every > 0 && step_ % o.val_every == 0) {
    last_val_ = validate();
    if (!o.json) std::fprintf(stderr, "%sstep %d: train loss %.4f, val loss %.4f%s\n", isatty(2) ? "\r" : "", step_, last_loss_, last_val_, isatty(2) ? "\x1b[K" : "");
  }
  if (o.checkpoint_every > 0 && step_ % o.checkpoint_every == 0 && !o.checkpoint.empty()) {
    nn::checkpoint ck{"gpt", model_->config().to_vector(), static_cast<std::uint64_t>(opt_->steps()),
                      model_->params().to_host(*be_), opt_->m_host(), opt_->v_host()};
    if (auto s = nn::save_checkpoint(o.checkpoint, ck); !s) return fail(ctx, s.err().message);
  }
  progress(false);
  ctx.post([this, &ctx] { step(ctx); });
}

float gpt_trainer::validate() {
  const auto& o = *opts_;
  nn::rng r(o.seed ^ 0x5eedull);  // the same validation batches every time
  std::vector<int> in, tgt;
  double sum = 0.0;
  for (int i = 0; i < o.val_batches; ++i) {
    val_->next(r, in, tgt);
    sum += model_->forward(in.data(), tgt.data(), o.batch, o.seq_len);
  }
  return static_cast<float>(sum / std::max(1, o.val_batches));
}

std::string gpt_trainer::generate() {
  const auto& o = *opts_;
  nn::rng r(o.seed + 17);
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

void gpt_trainer::progress(bool final) {
  const auto now = std::chrono::steady_clock::now();
  if (!final && now - last_print_ < std::chrono::milliseconds(isatty(2) ? 200 : 5000)) return;
  last_print_ = now;
  if (opts_->json && !final) return;
  const double secs = std::chrono::duration<double>(now - started_).count();
  const int done = step_ - start_step_, total = opts_->steps - start_step_;
  const double rate = secs > 0 ? done / secs : 0.0;
  const double eta = rate > 0 ? (total - done) / rate : 0.0;
  constexpr int width = 30;
  const int fill = total > 0 ? width * done / total : width;
  std::string bar(fill, '=');
  bar.resize(width, ' ');
  std::fprintf(stderr, "%strain_gpt [%s] step %d/%d  loss %.4f  %.1f steps/s  ETA %.0fs%s", isatty(2) ? "\r" : "",
               bar.c_str(), step_, opts_->steps, last_loss_, rate, eta, isatty(2) && !final ? "\x1b[K" : "\n");
}

void gpt_trainer::finish(banyan::context& ctx) {
  const auto& o = *opts_;
  progress(true);
  if (isatty(2)) std::fprintf(stderr, "\n");
  last_val_ = validate();
  if (!o.checkpoint.empty()) {
    nn::checkpoint ck{"gpt", model_->config().to_vector(), static_cast<std::uint64_t>(opt_->steps()),
                      model_->params().to_host(*be_), opt_->m_host(), opt_->v_host()};
    if (auto s = nn::save_checkpoint(o.checkpoint, ck); !s) return fail(ctx, s.err().message);
  }
  const std::string sample = generate();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  const double tokens = static_cast<double>(step_ - start_step_) * o.batch * o.seq_len;
  if (o.json) {
    nlohmann::json j{{"steps", step_},      {"train_loss", last_loss_}, {"val_loss", last_val_},
                     {"seconds", secs},     {"tokens_per_s", secs > 0 ? tokens / secs : 0.0},
                     {"parameters", model_->num_params()}, {"backend", be_->name()},
                     {"checkpoint", o.checkpoint}, {"sample", sample}};
    // Sampled bytes need not form valid UTF-8: replace invalid sequences rather than throw.
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("--- sample (%d chars, temperature %.2f) ---\n%s\n---\n", o.sample_chars, o.temperature, sample.c_str());
    std::printf("train_gpt: %d steps in %.1fs (%.0f tokens/s), train loss %.4f, val loss %.4f, checkpoint `%s`\n",
                step_ - start_step_, secs, secs > 0 ? tokens / secs : 0.0, last_loss_, last_val_, o.checkpoint.c_str());
  }
  std::fflush(stdout);
  ctx.quit(0);
}
