// Checkpoints round-trip exactly; every kind of damage is a clear error, never a crash.
#include "banyan/nn/checkpoint.hpp"
#include "banyan/nn/adamw.hpp"
#include "banyan/nn/gpt.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace banyan::nn {
namespace {

namespace fs = std::filesystem;

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(BANYAN_BINARY_DIR) / "tests" / "nn_checkpoint" /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ck_.model = "gpt";
    ck_.config = {13, 8, 2, 2, 8};
    ck_.step = 42;
    ck_.vocabulary = {'\n', ' ', 'a', 'b', 'c'};
    for (int i = 0; i < 100; ++i) {
      ck_.params.push_back(0.5f * i);
      ck_.m.push_back(-0.25f * i);
      ck_.v.push_back(0.125f * i);
    }
    file_ = dir_ / "run.ckpt";
    ASSERT_TRUE(save_checkpoint(file_, ck_));
  }
  std::string bytes() const {
    std::ifstream f(file_, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  }
  void write(const std::string& b) const {
    std::ofstream f(file_, std::ios::binary | std::ios::trunc);
    f.write(b.data(), static_cast<std::streamsize>(b.size()));
  }
  void expect_error(errc code, const std::string& needle) const {
    auto r = load_checkpoint(file_);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, code) << r.error().message;
    EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find(file_.string()), std::string::npos) << "names the file: " << r.error().message;
  }
  fs::path dir_, file_;
  checkpoint ck_;
};

TEST_F(CheckpointTest, RoundTripsExactly) {
  auto r = load_checkpoint(file_);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->model, "gpt");
  EXPECT_EQ(r->config, ck_.config);
  EXPECT_EQ(r->step, 42u);
  EXPECT_EQ(r->params, ck_.params);
  EXPECT_EQ(r->m, ck_.m);
  EXPECT_EQ(r->v, ck_.v);
  EXPECT_EQ(r->vocabulary, ck_.vocabulary);
  EXPECT_FALSE(fs::exists(dir_ / "run.ckpt.tmp"));
}

TEST_F(CheckpointTest, MissingFileIsAnIoError) {
  fs::remove(file_);
  expect_error(errc::io, "cannot open");
}

TEST_F(CheckpointTest, ADirectoryIsAnIoErrorNotAnException) {
  fs::remove(file_);
  fs::create_directories(file_);
  expect_error(errc::io, "is a directory");
}

TEST_F(CheckpointTest, VersionOneFilesStillLoadWithoutAVocabulary) {
  // Version 1: a 48-byte fixed header (no vocabulary length, no reserved word), no vocabulary.
  auto b = bytes();
  const std::size_t vocab_at = 56 + 8 * ck_.config.size() + ck_.model.size();
  b.erase(vocab_at, ck_.vocabulary.size());
  b.erase(48, 8);
  b[8] = 1;
  const std::uint32_t header = 48 + 8 * ck_.config.size() + ck_.model.size();
  std::memcpy(b.data() + 12, &header, 4);
  b.resize(b.size() - 4);
  const std::uint32_t sum = static_cast<std::uint32_t>(
      crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(b.data()), static_cast<uInt>(b.size())));
  b.append(reinterpret_cast<const char*>(&sum), 4);
  write(b);
  auto r = load_checkpoint(file_);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->params, ck_.params);
  EXPECT_EQ(r->v, ck_.v);
  EXPECT_TRUE(r->vocabulary.empty());
}

TEST_F(CheckpointTest, FlippedPayloadByteFailsTheChecksum) {
  auto b = bytes();
  b[b.size() / 2] ^= 0x01;
  write(b);
  expect_error(errc::corrupt, "checksum mismatch");
}

TEST_F(CheckpointTest, TruncatedFileIsReported) {
  auto b = bytes();
  write(b.substr(0, b.size() - 10));
  expect_error(errc::corrupt, "truncated");
  write(b.substr(0, 20));
  expect_error(errc::corrupt, "truncated");
  write("");
  expect_error(errc::corrupt, "0 bytes");
}

TEST_F(CheckpointTest, BadMagicIsReported) {
  auto b = bytes();
  b[0] = 'X';
  write(b);
  expect_error(errc::corrupt, "bad magic");
}

TEST_F(CheckpointTest, OtherVersionIsUnsupported) {
  auto b = bytes();
  b[8] = 7;
  write(b);
  expect_error(errc::unsupported, "version 7");
}

TEST_F(CheckpointTest, InconsistentHeaderIsCorrupt) {
  auto b = bytes();
  b[24] ^= 0x40;  // num_params no longer matches the payload size
  write(b);
  expect_error(errc::corrupt, "disagree");
}

TEST_F(CheckpointTest, MismatchedModelConfigFieldVocabularyOrSizeIsNamed) {
  auto r = load_checkpoint(file_);
  ASSERT_TRUE(r);
  const checkpoint_identity id{.model = "gpt",
                               .config = ck_.config,
                               .config_fields = gpt_config::field_names(),
                               .stored_floats = 100,
                               .vocabulary = ck_.vocabulary};
  EXPECT_TRUE(check_matches(*r, file_, id));
  auto expect_mismatch = [&](const checkpoint_identity& other, const std::string& needle) {
    auto s = check_matches(*r, file_, other);
    ASSERT_FALSE(s) << needle;
    EXPECT_EQ(s.error().code, errc::mismatch);
    EXPECT_NE(s.error().message.find(needle), std::string::npos) << s.error().message;
  };
  auto other = id;
  other.model = "mlp";
  expect_mismatch(other, "holds a `gpt` model, expected `mlp`");
  other = id;
  other.config[4] = 16;
  expect_mismatch(other, "channels is 8, this model has 16");
  other = id;
  other.vocabulary[2] = 'z';  // as many distinct bytes, another mapping: another corpus
  expect_mismatch(other, "token 2 is byte 0x61 there, 0x7a in this data");
  other = id;
  other.vocabulary.pop_back();
  expect_mismatch(other, "vocabulary of 5 bytes, this data has 4");
  other = id;
  other.stored_floats = 99;
  expect_mismatch(other, "100 stored floats, model has 99");
}

TEST_F(CheckpointTest, ResumedTrainingContinuesBitForBit) {
  // Two steps straight vs one step, save, load into a fresh model and optimizer, one more step.
  const gpt_config cfg{.vocab_size = 11, .max_seq_len = 4, .num_layers = 1, .num_heads = 1, .channels = 4};
  auto be = make_backend({.name = "cpu", .threads = 1});
  ASSERT_TRUE(be);
  std::vector<int> tok{1, 2, 3, 4}, tgt{2, 3, 4, 5};
  auto step = [&](gpt& m, adamw& o) {
    m.forward(tok.data(), tgt.data(), 1, 4);
    m.zero_grad();
    m.backward();
    o.step(m.params().base(), m.grads().base(), {.lr = 1e-2f});
  };
  auto a = gpt::create(cfg, 1, 4, **be);
  a->init(1);
  adamw oa(**be, a->params());
  step(*a, oa);
  checkpoint ck{"gpt",
                cfg.to_vector(),
                static_cast<std::uint64_t>(oa.steps()),
                a->params().to_host(**be),
                oa.m_host(),
                oa.v_host(),
                {}};
  ASSERT_TRUE(save_checkpoint(file_, ck));
  step(*a, oa);

  auto loaded = load_checkpoint(file_);
  ASSERT_TRUE(loaded) << loaded.error().message;
  auto b = gpt::create(cfg, 1, 4, **be);
  ASSERT_TRUE(
      check_matches(*loaded, file_, {.model = "gpt", .config = cfg.to_vector(), .stored_floats = b->params().numel()}));
  b->params().from_host(**be, loaded->params);
  adamw ob(**be, b->params());
  ob.restore(loaded->m, loaded->v, static_cast<int>(loaded->step));
  step(*b, ob);
  EXPECT_EQ(a->params().to_host(**be), b->params().to_host(**be));
}

}  // namespace
}  // namespace banyan::nn
