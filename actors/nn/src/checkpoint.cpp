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
constexpr std::uint32_t checksum_left_to_container = 1;  // the flags word's bit: no CRC-32 to check

// Appends into a buffer reserved once: the encoded checkpoint is built with one copy of the tensors
// (no zero-filling first).
class writer {
 public:
  explicit writer(std::size_t size) { out_.reserve(size); }
  void bytes(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  template <class T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes(&v, sizeof(T));  // x86_64 and aarch64 are little-endian, as the format says
  }
  const std::byte* data() const { return out_.data(); }
  std::size_t size() const { return out_.size(); }
  std::vector<std::byte> take() && { return std::move(out_); }

 private:
  std::vector<std::byte> out_;
};

template <class T>
T get(std::span<const std::byte> in, std::size_t at) {
  T v;
  std::memcpy(&v, in.data() + at, sizeof(T));
  return v;
}

std::uint32_t crc(const std::byte* p, std::size_t n) {
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

result<std::vector<std::byte>> encode_checkpoint_header(const checkpoint& ck, std::size_t floats, bool checksum,
                                                        std::string_view name) {
  if (ck.model.size() > max_model_name)
    return error{errc::invalid_argument, std::string(name) + ": model name too long"};
  if (ck.vocabulary.size() > max_vocabulary) {
    return error{errc::invalid_argument, std::string(name) + ": vocabulary too long"};
  }
  const std::size_t header = fixed_header + 8 * ck.config.size() + ck.model.size() + ck.vocabulary.size();
  writer out(header);
  out.bytes(magic, 8);
  out.put<std::uint32_t>(checkpoint_version);
  out.put<std::uint32_t>(static_cast<std::uint32_t>(header));
  out.put<std::uint64_t>(ck.step);
  out.put<std::uint64_t>(floats);
  out.put<std::uint32_t>(static_cast<std::uint32_t>(ck.config.size()));
  out.put<std::uint32_t>(static_cast<std::uint32_t>(ck.model.size()));
  out.put<std::uint64_t>(12 * static_cast<std::uint64_t>(floats));
  out.put<std::uint32_t>(static_cast<std::uint32_t>(ck.vocabulary.size()));
  out.put<std::uint32_t>(checksum ? 0 : checksum_left_to_container);
  for (auto c : ck.config) out.put<std::int64_t>(c);
  out.bytes(ck.model.data(), ck.model.size());
  out.bytes(ck.vocabulary.data(), ck.vocabulary.size());
  return std::move(out).take();
}

result<std::vector<std::byte>> encode_checkpoint(const checkpoint& ck, std::string_view name, bool checksum) {
  if (ck.m.size() != ck.params.size() || ck.v.size() != ck.params.size()) {
    return error{errc::invalid_argument, std::string(name) + ": params, m and v differ in size"};
  }
  const std::size_t P = ck.params.size();
  auto header = encode_checkpoint_header(ck, P, checksum, name);
  if (!header) return header;
  writer out(header->size() + 12 * P + 4);
  out.bytes(header->data(), header->size());
  for (const auto* vec : {&ck.params, &ck.m, &ck.v}) out.bytes(vec->data(), vec->size() * sizeof(float));
  out.put<std::uint32_t>(checksum ? crc(out.data(), out.size()) : 0);
  return std::move(out).take();
}

result<void> save_checkpoint(const fs::path& file, const checkpoint& ck) {
  const std::string name = "checkpoint `" + file.string() + "`";
  auto out = encode_checkpoint(ck, name);
  if (!out) return std::move(out).error();
  fs::path tmp = file;
  tmp += ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return error{errc::io, name + ": cannot open `" + tmp.string() + "` for writing"};
    f.write(reinterpret_cast<const char*>(out->data()), static_cast<std::streamsize>(out->size()));
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
  std::vector<std::byte> in(size);
  if (!f.read(reinterpret_cast<char*>(in.data()), static_cast<std::streamsize>(size))) {
    return error{errc::io, name + ": read failed"};
  }
  return decode_checkpoint(in, name, true);
}

result<checkpoint> decode_checkpoint(std::span<const std::byte> in, std::string_view label, bool require_checksum) {
  const std::string name(label);
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
  const std::uint32_t flags = version == 1 ? 0 : get<std::uint32_t>(in, 52);
  if ((flags & checksum_left_to_container) && require_checksum)
    return error{errc::corrupt, name + ": has no checksum (a checkpoint kept in a store, not a file)"};
  const auto stored = get<std::uint32_t>(in, in.size() - 4);
  const auto computed = (flags & checksum_left_to_container) ? stored : crc(in.data(), in.size() - 4);
  if (stored != computed) {
    return error{errc::corrupt,
                 name + ": checksum mismatch (stored " + hex(stored) + ", computed " + hex(computed) + ")"};
  }
  checkpoint ck;
  ck.step = step;
  for (std::uint32_t i = 0; i < K; ++i) ck.config.push_back(get<std::int64_t>(in, fixed + 8ull * i));
  const auto* text = reinterpret_cast<const char*>(in.data());
  ck.model.assign(text + fixed + 8ull * K, M);
  const auto* vocab = reinterpret_cast<const unsigned char*>(text + fixed + 8ull * K + M);
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
