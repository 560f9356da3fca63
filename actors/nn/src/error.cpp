#include "banyan/nn/error.hpp"

namespace banyan::nn {

const char* to_string(errc code) {
  switch (code) {
    case errc::invalid_argument: return "invalid argument";
    case errc::io: return "i/o error";
    case errc::corrupt: return "corrupt";
    case errc::mismatch: return "mismatch";
    case errc::unsupported: return "unsupported";
    case errc::timeout: return "timeout";
  }
  return "unknown";
}

}  // namespace banyan::nn
