// banyan's GPT against a PyTorch reference (tools/reference/gpt_reference.py, Debian's python3-torch):
// the same tiny model, the same initial weights (exported by us, layernorm weights and biases
// perturbed away from 1 and 0), ten training steps each on its own batch. Each tensor must satisfy
// max|ours - ref| <= tol * max|ref|: the first logits 1e-5; at every step the loss 1e-5 and every
// gradient tensor 1e-4; after the steps both AdamW moments of every tensor 1e-5, and every parameter
// tensor within 1e-3 of the distance AdamW can move a parameter in those steps (lr * steps): AdamW
// divides each gradient by its own running scale, so an element whose gradient is a thousandth of its
// tensor's largest turns that gradient's rounding error (1e-6 of the largest) into a step error of
// ~1e-3 lr. A wrong update (bias correction, weight decay, clipping) is off by ~lr per step. fp32, CPU.
#include "banyan/nn/adamw.hpp"
#include "banyan/nn/gpt.hpp"
#include "banyan/nn/rng.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace banyan::nn {
namespace {

namespace fs = std::filesystem;

template <class T>
void put(std::ofstream& f, T v) {
  f.write(reinterpret_cast<const char*>(&v), sizeof(T));
}

double max_abs(const float* a, std::size_t n) {
  double m = 0.0;
  for (std::size_t i = 0; i < n; ++i) m = std::max(m, static_cast<double>(std::fabs(a[i])));
  return m;
}

double max_diff(const float* a, const float* b, std::size_t n) {
  double m = 0.0;
  for (std::size_t i = 0; i < n; ++i) m = std::max(m, static_cast<double>(std::fabs(a[i] - b[i])));
  return m;
}

// Checks one tensor and returns its relative error, so each kind can report its worst.
double expect_close(const std::string& what, const float* ours, const float* ref, std::size_t n, double tol) {
  const double scale = max_abs(ref, n);
  const double diff = max_diff(ours, ref, n);
  EXPECT_LE(diff, tol * scale) << what << ": max|ours - ref| = " << diff << ", max|ref| = " << scale << ", relative "
                               << (scale > 0 ? diff / scale : diff) << " > tol " << tol;
  return scale > 0 ? diff / scale : diff;
}

// max|ours - ref| <= tol_abs; returns max|ours - ref|.
double expect_close_abs(const std::string& what, const float* ours, const float* ref, std::size_t n, double tol_abs) {
  const double diff = max_diff(ours, ref, n);
  EXPECT_LE(diff, tol_abs) << what << ": max|ours - ref| = " << diff << " > " << tol_abs;
  return diff;
}

// The worst relative error of a kind of tensor (one line per kind, not per tensor).
struct worst {
  const char* what;
  double tol;
  double error = 0.0;
  int tensors = 0;
  void add(double e) {
    error = std::max(error, e);
    ++tensors;
  }
  ~worst() { std::printf("%-40s %4d tensors, worst error %.3g (tol %.0e)\n", what, tensors, error, tol); }
};

TEST(Reference, GptMatchesPytorchGradientsEveryStepAndParametersAfterTenAdamwSteps) {
  const std::uint64_t seed = 1337;
  SCOPED_TRACE("seed " + std::to_string(seed));
  const gpt_config cfg{.vocab_size = 61, .max_seq_len = 16, .num_layers = 2, .num_heads = 4, .channels = 32};
  const int B = 3, T = 12, steps = 10;
  const adamw_config opt{
      .lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .grad_clip = 0.5f};
  auto be = make_backend({.name = "cpu", .threads = 2});
  ASSERT_TRUE(be) << be.error().message;
  auto model = gpt::create(cfg, B, T, **be);
  ASSERT_TRUE(model) << model.error().message;
  model->init(seed);
  // Larger-than-GPT-2 init so that attention and GELU are far from linear and every path matters;
  // layernorm weights away from 1 and every bias away from 0, so that a kernel mixing up a weight and
  // a bias, or dropping one, shows.
  {
    auto p = model->params().to_host(**be);
    rng r(seed + 1);
    for (const auto& t : model->params().tensors()) {
      const bool layernorm = t.name.starts_with("ln") || t.name.find(".ln") != std::string::npos;
      for (std::size_t i = 0; i < t.numel; ++i) {
        float& x = p[t.offset + i];
        if (t.name.ends_with("_b")) {
          x = 0.1f * r.normal();
        } else if (layernorm) {
          x = 1.0f + 0.2f * r.normal();
        } else {
          x *= 10.0f;
        }
      }
    }
    model->params().from_host(**be, p);
  }
  // One batch per step.
  rng r(seed + 2);
  std::vector<std::vector<int>> tokens(steps, std::vector<int>(B * T)), targets = tokens;
  for (int s = 0; s < steps; ++s) {
    for (auto& x : tokens[s]) x = static_cast<int>(r.below(cfg.vocab_size));
    for (auto& x : targets[s]) x = static_cast<int>(r.below(cfg.vocab_size));
  }

  const fs::path dir = fs::path(BANYAN_BINARY_DIR) / "tests" / "nn_reference";
  fs::create_directories(dir);
  const fs::path in = dir / "input.bin", out = dir / "output.bin";
  const auto& tensors = model->params().tensors();
  {
    std::ofstream f(in, std::ios::binary | std::ios::trunc);
    f.write("BNYNREF2", 8);
    for (int v : {cfg.vocab_size, cfg.max_seq_len, cfg.num_layers, cfg.num_heads, cfg.channels, B, T, steps})
      put<int>(f, v);
    for (float v : {opt.lr, opt.beta1, opt.beta2, opt.eps, opt.weight_decay, opt.grad_clip}) put<float>(f, v);
    for (int s = 0; s < steps; ++s) {
      f.write(reinterpret_cast<const char*>(tokens[s].data()), sizeof(int) * tokens[s].size());
      f.write(reinterpret_cast<const char*>(targets[s].data()), sizeof(int) * targets[s].size());
    }
    const auto host = model->params().to_host(**be);
    put<int>(f, static_cast<int>(tensors.size()));
    for (const auto& t : tensors) {
      put<int>(f, static_cast<int>(t.name.size()));
      f.write(t.name.data(), static_cast<std::streamsize>(t.name.size()));
      put<int>(f, static_cast<int>(t.shape.size()));
      for (int d : t.shape) put<int>(f, d);
      f.write(reinterpret_cast<const char*>(host.data() + t.offset), sizeof(float) * t.numel);
    }
    ASSERT_TRUE(f.good()) << "cannot write " << in;
  }
  fs::remove(out);
  const std::string cmd = std::string(BANYAN_PYTHON) + " " + BANYAN_SOURCE_DIR + "/tools/reference/gpt_reference.py " +
                          in.string() + " " + out.string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "PyTorch reference failed: " << cmd
                                         << " (needs Debian's python3-torch; run tools/setup)";
  std::ifstream f(out, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  // The reference's tensors are packed (no arena padding): P = num_params() floats per set.
  const std::size_t V = cfg.vocab_size, N = static_cast<std::size_t>(B) * T, P = model->num_params();
  ASSERT_EQ(bytes.size(), sizeof(float) * (N * V + steps * (1 + P) + 3 * P));
  const float* ref = reinterpret_cast<const float*>(bytes.data());

  adamw optimizer(**be, model->params());
  float first_norm = 0.0f, first_loss = 0.0f, last_loss = 0.0f;
  {
    worst logits_err{"logits (step 0)", 1e-5}, loss_err{"loss (every step)", 1e-5},
        grad_err{"gradients (every tensor, every step)", 1e-4};
    for (int s = 0; s < steps; ++s) {
      SCOPED_TRACE("step " + std::to_string(s));
      const float loss = model->forward(tokens[s].data(), targets[s].data(), B, T);
      if (s == 0) {
        const auto logits = model->logits_host();
        logits_err.add(expect_close("logits", logits.data(), ref, N * V, 1e-5));
        ref += N * V;
        first_loss = loss;
      }
      last_loss = loss;
      loss_err.add(expect_close("loss", &loss, ref, 1, 1e-5));
      ref += 1;
      model->zero_grad();
      model->backward();
      const auto grads = model->grads().to_host(**be);
      for (const auto& t : tensors) {
        grad_err.add(expect_close("grad " + t.name, grads.data() + t.offset, ref, t.numel, 1e-4));
        ref += t.numel;
      }
      const float norm = optimizer.step(model->params().base(), model->grads().base(), opt);
      if (s == 0) first_norm = norm;
    }
  }
  EXPECT_GT(first_norm, opt.grad_clip) << "the test must exercise clipping";
  EXPECT_NE(first_loss, last_loss);

  // After the last step: parameters, then AdamW's first and second moments.
  const std::vector<float> ours[3] = {model->params().to_host(**be), optimizer.m_host(), optimizer.v_host()};
  const char* kinds[3] = {"parameters after 10 steps (/ lr*steps)", "AdamW m after 10 steps (relative)",
                          "AdamW v after 10 steps (relative)"};
  const int C = cfg.channels;
  const double reach = static_cast<double>(opt.lr) * steps;  // the most AdamW moves a parameter
  for (int k = 0; k < 3; ++k) {
    worst err{kinds[k], 1e-3};
    if (k > 0) err.tol = 1e-5;
    for (const auto& t : tensors) {
      const float* o = ours[k].data() + t.offset;
      if (k == 0 && t.name.ends_with("qkv_b")) {
        // The key bias's gradient is zero in exact arithmetic (softmax ignores a constant added to all
        // of a query's scores), so both sides hold rounding noise there (~1e-9) that AdamW normalises
        // into updates of up to lr/10 per step in either direction: compare the query and value biases.
        err.add(expect_close_abs("param " + t.name + " (q)", o, ref, C, 1e-3 * reach) / reach);
        err.add(expect_close_abs("param " + t.name + " (v)", o + 2 * C, ref + 2 * C, C, 1e-3 * reach) / reach);
      } else if (k == 0) {
        err.add(expect_close_abs("param " + t.name, o, ref, t.numel, 1e-3 * reach) / reach);
      } else {
        err.add(expect_close(std::string(kinds[k]) + " " + t.name, o, ref, t.numel, 1e-5));
      }
      ref += t.numel;
    }
  }
  EXPECT_EQ(ref, reinterpret_cast<const float*>(bytes.data() + bytes.size()));
}

}  // namespace
}  // namespace banyan::nn
