// Launchers of our CUDA kernels (private). Same contracts and shapes as the CPU reference in
// kernels.hpp; all are asynchronous on `stream`. GEMMs are not here: backend_cuda.cu calls cuBLAS.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace banyan::nn::cuda {

void encoder_forward(cudaStream_t s, float* out, const int* tokens, const float* wte, const float* wpe, int B, int T,
                     int C);
void encoder_backward(cudaStream_t s, float* dwte, float* dwpe, const float* dout, const int* tokens, int B, int T,
                      int C);
void layernorm_forward(cudaStream_t s, float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int N, int C);
void layernorm_backward(cudaStream_t s, float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C);
void fill_rows(cudaStream_t s, float* out, const float* row, int N, int OC);
void column_sums(cudaStream_t s, float* dbias, const float* dout, int N, int OC);
void attention_forward(cudaStream_t s, float* out, float* preatt, float* att, const float* qkv, int B, int T, int C,
                       int NH);
void attention_backward(cudaStream_t s, float* dqkv, float* dpreatt, float* datt, const float* dout, const float* qkv,
                        const float* att, int B, int T, int C, int NH);
void gelu_forward(cudaStream_t s, float* out, const float* inp, std::size_t n);
void gelu_backward(cudaStream_t s, float* dinp, const float* inp, const float* dout, std::size_t n);
void relu_forward(cudaStream_t s, float* out, const float* inp, std::size_t n);
void relu_backward(cudaStream_t s, float* dinp, const float* inp, const float* dout, std::size_t n);
void residual_forward(cudaStream_t s, float* out, const float* a, const float* b, std::size_t n);
void residual_backward(cudaStream_t s, float* da, float* db, const float* dout, std::size_t n);
void softmax_crossentropy_forward(cudaStream_t s, float* losses, float* probs, const float* logits, const int* targets,
                                  int N, int V);
void softmax_crossentropy_backward(cudaStream_t s, float* dlogits, const float* probs, const int* targets, float dloss,
                                   int N, int V);
// Adds sum(x^2) into *acc (device double, zeroed by the caller).
void sum_squares(cudaStream_t s, double* acc, const float* x, std::size_t n);
void scale(cudaStream_t s, float* x, float f, std::size_t n);
void adamw_update(cudaStream_t s, float* params, const float* grads, float* m, float* v, std::size_t n, float lr,
                  float beta1, float beta2, float eps, float weight_decay, int t);

}  // namespace banyan::nn::cuda
