// Data loaders: the real Debian datasets load; damaged idx files give errors that name the file.
#include "banyan/nn/data.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

namespace banyan::nn {
namespace {

namespace fs = std::filesystem;

fs::path test_dir(const std::string& name) {
  const fs::path d = fs::path(BANYAN_BINARY_DIR) / "tests" / "nn_data" / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write_gz(const fs::path& p, const std::string& bytes) {
  gzFile gz = gzopen(p.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  ASSERT_EQ(gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  gzclose(gz);
}

std::string be32(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

// A valid pair of idx files with n 2x3 images.
void write_set(const fs::path& dir, int n, int label = 3) {
  std::string img = std::string("\0\0\x08\x03", 4) + be32(n) + be32(2) + be32(3) + std::string(n * 6, '\x80');
  std::string lbl = std::string("\0\0\x08\x01", 4) + be32(n) + std::string(n, static_cast<char>(label));
  write_gz(dir / "train-images-idx3-ubyte.gz", img);
  write_gz(dir / "train-labels-idx1-ubyte.gz", lbl);
}

TEST(Data, SmallValidIdxSetLoads) {
  const auto d = test_dir("valid");
  write_set(d, 4);
  auto s = load_fashion_mnist(d, "train");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->count, 4);
  EXPECT_EQ(s->rows, 2);
  EXPECT_EQ(s->cols, 3);
  EXPECT_NEAR(s->pixels[0], 128.0f / 255.0f, 1e-6f);
  EXPECT_EQ(s->labels[3], 3);
}

TEST(Data, MissingFileNamesThePackage) {
  const auto d = test_dir("missing");
  auto s = load_fashion_mnist(d, "train");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, errc::io);
  EXPECT_NE(s.error().message.find("train-images-idx3-ubyte.gz"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("dataset-fashion-mnist"), std::string::npos) << s.error().message;
}

TEST(Data, BadMagicTruncationAndBadLabelsAreReported) {
  const auto d = test_dir("corrupt");
  write_set(d, 4);
  write_gz(d / "train-images-idx3-ubyte.gz", std::string("\x01\x02\x03\x04", 4) + be32(4));
  auto s = load_fashion_mnist(d, "train");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("bad magic"), std::string::npos) << s.error().message;

  write_gz(d / "train-images-idx3-ubyte.gz",
           std::string("\0\0\x08\x03", 4) + be32(4) + be32(2) + be32(3) + std::string(10, 'a'));
  s = load_fashion_mnist(d, "train");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("truncated"), std::string::npos) << s.error().message;

  write_set(d, 4, 12);
  s = load_fashion_mnist(d, "train");
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("label 12"), std::string::npos) << s.error().message;

  write_gz(d / "train-images-idx3-ubyte.gz",
           std::string("\0\0\x08\x03", 4) + be32(5) + be32(2) + be32(3) + std::string(30, 'a'));
  write_set(d, 4);  // labels for 4, images for 4 ...
  write_gz(d / "train-images-idx3-ubyte.gz",
           std::string("\0\0\x08\x03", 4) + be32(5) + be32(2) + be32(3) + std::string(30, 'a'));
  s = load_fashion_mnist(d, "train");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, errc::mismatch) << s.error().message;
}

TEST(Data, TruncatedGzipStreamIsCorrupt) {
  const auto d = test_dir("gzip");
  write_set(d, 200);
  const fs::path p = d / "train-images-idx3-ubyte.gz";
  const auto size = fs::file_size(p);
  fs::resize_file(p, size / 2);
  auto s = read_idx_gz(p, 3);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, errc::corrupt) << s.error().message;
  EXPECT_NE(s.error().message.find(p.string()), std::string::npos);
}

TEST(Data, FashionMnistFromDebianLoads) {
  if (!fs::exists(fs::path(default_fashion_mnist_dir) / "t10k-labels-idx1-ubyte.gz")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed (tools/setup installs it)";
  }
  auto s = load_fashion_mnist(default_fashion_mnist_dir, "t10k");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->count, 10000);
  EXPECT_EQ(s->rows * s->cols, 784);
}

TEST(Data, FortunesCorpusLoadsAndRoundTrips) {
  if (!fs::is_directory(default_fortunes_dir)) GTEST_SKIP() << "fortunes is not installed (tools/setup installs it)";
  auto c = load_fortunes();
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_GT(c->ids.size(), 100000u);
  EXPECT_LT(c->vocab.size(), 256u);
  std::vector<int> first(c->ids.begin(), c->ids.begin() + 50);
  EXPECT_EQ(c->decode(first).size(), 50u);
  EXPECT_EQ(c->id_of(c->vocab[3]), 3);
}

TEST(Data, FortunesMissingDirectoryIsAnError) {
  auto c = load_fortunes("/nonexistent/fortunes");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, errc::io);
  EXPECT_NE(c.error().message.find("/nonexistent/fortunes"), std::string::npos);
}

TEST(Data, TextBatcherTargetsAreTheNextTokens) {
  std::vector<int> ids(100);
  for (int i = 0; i < 100; ++i) ids[i] = i;
  text_batcher tb(ids, 10, 90, 3, 5);
  rng r(1);
  std::vector<int> in, tgt;
  tb.next(r, in, tgt);
  ASSERT_EQ(in.size(), 15u);
  for (std::size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(tgt[i], in[i] + 1);
    EXPECT_GE(in[i], 10);
    EXPECT_LT(tgt[i], 90);
  }
}

}  // namespace
}  // namespace banyan::nn
