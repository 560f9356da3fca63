// Running under a cluster's launcher (mpirun, srun): which host each rank runs on.
//
// Rank i of a launcher runs the i-th node of the deployment (docs/runtime.md, "Launchers"). A
// deployment's endpoints may name that node's host as `{host}` (`tcp://{host}:7100`); the host of
// rank i comes from the launcher's host list:
//  - BANYAN_HOSTS, in Open MPI's `--host` syntax: `a,b:2,c` (a host with `:N` takes N consecutive
//    ranks), as `banyan launch --via mpirun --hosts LIST` passes it to every rank; else
//  - Slurm's layout of the step: SLURM_STEP_NODELIST (`n[01-03,7],gpu5`) with
//    SLURM_STEP_TASKS_PER_NODE (`2(x3),1`), ranks filled host by host (srun's default block
//    distribution; SLURM_DISTRIBUTION=cyclic... is refused, it would place ranks elsewhere).
#pragma once

#include "banyan/base/result.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace banyan::launcher {

// The host of every rank, in rank order, from the first source above that is set; empty when none
// is. Errors name the variable and what in it is wrong.
result<std::vector<std::string>> hosts_by_rank();

// The parsers behind it (the variable's name only prefixes errors).
// "a,b:2,c" -> a b b c.
result<std::vector<std::string>> parse_host_slots(std::string_view list, std::string_view variable);
// Slurm's compressed host list: "n[01-03,7],gpu5" -> n01 n02 n03 n7 gpu5 (zero padding kept).
result<std::vector<std::string>> expand_slurm_hostlist(std::string_view list, std::string_view variable);
// Slurm's tasks per node: "2(x3),1" -> 2 2 2 1.
result<std::vector<std::size_t>> expand_slurm_tasks(std::string_view list, std::string_view variable);

}  // namespace banyan::launcher
