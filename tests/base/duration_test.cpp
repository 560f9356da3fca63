#include "banyan/base/duration.hpp"

#include <gtest/gtest.h>

namespace {

using namespace std::chrono_literals;

TEST(Duration, ReadsEveryUnitAndBareSeconds) {
  EXPECT_EQ(*banyan::parse_duration("250ms"), 250ms);
  EXPECT_EQ(*banyan::parse_duration("2s"), 2000ms);
  EXPECT_EQ(*banyan::parse_duration("1.5m"), 90'000ms);
  EXPECT_EQ(*banyan::parse_duration("1h"), 3'600'000ms);
  EXPECT_EQ(*banyan::parse_duration("30"), 30'000ms);
  EXPECT_EQ(*banyan::parse_duration("0.25"), 250ms);
}

TEST(Duration, BadTextIsAnErrorNamingIt) {
  for (const char* bad : {"", "s", "-1s", "10 s", "3days", "1e999"}) {
    auto r = banyan::parse_duration(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code, banyan::parse_errc::invalid_duration);
    EXPECT_NE(r.error().message.find(std::string("`") + bad + "`"), std::string::npos) << r.error().message;
  }
}

TEST(Duration, FormatsTheWayItParses) {
  for (auto d : {250ms, 2000ms, 90'000ms, 3'600'000ms, 1500ms}) {
    EXPECT_EQ(*banyan::parse_duration(banyan::format_duration(d)), d);
  }
  EXPECT_EQ(banyan::format_duration(90'000ms), "90s");
  EXPECT_EQ(banyan::format_duration(120'000ms), "2m");
}

}  // namespace
