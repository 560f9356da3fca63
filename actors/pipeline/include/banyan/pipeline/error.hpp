// pipeline's error codes. Errors a caller can act on come back as banyan::result / banyan::error values
// (banyan/base/result.hpp). Every message names the input and where in it the problem is
// ("zb-h1.pipe:3:14: expected `)`", "rank 2 step 5 (1B3): ..."), so a CLI can print it verbatim.
#pragma once

#include "banyan/base/result.hpp"

namespace banyan::pipeline {

enum class errc {
  parse,        // text that is not what its syntax says: an action, a CSV table, a DSL program, JSON
  invalid,      // well-formed input that breaks a rule: a table's shape, a cost, an argument out of
                // range, a DSL expression that cannot be evaluated, a sequence that leaves work undone
  unsupported,  // a valid request this program or form cannot serve (a DSL program's `require`, a
                // table the DSL cannot express)
  infeasible,   // no schedule meets the limits (memory cap, in-flight limit)
  deadlock,     // a table whose ranks wait on each other forever
  io,           // a file cannot be read (the tools that load schedules and costs)
};

// A short description ("parse error", "deadlock").
const char* to_string(errc code);

}  // namespace banyan::pipeline

BANYAN_ERROR_ENUM(banyan::pipeline::errc, "pipeline");
