// Training data from Debian packages: character-level text (the `fortunes` package) and
// Fashion-MNIST (the `dataset-fashion-mnist` package, gzip'd idx files). Loading validates every
// header and size; a missing, truncated or corrupt file is an error naming the file and the fault.
#pragma once

#include "banyan/nn/error.hpp"
#include "banyan/nn/rng.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace banyan::nn {

inline const char* default_fortunes_dir = "/usr/share/games/fortunes";
inline const char* default_fashion_mnist_dir = "/usr/share/datasets/fashion-mnist";

// A byte-level corpus with a compact vocabulary (the distinct bytes that occur, sorted).
struct char_corpus {
  std::vector<unsigned char> vocab;  // id -> byte
  std::vector<int> ids;              // the text, as vocabulary ids
  int id_of(unsigned char c) const;  // -1 when c is not in the vocabulary
  std::string decode(const std::vector<int>& ids) const;
};

// Reads every fortune file in `dir` (not the .dat/.u8 indexes, not subfolders), in name order, and
// strips the `%` separators lines. Fails when `dir` is missing or holds no text.
result<char_corpus> load_fortunes(const std::filesystem::path& dir = default_fortunes_dir);

// Contiguous (B,T) windows of a token stream and the next-token targets, drawn at seeded positions.
class text_batcher {
 public:
  // ids must hold more than T+1 tokens (asserted; callers check the split sizes).
  text_batcher(const std::vector<int>& ids, std::size_t begin, std::size_t end, int B, int T);
  void next(rng& r, std::vector<int>& inputs, std::vector<int>& targets) const;
  std::size_t size() const { return end_ - begin_; }

 private:
  const std::vector<int>* ids_;
  std::size_t begin_, end_;
  int B_, T_;
};

struct image_set {
  int count = 0, rows = 0, cols = 0;
  std::vector<float> pixels;  // count x rows*cols, scaled to [0,1]
  std::vector<int> labels;    // count, in [0, 10)
};

// Reads `<prefix>-images-idx3-ubyte.gz` and `<prefix>-labels-idx1-ubyte.gz` from `dir`
// (prefix "train" or "t10k").
result<image_set> load_fashion_mnist(const std::filesystem::path& dir, const std::string& prefix);

// The gzip'd idx reader under load_fashion_mnist, exposed for tests: returns the dims and raw bytes.
struct idx_file {
  std::vector<int> dims;
  std::vector<unsigned char> data;
};
result<idx_file> read_idx_gz(const std::filesystem::path& file, int expected_rank);

}  // namespace banyan::nn
