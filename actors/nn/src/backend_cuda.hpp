// The CUDA backend (private): cuBLAS GEMMs and our kernels (kernels_cuda.cu), all on one stream.
// Only compiled when BANYAN_HAVE_CUDA; created through make_backend.
#pragma once

#include "banyan/nn/backend.hpp"

#include <memory>

namespace banyan::nn {

// Fails with errc::unsupported when no device is usable.
result<std::unique_ptr<backend>> make_cuda_backend(int device);

}  // namespace banyan::nn
