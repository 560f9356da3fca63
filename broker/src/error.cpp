#include "banyan/broker/error.hpp"

namespace banyan::broker {

const char* to_string(errc code) {
  switch (code) {
    case errc::invalid_topic: return "invalid topic";
    case errc::invalid_scope: return "invalid scope";
    case errc::no_such_component: return "no such component";
    case errc::invalid_argument: return "invalid argument";
    case errc::io: return "i/o error";
    case errc::invalid_profile: return "invalid profile";
  }
  return "unknown";
}

}  // namespace banyan::broker
