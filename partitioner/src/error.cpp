#include "banyan/partitioner/error.hpp"

namespace banyan::partitioner {

const char* to_string(errc code) {
  switch (code) {
    case errc::io: return "i/o error";
    case errc::parse: return "parse error";
    case errc::invalid: return "invalid input";
    case errc::not_a_tree: return "not a tree";
    case errc::over_capacity: return "over capacity";
    case errc::unknown_algorithm: return "unknown algorithm";
  }
  return "unknown";
}

}  // namespace banyan::partitioner
