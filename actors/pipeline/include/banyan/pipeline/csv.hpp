// The CSV form of an action table used by torch.distributed.pipelining (`_dump_csv`/`_load_csv`):
// one row per rank, one action per cell in its text form (`2F0`, `1SEND_F3`), no header. Empty cells
// (torch writes them for idle slots) are skipped. The placement is inferred (see infer_shape).
#pragma once

#include <banyan/pipeline/action.hpp>

#include <string>
#include <string_view>

namespace banyan::pipeline {

// `source` names the input in errors: "<source>:<line>:<col>: <what>".
result<table> read_csv(std::string_view text, const std::string& source = "csv");
std::string write_csv(const table& t);

}  // namespace banyan::pipeline
