// Each CPU layer's backward against finite differences of its forward.
#include "banyan/nn/kernels.hpp"

#include "grad_check.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace banyan::nn {
namespace {

using testing::dot;
using testing::expect_gradient;
using testing::random_vector;

constexpr std::uint64_t seed = 20261130;

TEST(Kernels, LayernormBackwardMatchesFiniteDifferences) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  rng r(seed);
  const int N = 6, C = 16;
  auto x = random_vector(r, N * C), w = random_vector(r, C), b = random_vector(r, C), R = random_vector(r, N * C);
  std::vector<float> out(N * C), mean(N), rstd(N);
  auto loss = [&] {
    cpu::layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
    return dot(out, R);
  };
  loss();
  std::vector<float> dx(N * C), dw(C), db(C);
  cpu::layernorm_backward(dx.data(), dw.data(), db.data(), R.data(), x.data(), w.data(), mean.data(), rstd.data(), N,
                          C);
  expect_gradient("dx", x, dx, loss, seed);
  expect_gradient("dw", w, dw, loss, seed);
  expect_gradient("db", b, db, loss, seed);
}

TEST(Kernels, MatmulBackwardMatchesFiniteDifferences) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  rng r(seed + 1);
  const int N = 5, C = 7, OC = 9;
  auto x = random_vector(r, N * C), w = random_vector(r, OC * C), b = random_vector(r, OC),
       R = random_vector(r, N * OC);
  std::vector<float> out(N * OC);
  auto loss = [&] {
    cpu::matmul_forward(out.data(), x.data(), w.data(), b.data(), N, C, OC);
    return dot(out, R);
  };
  std::vector<float> dx(N * C), dw(OC * C), db(OC);
  cpu::matmul_backward(dx.data(), dw.data(), db.data(), R.data(), x.data(), w.data(), N, C, OC);
  expect_gradient("dx", x, dx, loss, seed);
  expect_gradient("dw", w, dw, loss, seed);
  expect_gradient("db", b, db, loss, seed);
}

// Pipeline stages split a backward into the input-gradient pass and the weight-gradient pass (null
// outputs skip a half): the two halves, run in either order, give the fused backward's gradients.
TEST(Kernels, SplitBackwardHalvesSumToTheFusedBackward) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  rng r(seed + 7);
  auto expect_close = [](const char* what, const std::vector<float>& ref, const std::vector<float>& got) {
    double scale = 0;
    for (float x : ref) scale = std::max(scale, static_cast<double>(std::fabs(x)));
    for (std::size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(got[i], ref[i], 1e-6 * scale) << what << "[" << i << "]";
  };
  {
    const int N = 300, C = 48, OC = 40;  // several row blocks, so the threaded path is split too
    auto x = random_vector(r, N * C), w = random_vector(r, OC * C), d = random_vector(r, N * OC);
    std::vector<float> dx(N * C), dw(OC * C), db(OC), sx(N * C), sw(OC * C), sb(OC);
    cpu::matmul_backward(dx.data(), dw.data(), db.data(), d.data(), x.data(), w.data(), N, C, OC);
    cpu::matmul_backward(nullptr, sw.data(), sb.data(), d.data(), x.data(), w.data(), N, C, OC);  // W first
    EXPECT_EQ(sx, std::vector<float>(N * C)) << "the weight pass must not touch dinp";
    cpu::matmul_backward(sx.data(), nullptr, nullptr, d.data(), x.data(), w.data(), N, C, OC);
    expect_close("matmul dx", dx, sx);
    expect_close("matmul dw", dw, sw);
    expect_close("matmul db", db, sb);
  }
  {
    const int N = 3000, C = 48;  // above the single-thread cut-off of the row loops
    auto x = random_vector(r, N * C), w = random_vector(r, C), b = random_vector(r, C), d = random_vector(r, N * C);
    std::vector<float> out(N * C), mean(N), rstd(N);
    cpu::layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
    std::vector<float> dx(N * C), dw(C), db(C), sx(N * C), sw(C), sb(C);
    cpu::layernorm_backward(dx.data(), dw.data(), db.data(), d.data(), x.data(), w.data(), mean.data(), rstd.data(), N,
                            C);
    cpu::layernorm_backward(sx.data(), nullptr, nullptr, d.data(), x.data(), w.data(), mean.data(), rstd.data(), N, C);
    EXPECT_EQ(sw, std::vector<float>(C)) << "the input pass must not touch dweight";
    cpu::layernorm_backward(nullptr, sw.data(), sb.data(), d.data(), x.data(), w.data(), mean.data(), rstd.data(), N,
                            C);
    expect_close("layernorm dx", dx, sx);
    expect_close("layernorm dw", dw, sw);
    expect_close("layernorm db", db, sb);
  }
}

TEST(Kernels, MatmulForwardIsInputTimesWeightTransposedPlusBias) {
  // out[n][j] = sum_c x[n][c] * w[j][c] + b[j], checked element by element in double.
  rng r(seed + 2);
  const int N = 3, C = 4, OC = 2;
  auto x = random_vector(r, N * C), w = random_vector(r, OC * C), b = random_vector(r, OC);
  std::vector<float> out(N * OC);
  cpu::matmul_forward(out.data(), x.data(), w.data(), b.data(), N, C, OC);
  for (int n = 0; n < N; ++n) {
    for (int j = 0; j < OC; ++j) {
      double s = b[j];
      for (int c = 0; c < C; ++c) s += static_cast<double>(x[n * C + c]) * w[j * C + c];
      EXPECT_NEAR(out[n * OC + j], s, 1e-5);
    }
  }
}

TEST(Kernels, AttentionBackwardMatchesFiniteDifferences) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  rng r(seed + 3);
  const int B = 2, T = 5, C = 8, NH = 2;
  auto qkv = random_vector(r, B * T * 3 * C), R = random_vector(r, B * T * C);
  std::vector<float> out(B * T * C), pre(B * NH * T * T), att(B * NH * T * T);
  auto loss = [&] {
    cpu::attention_forward(out.data(), pre.data(), att.data(), qkv.data(), B, T, C, NH);
    return dot(out, R);
  };
  loss();
  std::vector<float> dqkv(qkv.size()), dpre(pre.size()), datt(att.size());
  cpu::attention_backward(dqkv.data(), dpre.data(), datt.data(), R.data(), qkv.data(), att.data(), B, T, C, NH);
  expect_gradient("dqkv", qkv, dqkv, loss, seed, 120);
}

TEST(Kernels, AttentionIsCausal) {
  // Changing a later token's q, k or v must not change an earlier position's output.
  rng r(seed + 4);
  const int B = 1, T = 4, C = 4, NH = 1;
  auto qkv = random_vector(r, B * T * 3 * C);
  std::vector<float> out1(B * T * C), out2(B * T * C), pre(T * T), att(T * T);
  cpu::attention_forward(out1.data(), pre.data(), att.data(), qkv.data(), B, T, C, NH);
  for (int i = 0; i < 3 * C; ++i) qkv[(T - 1) * 3 * C + i] += 1.0f;
  cpu::attention_forward(out2.data(), pre.data(), att.data(), qkv.data(), B, T, C, NH);
  for (int i = 0; i < (T - 1) * C; ++i) EXPECT_EQ(out1[i], out2[i]) << i;
  for (int t = 0; t < T; ++t) {
    float row = 0.0f;
    for (int t2 = 0; t2 < T; ++t2) row += att[t * T + t2];
    EXPECT_NEAR(row, 1.0f, 1e-6f);
    for (int t2 = t + 1; t2 < T; ++t2) EXPECT_EQ(att[t * T + t2], 0.0f);
  }
}

TEST(Kernels, GeluAndReluBackwardMatchFiniteDifferences) {
  rng r(seed + 5);
  const std::size_t n = 64;
  auto x = random_vector(r, n, 2.0f), R = random_vector(r, n);
  std::vector<float> out(n);
  auto gelu_loss = [&] {
    cpu::gelu_forward(out.data(), x.data(), n);
    return dot(out, R);
  };
  std::vector<float> dx(n);
  cpu::gelu_backward(dx.data(), x.data(), R.data(), n);
  expect_gradient("gelu", x, dx, gelu_loss, seed, 64, 1e-3f);
  // ReLU: keep coordinates away from the kink so the difference quotient is defined.
  for (auto& v : x) v = v >= 0 ? v + 0.1f : v - 0.1f;
  auto relu_loss = [&] {
    cpu::relu_forward(out.data(), x.data(), n);
    return dot(out, R);
  };
  std::vector<float> dr(n);
  cpu::relu_backward(dr.data(), x.data(), R.data(), n);
  expect_gradient("relu", x, dr, relu_loss, seed, 64);
}

TEST(Kernels, GeluMatchesTanhFormulaAtKnownPoints) {
  const float xs[] = {-3.0f, -1.0f, 0.0f, 0.5f, 2.0f};
  float out[5];
  cpu::gelu_forward(out, xs, 5);
  for (int i = 0; i < 5; ++i) {
    const double x = xs[i];
    const double expect = 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    EXPECT_NEAR(out[i], expect, 1e-6);
  }
}

TEST(Kernels, SoftmaxCrossEntropyBackwardMatchesFiniteDifferences) {
  rng r(seed + 6);
  const int N = 4, V = 11;
  auto logits = random_vector(r, N * V, 3.0f);
  std::vector<int> targets{0, 5, 10, 3};
  std::vector<float> probs(N * V), losses(N);
  auto loss = [&] {
    cpu::softmax_crossentropy_forward(losses.data(), probs.data(), logits.data(), targets.data(), N, V);
    double s = 0.0;
    for (float l : losses) s += l;
    return s / N;
  };
  loss();
  std::vector<float> dl(N * V);
  cpu::softmax_crossentropy_backward(dl.data(), probs.data(), targets.data(), 1.0f / N, N, V);
  expect_gradient("dlogits", logits, dl, loss, seed, 44, 1e-2f);
}

TEST(Kernels, SoftmaxCrossEntropyIsStableForLargeLogits) {
  const int V = 3;
  const float logits[] = {1000.0f, 0.0f, -1000.0f};
  const int target = 0;
  float probs[V], loss;
  cpu::softmax_crossentropy_forward(&loss, probs, logits, &target, 1, V);
  EXPECT_TRUE(std::isfinite(loss));
  EXPECT_NEAR(loss, 0.0f, 1e-6f);
  EXPECT_NEAR(probs[0], 1.0f, 1e-6f);
}

TEST(Kernels, EncoderBackwardSumsRepeatedTokens) {
  rng r(seed + 7);
  const int B = 2, T = 3, C = 4, V = 5;
  auto wte = random_vector(r, V * C), wpe = random_vector(r, T * C), R = random_vector(r, B * T * C);
  std::vector<int> tokens{1, 1, 4, 0, 1, 2};
  std::vector<float> out(B * T * C);
  auto loss = [&] {
    cpu::encoder_forward(out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
    return dot(out, R);
  };
  std::vector<float> dwte(V * C), dwpe(T * C);
  cpu::encoder_backward(dwte.data(), dwpe.data(), R.data(), tokens.data(), B, T, C);
  expect_gradient("dwte", wte, dwte, loss, seed, V * C);
  expect_gradient("dwpe", wpe, dwpe, loss, seed, T * C);
}

TEST(Kernels, ResidualBackwardAccumulatesIntoBothInputs) {
  std::vector<float> da{1, 1}, db{2, 2}, dout{0.5f, -1.0f};
  cpu::residual_backward(da.data(), db.data(), dout.data(), 2);
  EXPECT_EQ(da, (std::vector<float>{1.5f, 0.0f}));
  EXPECT_EQ(db, (std::vector<float>{2.5f, 1.0f}));
}

}  // namespace
}  // namespace banyan::nn
