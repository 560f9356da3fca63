// nn's error codes. Errors a caller can act on come back as banyan::result / banyan::error values
// (banyan/base/result.hpp); every message names the input and what is wrong with it
// ("checkpoint `run.ckpt`: checksum mismatch (stored 0x1234, computed 0x5678)").
// Broken invariants inside the engine (a shape mismatch between our own layers) are assertions, not
// errors: they are bugs, never reported here.
#pragma once

#include "banyan/base/result.hpp"

namespace banyan::nn {

enum class errc {
  invalid_argument,  // a config or option out of range
  io,                // a file is missing or cannot be read or written
  corrupt,           // a file's bytes are not what its format says (magic, size, checksum)
  mismatch,          // a well-formed file made for another model or config
  unsupported,       // a valid request this build or machine cannot serve (no CUDA, no GPU)
  timeout,           // a shared resource did not come free in time (host memory a store did not flush)
};

// A short description ("invalid argument", "i/o error").
const char* to_string(errc code);

}  // namespace banyan::nn

BANYAN_ERROR_ENUM(banyan::nn::errc, "nn");
