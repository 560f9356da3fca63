#include "banyan/broker/topic.hpp"

namespace banyan {

namespace {

enum class wildcards { forbidden, allowed };

error topic_error(std::string_view text, std::string why) {
  return {broker::errc::invalid_topic, "topic `" + std::string(text) + "`: " + std::move(why)};
}

result<std::vector<std::string>> split_levels(std::string_view text, wildcards mode) {
  if (text.empty()) return topic_error(text, "is empty");
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return topic_error(text, "contains a control character");
  }
  std::vector<std::string> levels;
  std::size_t start = 0;
  while (true) {
    std::size_t slash = text.find('/', start);
    std::string_view level = text.substr(start, slash == std::string_view::npos ? slash : slash - start);
    std::size_t index = levels.size() + 1;
    if (level.empty()) return topic_error(text, "level " + std::to_string(index) + " is empty");
    bool has_wildcard = level.find_first_of("+#") != std::string_view::npos;
    if (has_wildcard) {
      if (mode == wildcards::forbidden)
        return topic_error(text, "level " + std::to_string(index) + " has a wildcard; published topics name one topic");
      if (level.size() != 1)
        return topic_error(
            text, "level " + std::to_string(index) + " `" + std::string(level) + "`: a wildcard must be a whole level");
      if (level == "#" && slash != std::string_view::npos) return topic_error(text, "`#` must be the last level");
    }
    levels.emplace_back(level);
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return levels;
}

}  // namespace

result<topic> topic::parse(std::string_view text) {
  auto levels = split_levels(text, wildcards::forbidden);
  if (!levels) return levels.error();
  topic t;
  t.text_ = std::string(text);
  t.levels_ = std::move(*levels);
  return t;
}

result<topic_filter> topic_filter::parse(std::string_view text) {
  auto levels = split_levels(text, wildcards::allowed);
  if (!levels) return levels.error();
  topic_filter f;
  f.text_ = std::string(text);
  f.levels_ = std::move(*levels);
  return f;
}

bool topic_filter::matches(const topic& t) const {
  const auto& want = levels_;
  const auto& got = t.levels();
  std::size_t i = 0;
  for (; i < want.size(); ++i) {
    if (want[i] == "#") return true;  // zero or more remaining levels
    if (i >= got.size()) return false;
    if (want[i] != "+" && want[i] != got[i]) return false;
  }
  return i == got.size();
}

}  // namespace banyan
