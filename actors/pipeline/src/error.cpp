#include "banyan/pipeline/error.hpp"

namespace banyan::pipeline {

const char* to_string(errc code) {
  switch (code) {
    case errc::parse: return "parse error";
    case errc::invalid: return "invalid input";
    case errc::unsupported: return "unsupported";
    case errc::infeasible: return "infeasible";
    case errc::deadlock: return "deadlock";
    case errc::io: return "i/o error";
  }
  return "unknown";
}

}  // namespace banyan::pipeline
