// The CUDA backend (private): cuBLAS GEMMs and our kernels (kernels_cuda.cu), all on one stream.
//
// It lives in its own library, the plugin libbanyan_nn_cuda.so (built when BANYAN_HAVE_CUDA), which
// make_backend loads with dlopen the first time `cuda` is asked for: cuBLAS and the CUDA runtime cost
// ~155 MiB of resident memory once mapped, and a CPU app should not pay that for a backend it never
// uses. libbanyan_nn itself links neither.
//
// The plugin's one entry point has C linkage, so dlsym finds it by a plain name; its arguments are
// C++ types, which is sound because the plugin and libbanyan_nn are built together by one toolchain.
// It does not depend on libbanyan_nn (the error code is a plain int here), so libbanyan_nn can depend
// on it at build time.
#pragma once

#include "banyan/nn/backend.hpp"

#include <memory>
#include <string>

namespace banyan::nn {

// What the plugin's entry point returns.
struct cuda_plugin_result {
  enum class status { ok, unsupported, invalid_argument };
  status code = status::ok;
  std::unique_ptr<backend> made;  // set when code == ok
  std::string message;            // set otherwise: what is wrong ("no GPU found")
};

inline constexpr const char* cuda_plugin_file = "libbanyan_nn_cuda.so";
inline constexpr const char* cuda_plugin_entry = "banyan_nn_make_cuda_backend";
using cuda_plugin_entry_fn = void (*)(int device, cuda_plugin_result* out);

}  // namespace banyan::nn

// Defined in the plugin (backend_cuda.cu): a backend on `device`, or why not.
extern "C" void banyan_nn_make_cuda_backend(int device, banyan::nn::cuda_plugin_result* out);
