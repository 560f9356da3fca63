// Our CUDA kernels. Written for correctness first and checked element-wise against the CPU kernels
// (tests/nn/cuda_kernels_test.cpp); the simple one-thread-per-row kernels (attention, softmax) are
// the place to optimise once a GPU profile says so.
#include "kernels_cuda.cuh"

#include <cmath>

namespace banyan::nn::cuda {

namespace {

constexpr int threads = 256;
unsigned blocks_for(std::size_t n) { return static_cast<unsigned>((n + threads - 1) / threads); }

__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__global__ void encoder_forward_k(float* out, const int* tokens, const float* wte, const float* wpe, int N, int T,
                                  int C) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<std::size_t>(N) * C) return;
  const int n = static_cast<int>(i / C), c = static_cast<int>(i % C), t = n % T;
  out[i] = wte[static_cast<std::size_t>(tokens[n]) * C + c] + wpe[static_cast<std::size_t>(t) * C + c];
}

__global__ void encoder_backward_k(float* dwte, float* dwpe, const float* dout, const int* tokens, int N, int T,
                                   int C) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<std::size_t>(N) * C) return;
  const int n = static_cast<int>(i / C), c = static_cast<int>(i % C), t = n % T;
  atomicAdd(&dwte[static_cast<std::size_t>(tokens[n]) * C + c], dout[i]);
  atomicAdd(&dwpe[static_cast<std::size_t>(t) * C + c], dout[i]);
}

// One warp per row.
__global__ void layernorm_forward_k(float* out, float* mean, float* rstd, const float* inp, const float* w,
                                    const float* b, int N, int C) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= N) return;
  const float* x = inp + static_cast<std::size_t>(row) * C;
  float s = 0.0f;
  for (int i = lane; i < C; i += 32) s += x[i];
  const float m = warp_sum(s) / C;
  float v = 0.0f;
  for (int i = lane; i < C; i += 32) v += (x[i] - m) * (x[i] - m);
  const float r = rsqrtf(warp_sum(v) / C + 1e-5f);
  float* o = out + static_cast<std::size_t>(row) * C;
  for (int i = lane; i < C; i += 32) o[i] = (x[i] - m) * r * w[i] + b[i];
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = r;
  }
}

__global__ void layernorm_backward_dx_k(float* dinp, const float* dout, const float* inp, const float* w,
                                        const float* mean, const float* rstd, int N, int C) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= N) return;
  const std::size_t off = static_cast<std::size_t>(row) * C;
  const float m = mean[row], r = rstd[row];
  float a = 0.0f, b = 0.0f;
  for (int i = lane; i < C; i += 32) {
    const float norm = (inp[off + i] - m) * r;
    const float dnorm = w[i] * dout[off + i];
    a += dnorm;
    b += dnorm * norm;
  }
  a = warp_sum(a) / C;
  b = warp_sum(b) / C;
  for (int i = lane; i < C; i += 32) {
    const float norm = (inp[off + i] - m) * r;
    const float dnorm = w[i] * dout[off + i];
    dinp[off + i] += (dnorm - a - norm * b) * r;
  }
}

__global__ void layernorm_backward_dw_k(float* dw, float* db, const float* dout, const float* inp, const float* mean,
                                        const float* rstd, int N, int C) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float sw = 0.0f, sb = 0.0f;
  for (int n = 0; n < N; ++n) {
    const std::size_t k = static_cast<std::size_t>(n) * C + c;
    sw += (inp[k] - mean[n]) * rstd[n] * dout[k];
    sb += dout[k];
  }
  dw[c] += sw;
  db[c] += sb;
}

__global__ void fill_rows_k(float* out, const float* row, int N, int OC) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < static_cast<std::size_t>(N) * OC) out[i] = row[i % OC];
}

__global__ void column_sums_k(float* dbias, const float* dout, int N, int OC) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= OC) return;
  float s = 0.0f;
  for (int n = 0; n < N; ++n) s += dout[static_cast<std::size_t>(n) * OC + j];
  dbias[j] += s;
}

// One thread per (b, h, t) query row.
__global__ void attention_forward_k(float* out, float* preatt, float* att, const float* qkv, int B, int T, int C,
                                    int NH) {
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= B * NH * T) return;
  const int t = idx % T, h = (idx / T) % NH, b = idx / (T * NH);
  const int hs = C / NH;
  const float sc = rsqrtf(static_cast<float>(hs));
  const std::size_t C3 = 3 * static_cast<std::size_t>(C);
  const float* q = qkv + (static_cast<std::size_t>(b) * T + t) * C3 + h * hs;
  const std::size_t row = ((static_cast<std::size_t>(b) * NH + h) * T + t) * T;
  float maxv = -INFINITY;
  for (int t2 = 0; t2 <= t; ++t2) {
    const float* k = qkv + (static_cast<std::size_t>(b) * T + t2) * C3 + C + h * hs;
    float s = 0.0f;
    for (int i = 0; i < hs; ++i) s += q[i] * k[i];
    s *= sc;
    preatt[row + t2] = s;
    maxv = fmaxf(maxv, s);
  }
  float sum = 0.0f;
  for (int t2 = 0; t2 <= t; ++t2) {
    const float e = expf(preatt[row + t2] - maxv);
    att[row + t2] = e;
    sum += e;
  }
  const float inv = 1.0f / sum;
  for (int t2 = 0; t2 < T; ++t2) {
    if (t2 <= t) {
      att[row + t2] *= inv;
    } else {
      att[row + t2] = 0.0f;
      preatt[row + t2] = 0.0f;
    }
  }
  float* o = out + (static_cast<std::size_t>(b) * T + t) * C + h * hs;
  for (int i = 0; i < hs; ++i) {
    float s = 0.0f;
    for (int t2 = 0; t2 <= t; ++t2)
      s += att[row + t2] * qkv[(static_cast<std::size_t>(b) * T + t2) * C3 + 2 * C + h * hs + i];
    o[i] = s;
  }
}

__global__ void attention_backward_k(float* dqkv, float* dpreatt, float* datt, const float* dout, const float* qkv,
                                     const float* att, int B, int T, int C, int NH) {
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= B * NH * T) return;
  const int t = idx % T, h = (idx / T) % NH, b = idx / (T * NH);
  const int hs = C / NH;
  const float sc = rsqrtf(static_cast<float>(hs));
  const std::size_t C3 = 3 * static_cast<std::size_t>(C);
  const std::size_t row = ((static_cast<std::size_t>(b) * NH + h) * T + t) * T;
  const float* d = dout + (static_cast<std::size_t>(b) * T + t) * C + h * hs;
  for (int t2 = 0; t2 <= t; ++t2) {
    const std::size_t vo = (static_cast<std::size_t>(b) * T + t2) * C3 + 2 * C + h * hs;
    float s = 0.0f;
    for (int i = 0; i < hs; ++i) {
      s += qkv[vo + i] * d[i];
      atomicAdd(&dqkv[vo + i], att[row + t2] * d[i]);  // value rows are shared by later queries
    }
    datt[row + t2] += s;
  }
  float dot = 0.0f;
  for (int t2 = 0; t2 <= t; ++t2) dot += att[row + t2] * datt[row + t2];
  for (int t2 = 0; t2 <= t; ++t2) dpreatt[row + t2] += att[row + t2] * (datt[row + t2] - dot);
  const std::size_t qo = (static_cast<std::size_t>(b) * T + t) * C3 + h * hs;
  for (int t2 = 0; t2 <= t; ++t2) {
    const std::size_t ko = (static_cast<std::size_t>(b) * T + t2) * C3 + C + h * hs;
    const float g = dpreatt[row + t2] * sc;
    for (int i = 0; i < hs; ++i) {
      dqkv[qo + i] += g * qkv[ko + i];
      atomicAdd(&dqkv[ko + i], g * qkv[qo + i]);
    }
  }
}

__global__ void gelu_forward_k(float* out, const float* inp, std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float x = inp[i];
  out[i] = 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}

__global__ void gelu_backward_k(float* dinp, const float* inp, const float* dout, std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float x = inp[i];
  const float th = tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x));
  const float local =
      0.5f * (1.0f + th) + x * 0.5f * (1.0f - th * th) * 0.7978845608028654f * (1.0f + 3.0f * 0.044715f * x * x);
  dinp[i] += local * dout[i];
}

__global__ void relu_forward_k(float* out, const float* inp, std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = inp[i] > 0.0f ? inp[i] : 0.0f;
}

__global__ void relu_backward_k(float* dinp, const float* inp, const float* dout, std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) dinp[i] += inp[i] > 0.0f ? dout[i] : 0.0f;
}

__global__ void residual_forward_k(float* out, const float* a, const float* b, std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

__global__ void residual_backward_k(float* da, float* db, const float* dout, std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  da[i] += dout[i];
  db[i] += dout[i];
}

__global__ void softmax_xent_forward_k(float* losses, float* probs, const float* logits, const int* targets, int N,
                                       int V) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= N) return;
  const float* l = logits + static_cast<std::size_t>(n) * V;
  float* p = probs + static_cast<std::size_t>(n) * V;
  float maxv = -INFINITY;
  for (int i = 0; i < V; ++i) maxv = fmaxf(maxv, l[i]);
  float sum = 0.0f;
  for (int i = 0; i < V; ++i) {
    p[i] = expf(l[i] - maxv);
    sum += p[i];
  }
  const float inv = 1.0f / sum;
  for (int i = 0; i < V; ++i) p[i] *= inv;
  losses[n] = logf(sum) + maxv - l[targets[n]];
}

__global__ void softmax_xent_backward_k(float* dlogits, const float* probs, const int* targets, float dloss, int N,
                                        int V) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<std::size_t>(N) * V) return;
  const int n = static_cast<int>(i / V), v = static_cast<int>(i % V);
  dlogits[i] += (probs[i] - (v == targets[n] ? 1.0f : 0.0f)) * dloss;
}

__global__ void sum_squares_k(double* acc, const float* x, std::size_t n) {
  __shared__ double part[threads];
  double s = 0.0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    s += static_cast<double>(x[i]) * x[i];
  }
  part[threadIdx.x] = s;
  __syncthreads();
  for (int o = blockDim.x / 2; o > 0; o >>= 1) {
    if (static_cast<int>(threadIdx.x) < o) part[threadIdx.x] += part[threadIdx.x + o];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(acc, part[0]);
}

__global__ void scale_k(float* x, float f, std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] *= f;
}

__global__ void adamw_k(float* params, const float* grads, float* m, float* v, std::size_t n, float lr, float beta1,
                        float beta2, float eps, float decay, float step, float bc2_sqrt) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float g = grads[i];
  float p = params[i] * decay;
  const float mi = beta1 * m[i] + (1.0f - beta1) * g;
  const float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
  m[i] = mi;
  v[i] = vi;
  params[i] = p - step * mi / (sqrtf(vi) / bc2_sqrt + eps);
}

}  // namespace

void encoder_forward(cudaStream_t s, float* out, const int* tokens, const float* wte, const float* wpe, int B, int T,
                     int C) {
  const std::size_t n = static_cast<std::size_t>(B) * T * C;
  encoder_forward_k<<<blocks_for(n), threads, 0, s>>>(out, tokens, wte, wpe, B * T, T, C);
}
void encoder_backward(cudaStream_t s, float* dwte, float* dwpe, const float* dout, const int* tokens, int B, int T,
                      int C) {
  const std::size_t n = static_cast<std::size_t>(B) * T * C;
  encoder_backward_k<<<blocks_for(n), threads, 0, s>>>(dwte, dwpe, dout, tokens, B * T, T, C);
}
void layernorm_forward(cudaStream_t s, float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int N, int C) {
  layernorm_forward_k<<<blocks_for(static_cast<std::size_t>(N) * 32), threads, 0, s>>>(out, mean, rstd, inp, weight,
                                                                                       bias, N, C);
}
void layernorm_backward(cudaStream_t s, float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C) {
  // Either half may be skipped (kernels.hpp: the split backward of pipeline stages).
  if (dinp != nullptr) {
    layernorm_backward_dx_k<<<blocks_for(static_cast<std::size_t>(N) * 32), threads, 0, s>>>(dinp, dout, inp, weight,
                                                                                             mean, rstd, N, C);
  }
  if (dweight != nullptr) {
    layernorm_backward_dw_k<<<blocks_for(C), threads, 0, s>>>(dweight, dbias, dout, inp, mean, rstd, N, C);
  }
}
void fill_rows(cudaStream_t s, float* out, const float* row, int N, int OC) {
  fill_rows_k<<<blocks_for(static_cast<std::size_t>(N) * OC), threads, 0, s>>>(out, row, N, OC);
}
void column_sums(cudaStream_t s, float* dbias, const float* dout, int N, int OC) {
  column_sums_k<<<blocks_for(OC), threads, 0, s>>>(dbias, dout, N, OC);
}
void attention_forward(cudaStream_t s, float* out, float* preatt, float* att, const float* qkv, int B, int T, int C,
                       int NH) {
  attention_forward_k<<<blocks_for(static_cast<std::size_t>(B) * NH * T), threads, 0, s>>>(out, preatt, att, qkv, B, T,
                                                                                           C, NH);
}
void attention_backward(cudaStream_t s, float* dqkv, float* dpreatt, float* datt, const float* dout, const float* qkv,
                        const float* att, int B, int T, int C, int NH) {
  attention_backward_k<<<blocks_for(static_cast<std::size_t>(B) * NH * T), threads, 0, s>>>(dqkv, dpreatt, datt, dout,
                                                                                            qkv, att, B, T, C, NH);
}
void gelu_forward(cudaStream_t s, float* out, const float* inp, std::size_t n) {
  gelu_forward_k<<<blocks_for(n), threads, 0, s>>>(out, inp, n);
}
void gelu_backward(cudaStream_t s, float* dinp, const float* inp, const float* dout, std::size_t n) {
  gelu_backward_k<<<blocks_for(n), threads, 0, s>>>(dinp, inp, dout, n);
}
void relu_forward(cudaStream_t s, float* out, const float* inp, std::size_t n) {
  relu_forward_k<<<blocks_for(n), threads, 0, s>>>(out, inp, n);
}
void relu_backward(cudaStream_t s, float* dinp, const float* inp, const float* dout, std::size_t n) {
  relu_backward_k<<<blocks_for(n), threads, 0, s>>>(dinp, inp, dout, n);
}
void residual_forward(cudaStream_t s, float* out, const float* a, const float* b, std::size_t n) {
  residual_forward_k<<<blocks_for(n), threads, 0, s>>>(out, a, b, n);
}
void residual_backward(cudaStream_t s, float* da, float* db, const float* dout, std::size_t n) {
  residual_backward_k<<<blocks_for(n), threads, 0, s>>>(da, db, dout, n);
}
void softmax_crossentropy_forward(cudaStream_t s, float* losses, float* probs, const float* logits, const int* targets,
                                  int N, int V) {
  softmax_xent_forward_k<<<blocks_for(N), threads, 0, s>>>(losses, probs, logits, targets, N, V);
}
void softmax_crossentropy_backward(cudaStream_t s, float* dlogits, const float* probs, const int* targets, float dloss,
                                   int N, int V) {
  softmax_xent_backward_k<<<blocks_for(static_cast<std::size_t>(N) * V), threads, 0, s>>>(dlogits, probs, targets,
                                                                                          dloss, N, V);
}
void sum_squares(cudaStream_t s, double* acc, const float* x, std::size_t n) {
  const unsigned b = blocks_for(n) < 1024 ? (blocks_for(n) ? blocks_for(n) : 1) : 1024;
  sum_squares_k<<<b, threads, 0, s>>>(acc, x, n);
}
void scale(cudaStream_t s, float* x, float f, std::size_t n) { scale_k<<<blocks_for(n), threads, 0, s>>>(x, f, n); }
void adamw_update(cudaStream_t s, float* params, const float* grads, float* m, float* v, std::size_t n, float lr,
                  float beta1, float beta2, float eps, float weight_decay, int t) {
  const float bc1 = 1.0f - std::pow(beta1, static_cast<float>(t));
  const float bc2 = 1.0f - std::pow(beta2, static_cast<float>(t));
  adamw_k<<<blocks_for(n), threads, 0, s>>>(params, grads, m, v, n, lr, beta1, beta2, eps, 1.0f - lr * weight_decay,
                                            lr / bc1, std::sqrt(bc2));
}

}  // namespace banyan::nn::cuda
