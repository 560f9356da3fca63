#include "banyan/nn/backend.hpp"

#include "banyan/nn/copy_engine.hpp"

#include "backend_cpu.hpp"
#include "backend_cuda.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <new>

namespace banyan::nn {

bool cuda_compiled() {
#ifdef BANYAN_NN_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

void* backend::allocate_host(std::size_t bytes) {
  void* p = std::aligned_alloc(64, (std::max<std::size_t>(bytes, 1) + 63) / 64 * 64);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void backend::release_host(void* p) { std::free(p); }
std::unique_ptr<copy_engine> backend::make_copy_engine() { return std::make_unique<threaded_copy_engine>(); }

namespace {

#ifdef BANYAN_NN_HAVE_CUDA
// The plugin's entry point, loaded once per process (and never unloaded: CUDA libraries do not
// survive dlclose well). Looked up beside this library first (the build tree and the installed
// libdir both hold the two side by side), then on the loader's search path.
struct plugin {
  cuda_plugin_entry_fn entry = nullptr;
  std::string error;
};

const plugin& cuda_plugin() {
  static plugin p;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string tried;
    Dl_info self{};
    if (dladdr(reinterpret_cast<const void*>(&cuda_compiled), &self) != 0 && self.dli_fname != nullptr) {
      const auto beside = std::filesystem::path(self.dli_fname).parent_path() / cuda_plugin_file;
      if (void* h = dlopen(beside.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        p.entry = reinterpret_cast<cuda_plugin_entry_fn>(dlsym(h, cuda_plugin_entry));
        if (p.entry == nullptr) p.error = "`" + beside.string() + "` has no " + cuda_plugin_entry;
        return;
      }
      tried = dlerror();
    }
    if (void* h = dlopen(cuda_plugin_file, RTLD_NOW | RTLD_LOCAL)) {
      p.entry = reinterpret_cast<cuda_plugin_entry_fn>(dlsym(h, cuda_plugin_entry));
      if (p.entry == nullptr) p.error = std::string("`") + cuda_plugin_file + "` has no " + cuda_plugin_entry;
      return;
    }
    p.error = std::string("cannot load ") + cuda_plugin_file + ": " + dlerror() + (tried.empty() ? "" : "; " + tried);
  });
  return p;
}
#endif

}  // namespace

result<std::unique_ptr<backend>> make_backend(const backend_options& options) {
  if (options.threads < 0) {
    return error{errc::invalid_argument, "backend: threads = " + std::to_string(options.threads) + " must be >= 0"};
  }
  if (options.name == "cpu") return std::unique_ptr<backend>(std::make_unique<cpu_backend>(options.threads));
  if (options.name == "cuda") {
#ifdef BANYAN_NN_HAVE_CUDA
    const plugin& p = cuda_plugin();
    if (p.entry == nullptr) return error{errc::unsupported, "backend `cuda`: " + p.error};
    cuda_plugin_result made;
    p.entry(options.device, &made);
    switch (made.code) {
      case cuda_plugin_result::status::ok: return std::move(made.made);
      case cuda_plugin_result::status::unsupported: return error{errc::unsupported, "backend `cuda`: " + made.message};
      case cuda_plugin_result::status::invalid_argument:
        return error{errc::invalid_argument, "backend `cuda`: " + made.message};
    }
    return error{errc::unsupported, "backend `cuda`: the plugin returned an unknown status"};
#else
    return error{errc::unsupported,
                 "backend `cuda`: this build has no CUDA (configure with nvcc and BANYAN_ENABLE_CUDA)"};
#endif
  }
  return error{errc::invalid_argument, "backend `" + options.name + "`: unknown (expected `cpu` or `cuda`)"};
}

}  // namespace banyan::nn
