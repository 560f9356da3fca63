// External tools of the flow (yosys, iverilog, vvp) and their scratch space.
#pragma once

#include <banyan/base/process.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace banyan::eda::detail {

// Runs argv[0] (looked up on PATH) with the arguments in `dir`, stdout and stderr merged into
// `out`. No shell is involved, so arguments need no quoting. An error when the tool cannot start.
// With `still_running`, it is called every `every` while the tool runs, with the seconds so far
// (a long synthesis says it is alive instead of minutes of silence).
result<run_output> run_tool(const std::vector<std::string>& argv, const std::string& dir,
                            const std::function<void(double seconds)>& still_running = {},
                            std::chrono::milliseconds every = std::chrono::seconds(15));

// A fresh directory under $TMPDIR (or /tmp) named banyan-eda-XXXXXX.
std::string make_temp_dir();

// The last lines of `text` that contain `needle`, or the last `n` lines when none does.
std::string excerpt(const std::string& text, const std::string& needle, int n = 6);

// FNV-1a, twice with different bases: a 128-bit key.
struct hasher {
  std::uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
  void add(const std::string& s) {
    for (unsigned char c : s) {
      a = (a ^ c) * 0x100000001b3ull;
      b = (b ^ c) * 0x100000001b3ull ^ (b >> 29);
    }
    a = (a ^ 0xff) * 0x100000001b3ull;  // a separator, so ("ab","c") != ("a","bc")
  }
  std::string hex() const {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(a),
                  static_cast<unsigned long long>(b));
    return buf;
  }
};

}  // namespace banyan::eda::detail
