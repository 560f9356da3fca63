// Live reconfiguration on the launch's side (docs/runtime.md, "Moving subtrees live"): which
// subtrees a new deployment moves, and asking the running nodes to move them, one at a time.
#pragma once

#include "banyan/base/error.hpp"
#include "banyan/partitioner/error.hpp"
#include "banyan/partitioner/io.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace banyan::cli {

struct planned_move {
  std::string path;  // the subtree's root
  std::string from, to;
  // Empty for a move the new deployment asks for. Otherwise the path whose move needs this one: a
  // live move takes a whole subtree from one node (docs/runtime.md), so the parts of that subtree
  // that run elsewhere are gathered onto its node first, and moved on to where they belong after.
  std::string gathers_for;
};

// The moves that turn `now` into `next`, shallower subtrees first: each assigned subtree whose node
// differs moves whole, after the parts of it on other nodes are gathered onto its node; a deeper
// assignment then moves back out what its ancestor's move took along. Errors: the new deployment
// has other nodes or endpoints (a reconfiguration moves components between the running nodes), no
// assignment for the root, or puts the root on another node (the root does not move).
result<std::vector<planned_move>> moves_between(const partitioner::deployment& now,
                                                const partitioner::deployment& next);

// The assignments `now` has after `moves` (for example those of a reconfiguration that stopped
// part way): each move takes its whole subtree along.
std::vector<partitioner::assignment> after_moves(const partitioner::deployment& now,
                                                 const std::vector<planned_move>& moves);

// How run_moves reaches the node that coordinates a move: `ask(node, request)` sends one request
// (`move PATH NODE`) to the node's control channel (the SDK's control_channel.hpp) and returns its
// id; `reply(node, id)` is its answer (one frame, the move's JSON outcome) once it has come.
struct move_channel {
  std::function<std::uint64_t(const std::string& node, const std::vector<std::string>& request)> ask;
  std::function<std::optional<std::vector<std::string>>(const std::string& node, std::uint64_t id)> reply;
};

// Runs `moves` in order on the nodes of a launch: each is asked of its old node over `channel`.
// `wait(ms)` lets the launch go on with its own work (the nodes' output) meanwhile; `ended(node)`
// says why that node will not answer (it ended), or nothing. Stops at the first move that fails, or
// that takes longer than `limit`. Returns {"moves": [each node's answer], "error": ... on failure}.
nlohmann::json run_moves(const std::vector<planned_move>& moves, const move_channel& channel,
                         const std::function<void(std::chrono::milliseconds)>& wait,
                         const std::function<std::string(const std::string& node)>& ended,
                         std::chrono::milliseconds limit = std::chrono::seconds(30));

}  // namespace banyan::cli
