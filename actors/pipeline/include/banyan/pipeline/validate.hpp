// The validator: proves an action table can run to completion and computes what it should.
// Checks, in this order, and returns the first violation found (ranks in order, steps in order):
//   1. placement: every compute action runs on the rank that owns its stage; indices in range;
//      communication peers match the placement;
//   2. completeness: every stage runs each of the m microbatches forward exactly once and backward
//      exactly once, either as B or as I followed by W (never both forms);
//   3. per-rank order: B or I of (stage, microbatch) comes after its F, W after its I; a SEND comes
//      after the compute that produces what it sends;
//   4. cross-stage dependencies: F(s,k) needs F(s-1,k), B/I(s,k) needs B/I(s+1,k); in a lowered table
//      the data must arrive through a matching RECV on this rank, every SEND has its RECV and back;
//   5. no deadlock: stepping every rank in order (sends are eager, receives block) finishes.
// Cost: O(actions x ranks) time, O(stages x microbatches) memory.
#pragma once

#include <banyan/pipeline/action.hpp>

#include <optional>
#include <string>

namespace banyan::pipeline {

struct violation {
  int rank = -1;        // -1 when the violation is about the table as a whole
  int step = -1;        // index into ranks[rank]; ranks[rank].size() means "at the end of the rank"
  std::string message;  // includes "rank R step S (ACTION): ..." so it can be printed alone
};

std::optional<violation> validate(const table& t);

}  // namespace banyan::pipeline
