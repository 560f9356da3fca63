// What both trainers do for `--workers` (private): check the request against the backend and the
// batch, discover the machine, place the workers, and the lines that describe them.
#pragma once

#include "banyan/trainer/options.hpp"

#include <banyan/cpu/topology.hpp>
#include <banyan/cpu/worker_group.hpp>

#include "banyan/trainer/worker_leaves.hpp"

#include <string>

namespace banyan::trainer {

struct worker_plan {
  cpu::topology topo;
  cpu::placement where;
  int per_worker_batch = 0;
};

// Errors (errc::invalid_argument, exit 2) name the flag: a bad --workers, --backend other than cpu,
// a --batch that the workers do not divide, --share-params without --workers.
result<worker_plan> plan_workers(const common_options& o, int batch);

// A trainer with workers needs as many worker leaves as the plan places on this node; the error
// (errc::invalid_argument) names `trainer` and says what to do.
result<void> check_worker_leaves(const worker_hub* hub, const worker_plan& plan, const common_options& o,
                                 const std::string& trainer);

// "topology: 1 package, 1 NUMA domain, 2 cores, 2 PUs; 2 workers (per-core), batch 8 each: numa0 {...}"
std::string describe(const worker_plan& plan, const common_options& o);
// "memory: parameters 1.2 MiB x 3 copies (master + 2 replicas), gradients ..., total ..."
std::string describe(const cpu::memory_report& m, bool shared);

}  // namespace banyan::trainer
