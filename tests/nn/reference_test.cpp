// banyan's GPT against a PyTorch reference (tools/reference/gpt_reference.py, Debian's python3-torch):
// the same tiny model, the same initial weights (exported by us), the same batch. Each tensor must
// satisfy max|ours - ref| <= tol * max|ref|: logits and loss 1e-5, every gradient 1e-4, the losses of
// 10 AdamW steps (weight decay, clipping) 1e-4. fp32, CPU.
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

void expect_close(const std::string& what, const float* ours, const float* ref, std::size_t n, double tol) {
  const double scale = max_abs(ref, n);
  const double diff = max_diff(ours, ref, n);
  if (what.rfind("grad h", 0) != 0) {  // one line per kind; the per-block gradients would be noise
    std::printf("%-22s relative max error %.3g (tol %.0e)\n", what.c_str(), scale > 0 ? diff / scale : diff, tol);
  }
  EXPECT_LE(diff, tol * scale) << what << ": max|ours - ref| = " << diff << ", max|ref| = " << scale
                               << ", relative " << (scale > 0 ? diff / scale : diff) << " > tol " << tol;
}

TEST(Reference, GptMatchesPytorchLogitsGradientsAndAdamwTrajectory) {
  const std::uint64_t seed = 1337;
  SCOPED_TRACE("seed " + std::to_string(seed));
  const gpt_config cfg{.vocab_size = 61, .max_seq_len = 16, .num_layers = 2, .num_heads = 4, .channels = 32};
  const int B = 3, T = 12, steps = 10;
  const adamw_config opt{.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f,
                         .grad_clip = 0.5f};
  auto be = make_backend({.name = "cpu", .threads = 2});
  ASSERT_TRUE(be) << be.error().message;
  auto model = gpt::create(cfg, B, T, **be);
  ASSERT_TRUE(model) << model.error().message;
  model->init(seed);
  // Larger-than-GPT-2 init so that attention and GELU are far from linear and every path matters.
  {
    auto p = model->params().to_host(**be);
    rng r(seed + 1);
    for (const auto& t : model->params().tensors()) {
      if (t.name.ends_with("_b")) {
        for (std::size_t i = 0; i < t.numel; ++i) p[t.offset + i] = 0.1f * r.normal();
      } else if (!t.name.starts_with("ln") && t.name.find(".ln") == std::string::npos) {
        for (std::size_t i = 0; i < t.numel; ++i) p[t.offset + i] *= 10.0f;
      }
    }
    model->params().from_host(**be, p);
  }
  rng r(seed + 2);
  std::vector<int> tokens(B * T), targets(B * T);
  for (auto& x : tokens) x = static_cast<int>(r.below(cfg.vocab_size));
  for (auto& x : targets) x = static_cast<int>(r.below(cfg.vocab_size));

  const fs::path dir = fs::path(BANYAN_BINARY_DIR) / "tests" / "nn_reference";
  fs::create_directories(dir);
  const fs::path in = dir / "input.bin", out = dir / "output.bin";
  {
    std::ofstream f(in, std::ios::binary | std::ios::trunc);
    f.write("BNYNREF1", 8);
    for (int v : {cfg.vocab_size, cfg.max_seq_len, cfg.num_layers, cfg.num_heads, cfg.channels, B, T, steps}) put<int>(f, v);
    for (float v : {opt.lr, opt.beta1, opt.beta2, opt.eps, opt.weight_decay, opt.grad_clip}) put<float>(f, v);
    f.write(reinterpret_cast<const char*>(tokens.data()), sizeof(int) * tokens.size());
    f.write(reinterpret_cast<const char*>(targets.data()), sizeof(int) * targets.size());
    const auto host = model->params().to_host(**be);
    put<int>(f, static_cast<int>(model->params().tensors().size()));
    for (const auto& t : model->params().tensors()) {
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
  const std::size_t V = cfg.vocab_size, N = static_cast<std::size_t>(B) * T;
  const std::size_t expect_floats = N * V + 1 + model->num_params() + steps;
  // The grads in the file are packed (no arena alignment padding): count them per tensor.
  std::size_t packed = 0;
  for (const auto& t : model->params().tensors()) packed += t.numel;
  ASSERT_EQ(bytes.size(), sizeof(float) * (expect_floats - model->num_params() + packed));
  const float* ref = reinterpret_cast<const float*>(bytes.data());

  // Forward and backward at the initial weights.
  const float loss = model->forward(tokens.data(), targets.data(), B, T);
  const auto logits = model->logits_host();
  expect_close("logits", logits.data(), ref, N * V, 1e-5);
  expect_close("loss", &loss, ref + N * V, 1, 1e-5);
  model->zero_grad();
  model->backward();
  const auto grads = model->grads().to_host(**be);
  const float* g = ref + N * V + 1;
  for (const auto& t : model->grads().tensors()) {
    expect_close("grad " + t.name, grads.data() + t.offset, g, t.numel, 1e-4);
    g += t.numel;
  }

  // Ten AdamW steps from the same initial weights.
  adamw optimizer(**be, model->num_params());
  std::vector<float> losses;
  float first_norm = 0.0f;
  for (int s = 0; s < steps; ++s) {
    losses.push_back(model->forward(tokens.data(), targets.data(), B, T));
    model->zero_grad();
    model->backward();
    const float norm = optimizer.step(model->params().base(), model->grads().base(), opt);
    if (s == 0) first_norm = norm;
  }
  EXPECT_GT(first_norm, opt.grad_clip) << "the test must exercise clipping";
  expect_close("loss trajectory", losses.data(), g, steps, 1e-4);
  EXPECT_LT(losses.back(), losses.front()) << "AdamW must reduce the loss on a fixed batch";
}

}  // namespace
}  // namespace banyan::nn
