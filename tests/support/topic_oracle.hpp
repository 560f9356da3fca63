// An independent topic matcher for property tests: written from the MQTT rules on plain level lists,
// sharing no code with banyan::topic_filter, so a test can check the broker against it.
// Header-only; include it by relative path ("../support/topic_oracle.hpp").
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace banyan::testing {

// `s` cut at every `/`; empty levels are kept (`a//b` has three levels).
inline std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0, slash;
  while ((slash = s.find('/', start)) != std::string::npos) {
    out.push_back(s.substr(start, slash - start));
    start = slash + 1;
  }
  out.push_back(s.substr(start));
  return out;
}

// Whether filter levels f[i..] match topic levels t[j..]: `+` takes exactly one level, `#` (last)
// any number, zero included; any other level must be equal.
inline bool brute_match(const std::vector<std::string>& f, const std::vector<std::string>& t, std::size_t i = 0,
                        std::size_t j = 0) {
  if (i == f.size()) return j == t.size();
  if (f[i] == "#") return true;
  if (j == t.size()) return false;
  return (f[i] == "+" || f[i] == t[j]) && brute_match(f, t, i + 1, j + 1);
}

}  // namespace banyan::testing
