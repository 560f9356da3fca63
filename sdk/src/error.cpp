#include "banyan/sdk/error.hpp"

namespace banyan::sdk {

const char* to_string(errc code) {
  switch (code) {
    case errc::no_such_component: return "no such component";
    case errc::invalid_payload: return "invalid payload";
    case errc::timeout: return "timeout";
    case errc::request_failed: return "request failed";
    case errc::invalid_argument: return "invalid argument";
    case errc::io: return "i/o error";
  }
  return "unknown";
}

}  // namespace banyan::sdk
