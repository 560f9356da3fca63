// Checkpoints: a model's parameters, AdamW state and step count in one binary file.
//
// Format (version 2, all integers little-endian):
//   offset    size  field
//   0         8     magic "BNYNCKPT"
//   8         4     u32 version (= 2)
//   12        4     u32 header bytes H (= 56 + 8*K + M + D)
//   16        8     u64 step (optimizer steps taken)
//   24        8     u64 stored floats P: the parameter arena's size, alignment padding included
//   32        4     u32 config length K
//   36        4     u32 model name length M (<= 64)
//   40        8     u64 payload bytes (= 12*P)
//   48        4     u32 vocabulary length D (<= 65536)
//   52        4     u32 flags: bit 0 set = no CRC-32 (the field at end-4 is 0 and not checked), for a
//                   checkpoint kept in a container that checks its bytes itself (banyan::store)
//   56        8*K   i64 config values (gpt: vocab, max_seq_len, layers, heads, channels)
//   56+8K     M     model name ("gpt", "mlp")
//   56+8K+M   D     vocabulary: the byte of each token id (gpt on a char corpus); D = 0: none
//   H         4P    f32 parameters, the model's parameter arena as it is in memory
//   H+4P      4P    f32 AdamW first moment (same layout)
//   H+8P      4P    f32 AdamW second moment (same layout)
//   end-4     4     u32 CRC-32 (zlib) of every byte before it
// The arena starts every tensor at a multiple of 16 floats (64 bytes), so P counts the zero floats
// between tensors too: P >= the model's num_params(), which counts parameters only. Version 1 files (48-byte header, no
// vocabulary) still load, with an empty vocabulary. A file is written to `<path>.tmp` and renamed, so a crash never
// leaves a half-written checkpoint under the real name.
//
// The same bytes are a blob in a checkpoint store (banyan::store, docs/store.md): encode_checkpoint()
// and decode_checkpoint() are the format without the file, and name the checkpoint by `name`.
#pragma once

#include "banyan/nn/error.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace banyan::nn {

inline constexpr std::uint32_t checkpoint_version = 2;

struct checkpoint {
  std::string model;                 // "gpt", "mlp"
  std::vector<std::int64_t> config;  // the model config's to_vector()
  std::uint64_t step = 0;
  std::vector<float> params, m, v;        // equal sizes: the parameter arena's numel()
  std::vector<unsigned char> vocabulary;  // token id -> byte; empty when the model has none
};

result<void> save_checkpoint(const std::filesystem::path& file, const checkpoint& ck);

// The file's bytes; without `checksum`, flagged as leaving the checksum to the container (one pass
// over the tensors less). Errors: invalid_argument (params, m and v of different sizes, a model name
// or vocabulary too long), naming `name` ("checkpoint `run.ckpt`").
result<std::vector<std::byte>> encode_checkpoint(const checkpoint& ck, std::string_view name, bool checksum = true);
// The header alone, for a writer that places the tensors itself: `ck`'s model, config, step and
// vocabulary (its tensors are not read) for `floats` parameters. The whole checkpoint is then the
// header, params, m and v (4 * floats bytes each) and a u32 checksum (0 without `checksum`).
result<std::vector<std::byte>> encode_checkpoint_header(const checkpoint& ck, std::size_t floats, bool checksum,
                                                        std::string_view name);
// Parses bytes encode_checkpoint() (or a file) made. Errors as load_checkpoint's, naming `name`;
// with `require_checksum` (as for a file), one without a checksum is corrupt.
result<checkpoint> decode_checkpoint(std::span<const std::byte> bytes, std::string_view name,
                                     bool require_checksum = false);

// Errors: io (missing, unreadable, a directory), corrupt (bad magic, truncated, sizes that disagree,
// checksum), unsupported (another version).
result<checkpoint> load_checkpoint(const std::filesystem::path& file);

// What a checkpoint must agree with to be loaded into a model.
struct checkpoint_identity {
  std::string model;                       // "gpt"
  std::vector<std::int64_t> config;        // the config's to_vector()
  std::vector<std::string> config_fields;  // the config's field_names(): one per value, for messages
  std::size_t stored_floats = 0;           // the parameter arena's numel()
  std::vector<unsigned char> vocabulary;   // token id -> byte; empty: the model has none
};

// errc::mismatch naming the first difference when `ck` was not made for this model: another model
// kind, a config field ("channels is 96, this model has 128"), another vocabulary (the first id whose
// byte differs), another arena size. A checkpoint without a vocabulary (version 1) matches any.
result<void> check_matches(const checkpoint& ck, const std::filesystem::path& file,
                           const checkpoint_identity& expected);

}  // namespace banyan::nn
