#include "banyan/nn/backend.hpp"

#include "backend_cpu.hpp"
#ifdef BANYAN_NN_HAVE_CUDA
#include "backend_cuda.hpp"
#endif

namespace banyan::nn {

const char* to_string(errc code) {
  switch (code) {
    case errc::invalid_argument: return "invalid argument";
    case errc::io: return "i/o error";
    case errc::corrupt: return "corrupt";
    case errc::mismatch: return "mismatch";
    case errc::unsupported: return "unsupported";
  }
  return "unknown";
}

bool cuda_compiled() {
#ifdef BANYAN_NN_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

result<std::unique_ptr<backend>> make_backend(const backend_options& options) {
  if (options.threads < 0) {
    return make_error(errc::invalid_argument, "backend: threads = " + std::to_string(options.threads) + " must be >= 0");
  }
  if (options.name == "cpu") return std::unique_ptr<backend>(std::make_unique<cpu_backend>(options.threads));
  if (options.name == "cuda") {
#ifdef BANYAN_NN_HAVE_CUDA
    return make_cuda_backend(options.device);
#else
    return make_error(errc::unsupported, "backend `cuda`: this build has no CUDA (configure with nvcc and BANYAN_ENABLE_CUDA)");
#endif
  }
  return make_error(errc::invalid_argument, "backend `" + options.name + "`: unknown (expected `cpu` or `cuda`)");
}

}  // namespace banyan::nn
