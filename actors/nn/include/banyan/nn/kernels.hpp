// The CPU kernels: every layer's forward and backward, written out (llm.c style). They are the CPU
// backend's implementation and the reference every CUDA kernel is tested against.
//
// Conventions (all buffers fp32, row-major, contiguous):
//   - shapes are in the comments: (B,T,C) = batch, time, channels; N = B*T rows; NH heads.
//   - backward kernels ACCUMULATE (+=) into every gradient they write, parameter and activation
//     alike, so a tensor used twice (tied embeddings, residual branches) sums its gradients. The caller
//     zeroes gradients before a backward pass.
//   - Linear weights are (OC, C) like torch.nn.Linear: out = inp @ W^T + b.
// Threads: the kernels are reentrant and parallel inside with OpenMP (omp_set_num_threads). GEMMs
// split their output rows over the OpenMP threads and call OpenBLAS in each, so OpenBLAS should run
// single-threaded (the cpu backend sets openblas_set_num_threads(1)): two thread pools on the same
// cores spin against each other.
#pragma once

#include <cstddef>

namespace banyan::nn::cpu {

// out (B,T,C) = wte[tokens] + wpe[t]; tokens (B,T) in [0,V).
void encoder_forward(float* out, const int* tokens, const float* wte, const float* wpe, int B, int T, int C);
void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* tokens, int B, int T, int C);

// Per row of inp (N,C): out = (x - mean) * rstd * w + b; saves mean (N) and rstd (N). eps = 1e-5.
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                       int N, int C);
// Split backward (pipeline stages run the input gradient and the weight gradients as two passes):
// dinp null computes only dweight, dbias; dweight and dbias both null compute only dinp.
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C);

// out (N,OC) = inp (N,C) @ weight (OC,C)^T + bias (OC); bias may be null. One cblas_sgemm.
void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int C, int OC);
// dinp (N,C) += dout @ W; dweight (OC,C) += dout^T @ inp; dbias (OC) += sum_rows(dout).
// dinp and dbias may be null (first layer, no bias). dweight null (and then dbias null) computes only
// dinp: with a later call with dinp null, the backward split into input and weight passes.
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int C, int OC);

// Causal multi-head self-attention. qkv (B,T,3C) holds q|k|v; heads split C into NH x C/NH.
// preatt, att (B,NH,T,T): scores before and after softmax (row t uses keys 0..t; the rest are 0).
// out (B,T,C).
void attention_forward(float* out, float* preatt, float* att, const float* qkv, int B, int T, int C, int NH);
void attention_backward(float* dqkv, float* dpreatt, float* datt, const float* dout, const float* qkv, const float* att,
                        int B, int T, int C, int NH);

// GELU, tanh approximation (torch.nn.GELU(approximate="tanh")).
void gelu_forward(float* out, const float* inp, std::size_t n);
void gelu_backward(float* dinp, const float* inp, const float* dout, std::size_t n);

void relu_forward(float* out, const float* inp, std::size_t n);
void relu_backward(float* dinp, const float* inp, const float* dout, std::size_t n);

// out = a + b; da += dout, db += dout.
void residual_forward(float* out, const float* a, const float* b, std::size_t n);
void residual_backward(float* da, float* db, const float* dout, std::size_t n);

// Row-wise softmax of logits (N,V) into probs and losses (N) = -log probs[target].
void softmax_crossentropy_forward(float* losses, float* probs, const float* logits, const int* targets, int N, int V);
// dlogits += (probs - onehot(target)) * dloss, where dloss is the gradient of the reduced loss with
// respect to each row's loss (1/N for a mean).
void softmax_crossentropy_backward(float* dlogits, const float* probs, const int* targets, float dloss, int N, int V);

// Sum of squares, in double for a stable global-norm clip.
double sum_squares(const float* x, std::size_t n);
void scale(float* x, float s, std::size_t n);

// torch.optim.AdamW step t (1-based): p -= lr*wd*p; m,v moments; p -= lr/bc1 * m/(sqrt(v)/sqrt(bc2)+eps).
void adamw_update(float* params, const float* grads, float* m, float* v, std::size_t n, float lr, float beta1,
                  float beta2, float eps, float weight_decay, int t);

}  // namespace banyan::nn::cpu
