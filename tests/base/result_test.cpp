#include "banyan/base/result.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace demo {
enum class errc { io, parse };
inline const char* to_string(errc c) { return c == errc::io ? "io" : "parse"; }
}  // namespace demo
BANYAN_ERROR_ENUM(demo::errc, "demo");

namespace other {
enum class errc { io };
inline const char* to_string(errc) { return "io"; }
}  // namespace other
BANYAN_ERROR_ENUM(other::errc, "other");

namespace {

banyan::result<int> parse(const std::string& s) {
  if (s.empty()) return banyan::error{demo::errc::parse, "input ``: empty"};
  return std::stoi(s);
}

TEST(Result, CarriesAValueOrAnError) {
  auto good = parse("42");
  ASSERT_TRUE(good.has_value());
  EXPECT_EQ(*good, 42);
  auto bad = parse("");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, demo::errc::parse);
  EXPECT_EQ(bad.error().what(), "parse: input ``: empty");
}

TEST(Result, CodesOfDifferentModulesNeverCompareEqual) {
  banyan::error a{demo::errc::io, "x"};
  banyan::error b{other::errc::io, "x"};
  EXPECT_FALSE(a.code == b.code);
  EXPECT_EQ(a.code.module(), "demo");
  EXPECT_EQ(b.code.as<demo::errc>(), std::nullopt);
  EXPECT_EQ(a.code.as<demo::errc>(), demo::errc::io);
  EXPECT_FALSE(a == b);
}

TEST(Result, VoidResultIsSuccessByDefault) {
  banyan::result<void> ok = {};
  EXPECT_TRUE(ok.has_value());
  banyan::result<void> failed = banyan::error{demo::errc::io, "file `x`: cannot open"};
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().message, "file `x`: cannot open");
}

TEST(Result, MovesOutMoveOnlyValues) {
  banyan::result<std::unique_ptr<int>> r = std::make_unique<int>(7);
  std::unique_ptr<int> p = std::move(r).value();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, 7);
}

}  // namespace
