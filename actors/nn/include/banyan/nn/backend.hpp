// The compute seam: memory and every layer kernel, on one device. The model code (gpt, mlp) calls
// only this interface, so the same model runs on the CPU (OpenBLAS + OpenMP threads) or on CUDA
// (cuBLAS + our kernels), chosen at run time by name.
//
// Pointers passed to kernels are device pointers of this backend (host pointers for "cpu"); the
// contracts and shapes of each kernel are those of the CPU reference in kernels.hpp. Kernels are
// asynchronous on CUDA: synchronize() before reading results or timing. A backend is a resource:
// move-only, used from one thread at a time.
#pragma once

#include "banyan/nn/error.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace banyan::nn {

class copy_engine;

class backend {
 public:
  virtual ~backend() = default;
  backend() = default;
  backend(const backend&) = delete;
  backend& operator=(const backend&) = delete;

  virtual std::string name() const = 0;

  // Zero-initialised device memory; never returns null (allocation failure is fatal, like new).
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* p) = 0;
  virtual void upload(void* dst, const void* host_src, std::size_t bytes) = 0;
  virtual void download(void* host_dst, const void* src, std::size_t bytes) = 0;
  virtual void zero(void* p, std::size_t bytes) = 0;
  virtual void synchronize() = 0;
  // Host memory for copies to and from the device (pinned on CUDA, so copies run asynchronously);
  // never null. The defaults are plain aligned host memory.
  virtual void* allocate_host(std::size_t bytes);
  virtual void release_host(void* p);
  // Offloads and prefetches beside the compute (copy_engine.hpp). The default, a
  // threaded_copy_engine, suits backends whose device memory is host memory (cpu).
  virtual std::unique_ptr<copy_engine> make_copy_engine();

  virtual void encoder_forward(float* out, const int* tokens, const float* wte, const float* wpe, int B, int T,
                               int C) = 0;
  virtual void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* tokens, int B, int T,
                                int C) = 0;
  virtual void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                                 const float* bias, int N, int C) = 0;
  virtual void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                                  const float* weight, const float* mean, const float* rstd, int N, int C) = 0;
  virtual void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int C,
                              int OC) = 0;
  virtual void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                               const float* weight, int N, int C, int OC) = 0;
  virtual void attention_forward(float* out, float* preatt, float* att, const float* qkv, int B, int T, int C,
                                 int NH) = 0;
  virtual void attention_backward(float* dqkv, float* dpreatt, float* datt, const float* dout, const float* qkv,
                                  const float* att, int B, int T, int C, int NH) = 0;
  virtual void gelu_forward(float* out, const float* inp, std::size_t n) = 0;
  virtual void gelu_backward(float* dinp, const float* inp, const float* dout, std::size_t n) = 0;
  virtual void relu_forward(float* out, const float* inp, std::size_t n) = 0;
  virtual void relu_backward(float* dinp, const float* inp, const float* dout, std::size_t n) = 0;
  virtual void residual_forward(float* out, const float* a, const float* b, std::size_t n) = 0;
  virtual void residual_backward(float* da, float* db, const float* dout, std::size_t n) = 0;
  virtual void softmax_crossentropy_forward(float* losses, float* probs, const float* logits, const int* targets, int N,
                                            int V) = 0;
  virtual void softmax_crossentropy_backward(float* dlogits, const float* probs, const int* targets, float dloss, int N,
                                             int V) = 0;
  // Returns on the host; synchronizes.
  virtual double sum_squares(const float* x, std::size_t n) = 0;
  virtual void scale(float* x, float s, std::size_t n) = 0;
  virtual void adamw_update(float* params, const float* grads, float* m, float* v, std::size_t n, float lr, float beta1,
                            float beta2, float eps, float weight_decay, int t) = 0;
};

struct backend_options {
  std::string name = "cpu";  // "cpu" or "cuda"
  int threads = 0;           // cpu: OpenMP and OpenBLAS threads; 0 keeps the library defaults
  int device = 0;            // cuda: device ordinal
};

// Fails with errc::unsupported when `cuda` is asked of a build without CUDA or a machine without a
// GPU, and errc::invalid_argument for an unknown name.
result<std::unique_ptr<backend>> make_backend(const backend_options& options);

// True when this build has the CUDA backend compiled in (a GPU may still be absent).
bool cuda_compiled();

// Move-only owner of one allocation of a backend; the backend must outlive it.
class buffer {
 public:
  buffer() = default;
  buffer(backend& b, std::size_t bytes) : b_(&b), p_(bytes ? b.allocate(bytes) : nullptr), bytes_(bytes) {}
  buffer(buffer&& o) noexcept : b_(o.b_), p_(o.p_), bytes_(o.bytes_) {
    o.p_ = nullptr;
    o.bytes_ = 0;
  }
  buffer& operator=(buffer&& o) noexcept {
    if (this != &o) {
      reset();
      b_ = o.b_;
      p_ = o.p_;
      bytes_ = o.bytes_;
      o.p_ = nullptr;
      o.bytes_ = 0;
    }
    return *this;
  }
  ~buffer() { reset(); }
  void reset() {
    if (p_ != nullptr) b_->release(p_);
    p_ = nullptr;
    bytes_ = 0;
  }
  float* f32() const { return static_cast<float*>(p_); }
  int* i32() const { return static_cast<int*>(p_); }
  void* get() const { return p_; }
  std::size_t bytes() const { return bytes_; }

 private:
  backend* b_ = nullptr;
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace banyan::nn
