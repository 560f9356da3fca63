// Text helpers shared by the model, its file formats and DOT output.
#include "detail.hpp"

#include <cerrno>
#include <cstring>
#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace banyan::partitioner::detail {

result<std::string> read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return error{errc::io, path + ": cannot open for reading (" + std::strerror(errno) + ")"};
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return error{errc::io, path + ": is a directory"};
  }
  std::string text;
  if (S_ISREG(st.st_mode)) text.reserve(static_cast<std::size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got == 0) break;
    if (got < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return error{errc::io, path + ": cannot read (" + std::strerror(err) + ")"};
    }
    text.append(buf, static_cast<std::size_t>(got));
  }
  ::close(fd);
  return text;
}

std::string format_number(double x, int digits) {
  std::ostringstream s;
  s.precision(digits);
  s << x;
  return s.str();
}

std::pair<std::string, std::string> format_apart(double a, double b, int digits) {
  for (int d = digits;; ++d) {
    std::string x = format_number(a, d), y = format_number(b, d);
    if (x != y || a == b || d >= 17) return {std::move(x), std::move(y)};
  }
}

}  // namespace banyan::partitioner::detail
