#include "banyan/broker/topic.hpp"

#include <gtest/gtest.h>

namespace banyan {
namespace {

bool match(const char* filter, const char* t) {
  auto f = topic_filter::parse(filter);
  auto p = topic::parse(t);
  EXPECT_TRUE(f.has_value()) << filter;
  EXPECT_TRUE(p.has_value()) << t;
  return f.has_value() && p.has_value() && f->matches(*p);
}

TEST(Topic, ParsesLevels) {
  auto t = topic::parse("net/carry/0");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->levels(), (std::vector<std::string>{"net", "carry", "0"}));
  EXPECT_EQ(t->str(), "net/carry/0");
}

TEST(Topic, MalformedTopicsAreErrorsNamingTheTopic) {
  for (const char* bad : {"", "a//b", "/a", "a/", "a/+/b", "a/#", "#",
                          "a\x01"
                          "b",
                          "a\tb", "a\x7f"}) {
    auto t = topic::parse(bad);
    ASSERT_FALSE(t.has_value()) << "accepted `" << bad << "`";
    EXPECT_EQ(t.error().code, broker::errc::invalid_topic);
    EXPECT_NE(t.error().message.find(std::string("`") + bad + "`"), std::string::npos) << t.error().message;
  }
}

TEST(TopicFilter, MalformedFiltersAreErrors) {
  struct bad_case {
    const char* text;
    const char* says;
  };
  for (auto [text, says] : {bad_case{"", "empty"}, bad_case{"a//b", "level 2 is empty"}, bad_case{"#/a", "last level"},
                            bad_case{"a/#/b", "last level"}, bad_case{"a+", "whole level"},
                            bad_case{"a/b#", "whole level"}, bad_case{"a/\nb", "control character"}}) {
    auto f = topic_filter::parse(text);
    ASSERT_FALSE(f.has_value()) << "accepted `" << text << "`";
    EXPECT_NE(f.error().message.find(says), std::string::npos) << f.error().message;
  }
}

TEST(TopicFilter, MatchesWholeLevelsOnly) {
  EXPECT_TRUE(match("net/carry", "net/carry"));
  EXPECT_FALSE(match("net/ca", "net/carry"));
  EXPECT_FALSE(match("net/carry", "net/ca"));
  EXPECT_FALSE(match("net", "net/carry"));
  EXPECT_FALSE(match("net/carry", "net"));
}

TEST(TopicFilter, PlusMatchesExactlyOneLevel) {
  EXPECT_TRUE(match("net/+", "net/carry"));
  EXPECT_FALSE(match("net/+", "net"));
  EXPECT_FALSE(match("net/+", "net/carry/0"));
  EXPECT_TRUE(match("+/carry/+", "net/carry/0"));
}

TEST(TopicFilter, HashMatchesZeroOrMoreTrailingLevels) {
  EXPECT_TRUE(match("net/#", "net"));
  EXPECT_TRUE(match("net/#", "net/carry"));
  EXPECT_TRUE(match("net/#", "net/carry/0/1"));
  EXPECT_FALSE(match("net/#", "netx/carry"));
  EXPECT_TRUE(match("#", "anything/at/all"));
  EXPECT_TRUE(match("+/#", "a"));
}

}  // namespace
}  // namespace banyan
