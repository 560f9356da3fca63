// The real file layer: open/write/fsync/rename/unlink and fsync of the folder.
#include "banyan/store/file_system.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace banyan::store {
namespace {

error os_error(const std::string& what, const std::string& path, int err) {
  const errc code = (err == ENOSPC || err == EDQUOT) ? errc::no_space : errc::io;
  return error{code, "cannot " + what + " `" + path + "`: " + std::strerror(err)};
}

class posix_file : public writable_file {
 public:
  posix_file(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~posix_file() override {
    if (fd_ >= 0) ::close(fd_);
  }
  result<void> append(std::span<const std::byte> bytes) override {
    const auto* p = reinterpret_cast<const char*>(bytes.data());
    std::size_t left = bytes.size();
    while (left > 0) {
      const ssize_t n = ::write(fd_, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        return os_error("write", path_, errno);
      }
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    return {};
  }
  result<void> sync() override {
    if (::fdatasync(fd_) != 0) return os_error("fsync", path_, errno);
    // The bytes are on disk: their page-cache copy only crowds out the trainer's memory (a checkpoint
    // every step would add its size to the cache every step). A hint; recovery reads the file again.
    (void)::posix_fadvise(fd_, 0, 0, POSIX_FADV_DONTNEED);
    return {};
  }
  result<void> close() override {
    const int fd = fd_;
    fd_ = -1;
    if (fd >= 0 && ::close(fd) != 0) return os_error("close", path_, errno);
    return {};
  }

 private:
  int fd_;
  std::string path_;
};

class posix_fs : public file_system {
 public:
  result<std::unique_ptr<writable_file>> create(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return os_error("create", path, errno);
    return std::unique_ptr<writable_file>(std::make_unique<posix_file>(fd, path));
  }
  result<void> rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return os_error("rename to `" + to + "`", from, errno);
    return {};
  }
  result<void> remove(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return os_error("remove", path, errno);
    return {};
  }
  result<void> sync_dir(const std::string& dir) override {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return os_error("open folder", dir, errno);
    const int rc = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    if (rc != 0) return os_error("fsync folder", dir, err);
    return {};
  }
  result<void> make_dirs(const std::string& dir) override {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return os_error("create folder", dir, ec.value());
    return {};
  }
  result<std::vector<std::string>> list(const std::string& dir) override {
    std::error_code ec;
    std::vector<std::string> out;
    std::filesystem::directory_iterator it(dir, ec);
    if (ec) return os_error("list", dir, ec.value());
    for (const auto& entry : it) {
      if (entry.is_regular_file(ec)) out.push_back(entry.path().filename().string());
    }
    return out;
  }
  result<std::vector<std::byte>> read(const std::string& path) override {
    struct stat st {};
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return os_error("open", path, errno);
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      return os_error("stat", path, err);
    }
    auto out = read_at(fd, path, 0, static_cast<std::uint64_t>(st.st_size));
    ::close(fd);
    return out;
  }
  result<std::vector<std::byte>> read(const std::string& path, std::uint64_t offset, std::uint64_t size) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return os_error("open", path, errno);
    auto out = read_at(fd, path, offset, size);
    ::close(fd);
    return out;
  }

 private:
  static result<std::vector<std::byte>> read_at(int fd, const std::string& path, std::uint64_t offset,
                                                std::uint64_t size) {
    std::vector<std::byte> out(size);
    std::uint64_t done = 0;
    while (done < size) {
      const ssize_t n = ::pread(fd, out.data() + done, size - done, static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        return os_error("read", path, errno);
      }
      if (n == 0) return error{errc::corrupt, "`" + path + "` is shorter than expected"};
      done += static_cast<std::uint64_t>(n);
    }
    return out;
  }
};

}  // namespace

std::shared_ptr<file_system> posix_file_system() {
  static const auto fs = std::make_shared<posix_fs>();
  return fs;
}

}  // namespace banyan::store
