// CPU kernels (see kernels.hpp for the contracts). The hot loops are parallel over independent rows
// or heads with OpenMP and vectorised with `omp simd` (exp and tanh through fast_exp below, so they
// vectorise too); every GEMM, attention's included, goes to OpenBLAS. The compute-bound loops are
// compiled three times (AVX-512, AVX2 + FMA, baseline x86-64) and the loader picks the widest the CPU
// has (SIMD_CLONES), so one build runs well everywhere. No fast-math: without FMA contraction
// (ISO C++ mode), element-wise results are the same on every clone; reductions may differ in the last
// bits between clones (their lanes differ), never between runs on one machine.
#include "banyan/nn/kernels.hpp"

#include <cblas.h>

#include <omp.h>

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <vector>

namespace banyan::nn::cpu {

namespace {
constexpr float layernorm_eps = 1e-5f;
constexpr float gelu_scale = 0.7978845608028654f;  // sqrt(2/pi)

// exp(x) in straight-line float arithmetic, so that `omp simd` loops vectorise it (std::exp is a
// libm call per element): Cephes' expf, x = n ln2 + z with |z| <= ln2/2, a degree-7 polynomial for
// e^z, 2^n put into the exponent bits. Relative error below 2e-7 (1-2 ulp) on [-87, 88]; inputs
// outside are clamped there (e^-87 ~ 1.6e-38, e^88 ~ 1.6e38).
inline float fast_exp(float x) {
  x = std::min(std::max(x, -87.0f), 88.0f);
  constexpr float round_magic = 12582912.0f;  // 1.5 * 2^23: adding and subtracting it rounds to nearest
  const float n = (x * 1.44269504088896341f + round_magic) - round_magic;
  const float z = x - n * 0.693359375f + n * 2.12194440e-4f;
  float y = 1.9875691500e-4f;
  y = y * z + 1.3981999507e-3f;
  y = y * z + 8.3334519073e-3f;
  y = y * z + 4.1665795894e-2f;
  y = y * z + 1.6666665459e-1f;
  y = y * z + 5.0000001201e-1f;
  y = y * z * z + z + 1.0f;
  return y * std::bit_cast<float>((static_cast<std::int32_t>(n) + 127) << 23);
}

// tanh(u) = 1 - 2 / (e^{2u} + 1): absolute error below 3e-7, exactly +-1 far out.
inline float fast_tanh(float u) { return 1.0f - 2.0f / (fast_exp(2.0f * u) + 1.0f); }

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define SIMD_CLONES
#endif

// Below this many floats, a memory-bound pass stays on the calling thread: an OpenMP region ends in a
// barrier, and on a busy machine (other processes on the cores) a barrier waits for a preempted
// thread's next time slice, which costs more than the pass. Fewer, larger regions keep the threaded
// step close to the single-threaded one when the cores are shared.
constexpr std::size_t parallel_min = 1 << 17;

// OpenMP threads for `work` units when each thread should get at least `per_thread`: 1 when small, or
// already inside a parallel region.
int threads_for(std::size_t work, std::size_t per_thread) {
  if (omp_in_parallel()) return 1;
  return static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>(omp_get_max_threads(), work / per_thread)));
}

// Calls f(begin, end) on disjoint spans covering [0, n), one per OpenMP thread; spans start at
// multiples of 16 floats (whole cache lines), and small inputs stay on the calling thread.
template <class F>
void parallel_spans(std::size_t n, F&& f) {
  const int nt = threads_for(n, parallel_min / 2);
  if (nt <= 1) {
    f(std::size_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(nt)
  {
    const auto t = static_cast<std::size_t>(omp_get_thread_num());
    const std::size_t begin = std::min(n, n * t / nt / 16 * 16);
    const std::size_t end = t + 1 == static_cast<std::size_t>(nt) ? n : std::min(n, n * (t + 1) / nt / 16 * 16);
    if (end > begin) f(begin, end);
  }
}

SIMD_CLONES void gelu_forward_span(float* out, const float* inp, std::size_t n) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) {
    const float x = inp[i];
    const float cube = 0.044715f * x * x * x;
    out[i] = 0.5f * x * (1.0f + fast_tanh(gelu_scale * (x + cube)));
  }
}

SIMD_CLONES void gelu_backward_span(float* dinp, const float* inp, const float* dout, std::size_t n) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) {
    const float x = inp[i];
    const float cube = 0.044715f * x * x * x;
    const float th = fast_tanh(gelu_scale * (x + cube));
    const float sech2 = 1.0f - th * th;
    const float local = 0.5f * (1.0f + th) + x * 0.5f * sech2 * gelu_scale * (1.0f + 3.0f * 0.044715f * x * x);
    dinp[i] += local * dout[i];
  }
}

SIMD_CLONES void layernorm_forward_row(float* o, float* mean, float* rstd, const float* x, const float* weight,
                                       const float* bias, int C) {
  // The row stays in L1 across its three sweeps (sum, variance, normalise): one pass over memory.
  float s = 0.0f;
#pragma omp simd reduction(+ : s)
  for (int i = 0; i < C; ++i) s += x[i];
  const float m = s / static_cast<float>(C);
  float v = 0.0f;
#pragma omp simd reduction(+ : v)
  for (int i = 0; i < C; ++i) v += (x[i] - m) * (x[i] - m);
  const float r = 1.0f / std::sqrt(v / static_cast<float>(C) + layernorm_eps);
#pragma omp simd
  for (int i = 0; i < C; ++i) o[i] = (x[i] - m) * r * weight[i] + bias[i];
  *mean = m;
  *rstd = r;
}

// Rows [n0, n1): dinp += ..., and the weight and bias gradients summed into dw, db (C each).
SIMD_CLONES void layernorm_backward_rows(float* dinp, float* dw, float* db, const float* dout, const float* inp,
                                         const float* weight, const float* mean, const float* rstd, int n0, int n1,
                                         int C) {
  for (int n = n0; n < n1; ++n) {
    const float* x = inp + static_cast<std::size_t>(n) * C;
    const float* d = dout + static_cast<std::size_t>(n) * C;
    float* dx = dinp + static_cast<std::size_t>(n) * C;
    const float m = mean[n], r = rstd[n];
    float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
#pragma omp simd reduction(+ : dnorm_mean, dnorm_norm_mean)
    for (int i = 0; i < C; ++i) {
      const float norm = (x[i] - m) * r;
      const float dnorm = weight[i] * d[i];
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * norm;
      dw[i] += norm * d[i];
      db[i] += d[i];
    }
    dnorm_mean /= static_cast<float>(C);
    dnorm_norm_mean /= static_cast<float>(C);
#pragma omp simd
    for (int i = 0; i < C; ++i) {
      const float norm = (x[i] - m) * r;
      dx[i] += (weight[i] * d[i] - dnorm_mean - norm * dnorm_norm_mean) * r;
    }
  }
}

// The two halves of layernorm_backward_rows, for a backward split into its input-gradient pass and its
// weight-gradient pass (pipeline stages, gpt_stage.hpp): the same arithmetic as the fused loop.
SIMD_CLONES void layernorm_backward_dx_rows(float* dinp, const float* dout, const float* inp, const float* weight,
                                            const float* mean, const float* rstd, int n0, int n1, int C) {
  for (int n = n0; n < n1; ++n) {
    const float* x = inp + static_cast<std::size_t>(n) * C;
    const float* d = dout + static_cast<std::size_t>(n) * C;
    float* dx = dinp + static_cast<std::size_t>(n) * C;
    const float m = mean[n], r = rstd[n];
    float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
#pragma omp simd reduction(+ : dnorm_mean, dnorm_norm_mean)
    for (int i = 0; i < C; ++i) {
      const float norm = (x[i] - m) * r;
      const float dnorm = weight[i] * d[i];
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * norm;
    }
    dnorm_mean /= static_cast<float>(C);
    dnorm_norm_mean /= static_cast<float>(C);
#pragma omp simd
    for (int i = 0; i < C; ++i) {
      const float norm = (x[i] - m) * r;
      dx[i] += (weight[i] * d[i] - dnorm_mean - norm * dnorm_norm_mean) * r;
    }
  }
}

SIMD_CLONES void layernorm_backward_dw_rows(float* dw, float* db, const float* dout, const float* inp,
                                            const float* mean, const float* rstd, int n0, int n1, int C) {
  for (int n = n0; n < n1; ++n) {
    const float* x = inp + static_cast<std::size_t>(n) * C;
    const float* d = dout + static_cast<std::size_t>(n) * C;
    const float m = mean[n], r = rstd[n];
#pragma omp simd
    for (int i = 0; i < C; ++i) {
      dw[i] += (x[i] - m) * r * d[i];
      db[i] += d[i];
    }
  }
}

SIMD_CLONES void softmax_crossentropy_row(float* loss, float* p, const float* l, int target, int V) {
  float maxv = -INFINITY;
  for (int i = 0; i < V; ++i) maxv = l[i] > maxv ? l[i] : maxv;
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int i = 0; i < V; ++i) {
    p[i] = fast_exp(l[i] - maxv);
    sum += p[i];
  }
  const float inv = 1.0f / sum;
#pragma omp simd
  for (int i = 0; i < V; ++i) p[i] *= inv;
  // log-sum-exp form, as log_softmax computes it, rather than -log(p[target]).
  *loss = std::log(sum) + maxv - l[target];
}

SIMD_CLONES void adamw_span(float* params, const float* grads, float* m, float* v, std::size_t n, float beta1,
                            float beta2, float eps, float step, float bc2_sqrt, float decay) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) {
    const float g = grads[i];
    float p = params[i] * decay;
    const float mi = beta1 * m[i] + (1.0f - beta1) * g;
    const float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    p -= step * mi / (std::sqrt(vi) / bc2_sqrt + eps);
    params[i] = p;
  }
}

}  // namespace

void encoder_forward(float* out, const int* tokens, const float* wte, const float* wpe, int B, int T, int C) {
#pragma omp parallel for collapse(2) if (static_cast <std::size_t>(B) * T * C >= parallel_min)
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      float* o = out + (static_cast<std::size_t>(b) * T + t) * C;
      const float* e = wte + static_cast<std::size_t>(tokens[b * T + t]) * C;
      const float* p = wpe + static_cast<std::size_t>(t) * C;
      for (int i = 0; i < C; ++i) o[i] = e[i] + p[i];
    }
  }
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* tokens, int B, int T, int C) {
  // Rows of dwte may repeat across (b,t): serial scatter keeps it race-free and deterministic.
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      const float* d = dout + (static_cast<std::size_t>(b) * T + t) * C;
      float* e = dwte + static_cast<std::size_t>(tokens[b * T + t]) * C;
      for (int i = 0; i < C; ++i) e[i] += d[i];
    }
  }
#pragma omp parallel for if (static_cast <std::size_t>(B) * T * C >= parallel_min)
  for (int t = 0; t < T; ++t) {
    float* p = dwpe + static_cast<std::size_t>(t) * C;
    for (int b = 0; b < B; ++b) {
      const float* d = dout + (static_cast<std::size_t>(b) * T + t) * C;
      for (int i = 0; i < C; ++i) p[i] += d[i];
    }
  }
}

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                       int N, int C) {
#pragma omp parallel for schedule(static) if (static_cast <std::size_t>(N) * C >= parallel_min)
  for (int n = 0; n < N; ++n) {
    const std::size_t row = static_cast<std::size_t>(n) * C;
    layernorm_forward_row(out + row, mean + n, rstd + n, inp + row, weight, bias, C);
  }
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C) {
  // Rows in parallel; each thread sums its rows' weight and bias gradients into its own partial
  // (contiguous, vectorised), and the partials are added in thread order afterwards, so the result
  // is the same on every run with the same thread count.
  assert((dweight == nullptr) == (dbias == nullptr) && (dinp != nullptr || dweight != nullptr));
  const int threads = threads_for(static_cast<std::size_t>(N) * C, parallel_min / 2);
  if (dweight == nullptr) {  // input gradient only: rows are independent, nothing to reduce
#pragma omp parallel num_threads(threads)
    {
      const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
      const int n0 = static_cast<int>(static_cast<long long>(N) * tid / nt);
      const int n1 = static_cast<int>(static_cast<long long>(N) * (tid + 1) / nt);
      layernorm_backward_dx_rows(dinp, dout, inp, weight, mean, rstd, n0, n1, C);
    }
    return;
  }
  std::vector<float> partial(static_cast<std::size_t>(threads) * 2 * C, 0.0f);
#pragma omp parallel num_threads(threads)
  {
    const int tid = omp_get_thread_num(), nt = omp_get_num_threads();
    float* dw = partial.data() + static_cast<std::size_t>(tid) * 2 * C;
    const int n0 = static_cast<int>(static_cast<long long>(N) * tid / nt);
    const int n1 = static_cast<int>(static_cast<long long>(N) * (tid + 1) / nt);
    if (dinp != nullptr) {
      layernorm_backward_rows(dinp, dw, dw + C, dout, inp, weight, mean, rstd, n0, n1, C);
    } else {
      layernorm_backward_dw_rows(dw, dw + C, dout, inp, mean, rstd, n0, n1, C);
    }
  }
  for (int t = 0; t < threads; ++t) {
    const float* dw = partial.data() + static_cast<std::size_t>(t) * 2 * C;
    for (int i = 0; i < C; ++i) {
      dweight[i] += dw[i];
      dbias[i] += dw[C + i];
    }
  }
}

namespace {

// One thread pool for everything: OpenBLAS runs single-threaded inside OpenMP threads that each take
// a block of output rows. (Letting OpenBLAS's own pthreads and OpenMP's spinning workers share the
// cores made every GEMM ~3x slower than sgemm alone; see docs/nn.md.)
// Calls f(begin, end) for disjoint row blocks covering [0, rows).
template <class F>
void split_rows(int rows, long long work_per_row, F&& f) {
  const int max_threads = omp_get_max_threads();
  // Below ~64k multiply-adds per thread the fork costs more than it saves.
  const long long total = work_per_row * rows;
  const int nt = static_cast<int>(std::max<long long>(1, std::min<long long>({max_threads, rows / 8, total / 65536})));
  if (nt <= 1 || omp_in_parallel()) {
    f(0, rows);
    return;
  }
#pragma omp parallel num_threads(nt)
  {
    const int t = omp_get_thread_num();
    const int begin = static_cast<int>(static_cast<long long>(rows) * t / nt);
    const int end = static_cast<int>(static_cast<long long>(rows) * (t + 1) / nt);
    if (end > begin) f(begin, end);
  }
}

}  // namespace

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int C, int OC) {
  split_rows(N, static_cast<long long>(C) * OC, [&](int n0, int n1) {
    float beta = 0.0f;
    float* o = out + static_cast<std::size_t>(n0) * OC;
    if (bias != nullptr) {
      for (int n = n0; n < n1; ++n) {
        std::copy(bias, bias + OC, out + static_cast<std::size_t>(n) * OC);
      }
      beta = 1.0f;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n1 - n0, OC, C, 1.0f, inp + static_cast<std::size_t>(n0) * C,
                C, weight, C, beta, o, OC);
  });
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int C, int OC) {
  // One parallel region for both products (one barrier): thread t takes block t of dinp's rows and
  // block t of dweight's rows.
  assert((dweight != nullptr || dbias == nullptr) && (dinp != nullptr || dweight != nullptr));
  const long long work = static_cast<long long>(N) * C * OC;
  const int nt =
      std::min({threads_for(static_cast<std::size_t>(work), 65536), std::max(1, N / 8), std::max(1, OC / 8)});
  auto part = [&](int t) {
    if (dinp != nullptr) {
      // dinp rows [n0,n1) += dout rows [n0,n1) @ W
      const int n0 = static_cast<int>(static_cast<long long>(N) * t / nt);
      const int n1 = static_cast<int>(static_cast<long long>(N) * (t + 1) / nt);
      if (n1 > n0) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n1 - n0, C, OC, 1.0f,
                    dout + static_cast<std::size_t>(n0) * OC, OC, weight, C, 1.0f,
                    dinp + static_cast<std::size_t>(n0) * C, C);
      }
    }
    // dweight rows [j0,j1) += dout[:, j0:j1]^T @ inp; dbias[j0:j1] += column sums of dout.
    const int j0 = static_cast<int>(static_cast<long long>(OC) * t / nt);
    const int j1 = static_cast<int>(static_cast<long long>(OC) * (t + 1) / nt);
    if (dweight == nullptr || j1 <= j0) return;
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, j1 - j0, C, N, 1.0f, dout + j0, OC, inp, C, 1.0f,
                dweight + static_cast<std::size_t>(j0) * C, C);
    if (dbias != nullptr) {
      float* db = dbias + j0;
      for (int n = 0; n < N; ++n) {
        const float* d = dout + static_cast<std::size_t>(n) * OC + j0;
#pragma omp simd
        for (int j = 0; j < j1 - j0; ++j) db[j] += d[j];
      }
    }
  };
  if (nt <= 1) {
    part(0);
    return;
  }
#pragma omp parallel num_threads(nt)
  part(omp_get_thread_num());
}

namespace {

// Row t of a causal softmax, in place: p[0..t] = softmax(p[0..t]), p[t+1..T) = 0 (and the same
// zeros in `pre`, the scores' copy kept for backward).
SIMD_CLONES void causal_softmax_row(float* a, float* pre, int t, int T) {
  float maxv = -INFINITY;
  for (int t2 = 0; t2 <= t; ++t2) maxv = pre[t2] > maxv ? pre[t2] : maxv;
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int t2 = 0; t2 <= t; ++t2) {
    const float e = fast_exp(pre[t2] - maxv);
    a[t2] = e;
    sum += e;
  }
  const float inv = 1.0f / sum;
#pragma omp simd
  for (int t2 = 0; t2 <= t; ++t2) a[t2] *= inv;
  for (int t2 = t + 1; t2 < T; ++t2) a[t2] = pre[t2] = 0.0f;
}

}  // namespace

// Per (batch, head), four GEMMs forward and backward on strided views of qkv (row stride 3C), each
// one OpenBLAS call on one thread; the (b,h) pairs are spread over the OpenMP threads. The score
// GEMMs cover the whole TxT square (twice the causal work, at GEMM speed); the masked half is zeroed
// in the scores and probabilities, which keeps the other GEMMs exact over the square.
void attention_forward(float* out, float* preatt, float* att, const float* qkv, int B, int T, int C, int NH) {
  const int hs = C / NH;
  const float sc = 1.0f / std::sqrt(static_cast<float>(hs));
  const int C3 = 3 * C;
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      const float* q = qkv + static_cast<std::size_t>(b) * T * C3 + h * hs;
      const float* k = q + C;
      const float* v = q + 2 * C;
      const std::size_t head = (static_cast<std::size_t>(b) * NH + h) * T * T;
      float* pre = preatt + head;
      float* a = att + head;
      // pre (T,T) = sc * q (T,hs) @ k^T
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, sc, q, C3, k, C3, 0.0f, pre, T);
      for (int t = 0; t < T; ++t) {
        causal_softmax_row(a + static_cast<std::size_t>(t) * T, pre + static_cast<std::size_t>(t) * T, t, T);
      }
      // out (T,hs) = att (T,T) @ v (T,hs)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, 1.0f, a, T, v, C3, 0.0f,
                  out + static_cast<std::size_t>(b) * T * C + h * hs, C);
    }
  }
}

void attention_backward(float* dqkv, float* dpreatt, float* datt, const float* dout, const float* qkv, const float* att,
                        int B, int T, int C, int NH) {
  const int hs = C / NH;
  const float sc = 1.0f / std::sqrt(static_cast<float>(hs));
  const int C3 = 3 * C;
  // Each (b,h) touches only its own head's slice of dqkv, so heads run in parallel without races.
#pragma omp parallel
  {
    std::vector<float> tmp(static_cast<std::size_t>(T) * T);  // this head's d(att), then d(pre)
#pragma omp for collapse(2) schedule(static)
    for (int b = 0; b < B; ++b) {
      for (int h = 0; h < NH; ++h) {
        const std::size_t qo = static_cast<std::size_t>(b) * T * C3 + h * hs;
        const float *q = qkv + qo, *k = q + C, *v = q + 2 * C;
        float *dq = dqkv + qo, *dk = dq + C, *dv = dq + 2 * C;
        const float* dy = dout + static_cast<std::size_t>(b) * T * C + h * hs;
        const std::size_t head = (static_cast<std::size_t>(b) * NH + h) * T * T;
        const float* a = att + head;
        float* da = datt + head;
        float* dpre = dpreatt + head;
        // out = att @ v: d(att) = dy @ v^T, dv += att^T @ dy
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, 1.0f, dy, C, v, C3, 0.0f, tmp.data(), T);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, 1.0f, a, T, dy, C, 1.0f, dv, C3);
        // softmax: d(pre) = att * (d(att) - <att, d(att)>) on the causal rows; tmp becomes d(pre)
        for (int t = 0; t < T; ++t) {
          const float* ar = a + static_cast<std::size_t>(t) * T;
          float* dar = da + static_cast<std::size_t>(t) * T;
          float* g = tmp.data() + static_cast<std::size_t>(t) * T;
          float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
          for (int t2 = 0; t2 <= t; ++t2) {
            dar[t2] += g[t2];
            dot += ar[t2] * dar[t2];
          }
          float* dpr = dpre + static_cast<std::size_t>(t) * T;
#pragma omp simd
          for (int t2 = 0; t2 <= t; ++t2) {
            g[t2] = ar[t2] * (dar[t2] - dot);
            dpr[t2] += g[t2];
          }
          for (int t2 = t + 1; t2 < T; ++t2) g[t2] = 0.0f;
        }
        // pre = sc * q @ k^T: dq += sc * d(pre) @ k, dk += sc * d(pre)^T @ q
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, sc, tmp.data(), T, k, C3, 1.0f, dq, C3);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, sc, tmp.data(), T, q, C3, 1.0f, dk, C3);
      }
    }
  }
}

void gelu_forward(float* out, const float* inp, std::size_t n) {
  parallel_spans(n, [&](std::size_t b, std::size_t e) { gelu_forward_span(out + b, inp + b, e - b); });
}

void gelu_backward(float* dinp, const float* inp, const float* dout, std::size_t n) {
  parallel_spans(n, [&](std::size_t b, std::size_t e) { gelu_backward_span(dinp + b, inp + b, dout + b, e - b); });
}

void relu_forward(float* out, const float* inp, std::size_t n) {
#pragma omp parallel for simd schedule(static) if (n >= parallel_min)
  for (std::size_t i = 0; i < n; ++i) out[i] = inp[i] > 0.0f ? inp[i] : 0.0f;
}

void relu_backward(float* dinp, const float* inp, const float* dout, std::size_t n) {
#pragma omp parallel for simd schedule(static) if (n >= parallel_min)
  for (std::size_t i = 0; i < n; ++i) dinp[i] += inp[i] > 0.0f ? dout[i] : 0.0f;
}

void residual_forward(float* out, const float* a, const float* b, std::size_t n) {
#pragma omp parallel for simd schedule(static) if (n >= parallel_min)
  for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void residual_backward(float* da, float* db, const float* dout, std::size_t n) {
#pragma omp parallel for simd schedule(static) if (n >= parallel_min)
  for (std::size_t i = 0; i < n; ++i) {
    da[i] += dout[i];
    db[i] += dout[i];
  }
}

void softmax_crossentropy_forward(float* losses, float* probs, const float* logits, const int* targets, int N, int V) {
#pragma omp parallel for schedule(static) if (static_cast <std::size_t>(N) * V >= parallel_min)
  for (int n = 0; n < N; ++n) {
    const std::size_t row = static_cast<std::size_t>(n) * V;
    softmax_crossentropy_row(losses + n, probs + row, logits + row, targets[n], V);
  }
}

void softmax_crossentropy_backward(float* dlogits, const float* probs, const int* targets, float dloss, int N, int V) {
#pragma omp parallel for schedule(static) if (static_cast <std::size_t>(N) * V >= parallel_min)
  for (int n = 0; n < N; ++n) {
    const float* p = probs + static_cast<std::size_t>(n) * V;
    float* d = dlogits + static_cast<std::size_t>(n) * V;
    const int target = targets[n];
#pragma omp simd
    for (int i = 0; i < V; ++i) d[i] += p[i] * dloss;
    d[target] -= dloss;
  }
}

double sum_squares(const float* x, std::size_t n) {
  double s = 0.0;
#pragma omp parallel for simd reduction(+ : s) schedule(static) if (n >= parallel_min)
  for (std::size_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return s;
}

void scale(float* x, float s, std::size_t n) {
#pragma omp parallel for simd schedule(static) if (n >= parallel_min)
  for (std::size_t i = 0; i < n; ++i) x[i] *= s;
}

void adamw_update(float* params, const float* grads, float* m, float* v, std::size_t n, float lr, float beta1,
                  float beta2, float eps, float weight_decay, int t) {
  const float bc1 = 1.0f - std::pow(beta1, static_cast<float>(t));
  const float bc2 = 1.0f - std::pow(beta2, static_cast<float>(t));
  const float step = lr / bc1;
  const float bc2_sqrt = std::sqrt(bc2);
  const float decay = 1.0f - lr * weight_decay;
  parallel_spans(n, [&](std::size_t b, std::size_t e) {
    adamw_span(params + b, grads + b, m + b, v + b, e - b, beta1, beta2, eps, step, bc2_sqrt, decay);
  });
}

}  // namespace banyan::nn::cpu
