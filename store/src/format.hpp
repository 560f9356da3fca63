// A transaction file's bytes (little endian), and CRC32C.
//
//   header  u32 magic "BNYT"  u32 version (1)  u64 txn id  u32 blob count
//   blob    u32 name length, name, u64 size, u32 crc32c(data), data      (blob count times)
//   footer  u32 magic "BNYE"  u32 crc32c(the header and every blob's bytes before its data)
//
// A file is valid only whole: each blob's data is covered by its own checksum, and the footer's
// checksum covers the header, the names, the sizes and those checksums, so the data is read once
// to write it (one checksum pass) and read() can check one blob without reading the file again.
#pragma once

#include "banyan/base/result.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace banyan::store::format {

// CRC32C (Castagnoli), chained: crc32c(b, crc32c(a)) == crc32c(a + b). SSE4.2 where the CPU has it.
std::uint32_t crc32c(std::span<const std::byte> bytes, std::uint32_t crc = 0);

inline constexpr std::uint32_t header_magic = 0x54594e42;  // "BNYT"
inline constexpr std::uint32_t footer_magic = 0x45594e42;  // "BNYE"
inline constexpr std::uint32_t version = 1;

// Little-endian appends.
void put_u32(std::vector<std::byte>& out, std::uint32_t v);
void put_u64(std::vector<std::byte>& out, std::uint64_t v);

std::vector<std::byte> header(std::uint64_t txn, std::uint32_t blob_count);
// The bytes before a blob's data.
std::vector<std::byte> blob_header(const std::string& name, std::uint64_t size, std::uint32_t data_crc);
std::vector<std::byte> footer(std::uint32_t file_crc);

struct blob_entry {
  std::string name;
  std::uint64_t offset = 0;  // of the data in the file
  std::uint64_t size = 0;
  std::uint32_t crc = 0;
};

// Parses and checks a whole file; `path` names it in errors (errc::corrupt).
result<std::vector<blob_entry>> parse(std::span<const std::byte> file, std::uint64_t expected_txn,
                                      const std::string& path);

// "txn-00000000000000000042.dat" and back (0 for a name that is not one).
std::string file_name(std::uint64_t txn);
std::string temp_name(std::uint64_t txn);
std::uint64_t txn_of(const std::string& name);
bool is_temp(const std::string& name);

}  // namespace banyan::store::format
