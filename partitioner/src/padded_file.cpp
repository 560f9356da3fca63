#include "padded_file.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace banyan::partitioner::detail {
namespace {

std::size_t page_size() {
  static const std::size_t p = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return p;
}
std::size_t round_up(std::size_t x, std::size_t to) { return (x + to - 1) / to * to; }

}  // namespace

result<padded_file> padded_file::map(const std::string& path, std::size_t padding) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return error{errc::io, path + ": cannot open for reading (" + std::strerror(errno) + ")"};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return error{errc::io, path + ": not a regular file"};
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  // Zero pages first, then the file over their start: the bytes after the end of the file read as
  // zero whether they fall in the file's last page or in the anonymous pages after it.
  const std::size_t mapped = round_up(size + padding, page_size());
  void* base = ::mmap(nullptr, mapped, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    ::close(fd);
    return error{errc::io, path + ": cannot map (" + std::strerror(errno) + ")"};
  }
  if (size > 0 && ::mmap(base, size, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED) {
    const int err = errno;
    ::munmap(base, mapped);
    ::close(fd);
    return error{errc::io, path + ": cannot map (" + std::strerror(err) + ")"};
  }
  ::close(fd);  // the mapping keeps the file
  ::madvise(base, mapped, MADV_SEQUENTIAL);
  return padded_file(base, size, mapped);
}

padded_file::~padded_file() {
  if (base_) ::munmap(base_, mapped_);
}

void padded_file::release_before(const char* p) {
  const std::size_t step = 8u << 20;
  const auto at = static_cast<std::size_t>(p - data());
  const std::size_t upto = at / page_size() * page_size();
  if (upto < released_ + step || upto > size_) return;
  ::madvise(static_cast<char*>(base_) + released_, upto - released_, MADV_DONTNEED);
  released_ = upto;
}

}  // namespace banyan::partitioner::detail
