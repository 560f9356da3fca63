#include "banyan/runtime/error.hpp"

namespace banyan::runtime {

const char* to_string(errc code) {
  switch (code) {
    case errc::invalid_argument: return "invalid argument";
    case errc::io: return "i/o error";
    case errc::timeout: return "timeout";
  }
  return "unknown";
}

}  // namespace banyan::runtime
