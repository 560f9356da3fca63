#include "banyan/store/error.hpp"

namespace banyan::store {

const char* to_string(errc code) {
  switch (code) {
    case errc::invalid_argument: return "invalid argument";
    case errc::io: return "i/o error";
    case errc::no_space: return "no space left";
    case errc::corrupt: return "corrupt transaction file";
    case errc::timeout: return "timeout";
    case errc::closed: return "store closed";
  }
  return "unknown store error";
}

}  // namespace banyan::store
