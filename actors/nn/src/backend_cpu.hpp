// The CPU backend (private): OpenBLAS GEMMs and the OpenMP reference kernels.
#pragma once

#include "banyan/nn/backend.hpp"

namespace banyan::nn {

class cpu_backend final : public backend {
 public:
  explicit cpu_backend(int threads);
  std::string name() const override { return "cpu"; }
  void* allocate(std::size_t bytes) override;
  void release(void* p) override;
  void upload(void* dst, const void* host_src, std::size_t bytes) override;
  void download(void* host_dst, const void* src, std::size_t bytes) override;
  void zero(void* p, std::size_t bytes) override;
  void synchronize() override;
  void encoder_forward(float* out, const int* tokens, const float* wte, const float* wpe, int B, int T, int C) override;
  void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* tokens, int B, int T, int C) override;
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                         int N, int C) override;
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                          const float* weight, const float* mean, const float* rstd, int N, int C) override;
  void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int C,
                      int OC) override;
  void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                       const float* weight, int N, int C, int OC) override;
  void attention_forward(float* out, float* preatt, float* att, const float* qkv, int B, int T, int C, int NH) override;
  void attention_backward(float* dqkv, float* dpreatt, float* datt, const float* dout, const float* qkv,
                          const float* att, int B, int T, int C, int NH) override;
  void gelu_forward(float* out, const float* inp, std::size_t n) override;
  void gelu_backward(float* dinp, const float* inp, const float* dout, std::size_t n) override;
  void relu_forward(float* out, const float* inp, std::size_t n) override;
  void relu_backward(float* dinp, const float* inp, const float* dout, std::size_t n) override;
  void residual_forward(float* out, const float* a, const float* b, std::size_t n) override;
  void residual_backward(float* da, float* db, const float* dout, std::size_t n) override;
  void softmax_crossentropy_forward(float* losses, float* probs, const float* logits, const int* targets, int N,
                                    int V) override;
  void softmax_crossentropy_backward(float* dlogits, const float* probs, const int* targets, float dloss, int N,
                                     int V) override;
  double sum_squares(const float* x, std::size_t n) override;
  void scale(float* x, float s, std::size_t n) override;
  void adamw_update(float* params, const float* grads, float* m, float* v, std::size_t n, float lr, float beta1,
                    float beta2, float eps, float weight_decay, int t) override;

 private:
  // Applies threads_ on the calling thread (see the constructor); every kernel calls it first.
  void own_threads() const;
  int threads_ = 0;
};

}  // namespace banyan::nn
