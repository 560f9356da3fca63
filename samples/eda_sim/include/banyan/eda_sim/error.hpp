// The EDA engine's error codes. Errors a caller can act on come back as banyan::result /
// banyan::error values; the message names the input (file, module, cell, signal) and where in it
// the problem is, so a CLI can print it verbatim.
#pragma once

#include <banyan/base/result.hpp>

namespace banyan::eda {

enum class errc {
  yosys_failed,  // yosys rejected the Verilog (message is yosys's own) or could not run
  bad_netlist,   // the JSON is not what yosys writes
  unsupported,   // a construct outside the supported subset (latch, second clock, memory, ...)
  bad_stimulus,  // the stimulus file or options are malformed
  combinational_loop,
  reference_failed,  // iverilog / vvp failed or wrote something unreadable
  io,                // a file could not be read or written
  compile_failed,    // the compiled engine: the system compiler failed or its object would not load
};
const char* to_string(errc code);  // a short description: "bad netlist"

}  // namespace banyan::eda

BANYAN_ERROR_ENUM(banyan::eda::errc, "eda");
