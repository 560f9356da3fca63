// Checkpoints round-trip exactly; every kind of damage is a clear error, never a crash.
#include "banyan/nn/adamw.hpp"
#include "banyan/nn/checkpoint.hpp"
#include "banyan/nn/gpt.hpp"

#include <gtest/gtest.h>

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
  EXPECT_FALSE(fs::exists(dir_ / "run.ckpt.tmp"));
}

TEST_F(CheckpointTest, MissingFileIsAnIoError) {
  fs::remove(file_);
  expect_error(errc::io, "cannot open");
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

TEST_F(CheckpointTest, MismatchedModelOrConfigIsNamed) {
  auto r = load_checkpoint(file_);
  ASSERT_TRUE(r);
  auto s = check_matches(*r, file_, "mlp", ck_.config, 100);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, errc::mismatch);
  EXPECT_NE(s.error().message.find("`gpt`"), std::string::npos) << s.error().message;
  auto cfg = ck_.config;
  cfg[4] = 16;
  s = check_matches(*r, file_, "gpt", cfg, 100);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("config value 4 is 8"), std::string::npos) << s.error().message;
  s = check_matches(*r, file_, "gpt", ck_.config, 99);
  ASSERT_FALSE(s);
  EXPECT_TRUE(check_matches(*r, file_, "gpt", ck_.config, 100));
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
  adamw oa(**be, a->num_params());
  step(*a, oa);
  checkpoint ck{"gpt", cfg.to_vector(), static_cast<std::uint64_t>(oa.steps()), a->params().to_host(**be), oa.m_host(), oa.v_host()};
  ASSERT_TRUE(save_checkpoint(file_, ck));
  step(*a, oa);

  auto loaded = load_checkpoint(file_);
  ASSERT_TRUE(loaded) << loaded.error().message;
  auto b = gpt::create(cfg, 1, 4, **be);
  ASSERT_TRUE(check_matches(*loaded, file_, "gpt", cfg.to_vector(), b->num_params()));
  b->params().from_host(**be, loaded->params);
  adamw ob(**be, b->num_params());
  ob.restore(loaded->m, loaded->v, static_cast<int>(loaded->step));
  step(*b, ob);
  EXPECT_EQ(a->params().to_host(**be), b->params().to_host(**be));
}

}  // namespace
}  // namespace banyan::nn
