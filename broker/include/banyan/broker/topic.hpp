// Topics and topic filters: `/`-separated levels, matched level by level, MQTT-style.
//
// A `topic` names what is published (`net/carry`): no wildcards. A `topic_filter` names what is
// subscribed: `+` matches exactly one level, `#` (only as the last level) matches zero or more levels.
// Matching compares whole levels, so `net/ca` never matches `net/carry` (the raw-prefix bug of
// Zeek Broker and ZeroMQ SUB). Both are values: cheap to copy, compared by their text.
#pragma once

#include "banyan/broker/error.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace banyan {

class topic {
 public:
  // Fails on: empty text, an empty level (`a//b`, `/a`, `a/`), a wildcard (`+`, `#`) anywhere, or a
  // control character; the message quotes the topic and says which level is wrong.
  static result<topic> parse(std::string_view text);

  const std::string& str() const { return text_; }
  const std::vector<std::string>& levels() const { return levels_; }
  friend bool operator==(const topic& a, const topic& b) { return a.text_ == b.text_; }

 private:
  std::string text_;
  std::vector<std::string> levels_;
};

class topic_filter {
 public:
  // Fails like topic::parse, except that `+` may stand as a whole level anywhere and `#` as the whole
  // last level; `a/#/b`, `#/a` and `a+` are errors.
  static result<topic_filter> parse(std::string_view text);

  const std::string& str() const { return text_; }
  const std::vector<std::string>& levels() const { return levels_; }
  bool matches(const topic& t) const;
  friend bool operator==(const topic_filter& a, const topic_filter& b) { return a.text_ == b.text_; }

 private:
  std::string text_;
  std::vector<std::string> levels_;
};

}  // namespace banyan
