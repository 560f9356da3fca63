// Durations on command lines and in files, one spelling everywhere (docs/cli.md): a number with a
// unit, `250ms`, `2s`, `1.5m`, `1h`, or a bare number meaning seconds (`30`).
#pragma once

#include "banyan/base/result.hpp"

#include <chrono>
#include <string>
#include <string_view>

namespace banyan {

enum class parse_errc { invalid_duration };
const char* to_string(parse_errc code);

}  // namespace banyan

BANYAN_ERROR_ENUM(banyan::parse_errc, "parse");

namespace banyan {

// Parses `text` (see above). Errors name the text and say what is wrong; negative durations and
// durations beyond ~292 years are errors.
result<std::chrono::milliseconds> parse_duration(std::string_view text);

// "250ms", "2s", "1m30s" style, for messages and --help defaults.
std::string format_duration(std::chrono::milliseconds d);

}  // namespace banyan
