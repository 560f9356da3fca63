#include "banyan/nn/data.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <fstream>
#include <sstream>

namespace banyan::nn {

namespace fs = std::filesystem;

int char_corpus::id_of(unsigned char c) const {
  auto it = std::lower_bound(vocab.begin(), vocab.end(), c);
  return it != vocab.end() && *it == c ? static_cast<int>(it - vocab.begin()) : -1;
}

std::string char_corpus::decode(const std::vector<int>& in) const {
  std::string s;
  for (int id : in) s.push_back(static_cast<char>(vocab.at(static_cast<std::size_t>(id))));
  return s;
}

result<char_corpus> load_fortunes(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return error{errc::io, "fortunes `" + dir.string() + "`: not a directory (install the `fortunes` package)"};
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const auto ext = e.path().extension();
    if (ext == ".dat" || ext == ".u8") continue;
    if (!fs::is_regular_file(e.path(), ec)) continue;  // follows links; skips folders
    files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::string text;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) return error{errc::io, "fortunes `" + f.string() + "`: cannot open"};
    std::string line;
    while (std::getline(in, line)) {
      if (line == "%") continue;
      text += line;
      text.push_back('\n');
    }
  }
  if (text.empty()) return error{errc::corrupt, "fortunes `" + dir.string() + "`: no text found"};
  char_corpus c;
  std::array<bool, 256> seen{};
  for (unsigned char ch : text) seen[ch] = true;
  for (int i = 0; i < 256; ++i) {
    if (seen[i]) c.vocab.push_back(static_cast<unsigned char>(i));
  }
  std::array<int, 256> id{};
  for (std::size_t i = 0; i < c.vocab.size(); ++i) id[c.vocab[i]] = static_cast<int>(i);
  c.ids.reserve(text.size());
  for (unsigned char ch : text) c.ids.push_back(id[ch]);
  return c;
}

text_batcher::text_batcher(const std::vector<int>& ids, std::size_t begin, std::size_t end, int B, int T)
    : ids_(&ids), begin_(begin), end_(end), B_(B), T_(T) {
  assert(end <= ids.size() && end > begin && end - begin > static_cast<std::size_t>(T) + 1);
}

void text_batcher::next(rng& r, std::vector<int>& inputs, std::vector<int>& targets) const {
  inputs.resize(static_cast<std::size_t>(B_) * T_);
  targets.resize(inputs.size());
  const auto span = static_cast<std::uint32_t>(end_ - begin_ - T_ - 1);
  for (int b = 0; b < B_; ++b) {
    const std::size_t start = begin_ + r.below(span);
    for (int t = 0; t < T_; ++t) {
      inputs[static_cast<std::size_t>(b) * T_ + t] = (*ids_)[start + t];
      targets[static_cast<std::size_t>(b) * T_ + t] = (*ids_)[start + t + 1];
    }
  }
}

result<idx_file> read_idx_gz(const fs::path& file, int expected_rank) {
  const std::string name = "`" + file.string() + "`";
  std::error_code ec;
  if (!fs::exists(file, ec)) {
    return error{errc::io, "idx file " + name + ": not found (install `dataset-fashion-mnist`)"};
  }
  gzFile gz = gzopen(file.c_str(), "rb");
  if (gz == nullptr) return error{errc::io, "idx file " + name + ": cannot open"};
  std::vector<unsigned char> bytes;
  std::array<unsigned char, 1 << 16> chunk{};
  bool failed = false;
  for (;;) {
    const int n = gzread(gz, chunk.data(), static_cast<unsigned>(chunk.size()));
    if (n < 0) {
      failed = true;
      break;
    }
    if (n == 0) break;
    bytes.insert(bytes.end(), chunk.begin(), chunk.begin() + n);
  }
  int zerr = Z_OK;
  const std::string zmsg = gzerror(gz, &zerr);  // a truncated stream shows up here as Z_BUF_ERROR
  gzclose(gz);
  if (failed || (zerr != Z_OK && zerr != Z_STREAM_END))
    return error{errc::corrupt, "idx file " + name + ": gzip stream is corrupt (" + zmsg + ")"};
  if (bytes.size() < 4) {
    return error{errc::corrupt,
                 "idx file " + name + ": " + std::to_string(bytes.size()) + " bytes, too short for the header"};
  }
  if (bytes[0] != 0 || bytes[1] != 0 || bytes[2] != 0x08) {
    return error{errc::corrupt, "idx file " + name + ": bad magic (expected 00 00 08 <rank>, unsigned-byte data)"};
  }
  const int rank = bytes[3];
  if (rank != expected_rank) {
    return error{errc::corrupt,
                 "idx file " + name + ": rank " + std::to_string(rank) + ", expected " + std::to_string(expected_rank)};
  }
  const std::size_t header = 4 + 4 * static_cast<std::size_t>(rank);
  if (bytes.size() < header) return error{errc::corrupt, "idx file " + name + ": truncated in the dimensions header"};
  idx_file out;
  std::size_t total = 1;
  for (int i = 0; i < rank; ++i) {
    const unsigned char* p = bytes.data() + 4 + 4 * i;
    const std::uint32_t d =
        (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
    if (d == 0 || d > (1u << 24)) {
      return error{errc::corrupt, "idx file " + name + ": dimension " + std::to_string(i) + " = " + std::to_string(d) +
                                      " is out of range"};
    }
    out.dims.push_back(static_cast<int>(d));
    total *= d;
  }
  if (bytes.size() - header != total) {
    return error{errc::corrupt, "idx file " + name + ": header promises " + std::to_string(total) +
                                    " data bytes, file has " + std::to_string(bytes.size() - header) +
                                    (bytes.size() - header < total ? " (truncated)" : " (trailing bytes)")};
  }
  out.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  return out;
}

result<image_set> load_fashion_mnist(const fs::path& dir, const std::string& prefix) {
  const fs::path img_path = dir / (prefix + "-images-idx3-ubyte.gz");
  const fs::path lbl_path = dir / (prefix + "-labels-idx1-ubyte.gz");
  auto images = read_idx_gz(img_path, 3);
  if (!images) return images.error();
  auto labels = read_idx_gz(lbl_path, 1);
  if (!labels) return labels.error();
  if (images->dims[0] != labels->dims[0]) {
    return error{errc::mismatch, "fashion-mnist `" + prefix + "`: " + std::to_string(images->dims[0]) + " images but " +
                                     std::to_string(labels->dims[0]) + " labels"};
  }
  image_set s;
  s.count = images->dims[0];
  s.rows = images->dims[1];
  s.cols = images->dims[2];
  s.pixels.resize(images->data.size());
  for (std::size_t i = 0; i < images->data.size(); ++i) s.pixels[i] = static_cast<float>(images->data[i]) / 255.0f;
  s.labels.resize(labels->data.size());
  for (std::size_t i = 0; i < labels->data.size(); ++i) {
    if (labels->data[i] > 9) {
      return error{errc::corrupt, "idx file `" + lbl_path.string() + "`: label " + std::to_string(labels->data[i]) +
                                      " at index " + std::to_string(i) + " is not in [0, 9]"};
    }
    s.labels[i] = labels->data[i];
  }
  return s;
}

}  // namespace banyan::nn
