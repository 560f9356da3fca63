// Hibernate and wake on the launch's side (docs/runtime.md, "Hibernate and wake"): which node to
// ask about a subtree, and `banyan launch --plan`, which follows a periodic plan's timetable: each
// subtree is woken on its plan node at the start of each of its awake runs and put to sleep (with
// its keep-alive) at the end, the plan repeating every horizon from the moment every node started.
#pragma once

#include "banyan/control.hpp"

#include "banyan/partitioner/io.hpp"
#include "banyan/partitioner/periodic.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace banyan::cli {

// The node that runs `path` in `d`: that of its deepest assignment, itself or an ancestor (empty
// when none covers it).
std::string node_of_path(const partitioner::deployment& d, const std::string& path);

// Reads plan `file` for deployment `d` (docs/formats.md, "Periodic plan"): the plan's own subtrees,
// slot and horizon, and `d`'s nodes; a plan for another deployment (fingerprint), an unknown node or
// an interval outside the horizon is an error naming file:line.
result<partitioner::periodic::plan_file> load_plan_for(const std::string& file, const partitioner::deployment& d,
                                                       std::vector<std::string>& paths, double& slot, double& horizon);

// Follows a plan on a running launch: `step` is called from the launch's loop (never blocks).
class plan_driver {
 public:
  plan_driver(partitioner::periodic::plan_file plan, std::vector<std::string> paths, double slot, double horizon);

  // Sends what is due `elapsed` seconds after the start to the nodes over `controls` (one request at
  // a time per subtree, in order), reads their answers, and keeps `running` (where each subtree
  // runs) true to the wakes that moved one. Logs each failure.
  void step(double elapsed, node_controls& controls, partitioner::deployment& running, bool quiet);

  struct totals {
    std::uint64_t wakes = 0, sleeps = 0, failed = 0;
  };
  const totals& done() const { return totals_; }

 private:
  struct change {
    double at;  // seconds since the start
    bool wake;
  };
  struct subtree {
    std::string path;
    std::int64_t keep_ms = 0;
    std::vector<change> cycle;                    // one horizon's changes, by time
    std::size_t next = 0;                         // into the endless repetition of `cycle`
    std::vector<std::vector<std::string>> queue;  // requests due, not sent
    std::optional<std::uint64_t> asked;           // the request on its way
    std::string asked_node;
    std::vector<std::string> asked_request;
  };
  void answer(subtree& s, const std::string& reply, partitioner::deployment& running, bool quiet);

  partitioner::periodic::plan_file plan_;
  std::vector<subtree> subtrees_;  // as the plan's
  double horizon_;
  bool started_ = false;
  totals totals_;
};

}  // namespace banyan::cli
