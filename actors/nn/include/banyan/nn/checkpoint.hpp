// Checkpoints: a model's parameters, AdamW state and step count in one binary file.
//
// Format (version 1, all integers little-endian):
//   offset  size  field
//   0       8     magic "BNYNCKPT"
//   8       4     u32 version (= 1)
//   12      4     u32 header bytes H (= 48 + 8*config_len + model name length)
//   16      8     u64 step (optimizer steps taken)
//   24      8     u64 num_params P
//   32      4     u32 config_len K
//   36      4     u32 model name length M (<= 64)
//   40      8     u64 payload bytes (= 12*P)
//   48      8*K   i64 config values (gpt: vocab, max_seq_len, layers, heads, channels)
//   48+8K   M     model name ("gpt", "mlp")
//   H       4P    f32 parameters, in the model's arena order
//   H+4P    4P    f32 AdamW first moment
//   H+8P    4P    f32 AdamW second moment
//   end-4   4     u32 CRC-32 (zlib) of every byte before it
// A file is written to `<path>.tmp` and renamed, so a crash never leaves a half-written checkpoint
// under the real name.
#pragma once

#include "banyan/nn/error.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace banyan::nn {

inline constexpr std::uint32_t checkpoint_version = 1;

struct checkpoint {
  std::string model;                  // "gpt", "mlp"
  std::vector<std::int64_t> config;   // the model config's to_vector()
  std::uint64_t step = 0;
  std::vector<float> params, m, v;    // equal sizes
};

result<void> save_checkpoint(const std::filesystem::path& file, const checkpoint& ck);

// Errors: io (missing/unreadable), corrupt (bad magic, truncated, sizes that disagree, checksum),
// unsupported (another version).
result<checkpoint> load_checkpoint(const std::filesystem::path& file);

// errc::mismatch naming the first difference when `ck` was not made for this model and config.
result<void> check_matches(const checkpoint& ck, const std::filesystem::path& file, const std::string& model,
                          const std::vector<std::int64_t>& config, std::size_t num_params);

}  // namespace banyan::nn
