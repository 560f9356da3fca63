// The CPU backend: forwards to the reference kernels; memory is plain aligned host memory.
#include "backend_cpu.hpp"

#include "banyan/nn/kernels.hpp"

#include <cblas.h>
#include <omp.h>

#include <cstdlib>
#include <cstring>
#include <new>

namespace banyan::nn {

cpu_backend::cpu_backend(int threads) : threads_(threads) {
  // OpenMP owns the cores; OpenBLAS runs single-threaded inside each OpenMP thread (kernels_cpu.cpp).
  own_threads();
  openblas_set_num_threads(1);
}

// omp_set_num_threads sets the calling thread's setting only, and a backend's kernels may run on
// other threads than the one that made it (an actor runs on whichever scheduler thread takes its
// message). Without this, a pipeline stage asked for 1 thread ran each kernel with the process default
// (all cores), and P stages on P cores oversubscribed them (docs/benchmarks.md, "Measured vs simulated").
void cpu_backend::own_threads() const {
  if (threads_ > 0 && omp_get_max_threads() != threads_) omp_set_num_threads(threads_);
}

void* cpu_backend::allocate(std::size_t bytes) {
  // 64-byte alignment: cache lines and the widest SIMD loads OpenBLAS uses.
  const std::size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, rounded);
  return p;
}
void cpu_backend::release(void* p) { std::free(p); }
void cpu_backend::upload(void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }
void cpu_backend::download(void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }
void cpu_backend::zero(void* p, std::size_t bytes) { std::memset(p, 0, bytes); }
void cpu_backend::synchronize() {}

void cpu_backend::encoder_forward(float* out, const int* tokens, const float* wte, const float* wpe, int B, int T,
                                  int C) {
  own_threads();
  cpu::encoder_forward(out, tokens, wte, wpe, B, T, C);
}
void cpu_backend::encoder_backward(float* dwte, float* dwpe, const float* dout, const int* tokens, int B, int T,
                                   int C) {
  own_threads();
  cpu::encoder_backward(dwte, dwpe, dout, tokens, B, T, C);
}
void cpu_backend::layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                                    const float* bias, int N, int C) {
  own_threads();
  cpu::layernorm_forward(out, mean, rstd, inp, weight, bias, N, C);
}
void cpu_backend::layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                                     const float* weight, const float* mean, const float* rstd, int N, int C) {
  own_threads();
  cpu::layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
}
void cpu_backend::matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int C,
                                 int OC) {
  own_threads();
  cpu::matmul_forward(out, inp, weight, bias, N, C, OC);
}
void cpu_backend::matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                                  const float* weight, int N, int C, int OC) {
  own_threads();
  cpu::matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC);
}
void cpu_backend::attention_forward(float* out, float* preatt, float* att, const float* qkv, int B, int T, int C,
                                    int NH) {
  own_threads();
  cpu::attention_forward(out, preatt, att, qkv, B, T, C, NH);
}
void cpu_backend::attention_backward(float* dqkv, float* dpreatt, float* datt, const float* dout, const float* qkv,
                                     const float* att, int B, int T, int C, int NH) {
  own_threads();
  cpu::attention_backward(dqkv, dpreatt, datt, dout, qkv, att, B, T, C, NH);
}
void cpu_backend::gelu_forward(float* out, const float* inp, std::size_t n) {
  own_threads();
  cpu::gelu_forward(out, inp, n);
}
void cpu_backend::gelu_backward(float* dinp, const float* inp, const float* dout, std::size_t n) {
  own_threads();
  cpu::gelu_backward(dinp, inp, dout, n);
}
void cpu_backend::relu_forward(float* out, const float* inp, std::size_t n) {
  own_threads();
  cpu::relu_forward(out, inp, n);
}
void cpu_backend::relu_backward(float* dinp, const float* inp, const float* dout, std::size_t n) {
  own_threads();
  cpu::relu_backward(dinp, inp, dout, n);
}
void cpu_backend::residual_forward(float* out, const float* a, const float* b, std::size_t n) {
  own_threads();
  cpu::residual_forward(out, a, b, n);
}
void cpu_backend::residual_backward(float* da, float* db, const float* dout, std::size_t n) {
  own_threads();
  cpu::residual_backward(da, db, dout, n);
}
void cpu_backend::softmax_crossentropy_forward(float* losses, float* probs, const float* logits, const int* targets,
                                               int N, int V) {
  own_threads();
  cpu::softmax_crossentropy_forward(losses, probs, logits, targets, N, V);
}
void cpu_backend::softmax_crossentropy_backward(float* dlogits, const float* probs, const int* targets, float dloss,
                                                int N, int V) {
  own_threads();
  cpu::softmax_crossentropy_backward(dlogits, probs, targets, dloss, N, V);
}
double cpu_backend::sum_squares(const float* x, std::size_t n) {
  own_threads();
  return cpu::sum_squares(x, n);
}
void cpu_backend::scale(float* x, float s, std::size_t n) {
  own_threads();
  cpu::scale(x, s, n);
}
void cpu_backend::adamw_update(float* params, const float* grads, float* m, float* v, std::size_t n, float lr,
                               float beta1, float beta2, float eps, float weight_decay, int t) {
  own_threads();
  cpu::adamw_update(params, grads, m, v, n, lr, beta1, beta2, eps, weight_decay, t);
}

}  // namespace banyan::nn
