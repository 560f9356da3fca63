#include "banyan/nn/checkpoint.hpp"

#include <zlib.h>

#include <cstring>
#include <fstream>
#include <sstream>

namespace banyan::nn {

namespace fs = std::filesystem;

namespace {

constexpr char magic[8] = {'B', 'N', 'Y', 'N', 'C', 'K', 'P', 'T'};
constexpr std::size_t fixed_header = 56;     // version 2
constexpr std::size_t fixed_header_v1 = 48;  // version 1: no vocabulary length, no reserved word
constexpr std::size_t max_model_name = 64;
constexpr std::size_t max_vocabulary = 65536;

template <class T>
void put(std::string& out, T v) {
  static_assert(std::is_trivially_copyable_v<T>);
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // x86_64 and aarch64 are little-endian, as the format says
  out.append(b, sizeof(T));
}

template <class T>
T get(const std::string& in, std::size_t at) {
  T v;
  std::memcpy(&v, in.data() + at, sizeof(T));
  return v;
}

std::uint32_t crc(const char* p, std::size_t n) {
  uLong c = crc32(0L, Z_NULL, 0);
  while (n > 0) {
    const auto chunk = static_cast<uInt>(n > (1u << 30) ? (1u << 30) : n);
    c = crc32(c, reinterpret_cast<const Bytef*>(p), chunk);
    p += chunk;
    n -= chunk;
  }
  return static_cast<std::uint32_t>(c);
}

std::string hex(std::uint32_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

}  // namespace

result<void> save_checkpoint(const fs::path& file, const checkpoint& ck) {
  const std::string name = "checkpoint `" + file.string() + "`";
  if (ck.m.size() != ck.params.size() || ck.v.size() != ck.params.size()) {
    return error{errc::invalid_argument, name + ": params, m and v differ in size"};
  }
  if (ck.model.size() > max_model_name) return error{errc::invalid_argument, name + ": model name too long"};
  if (ck.vocabulary.size() > max_vocabulary) return error{errc::invalid_argument, name + ": vocabulary too long"};
  const std::size_t P = ck.params.size();
  const std::size_t header = fixed_header + 8 * ck.config.size() + ck.model.size() + ck.vocabulary.size();
  std::string out;
  out.reserve(header + 12 * P + 4);
  out.append(magic, 8);
  put<std::uint32_t>(out, checkpoint_version);
  put<std::uint32_t>(out, static_cast<std::uint32_t>(header));
  put<std::uint64_t>(out, ck.step);
  put<std::uint64_t>(out, P);
  put<std::uint32_t>(out, static_cast<std::uint32_t>(ck.config.size()));
  put<std::uint32_t>(out, static_cast<std::uint32_t>(ck.model.size()));
  put<std::uint64_t>(out, 12 * static_cast<std::uint64_t>(P));
  put<std::uint32_t>(out, static_cast<std::uint32_t>(ck.vocabulary.size()));
  put<std::uint32_t>(out, 0);
  for (auto c : ck.config) put<std::int64_t>(out, c);
  out += ck.model;
  out.append(reinterpret_cast<const char*>(ck.vocabulary.data()), ck.vocabulary.size());
  for (const auto* vec : {&ck.params, &ck.m, &ck.v}) {
    out.append(reinterpret_cast<const char*>(vec->data()), vec->size() * sizeof(float));
  }
  put<std::uint32_t>(out, crc(out.data(), out.size()));

  fs::path tmp = file;
  tmp += ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return error{errc::io, name + ": cannot open `" + tmp.string() + "` for writing"};
    f.write(out.data(), static_cast<std::streamsize>(out.size()));
    f.flush();
    if (!f) return error{errc::io, name + ": write failed (disk full?)"};
  }
  std::error_code ec;
  fs::rename(tmp, file, ec);
  if (ec) return error{errc::io, name + ": cannot rename from `" + tmp.string() + "`: " + ec.message()};
  return {};
}

result<checkpoint> load_checkpoint(const fs::path& file) {
  const std::string name = "checkpoint `" + file.string() + "`";
  std::error_code ec;
  const auto status = fs::status(file, ec);
  if (fs::is_directory(status)) return error{errc::io, name + ": is a directory, not a checkpoint file"};
  // Reads with read() and checks the stream state: no exceptions, whatever the path is.
  std::ifstream f(file, std::ios::binary);
  if (!f || !fs::is_regular_file(status)) return error{errc::io, name + ": cannot open (missing or unreadable)"};
  const auto size = fs::file_size(file, ec);
  if (ec) return error{errc::io, name + ": cannot read its size: " + ec.message()};
  std::string in(size, '\0');
  if (!f.read(in.data(), static_cast<std::streamsize>(size))) return error{errc::io, name + ": read failed"};
  if (in.size() < fixed_header_v1 + 4) {
    return error{errc::corrupt, name + ": " + std::to_string(in.size()) + " bytes, shorter than the " +
                                    std::to_string(fixed_header_v1 + 4) + "-byte minimum (truncated?)"};
  }
  if (std::memcmp(in.data(), magic, 8) != 0)
    return error{errc::corrupt, name + ": bad magic (not a banyan checkpoint)"};
  const auto version = get<std::uint32_t>(in, 8);
  if (version != 1 && version != checkpoint_version) {
    return error{errc::unsupported, name + ": version " + std::to_string(version) +
                                        ", this build reads versions 1 and " + std::to_string(checkpoint_version)};
  }
  const std::size_t fixed = version == 1 ? fixed_header_v1 : fixed_header;
  if (in.size() < fixed + 4) {
    return error{errc::corrupt, name + ": " + std::to_string(in.size()) + " bytes, shorter than the " +
                                    std::to_string(fixed + 4) + "-byte minimum (truncated?)"};
  }
  const auto header = get<std::uint32_t>(in, 12);
  const auto step = get<std::uint64_t>(in, 16);
  const auto P = get<std::uint64_t>(in, 24);
  const auto K = get<std::uint32_t>(in, 32);
  const auto M = get<std::uint32_t>(in, 36);
  const auto payload = get<std::uint64_t>(in, 40);
  const std::uint32_t D = version == 1 ? 0 : get<std::uint32_t>(in, 48);
  if (M > max_model_name || K > 1024 || D > max_vocabulary || header != fixed + 8ull * K + M + D) {
    return error{errc::corrupt, name + ": inconsistent header (header bytes " + std::to_string(header) +
                                    ", config length " + std::to_string(K) + ", name length " + std::to_string(M) +
                                    ", vocabulary length " + std::to_string(D) + ")"};
  }
  if (P > (1ull << 40) || payload != 12 * P) {
    return error{errc::corrupt, name + ": payload bytes " + std::to_string(payload) + " disagree with " +
                                    std::to_string(P) + " parameters"};
  }
  const std::uint64_t expected = header + payload + 4;
  if (in.size() != expected) {
    return error{errc::corrupt, name + ": " + std::to_string(in.size()) + " bytes, header promises " +
                                    std::to_string(expected) +
                                    (in.size() < expected ? " (truncated)" : " (trailing bytes)")};
  }
  const auto stored = get<std::uint32_t>(in, in.size() - 4);
  const auto computed = crc(in.data(), in.size() - 4);
  if (stored != computed) {
    return error{errc::corrupt,
                 name + ": checksum mismatch (stored " + hex(stored) + ", computed " + hex(computed) + ")"};
  }
  checkpoint ck;
  ck.step = step;
  for (std::uint32_t i = 0; i < K; ++i) ck.config.push_back(get<std::int64_t>(in, fixed + 8ull * i));
  ck.model = in.substr(fixed + 8ull * K, M);
  const char* vocab = in.data() + fixed + 8ull * K + M;
  ck.vocabulary.assign(vocab, vocab + D);
  std::size_t at = header;
  for (auto* vec : {&ck.params, &ck.m, &ck.v}) {
    vec->resize(P);
    std::memcpy(vec->data(), in.data() + at, P * sizeof(float));
    at += P * sizeof(float);
  }
  return ck;
}

result<void> check_matches(const checkpoint& ck, const fs::path& file, const checkpoint_identity& expected) {
  const std::string name = "checkpoint `" + file.string() + "`";
  if (ck.model != expected.model) {
    return error{errc::mismatch, name + ": holds a `" + ck.model + "` model, expected `" + expected.model + "`"};
  }
  const auto& config = expected.config;
  if (ck.config.size() != config.size()) {
    return error{errc::mismatch, name + ": config has " + std::to_string(ck.config.size()) + " values, expected " +
                                     std::to_string(config.size())};
  }
  for (std::size_t i = 0; i < config.size(); ++i) {
    if (ck.config[i] != config[i]) {
      const std::string field =
          i < expected.config_fields.size() ? expected.config_fields[i] : "config value " + std::to_string(i);
      return error{errc::mismatch, name + ": " + field + " is " + std::to_string(ck.config[i]) + ", this model has " +
                                       std::to_string(config[i])};
    }
  }
  if (!ck.vocabulary.empty() && ck.vocabulary != expected.vocabulary) {
    if (ck.vocabulary.size() != expected.vocabulary.size()) {
      return error{errc::mismatch, name + ": trained on a vocabulary of " + std::to_string(ck.vocabulary.size()) +
                                       " bytes, this data has " + std::to_string(expected.vocabulary.size())};
    }
    std::size_t id = 0;
    while (ck.vocabulary[id] == expected.vocabulary[id]) ++id;
    return error{errc::mismatch, name + ": trained on another vocabulary: token " + std::to_string(id) + " is byte " +
                                     hex(ck.vocabulary[id]) + " there, " + hex(expected.vocabulary[id]) +
                                     " in this data (another corpus?)"};
  }
  if (ck.params.size() != expected.stored_floats) {
    return error{errc::mismatch, name + ": " + std::to_string(ck.params.size()) + " stored floats, model has " +
                                     std::to_string(expected.stored_floats)};
  }
  return {};
}

}  // namespace banyan::nn
