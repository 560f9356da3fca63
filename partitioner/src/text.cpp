// Text helpers shared by the model, its file formats and DOT output.
#include "detail.hpp"

#include <fstream>
#include <sstream>

namespace banyan::partitioner::detail {

result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return error{errc::io, path + ": cannot open for reading"};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string format_number(double x, int digits) {
  std::ostringstream s;
  s.precision(digits);
  s << x;
  return s.str();
}

}  // namespace banyan::partitioner::detail
