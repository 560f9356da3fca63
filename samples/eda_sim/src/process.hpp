// Runs an external tool (yosys, iverilog, vvp, verilator) and captures what it prints.
#pragma once

#include <string>
#include <vector>

namespace banyan::eda::detail {

struct process_result {
  int exit_code = -1;   // -1: could not start; 128+signal when killed
  std::string output;   // stdout and stderr interleaved
};

// Runs argv[0] (looked up on PATH) with the arguments, in `cwd` when not empty. No shell is involved,
// so arguments need no quoting.
process_result run_process(const std::vector<std::string>& argv, const std::string& cwd = {});

// A fresh directory under $TMPDIR (or /tmp) named banyan-eda-XXXXXX.
std::string make_temp_dir();

// The last lines of `text` that contain `needle`, or the last `n` lines when none does.
std::string excerpt(const std::string& text, const std::string& needle, int n = 6);

}  // namespace banyan::eda::detail
