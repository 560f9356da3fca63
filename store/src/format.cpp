#include "format.hpp"

#include "banyan/store/error.hpp"

#include <array>
#include <cstdio>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace banyan::store::format {
namespace {

constexpr std::uint32_t castagnoli = 0x82F63B78;

std::array<std::uint32_t, 256> make_table() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ castagnoli : c >> 1;
    t[i] = c;
  }
  return t;
}

std::uint32_t crc_table(const unsigned char* p, std::size_t n, std::uint32_t c) {
  static const auto table = make_table();
  for (std::size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) std::uint32_t crc_sse42(const unsigned char* p, std::size_t n, std::uint32_t c) {
  std::uint64_t c64 = c;
  while (n >= 8) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    c64 = _mm_crc32_u64(c64, v);
    p += 8;
    n -= 8;
  }
  c = static_cast<std::uint32_t>(c64);
  while (n > 0) {
    c = _mm_crc32_u8(c, *p++);
    --n;
  }
  return c;
}
const bool have_sse42 = __builtin_cpu_supports("sse4.2");
#endif

error corrupt(const std::string& path, const std::string& what) {
  return error{errc::corrupt, "`" + path + "`: " + what};
}

struct reader {
  std::span<const std::byte> bytes;
  std::uint64_t at = 0;
  bool need(std::uint64_t n) const { return n <= bytes.size() - at; }
  std::uint32_t u32() {
    std::uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | std::to_integer<std::uint32_t>(bytes[at + i]);
    at += 4;
    return v;
  }
  std::uint64_t u64() {
    std::uint64_t lo = u32();
    std::uint64_t hi = u32();
    return lo | (hi << 32);
  }
};

}  // namespace

std::uint32_t crc32c(std::span<const std::byte> bytes, std::uint32_t crc) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  std::uint32_t c = ~crc;
#if defined(__x86_64__)
  if (have_sse42) return ~crc_sse42(p, bytes.size(), c);
#endif
  return ~crc_table(p, bytes.size(), c);
}

void put_u32(std::vector<std::byte>& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::byte>(v >> (8 * i)));
}
void put_u64(std::vector<std::byte>& out, std::uint64_t v) {
  put_u32(out, static_cast<std::uint32_t>(v));
  put_u32(out, static_cast<std::uint32_t>(v >> 32));
}

std::vector<std::byte> header(std::uint64_t txn, std::uint32_t blob_count) {
  std::vector<std::byte> out;
  put_u32(out, header_magic);
  put_u32(out, version);
  put_u64(out, txn);
  put_u32(out, blob_count);
  return out;
}

std::vector<std::byte> blob_header(const std::string& name, std::uint64_t size, std::uint32_t data_crc) {
  std::vector<std::byte> out;
  put_u32(out, static_cast<std::uint32_t>(name.size()));
  for (char c : name) out.push_back(static_cast<std::byte>(c));
  put_u64(out, size);
  put_u32(out, data_crc);
  return out;
}

std::vector<std::byte> footer(std::uint32_t file_crc) {
  std::vector<std::byte> out;
  put_u32(out, footer_magic);
  put_u32(out, file_crc);
  return out;
}

result<std::vector<blob_entry>> parse(std::span<const std::byte> file, std::uint64_t expected_txn,
                                      const std::string& path) {
  constexpr std::uint64_t header_size = 20, footer_size = 8;
  if (file.size() < header_size + footer_size)
    return corrupt(path, "truncated (" + std::to_string(file.size()) + " bytes)");
  reader r{file};
  if (r.u32() != header_magic) return corrupt(path, "not a transaction file (bad magic)");
  if (auto v = r.u32(); v != version) return corrupt(path, "unknown format version " + std::to_string(v));
  if (auto id = r.u64(); id != expected_txn)
    return corrupt(path, "holds transaction " + std::to_string(id) + ", not " + std::to_string(expected_txn));
  const std::uint32_t count = r.u32();
  const auto body = file.first(file.size() - footer_size);
  reader f{file, file.size() - footer_size};
  if (f.u32() != footer_magic) return corrupt(path, "incomplete (no footer)");
  const std::uint32_t want = f.u32();
  std::uint32_t crc = crc32c(body.first(header_size));
  std::vector<blob_entry> out;
  reader b{body, header_size};
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::uint64_t start = b.at;
    if (!b.need(4)) return corrupt(path, "blob " + std::to_string(i) + " truncated");
    const std::uint32_t len = b.u32();
    if (!b.need(len + 12ull)) return corrupt(path, "blob " + std::to_string(i) + " truncated");
    blob_entry e;
    e.name.assign(reinterpret_cast<const char*>(body.data() + b.at), len);
    b.at += len;
    e.size = b.u64();
    e.crc = b.u32();
    e.offset = b.at;
    crc = crc32c(body.subspan(start, b.at - start), crc);
    if (!b.need(e.size)) return corrupt(path, "blob `" + e.name + "` truncated");
    if (crc32c(body.subspan(e.offset, e.size)) != e.crc)
      return corrupt(path, "blob `" + e.name + "`: checksum mismatch");
    b.at += e.size;
    out.push_back(std::move(e));
  }
  if (crc != want) return corrupt(path, "checksum mismatch");
  if (b.at != body.size()) return corrupt(path, "trailing bytes after the last blob");
  return out;
}

std::string file_name(std::uint64_t txn) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "txn-%020llu.dat", static_cast<unsigned long long>(txn));
  return buf;
}
std::string temp_name(std::uint64_t txn) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "txn-%020llu.tmp", static_cast<unsigned long long>(txn));
  return buf;
}
std::uint64_t txn_of(const std::string& name) {
  if (name.size() != 28 || name.compare(0, 4, "txn-") != 0 || name.compare(24, 4, ".dat") != 0) return 0;
  std::uint64_t v = 0;
  for (std::size_t i = 4; i < 24; ++i) {
    if (name[i] < '0' || name[i] > '9') return 0;
    v = v * 10 + static_cast<std::uint64_t>(name[i] - '0');
  }
  return v;
}
bool is_temp(const std::string& name) {
  return name.size() == 28 && name.compare(0, 4, "txn-") == 0 && name.compare(24, 4, ".tmp") == 0;
}

}  // namespace banyan::store::format
