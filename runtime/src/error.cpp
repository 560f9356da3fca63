#include "banyan/runtime/error.hpp"

namespace banyan::runtime {

const char* to_string(errc code) {
  switch (code) {
    case errc::invalid_argument: return "invalid argument";
    case errc::io: return "i/o error";
    case errc::timeout: return "timeout";
    case errc::payload_too_large: return "payload too large";
    case errc::peer_lost: return "peer lost";
    case errc::incompatible_peer: return "incompatible peer";
  }
  return "unknown";
}

}  // namespace banyan::runtime
