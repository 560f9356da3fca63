// The machine as hwloc sees it (packages, NUMA domains, cores, PUs) and where data-parallel workers go
// on it: one worker per core (or per PU, or the first N cores), grouped by NUMA domain. The groups are
// the reduction tree: a gradient server per NUMA domain sums its workers in worker order, the
// node-level server sums the domains in domain order (worker_group.hpp).
//
// topology is a value once loaded (copies share one immutable hwloc topology; every method is
// thread-safe). Only the cores and PUs this process may run on are seen (taskset, cgroups).
#pragma once

#include "banyan/cpu/error.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct hwloc_topology;

namespace banyan::cpu {

struct topology_reader;

struct core_info {
  int package = 0;       // logical index of its package
  int numa = 0;          // logical index of the NUMA domain holding it
  int index = 0;         // logical index of the core
  std::vector<int> pus;  // OS indexes of its PUs (hardware threads)
};

class topology {
 public:
  // This machine. Fails with errc::topology when hwloc cannot load it.
  static result<topology> discover();
  // A made-up machine in hwloc's synthetic syntax ("pack:1 numa:2 core:2 pu:1"), for tests: places
  // workers like a real one, but workers on it are never bound (this_system() is false).
  static result<topology> synthetic(std::string_view description);

  int packages() const { return packages_; }
  int numa_domains() const { return numa_; }
  int cores() const { return static_cast<int>(cores_.size()); }
  int pus() const;
  const std::vector<core_info>& core_list() const { return cores_; }
  bool this_system() const { return this_system_; }
  // "1 package, 1 NUMA domain, 2 cores, 2 PUs"
  std::string summary() const;

  // Binds the calling thread to the given PUs (OS indexes). Fails with errc::unsupported on a
  // synthetic topology or when the OS refuses (the message says which PUs).
  result<void> bind_current_thread(const std::vector<int>& pus) const;

 private:
  friend struct topology_reader;
  std::shared_ptr<hwloc_topology> topo_;
  int packages_ = 0, numa_ = 0;
  std::vector<core_info> cores_;
  bool this_system_ = false;
};

// What `--workers` asks for.
struct worker_request {
  enum class kind { per_core, per_pu, count } what = kind::per_core;
  int count = 0;  // for kind::count
  // "per-core", "per-pu" or a positive integer; anything else is errc::invalid_argument naming it.
  static result<worker_request> parse(std::string_view text);
  std::string to_string() const;
};

struct worker_slot {
  int worker = 0;        // 0..N-1, the fixed order of the reduction
  int numa = 0;          // its gradient server (index into placement::domains)
  int core = 0;          // logical core index
  std::vector<int> pus;  // OS PUs it is bound to: the core's PUs, or one PU for per-pu
};

struct placement {
  std::vector<worker_slot> workers;
  // Per NUMA domain that has workers, the worker indexes in reduction order.
  std::vector<std::vector<int>> domains;
  bool oversubscribed = false;  // more workers than cores (count > cores): cores are reused in order
  int size() const { return static_cast<int>(workers.size()); }
  // "numa0 {w0 core0 [PU 0], w1 core1 [PU 1]}, numa1 {...}"
  std::string describe() const;
};

// per-core: every core; per-pu: every PU; count N: cores 0..N-1 in hwloc's order (which fills one NUMA
// domain before the next), reusing cores from the first when N exceeds them (oversubscribed).
result<placement> place(const topology& topo, const worker_request& request);

}  // namespace banyan::cpu
