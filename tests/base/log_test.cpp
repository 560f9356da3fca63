#include "banyan/base/log.hpp"

#include <gtest/gtest.h>

#include <string>

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
