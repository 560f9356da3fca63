#include "banyan/nn/backend.hpp"

#include "backend_cpu.hpp"
#ifdef BANYAN_NN_HAVE_CUDA
#include "backend_cuda.hpp"
#endif

namespace banyan::nn {

bool cuda_compiled() {
#ifdef BANYAN_NN_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

result<std::unique_ptr<backend>> make_backend(const backend_options& options) {
  if (options.threads < 0) {
    return error{errc::invalid_argument, "backend: threads = " + std::to_string(options.threads) + " must be >= 0"};
  }
  if (options.name == "cpu") return std::unique_ptr<backend>(std::make_unique<cpu_backend>(options.threads));
  if (options.name == "cuda") {
#ifdef BANYAN_NN_HAVE_CUDA
    return make_cuda_backend(options.device);
#else
    return error{errc::unsupported, "backend `cuda`: this build has no CUDA (configure with nvcc and BANYAN_ENABLE_CUDA)"};
#endif
  }
  return error{errc::invalid_argument, "backend `" + options.name + "`: unknown (expected `cpu` or `cuda`)"};
}

}  // namespace banyan::nn
