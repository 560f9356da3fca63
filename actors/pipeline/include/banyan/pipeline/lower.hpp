// Lowering: inserts the point-to-point communication that a compute-only table implies.
// Rule (one per cross-rank edge): a RECV right before the compute that consumes remote data, a SEND
// right after the compute that produces data for a remote stage. Same-rank neighbours (e.g. the turn
// of a V-shape placement) exchange nothing. Sends are modelled as eager (non-blocking, buffered), as
// with batched isend/irecv, so a dependency-respecting compute order lowers to a deadlock-free table.
#pragma once

#include <banyan/pipeline/action.hpp>

namespace banyan::pipeline {

table lower_comms(const table& compute_only);  // existing comm actions are dropped first
table strip_comms(const table& t);

}  // namespace banyan::pipeline
