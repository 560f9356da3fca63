// Every CUDA kernel (through the cuda backend) against its CPU reference, element by element.
// Skips, saying why, when this build has no CUDA or the machine has no GPU.
#include "banyan/nn/adamw.hpp"
#include "banyan/nn/backend.hpp"
#include "banyan/nn/gpt.hpp"
#include "banyan/nn/kernels.hpp"
#include "banyan/nn/rng.hpp"

#include "grad_check.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

namespace banyan::nn {
namespace {

using testing::random_vector;

std::string mapped_files() {
  std::ifstream f("/proc/self/maps");
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// A CPU app never maps cuBLAS or the CUDA runtime (~155 MiB resident); asking for `cuda` loads the
// plugin that links them. Run alone (ctest runs each test in its own process), it sees the process
// before any CUDA backend was asked for.
TEST(CudaPlugin, LoadsOnlyWhenTheCudaBackendIsAsked) {
  if (mapped_files().find("libbanyan_nn_cuda") != std::string::npos) {
    GTEST_SKIP() << "an earlier test in this process asked for the cuda backend (run this test alone)";
  }
  auto cpu = make_backend({.name = "cpu", .threads = 1});
  ASSERT_TRUE(cpu);
  EXPECT_EQ(mapped_files().find("libcublas"), std::string::npos);
  EXPECT_EQ(mapped_files().find("libcudart"), std::string::npos);
  auto gpu = make_backend({.name = "cuda"});
  if (!cuda_compiled()) {
    ASSERT_FALSE(gpu);
    EXPECT_EQ(gpu.error().code, errc::unsupported);
    GTEST_SKIP() << "CUDA backend not compiled in: " << gpu.error().message;
  }
  EXPECT_NE(mapped_files().find("libbanyan_nn_cuda.so"), std::string::npos);
  EXPECT_NE(mapped_files().find("libcublas"), std::string::npos);
  if (!gpu) {
    EXPECT_EQ(gpu.error().code, errc::unsupported) << gpu.error().message;
    EXPECT_TRUE(gpu.error().message.starts_with("backend `cuda`: no")) << gpu.error().message;
  }
}

class CudaKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_compiled()) GTEST_SKIP() << "CUDA backend not compiled in (no nvcc or BANYAN_ENABLE_CUDA=OFF)";
    auto be = make_backend({.name = "cuda"});
    if (!be) GTEST_SKIP() << "no GPU: " << be.error().message;
    gpu_ = std::move(be).value();
  }
  // Device copy of a host vector; buffers live until the test ends.
  template <class T>
  T* dev(const std::vector<T>& host) {
    bufs_.emplace_back(*gpu_, host.size() * sizeof(T));
    gpu_->upload(bufs_.back().get(), host.data(), host.size() * sizeof(T));
    return static_cast<T*>(bufs_.back().get());
  }
  std::vector<float> host(const float* d, std::size_t n) {
    std::vector<float> h(n);
    gpu_->download(h.data(), d, n * sizeof(float));
    return h;
  }
  void expect_same(const char* what, const std::vector<float>& cpu, const float* gpu, double tol = 1e-5) {
    const auto g = host(gpu, cpu.size());
    double scale = 1e-30, diff = 0;
    for (std::size_t i = 0; i < cpu.size(); ++i) {
      scale = std::max(scale, static_cast<double>(std::fabs(cpu[i])));
      diff = std::max(diff, static_cast<double>(std::fabs(cpu[i] - g[i])));
    }
    EXPECT_LE(diff, tol * scale) << what << ": max diff " << diff << " max|cpu| " << scale;
  }
  std::unique_ptr<backend> gpu_;
  std::vector<buffer> bufs_;
  rng r_{424242};
};

TEST_F(CudaKernels, Encoder) {
  const int B = 2, T = 5, C = 40, V = 9;
  auto wte = random_vector(r_, V * C), wpe = random_vector(r_, T * C), d = random_vector(r_, B * T * C);
  std::vector<int> tok{1, 2, 3, 1, 1, 8, 0, 4, 4, 2};
  std::vector<float> out(B * T * C), dwte(V * C), dwpe(T * C);
  cpu::encoder_forward(out.data(), tok.data(), wte.data(), wpe.data(), B, T, C);
  cpu::encoder_backward(dwte.data(), dwpe.data(), d.data(), tok.data(), B, T, C);
  float* gout = dev(std::vector<float>(out.size()));
  float *gdwte = dev(std::vector<float>(dwte.size())), *gdwpe = dev(std::vector<float>(dwpe.size()));
  gpu_->encoder_forward(gout, dev(tok), dev(wte), dev(wpe), B, T, C);
  gpu_->encoder_backward(gdwte, gdwpe, dev(d), dev(tok), B, T, C);
  expect_same("encoder out", out, gout);
  expect_same("dwte", dwte, gdwte);
  expect_same("dwpe", dwpe, gdwpe);
}

TEST_F(CudaKernels, Layernorm) {
  const int N = 37, C = 72;
  auto x = random_vector(r_, N * C), w = random_vector(r_, C), b = random_vector(r_, C), d = random_vector(r_, N * C);
  std::vector<float> out(N * C), mean(N), rstd(N), dx(N * C), dw(C), db(C);
  cpu::layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
  cpu::layernorm_backward(dx.data(), dw.data(), db.data(), d.data(), x.data(), w.data(), mean.data(), rstd.data(), N,
                          C);
  float *go = dev(std::vector<float>(N * C)), *gm = dev(std::vector<float>(N)), *gr = dev(std::vector<float>(N));
  float *gx = dev(x), *gw = dev(w);
  gpu_->layernorm_forward(go, gm, gr, gx, gw, dev(b), N, C);
  float *gdx = dev(std::vector<float>(N * C)), *gdw = dev(std::vector<float>(C)), *gdb = dev(std::vector<float>(C));
  gpu_->layernorm_backward(gdx, gdw, gdb, dev(d), gx, gw, gm, gr, N, C);
  expect_same("ln out", out, go);
  expect_same("ln rstd", rstd, gr);
  expect_same("ln dx", dx, gdx, 1e-4);
  expect_same("ln dw", dw, gdw, 1e-4);
  expect_same("ln db", db, gdb, 1e-4);
}

TEST_F(CudaKernels, MatmulThroughCublas) {
  const int N = 33, C = 20, OC = 45;
  auto x = random_vector(r_, N * C), w = random_vector(r_, OC * C), b = random_vector(r_, OC),
       d = random_vector(r_, N * OC);
  std::vector<float> out(N * OC), dx(N * C), dw(OC * C), db(OC);
  cpu::matmul_forward(out.data(), x.data(), w.data(), b.data(), N, C, OC);
  cpu::matmul_backward(dx.data(), dw.data(), db.data(), d.data(), x.data(), w.data(), N, C, OC);
  float *gx = dev(x), *gw = dev(w), *go = dev(std::vector<float>(N * OC));
  gpu_->matmul_forward(go, gx, gw, dev(b), N, C, OC);
  float *gdx = dev(std::vector<float>(N * C)), *gdw = dev(std::vector<float>(OC * C)),
        *gdb = dev(std::vector<float>(OC));
  gpu_->matmul_backward(gdx, gdw, gdb, dev(d), gx, gw, N, C, OC);
  expect_same("matmul out", out, go, 1e-5);
  expect_same("matmul dx", dx, gdx, 1e-5);
  expect_same("matmul dw", dw, gdw, 1e-5);
  expect_same("matmul db", db, gdb, 1e-5);
}

// The split backward of pipeline stages (kernels.hpp): a null output skips that half on the GPU too.
TEST_F(CudaKernels, SplitBackwardHalves) {
  const int N = 33, C = 40, OC = 45;
  auto x = random_vector(r_, N * C), w = random_vector(r_, OC * C), d = random_vector(r_, N * OC);
  std::vector<float> dx(N * C), dw(OC * C), db(OC);
  cpu::matmul_backward(dx.data(), dw.data(), db.data(), d.data(), x.data(), w.data(), N, C, OC);
  float *gx = dev(x), *gw = dev(w), *gd = dev(d);
  float *gdx = dev(std::vector<float>(N * C)), *gdw = dev(std::vector<float>(OC * C)),
        *gdb = dev(std::vector<float>(OC));
  gpu_->matmul_backward(nullptr, gdw, gdb, gd, gx, gw, N, C, OC);
  expect_same("matmul W pass leaves dx", std::vector<float>(N * C), gdx);
  gpu_->matmul_backward(gdx, nullptr, nullptr, gd, gx, gw, N, C, OC);
  expect_same("matmul split dx", dx, gdx, 1e-5);
  expect_same("matmul split dw", dw, gdw, 1e-5);
  expect_same("matmul split db", db, gdb, 1e-5);

  auto lx = random_vector(r_, N * C), lw = random_vector(r_, C), lb = random_vector(r_, C),
       ld = random_vector(r_, N * C);
  std::vector<float> out(N * C), mean(N), rstd(N), ldx(N * C), ldw(C), ldb(C);
  cpu::layernorm_forward(out.data(), mean.data(), rstd.data(), lx.data(), lw.data(), lb.data(), N, C);
  cpu::layernorm_backward(ldx.data(), ldw.data(), ldb.data(), ld.data(), lx.data(), lw.data(), mean.data(), rstd.data(),
                          N, C);
  float *glx = dev(lx), *glw = dev(lw), *gld = dev(ld), *gm = dev(mean), *gr = dev(rstd);
  float *gldx = dev(std::vector<float>(N * C)), *gldw = dev(std::vector<float>(C)), *gldb = dev(std::vector<float>(C));
  gpu_->layernorm_backward(gldx, nullptr, nullptr, gld, glx, glw, gm, gr, N, C);
  expect_same("ln I pass leaves dw", std::vector<float>(C), gldw);
  gpu_->layernorm_backward(nullptr, gldw, gldb, gld, glx, glw, gm, gr, N, C);
  expect_same("ln split dx", ldx, gldx, 1e-4);
  expect_same("ln split dw", ldw, gldw, 1e-4);
  expect_same("ln split db", ldb, gldb, 1e-4);
}

TEST_F(CudaKernels, Attention) {
  const int B = 2, T = 9, C = 24, NH = 3;
  auto qkv = random_vector(r_, B * T * 3 * C), d = random_vector(r_, B * T * C);
  std::vector<float> out(B * T * C), pre(B * NH * T * T), att(pre.size()), dqkv(qkv.size()), dpre(pre.size()),
      datt(pre.size());
  cpu::attention_forward(out.data(), pre.data(), att.data(), qkv.data(), B, T, C, NH);
  cpu::attention_backward(dqkv.data(), dpre.data(), datt.data(), d.data(), qkv.data(), att.data(), B, T, C, NH);
  float *gq = dev(qkv), *go = dev(std::vector<float>(out.size())), *gp = dev(std::vector<float>(pre.size())),
        *ga = dev(std::vector<float>(att.size()));
  gpu_->attention_forward(go, gp, ga, gq, B, T, C, NH);
  float *gdq = dev(std::vector<float>(qkv.size())), *gdp = dev(std::vector<float>(pre.size())),
        *gda = dev(std::vector<float>(att.size()));
  gpu_->attention_backward(gdq, gdp, gda, dev(d), gq, ga, B, T, C, NH);
  expect_same("att out", out, go);
  expect_same("att probs", att, ga);
  expect_same("att dqkv", dqkv, gdq, 1e-4);
}

TEST_F(CudaKernels, ElementwiseGeluReluResidual) {
  const std::size_t n = 1000;
  auto x = random_vector(r_, n, 2.0f), y = random_vector(r_, n), d = random_vector(r_, n);
  std::vector<float> g(n), dg(n), rl(n), dr(n), res(n), da(n), db(n);
  cpu::gelu_forward(g.data(), x.data(), n);
  cpu::gelu_backward(dg.data(), x.data(), d.data(), n);
  cpu::relu_forward(rl.data(), x.data(), n);
  cpu::relu_backward(dr.data(), x.data(), d.data(), n);
  cpu::residual_forward(res.data(), x.data(), y.data(), n);
  cpu::residual_backward(da.data(), db.data(), d.data(), n);
  float *gx = dev(x), *gd = dev(d);
  std::vector<float> z(n);
  float *o1 = dev(z), *o2 = dev(z), *o3 = dev(z), *o4 = dev(z), *o5 = dev(z), *o6 = dev(z), *o7 = dev(z);
  gpu_->gelu_forward(o1, gx, n);
  gpu_->gelu_backward(o2, gx, gd, n);
  gpu_->relu_forward(o3, gx, n);
  gpu_->relu_backward(o4, gx, gd, n);
  gpu_->residual_forward(o5, gx, dev(y), n);
  gpu_->residual_backward(o6, o7, gd, n);
  expect_same("gelu", g, o1);
  expect_same("gelu backward", dg, o2);
  expect_same("relu", rl, o3);
  expect_same("relu backward", dr, o4);
  expect_same("residual", res, o5);
  expect_same("residual da", da, o6);
  expect_same("residual db", db, o7);
}

TEST_F(CudaKernels, SoftmaxCrossEntropy) {
  const int N = 17, V = 65;
  auto logits = random_vector(r_, N * V, 4.0f);
  std::vector<int> t(N);
  for (auto& x : t) x = static_cast<int>(r_.below(V));
  std::vector<float> losses(N), probs(N * V), dl(N * V);
  cpu::softmax_crossentropy_forward(losses.data(), probs.data(), logits.data(), t.data(), N, V);
  cpu::softmax_crossentropy_backward(dl.data(), probs.data(), t.data(), 1.0f / N, N, V);
  float *gl = dev(std::vector<float>(N)), *gp = dev(std::vector<float>(N * V)), *gd = dev(std::vector<float>(N * V));
  int* gt = dev(t);
  gpu_->softmax_crossentropy_forward(gl, gp, dev(logits), gt, N, V);
  gpu_->softmax_crossentropy_backward(gd, gp, gt, 1.0f / N, N, V);
  expect_same("losses", losses, gl);
  expect_same("probs", probs, gp);
  expect_same("dlogits", dl, gd);
}

TEST_F(CudaKernels, NormScaleAndAdamw) {
  const std::size_t n = 5000;
  auto p = random_vector(r_, n), g = random_vector(r_, n), m = random_vector(r_, n, 0.1f),
       v = random_vector(r_, n, 0.1f);
  for (auto& x : v) x = std::fabs(x);
  float *gp = dev(p), *gg = dev(g), *gm = dev(m), *gv = dev(v);
  EXPECT_NEAR(gpu_->sum_squares(gg, n), cpu::sum_squares(g.data(), n), 1e-6 * cpu::sum_squares(g.data(), n));
  cpu::scale(g.data(), 0.5f, n);
  gpu_->scale(gg, 0.5f, n);
  expect_same("scale", g, gg);
  cpu::adamw_update(p.data(), g.data(), m.data(), v.data(), n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 3);
  gpu_->adamw_update(gp, gg, gm, gv, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 3);
  expect_same("adamw params", p, gp);
  expect_same("adamw m", m, gm);
  expect_same("adamw v", v, gv);
}

TEST_F(CudaKernels, GptStepMatchesTheCpuBackend) {
  const gpt_config cfg{.vocab_size = 50, .max_seq_len = 16, .num_layers = 2, .num_heads = 2, .channels = 32};
  auto cpu_be = make_backend({.name = "cpu"});
  auto a = gpt::create(cfg, 2, 16, **cpu_be);
  auto b = gpt::create(cfg, 2, 16, *gpu_);
  a->init(9);
  b->init(9);
  std::vector<int> tok(32), tgt(32);
  for (auto& x : tok) x = static_cast<int>(r_.below(50));
  for (auto& x : tgt) x = static_cast<int>(r_.below(50));
  const float la = a->forward(tok.data(), tgt.data(), 2, 16), lb = b->forward(tok.data(), tgt.data(), 2, 16);
  EXPECT_NEAR(la, lb, 1e-5f * std::fabs(la));
  a->zero_grad();
  b->zero_grad();
  a->backward();
  b->backward();
  const auto ga = a->grads().to_host(**cpu_be);
  expect_same("gpt grads", ga, b->grads().base(), 1e-4);
}

}  // namespace
}  // namespace banyan::nn
