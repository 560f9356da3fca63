// The partitioner's error codes. Errors are `banyan::error` values (banyan/base/error.hpp) whose
// message names the input and where it is wrong ("cluster.yaml:4:5: node `n1`: capacity.cpu must be a
// number"), so tools print it as is.
#pragma once

#include "banyan/base/result.hpp"

namespace banyan::partitioner {

enum class errc {
  io,                 // a file cannot be read or written
  parse,              // malformed JSON or YAML (message carries file:line:col)
  invalid,            // well-formed but wrong: missing field, negative load, bad link-cost matrix
  not_a_tree,         // cycle, two roots, unknown parent, duplicate path
  over_capacity,      // total load above total capacity, or a component heavier than every node
  unknown_algorithm,  // a name `make_algorithm` does not know
};

const char* to_string(errc code);

// The module's results are banyan's.
using banyan::error;
using banyan::result;

}  // namespace banyan::partitioner

BANYAN_ERROR_ENUM(banyan::partitioner::errc, "partitioner");
