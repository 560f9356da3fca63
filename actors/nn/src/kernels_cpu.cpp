// CPU kernels (see kernels.hpp for the contracts). Loops are written for clarity first; the hot ones
// are parallel over independent rows or heads with OpenMP, GEMMs go to OpenBLAS.
#include "banyan/nn/kernels.hpp"

#include <cblas.h>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace banyan::nn::cpu {

namespace {
constexpr float layernorm_eps = 1e-5f;
constexpr float gelu_scale = 0.7978845608028654f;  // sqrt(2/pi)
}  // namespace

void encoder_forward(float* out, const int* tokens, const float* wte, const float* wpe, int B, int T,
                     int C) {
#pragma omp parallel for collapse(2)
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      float* o = out + (static_cast<std::size_t>(b) * T + t) * C;
      const float* e = wte + static_cast<std::size_t>(tokens[b * T + t]) * C;
      const float* p = wpe + static_cast<std::size_t>(t) * C;
      for (int i = 0; i < C; ++i) o[i] = e[i] + p[i];
    }
  }
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* tokens, int B, int T,
                      int C) {
  // Rows of dwte may repeat across (b,t): serial scatter keeps it race-free and deterministic.
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      const float* d = dout + (static_cast<std::size_t>(b) * T + t) * C;
      float* e = dwte + static_cast<std::size_t>(tokens[b * T + t]) * C;
      for (int i = 0; i < C; ++i) e[i] += d[i];
    }
  }
#pragma omp parallel for
  for (int t = 0; t < T; ++t) {
    float* p = dwpe + static_cast<std::size_t>(t) * C;
    for (int b = 0; b < B; ++b) {
      const float* d = dout + (static_cast<std::size_t>(b) * T + t) * C;
      for (int i = 0; i < C; ++i) p[i] += d[i];
    }
  }
}

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int N, int C) {
#pragma omp parallel for
  for (int n = 0; n < N; ++n) {
    const float* x = inp + static_cast<std::size_t>(n) * C;
    double s = 0.0;
    for (int i = 0; i < C; ++i) s += x[i];
    const double m = s / C;
    double v = 0.0;
    for (int i = 0; i < C; ++i) v += (x[i] - m) * (x[i] - m);
    v /= C;
    const float r = static_cast<float>(1.0 / std::sqrt(v + layernorm_eps));
    const float mf = static_cast<float>(m);
    float* o = out + static_cast<std::size_t>(n) * C;
    for (int i = 0; i < C; ++i) o[i] = (x[i] - mf) * r * weight[i] + bias[i];
    mean[n] = mf;
    rstd[n] = r;
  }
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean, const float* rstd,
                        int N, int C) {
#pragma omp parallel for
  for (int n = 0; n < N; ++n) {
    const float* x = inp + static_cast<std::size_t>(n) * C;
    const float* d = dout + static_cast<std::size_t>(n) * C;
    float* dx = dinp + static_cast<std::size_t>(n) * C;
    const float m = mean[n], r = rstd[n];
    float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
    for (int i = 0; i < C; ++i) {
      const float norm = (x[i] - m) * r;
      const float dnorm = weight[i] * d[i];
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * norm;
    }
    dnorm_mean /= C;
    dnorm_norm_mean /= C;
    for (int i = 0; i < C; ++i) {
      const float norm = (x[i] - m) * r;
      const float dnorm = weight[i] * d[i];
      dx[i] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * r;
    }
  }
  // Parameter gradients reduce over rows: parallel over channels so no two threads share a sum.
#pragma omp parallel for
  for (int i = 0; i < C; ++i) {
    float dw = 0.0f, db = 0.0f;
    for (int n = 0; n < N; ++n) {
      const std::size_t k = static_cast<std::size_t>(n) * C + i;
      dw += (inp[k] - mean[n]) * rstd[n] * dout[k];
      db += dout[k];
    }
    dweight[i] += dw;
    dbias[i] += db;
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

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N,
                    int C, int OC) {
  split_rows(N, static_cast<long long>(C) * OC, [&](int n0, int n1) {
    float beta = 0.0f;
    float* o = out + static_cast<std::size_t>(n0) * OC;
    if (bias != nullptr) {
      for (int n = n0; n < n1; ++n) {
        std::copy(bias, bias + OC, out + static_cast<std::size_t>(n) * OC);
      }
      beta = 1.0f;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n1 - n0, OC, C, 1.0f,
                inp + static_cast<std::size_t>(n0) * C, C, weight, C, beta, o, OC);
  });
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int C, int OC) {
  if (dinp != nullptr) {
    // dinp rows [n0,n1) += dout rows [n0,n1) @ W
    split_rows(N, static_cast<long long>(C) * OC, [&](int n0, int n1) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n1 - n0, C, OC, 1.0f,
                  dout + static_cast<std::size_t>(n0) * OC, OC, weight, C, 1.0f,
                  dinp + static_cast<std::size_t>(n0) * C, C);
    });
  }
  // dweight rows [j0,j1) += dout[:, j0:j1]^T @ inp; dbias[j0:j1] += column sums of dout.
  split_rows(OC, static_cast<long long>(C) * N, [&](int j0, int j1) {
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, j1 - j0, C, N, 1.0f, dout + j0, OC, inp, C,
                1.0f, dweight + static_cast<std::size_t>(j0) * C, C);
    if (dbias != nullptr) {
      for (int n = 0; n < N; ++n) {
        const float* d = dout + static_cast<std::size_t>(n) * OC;
        for (int j = j0; j < j1; ++j) dbias[j] += d[j];
      }
    }
  });
}

void attention_forward(float* out, float* preatt, float* att, const float* qkv, int B, int T, int C,
                       int NH) {
  const int hs = C / NH;
  const float sc = 1.0f / std::sqrt(static_cast<float>(hs));
  const std::size_t C3 = static_cast<std::size_t>(C) * 3;
#pragma omp parallel for collapse(2)
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      for (int t = 0; t < T; ++t) {
        const float* q = qkv + (static_cast<std::size_t>(b) * T + t) * C3 + h * hs;
        const std::size_t row = ((static_cast<std::size_t>(b) * NH + h) * T + t) * T;
        float* pre = preatt + row;
        float* a = att + row;
        float maxv = -INFINITY;
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* k = qkv + (static_cast<std::size_t>(b) * T + t2) * C3 + C + h * hs;
          float s = 0.0f;
          for (int i = 0; i < hs; ++i) s += q[i] * k[i];
          s *= sc;
          pre[t2] = s;
          if (s > maxv) maxv = s;
        }
        float sum = 0.0f;
        for (int t2 = 0; t2 <= t; ++t2) {
          const float e = std::exp(pre[t2] - maxv);
          a[t2] = e;
          sum += e;
        }
        const float inv = 1.0f / sum;
        for (int t2 = 0; t2 < T; ++t2) {
          if (t2 <= t) {
            a[t2] *= inv;
          } else {
            a[t2] = 0.0f;
            pre[t2] = 0.0f;
          }
        }
        float* o = out + (static_cast<std::size_t>(b) * T + t) * C + h * hs;
        for (int i = 0; i < hs; ++i) o[i] = 0.0f;
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* v = qkv + (static_cast<std::size_t>(b) * T + t2) * C3 + 2 * C + h * hs;
          const float w = a[t2];
          for (int i = 0; i < hs; ++i) o[i] += w * v[i];
        }
      }
    }
  }
}

void attention_backward(float* dqkv, float* dpreatt, float* datt, const float* dout,
                        const float* qkv, const float* att, int B, int T, int C, int NH) {
  const int hs = C / NH;
  const float sc = 1.0f / std::sqrt(static_cast<float>(hs));
  const std::size_t C3 = static_cast<std::size_t>(C) * 3;
  // Each (b,h) touches only its own head's slice of dqkv, so heads run in parallel without races.
#pragma omp parallel for collapse(2)
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      for (int t = 0; t < T; ++t) {
        const std::size_t row = ((static_cast<std::size_t>(b) * NH + h) * T + t) * T;
        const float* a = att + row;
        float* da = datt + row;
        float* dpre = dpreatt + row;
        const float* d = dout + (static_cast<std::size_t>(b) * T + t) * C + h * hs;
        // out = att @ v
        for (int t2 = 0; t2 <= t; ++t2) {
          const std::size_t vo = (static_cast<std::size_t>(b) * T + t2) * C3 + 2 * C + h * hs;
          const float* v = qkv + vo;
          float* dv = dqkv + vo;
          float s = 0.0f;
          for (int i = 0; i < hs; ++i) {
            s += v[i] * d[i];
            dv[i] += a[t2] * d[i];
          }
          da[t2] += s;
        }
        // softmax: dpre = att * (datt - <att, datt>)
        float dot = 0.0f;
        for (int t2 = 0; t2 <= t; ++t2) dot += a[t2] * da[t2];
        for (int t2 = 0; t2 <= t; ++t2) dpre[t2] += a[t2] * (da[t2] - dot);
        // pre = q . k * sc
        const std::size_t qo = (static_cast<std::size_t>(b) * T + t) * C3 + h * hs;
        const float* q = qkv + qo;
        float* dq = dqkv + qo;
        for (int t2 = 0; t2 <= t; ++t2) {
          const std::size_t ko = (static_cast<std::size_t>(b) * T + t2) * C3 + C + h * hs;
          const float* k = qkv + ko;
          float* dk = dqkv + ko;
          const float g = dpre[t2] * sc;
          for (int i = 0; i < hs; ++i) {
            dq[i] += g * k[i];
            dk[i] += g * q[i];
          }
        }
      }
    }
  }
}

void gelu_forward(float* out, const float* inp, std::size_t n) {
#pragma omp parallel for
  for (std::size_t i = 0; i < n; ++i) {
    const float x = inp[i];
    const float cube = 0.044715f * x * x * x;
    out[i] = 0.5f * x * (1.0f + std::tanh(gelu_scale * (x + cube)));
  }
}

void gelu_backward(float* dinp, const float* inp, const float* dout, std::size_t n) {
#pragma omp parallel for
  for (std::size_t i = 0; i < n; ++i) {
    const float x = inp[i];
    const float cube = 0.044715f * x * x * x;
    const float arg = gelu_scale * (x + cube);
    const float th = std::tanh(arg);
    const float sech2 = 1.0f - th * th;
    const float local = 0.5f * (1.0f + th) + x * 0.5f * sech2 * gelu_scale * (1.0f + 3.0f * 0.044715f * x * x);
    dinp[i] += local * dout[i];
  }
}

void relu_forward(float* out, const float* inp, std::size_t n) {
#pragma omp parallel for
  for (std::size_t i = 0; i < n; ++i) out[i] = inp[i] > 0.0f ? inp[i] : 0.0f;
}

void relu_backward(float* dinp, const float* inp, const float* dout, std::size_t n) {
#pragma omp parallel for
  for (std::size_t i = 0; i < n; ++i) dinp[i] += inp[i] > 0.0f ? dout[i] : 0.0f;
}

void residual_forward(float* out, const float* a, const float* b, std::size_t n) {
#pragma omp parallel for
  for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void residual_backward(float* da, float* db, const float* dout, std::size_t n) {
#pragma omp parallel for
  for (std::size_t i = 0; i < n; ++i) {
    da[i] += dout[i];
    db[i] += dout[i];
  }
}

void softmax_crossentropy_forward(float* losses, float* probs, const float* logits,
                                  const int* targets, int N, int V) {
#pragma omp parallel for
  for (int n = 0; n < N; ++n) {
    const float* l = logits + static_cast<std::size_t>(n) * V;
    float* p = probs + static_cast<std::size_t>(n) * V;
    float maxv = -INFINITY;
    for (int i = 0; i < V; ++i) maxv = l[i] > maxv ? l[i] : maxv;
    float sum = 0.0f;
    for (int i = 0; i < V; ++i) {
      p[i] = std::exp(l[i] - maxv);
      sum += p[i];
    }
    const float inv = 1.0f / sum;
    for (int i = 0; i < V; ++i) p[i] *= inv;
    // log-sum-exp form, as log_softmax computes it, rather than -log(p[target]).
    losses[n] = std::log(sum) + maxv - l[targets[n]];
  }
}

void softmax_crossentropy_backward(float* dlogits, const float* probs, const int* targets, float dloss,
                                   int N, int V) {
#pragma omp parallel for
  for (int n = 0; n < N; ++n) {
    const float* p = probs + static_cast<std::size_t>(n) * V;
    float* d = dlogits + static_cast<std::size_t>(n) * V;
    const int target = targets[n];
    for (int i = 0; i < V; ++i) d[i] += (p[i] - (i == target ? 1.0f : 0.0f)) * dloss;
  }
}

double sum_squares(const float* x, std::size_t n) {
  double s = 0.0;
#pragma omp parallel for reduction(+ : s)
  for (std::size_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return s;
}

void scale(float* x, float s, std::size_t n) {
#pragma omp parallel for
  for (std::size_t i = 0; i < n; ++i) x[i] *= s;
}

void adamw_update(float* params, const float* grads, float* m, float* v, std::size_t n, float lr,
                  float beta1, float beta2, float eps, float weight_decay, int t) {
  const float bc1 = 1.0f - std::pow(beta1, static_cast<float>(t));
  const float bc2 = 1.0f - std::pow(beta2, static_cast<float>(t));
  const float step = lr / bc1;
  const float bc2_sqrt = std::sqrt(bc2);
  const float decay = 1.0f - lr * weight_decay;
#pragma omp parallel for
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

}  // namespace banyan::nn::cpu
