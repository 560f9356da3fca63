#include "banyan/cpu/error.hpp"

namespace banyan::cpu {

const char* to_string(errc code) {
  switch (code) {
    case errc::invalid_argument: return "invalid argument";
    case errc::topology: return "topology";
    case errc::unsupported: return "unsupported";
    case errc::worker: return "worker";
  }
  return "unknown";
}

}  // namespace banyan::cpu
