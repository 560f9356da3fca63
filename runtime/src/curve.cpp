#include "banyan/runtime/curve.hpp"

#include "banyan/base/log.hpp"

#include <zmq.h>

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace banyan::runtime {

result<curve_keypair> generate_curve_keypair() {
  char pub[41] = {}, sec[41] = {};
  if (zmq_curve_keypair(pub, sec) != 0) {
    return error{errc::io, std::string("cannot make a CURVE key pair: ") + zmq_strerror(zmq_errno())};
  }
  return curve_keypair{pub, sec};
}

bool is_z85_key(const std::string& key) {
  static const std::string alphabet =
      "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
  return key.size() == 40 &&
         std::all_of(key.begin(), key.end(), [](char c) { return alphabet.find(c) != std::string::npos; });
}

namespace {

result<void> write_one(const std::string& path, const std::string& key, mode_t mode, bool overwrite) {
  struct stat st {};
  if (!overwrite && ::stat(path.c_str(), &st) == 0) {
    return error{errc::io, path + ": exists (pass --force to overwrite)"};
  }
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return error{errc::io, path + ": cannot open for writing"};
  ::chmod(path.c_str(), mode);  // before the key is written, so a secret is never world-readable
  const bool ok = std::fprintf(f, "%s\n", key.c_str()) > 0;
  if (std::fclose(f) != 0 || !ok) return error{errc::io, path + ": write failed"};
  return {};
}

}  // namespace

result<void> write_key_files(const std::string& base, const curve_keypair& keys, bool overwrite) {
  if (auto r = write_one(base + ".key", keys.secret_key, 0600, overwrite); !r) return r;
  return write_one(base + ".pub", keys.public_key, 0644, overwrite);
}

result<std::string> read_key_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) return error{errc::io, path + ": cannot open"};
  struct stat st {};
  const bool secret = path.size() >= 4 && path.compare(path.size() - 4, 4, ".key") == 0;
  if (secret && ::stat(path.c_str(), &st) == 0 && (st.st_mode & (S_IRGRP | S_IROTH)) != 0) {
    banyan::log::warning(
        "runtime", path + ": secret key readable by " +
                       ((st.st_mode & S_IROTH) ? std::string("every user") : std::string("its group")) + " (mode " +
                       std::to_string((st.st_mode >> 6) & 7) + std::to_string((st.st_mode >> 3) & 7) +
                       std::to_string(st.st_mode & 7) + "); run `chmod 600 " + path + "`");
  }
  std::string key;
  std::getline(f, key);
  while (!key.empty() && (key.back() == '\r' || key.back() == ' ')) key.pop_back();
  if (!is_z85_key(key)) {
    return error{errc::invalid_argument, path + " line 1: not a CURVE key (expected 40 Z85 characters, got " +
                                             std::to_string(key.size()) + " characters)"};
  }
  return key;
}

}  // namespace banyan::runtime
