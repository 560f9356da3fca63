#include "banyan/base/log.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

TEST(Log, CaptureSeesEachLineWithItsComponent) {
  banyan::log::capture cap;
  banyan::log::info("runtime", "link up");
  banyan::log::warning("/chip/alu", "slow");
  auto lines = cap.lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "[runtime] link up");
  EXPECT_EQ(lines[1], "[/chip/alu] warning: slow");
}

TEST(Log, UntrustedTextCannotForgeOrCutLines) {
  banyan::log::capture cap;
  std::string forged = "n0\n[runtime] peer n1 lost";
  forged += '\0';
  forged += "tail";
  banyan::log::info("runtime", "hello from " + forged);
  auto lines = cap.lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "[runtime] hello from n0\\n[runtime] peer n1 lost\\x00tail");
}

TEST(Log, EscapeCapsLength) {
  std::string big(10'000, 'a');
  auto e = banyan::log::escape(big, 8);
  EXPECT_EQ(e, "aaaaaaaa...(10000 bytes)");
  EXPECT_EQ(banyan::log::escape("a\\b\x7f"), "a\\\\b\\x7f");
}

TEST(Log, LinesBelowTheThresholdAreDropped) {
  banyan::log::capture cap;
  auto before = banyan::log::threshold();
  banyan::log::set_threshold(banyan::log::level::warning);
  banyan::log::info("x", "dropped");
  banyan::log::error("x", "kept");
  banyan::log::set_threshold(before);
  auto lines = cap.lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "[x] error: kept");
}

}  // namespace

namespace banyan::log {
namespace {

TEST(Log, ARepeatedLineIsWrittenTenTimesThenAtEveryPowerOfTen) {
  std::vector<std::uint64_t> written;
  for (std::uint64_t n = 1; n <= 100000; ++n)
    if (worth_logging(n)) written.push_back(n);
  const std::vector<std::uint64_t> expected{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 100, 1000, 10000, 100000};
  EXPECT_EQ(written, expected);
  EXPECT_FALSE(worth_logging(0xffffffffffffffffull));
  EXPECT_TRUE(worth_logging(10000000000000000000ull));
}

}  // namespace
}  // namespace banyan::log
