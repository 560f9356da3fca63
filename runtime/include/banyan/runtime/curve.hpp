// CURVE keys (Curve25519, Z85 text of 40 characters) for authenticated, encrypted links.
// `banyan keygen` writes them; the deployment names each node's key files.
#pragma once

#include "banyan/runtime/error.hpp"

#include <string>

namespace banyan::runtime {

struct curve_keypair {
  std::string public_key;  // Z85, 40 characters; share it with peers
  std::string secret_key;  // Z85, 40 characters; keep it private (key files are written 0600)
};

// A fresh key pair from the OS's random source. Fails only when ZeroMQ was built without CURVE.
result<curve_keypair> generate_curve_keypair();

// True when `key` is 40 characters of the Z85 alphabet.
bool is_z85_key(const std::string& key);

// Writes `<base>.key` (secret, mode 0600) and `<base>.pub` (public), one key and a newline each.
// Refuses to overwrite existing files unless `overwrite`.
result<void> write_key_files(const std::string& base, const curve_keypair& keys, bool overwrite = false);

// Reads one key from a `.key` or `.pub` file; the error names the file and what is wrong with it.
// A `.key` file that its group or other users can read is logged as a warning (banyan::log).
result<std::string> read_key_file(const std::string& path);

}  // namespace banyan::runtime
