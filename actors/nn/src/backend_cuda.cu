// The CUDA backend: cuBLAS for the GEMMs, kernels_cuda.cu for everything else, one stream. Built as
// the plugin libbanyan_nn_cuda.so (backend_cuda.hpp says why).
// CUDA failures inside a step are bugs or a lost device, not input errors: they abort with the CUDA
// message (the process cannot continue with a broken context). Device discovery failures are values.
#include "backend_cuda.hpp"

#include "kernels_cuda.cuh"

#include "banyan/nn/copy_engine.hpp"

#include "banyan/base/log.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdlib>
#include <string>
#include <unordered_map>

namespace banyan::nn {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    banyan::log::error("nn", std::string("cuda: ") + what + ": " + cudaGetErrorString(e));
    std::abort();
  }
}
void check(cublasStatus_t e, const char* what) {
  if (e != CUBLAS_STATUS_SUCCESS) {
    banyan::log::error("nn", std::string("cublas: ") + what + ": status " + std::to_string(static_cast<int>(e)));
    std::abort();
  }
}

// Offloads and prefetches on two copy streams of their own (one per direction, so both overlap the
// compute and each other). A copy starts after the compute stream's work issued before it (an event
// the copy stream waits on); wait() makes the compute stream wait for the copy's event, so the host
// never blocks and later kernels see the copy complete. Host memory must be pinned (allocate_host).
class cuda_copy_engine final : public copy_engine {
 public:
  explicit cuda_copy_engine(cudaStream_t compute) : compute_(compute) {
    check(cudaStreamCreateWithFlags(&to_host_, cudaStreamNonBlocking), "cudaStreamCreate d2h");
    check(cudaStreamCreateWithFlags(&to_device_, cudaStreamNonBlocking), "cudaStreamCreate h2d");
  }
  ~cuda_copy_engine() override {
    drain();
    for (auto& [id, e] : done_) cudaEventDestroy(e);
    cudaStreamDestroy(to_host_);
    cudaStreamDestroy(to_device_);
  }
  ticket to_host(void* host_dst, const void* src, std::size_t bytes) override {
    return issue(to_host_, host_dst, src, bytes, cudaMemcpyDeviceToHost);
  }
  ticket to_device(void* dst, const void* host_src, std::size_t bytes) override {
    return issue(to_device_, dst, host_src, bytes, cudaMemcpyHostToDevice);
  }
  bool wait(ticket t) override {
    auto it = done_.find(t);
    if (it == done_.end()) return false;
    const cudaError_t q = cudaEventQuery(it->second);
    const bool late = q == cudaErrorNotReady;
    if (!late) check(q, "cudaEventQuery");
    check(cudaStreamWaitEvent(compute_, it->second, 0), "cudaStreamWaitEvent");
    check(cudaEventDestroy(it->second), "cudaEventDestroy");
    done_.erase(it);
    return late;
  }
  void drain() override {
    check(cudaStreamSynchronize(to_host_), "drain d2h");
    check(cudaStreamSynchronize(to_device_), "drain h2d");
  }

 private:
  ticket issue(cudaStream_t s, void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
    cudaEvent_t ready = nullptr, done = nullptr;
    check(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), "cudaEventCreate");
    check(cudaEventRecord(ready, compute_), "cudaEventRecord");
    check(cudaStreamWaitEvent(s, ready, 0), "cudaStreamWaitEvent");
    check(cudaEventDestroy(ready), "cudaEventDestroy");  // released once it has fired
    check(cudaMemcpyAsync(dst, src, bytes, kind, s), "cudaMemcpyAsync");
    check(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate");
    check(cudaEventRecord(done, s), "cudaEventRecord");
    done_.emplace(++next_, done);
    return next_;
  }

  cudaStream_t compute_, to_host_ = nullptr, to_device_ = nullptr;
  std::unordered_map<ticket, cudaEvent_t> done_;
  ticket next_ = 0;
};

class cuda_backend final : public backend {
 public:
  explicit cuda_backend(int device) : device_(device) {
    check(cudaSetDevice(device), "cudaSetDevice");
    check(cudaStreamCreate(&stream_), "cudaStreamCreate");
    check(cublasCreate(&blas_), "cublasCreate");
    check(cublasSetStream(blas_, stream_), "cublasSetStream");
    // Plain fp32 (no TF32): results must match the CPU reference at fp32 tolerances.
    check(cublasSetMathMode(blas_, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
    check(cudaMalloc(&scratch_, sizeof(double)), "cudaMalloc scratch");
  }
  ~cuda_backend() override {
    cudaFree(scratch_);
    cublasDestroy(blas_);
    cudaStreamDestroy(stream_);
  }

  std::string name() const override { return "cuda"; }

  void* allocate(std::size_t bytes) override {
    void* p = nullptr;
    check(cudaMalloc(&p, bytes), "cudaMalloc");
    check(cudaMemsetAsync(p, 0, bytes, stream_), "cudaMemset");
    return p;
  }
  void release(void* p) override {
    cudaStreamSynchronize(stream_);
    cudaFree(p);
  }
  void upload(void* dst, const void* src, std::size_t bytes) override {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_), "upload");
    check(cudaStreamSynchronize(stream_), "upload sync");  // src is pageable caller memory
  }
  void download(void* dst, const void* src, std::size_t bytes) override {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_), "download");
    check(cudaStreamSynchronize(stream_), "download sync");
  }
  void zero(void* p, std::size_t bytes) override { check(cudaMemsetAsync(p, 0, bytes, stream_), "zero"); }
  void synchronize() override { check(cudaStreamSynchronize(stream_), "synchronize"); }
  void* allocate_host(std::size_t bytes) override {
    void* p = nullptr;
    check(cudaMallocHost(&p, bytes > 0 ? bytes : 1), "cudaMallocHost");
    return p;
  }
  void release_host(void* p) override {
    cudaStreamSynchronize(stream_);
    cudaFreeHost(p);
  }
  std::unique_ptr<copy_engine> make_copy_engine() override { return std::make_unique<cuda_copy_engine>(stream_); }

  void encoder_forward(float* out, const int* tokens, const float* wte, const float* wpe, int B, int T,
                       int C) override {
    cuda::encoder_forward(stream_, out, tokens, wte, wpe, B, T, C);
  }
  void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* tokens, int B, int T, int C) override {
    cuda::encoder_backward(stream_, dwte, dwpe, dout, tokens, B, T, C);
  }
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                         int N, int C) override {
    cuda::layernorm_forward(stream_, out, mean, rstd, inp, weight, bias, N, C);
  }
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                          const float* weight, const float* mean, const float* rstd, int N, int C) override {
    cuda::layernorm_backward(stream_, dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
  }
  // Row-major (N,OC) = (N,C) @ (OC,C)^T is column-major out^T = W^T' ... see the derivation in
  // docs/nn.md: cuBLAS sees every row-major matrix as its transpose.
  void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int C,
                      int OC) override {
    float beta = 0.0f;
    if (bias != nullptr) {
      cuda::fill_rows(stream_, out, bias, N, OC);
      beta = 1.0f;
    }
    const float alpha = 1.0f;
    check(cublasSgemm(blas_, CUBLAS_OP_T, CUBLAS_OP_N, OC, N, C, &alpha, weight, C, inp, C, &beta, out, OC),
          "sgemm forward");
  }
  void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                       const float* weight, int N, int C, int OC) override {
    const float one = 1.0f;
    if (dinp != nullptr) {
      check(cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_N, C, N, OC, &one, weight, C, dout, OC, &one, dinp, C),
            "sgemm dinp");
    }
    if (dweight == nullptr) return;  // input gradient only (kernels.hpp)
    check(cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_T, C, OC, N, &one, inp, C, dout, OC, &one, dweight, C),
          "sgemm dweight");
    if (dbias != nullptr) cuda::column_sums(stream_, dbias, dout, N, OC);
  }
  void attention_forward(float* out, float* preatt, float* att, const float* qkv, int B, int T, int C,
                         int NH) override {
    cuda::attention_forward(stream_, out, preatt, att, qkv, B, T, C, NH);
  }
  void attention_backward(float* dqkv, float* dpreatt, float* datt, const float* dout, const float* qkv,
                          const float* att, int B, int T, int C, int NH) override {
    cuda::attention_backward(stream_, dqkv, dpreatt, datt, dout, qkv, att, B, T, C, NH);
  }
  void gelu_forward(float* out, const float* inp, std::size_t n) override { cuda::gelu_forward(stream_, out, inp, n); }
  void gelu_backward(float* dinp, const float* inp, const float* dout, std::size_t n) override {
    cuda::gelu_backward(stream_, dinp, inp, dout, n);
  }
  void relu_forward(float* out, const float* inp, std::size_t n) override { cuda::relu_forward(stream_, out, inp, n); }
  void relu_backward(float* dinp, const float* inp, const float* dout, std::size_t n) override {
    cuda::relu_backward(stream_, dinp, inp, dout, n);
  }
  void residual_forward(float* out, const float* a, const float* b, std::size_t n) override {
    cuda::residual_forward(stream_, out, a, b, n);
  }
  void residual_backward(float* da, float* db, const float* dout, std::size_t n) override {
    cuda::residual_backward(stream_, da, db, dout, n);
  }
  void softmax_crossentropy_forward(float* losses, float* probs, const float* logits, const int* targets, int N,
                                    int V) override {
    cuda::softmax_crossentropy_forward(stream_, losses, probs, logits, targets, N, V);
  }
  void softmax_crossentropy_backward(float* dlogits, const float* probs, const int* targets, float dloss, int N,
                                     int V) override {
    cuda::softmax_crossentropy_backward(stream_, dlogits, probs, targets, dloss, N, V);
  }
  double sum_squares(const float* x, std::size_t n) override {
    check(cudaMemsetAsync(scratch_, 0, sizeof(double), stream_), "zero scratch");
    cuda::sum_squares(stream_, scratch_, x, n);
    double out = 0.0;
    download(&out, scratch_, sizeof(double));
    return out;
  }
  void scale(float* x, float s, std::size_t n) override { cuda::scale(stream_, x, s, n); }
  void adamw_update(float* params, const float* grads, float* m, float* v, std::size_t n, float lr, float beta1,
                    float beta2, float eps, float weight_decay, int t) override {
    cuda::adamw_update(stream_, params, grads, m, v, n, lr, beta1, beta2, eps, weight_decay, t);
  }

 private:
  int device_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  double* scratch_ = nullptr;
};

}  // namespace

}  // namespace banyan::nn

extern "C" void banyan_nn_make_cuda_backend(int device, banyan::nn::cuda_plugin_result* out) {
  using banyan::nn::cuda_plugin_result;
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    out->code = cuda_plugin_result::status::unsupported;
    out->message = std::string("no usable GPU (") + cudaGetErrorString(e) + ")";
    return;
  }
  if (count == 0) {
    out->code = cuda_plugin_result::status::unsupported;
    out->message = "no GPU found";
    return;
  }
  if (device < 0 || device >= count) {
    out->code = cuda_plugin_result::status::invalid_argument;
    out->message = "device " + std::to_string(device) + " out of range [0, " + std::to_string(count) + ")";
    return;
  }
  out->code = cuda_plugin_result::status::ok;
  out->made = std::make_unique<banyan::nn::cuda_backend>(device);
}
