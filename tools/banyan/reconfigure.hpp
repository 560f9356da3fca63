// Live reconfiguration on the launch's side (docs/runtime.md, "Moving subtrees live"): which
// subtrees a new deployment moves, and asking the running nodes to move them, one at a time.
#pragma once

#include "banyan/base/error.hpp"
#include "banyan/partitioner/error.hpp"
#include "banyan/partitioner/io.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace banyan::cli {

struct planned_move {
  std::string path;  // the subtree's root
  std::string from, to;
};

// The moves that turn `now` into `next`: each assigned subtree whose node differs, shallower ones
// first (a deeper assignment then moves back what its ancestor's move took along). Errors: the new
// deployment has other nodes or endpoints (a reconfiguration moves components between the running
// nodes), or no assignment for the root.
result<std::vector<planned_move>> moves_between(const partitioner::deployment& now, const partitioner::deployment& next);

// Runs `moves` in order on the nodes of a launch: node N's request goes to scratch/N.live.move.req,
// its answer comes in scratch/N.live.move.json (the SDK's live_profile). `wait(ms)` lets the launch
// go on with its own work (the nodes' output) meanwhile; `ended(node)` says why that node will not
// answer (it ended), or nothing. Stops at the first move that fails, or that takes longer than `limit`.
// Returns {"moves": [each node's answer], "error": ... on failure}.
nlohmann::json run_moves(const std::vector<planned_move>& moves, const std::filesystem::path& scratch,
                         const std::function<void(std::chrono::milliseconds)>& wait,
                         const std::function<std::string(const std::string& node)>& ended,
                         std::chrono::milliseconds limit = std::chrono::seconds(30));

}  // namespace banyan::cli
