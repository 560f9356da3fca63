#include "banyan/cpu/topology.hpp"

#include <hwloc.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>

namespace banyan::cpu {

namespace {

struct bitmap {
  hwloc_bitmap_t b = hwloc_bitmap_alloc();
  bitmap() = default;
  bitmap(const bitmap&) = delete;
  bitmap& operator=(const bitmap&) = delete;
  ~bitmap() { hwloc_bitmap_free(b); }
};

std::string plural(int n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

std::string pu_list(const std::vector<int>& pus) {
  std::string s = pus.size() == 1 ? "PU " : "PUs ";
  for (std::size_t i = 0; i < pus.size(); ++i) s += (i ? "," : "") + std::to_string(pus[i]);
  return s;
}

result<topology> load(const char* synthetic_description, auto&& fill) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) return error{errc::topology, "hwloc: cannot initialise a topology"};
  std::shared_ptr<hwloc_topology> topo(raw, [](hwloc_topology_t t) { hwloc_topology_destroy(t); });
  if (synthetic_description != nullptr && hwloc_topology_set_synthetic(raw, synthetic_description) != 0) {
    return error{errc::invalid_argument,
                 std::string("synthetic topology `") + synthetic_description + "`: hwloc cannot parse it"};
  }
  if (hwloc_topology_load(raw) != 0) {
    return error{errc::topology, std::string("hwloc: cannot load the topology: ") + std::strerror(errno)};
  }
  return fill(std::move(topo));
}

}  // namespace

// Reads packages, NUMA domains and cores out of a loaded hwloc topology. NUMA nodes are memory
// children in hwloc 2, not ancestors of cores, so a core's domain is the first NUMA node whose cpuset
// holds the core's.
struct topology_reader {
  static topology read(std::shared_ptr<hwloc_topology> topo, bool this_system) {
    topology t;
    hwloc_topology_t h = topo.get();
    t.packages_ = std::max(1, hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_PACKAGE));
    const int numa = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_NUMANODE);
    t.numa_ = std::max(1, numa);
    const int ncores = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_CORE);
    // Some virtual machines report PUs without cores: then every PU is a core.
    const hwloc_obj_type_t core_type = ncores > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
    const int n = ncores > 0 ? ncores : hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_PU);
    for (int i = 0; i < n; ++i) {
      hwloc_obj_t core = hwloc_get_obj_by_type(h, core_type, static_cast<unsigned>(i));
      core_info c;
      c.index = i;
      if (hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(h, HWLOC_OBJ_PACKAGE, core)) {
        c.package = static_cast<int>(pkg->logical_index);
      }
      for (int d = 0; d < numa; ++d) {
        hwloc_obj_t node = hwloc_get_obj_by_type(h, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(d));
        if (node->cpuset != nullptr && hwloc_bitmap_isincluded(core->cpuset, node->cpuset)) {
          c.numa = d;
          break;
        }
      }
      for (int pu = hwloc_bitmap_first(core->cpuset); pu >= 0; pu = hwloc_bitmap_next(core->cpuset, pu)) {
        c.pus.push_back(pu);
      }
      if (!c.pus.empty()) t.cores_.push_back(std::move(c));
    }
    t.topo_ = std::move(topo);
    t.this_system_ = this_system;
    return t;
  }
};

result<topology> topology::discover() {
  return load(nullptr, [](std::shared_ptr<hwloc_topology> topo) -> result<topology> {
    const bool mine = hwloc_topology_is_thissystem(topo.get()) != 0;
    topology t = topology_reader::read(std::move(topo), mine);
    if (t.cores_.empty()) return error{errc::topology, "hwloc: this process may run on no core"};
    return t;
  });
}

result<topology> topology::synthetic(std::string_view description) {
  const std::string d(description);
  return load(d.c_str(), [&](std::shared_ptr<hwloc_topology> topo) -> result<topology> {
    topology t = topology_reader::read(std::move(topo), false);
    if (t.cores_.empty()) return error{errc::invalid_argument, "synthetic topology `" + d + "`: no cores"};
    return t;
  });
}

int topology::pus() const {
  int n = 0;
  for (const auto& c : cores_) n += static_cast<int>(c.pus.size());
  return n;
}

std::string topology::summary() const {
  return plural(packages_, "package", "packages") + ", " + plural(numa_, "NUMA domain", "NUMA domains") + ", " +
         plural(cores(), "core", "cores") + ", " + plural(pus(), "PU", "PUs");
}

result<void> topology::bind_current_thread(const std::vector<int>& pus) const {
  if (!this_system_)
    return error{errc::unsupported, "cannot bind to " + pu_list(pus) + ": the topology is not this machine's"};
  bitmap set;
  for (int pu : pus) hwloc_bitmap_set(set.b, static_cast<unsigned>(pu));
  if (hwloc_set_cpubind(topo_.get(), set.b, HWLOC_CPUBIND_THREAD) != 0) {
    return error{errc::unsupported, "cannot bind a worker thread to " + pu_list(pus) + ": " + std::strerror(errno)};
  }
  return {};
}

result<worker_request> worker_request::parse(std::string_view text) {
  if (text == "per-core") return worker_request{kind::per_core, 0};
  if (text == "per-pu") return worker_request{kind::per_pu, 0};
  int n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc{} || end != text.data() + text.size() || n <= 0) {
    return error{errc::invalid_argument,
                 "--workers `" + std::string(text) + "`: must be `per-core`, `per-pu` or a positive count"};
  }
  return worker_request{kind::count, n};
}

std::string worker_request::to_string() const {
  switch (what) {
    case kind::per_core: return "per-core";
    case kind::per_pu: return "per-pu";
    case kind::count: return std::to_string(count);
  }
  return "?";
}

result<placement> place(const topology& topo, const worker_request& request) {
  std::vector<worker_slot> slots;
  const auto& cores = topo.core_list();
  switch (request.what) {
    case worker_request::kind::per_core:
      for (const auto& c : cores) slots.push_back({0, c.numa, c.index, c.pus});
      break;
    case worker_request::kind::per_pu:
      for (const auto& c : cores) {
        for (int pu : c.pus) slots.push_back({0, c.numa, c.index, {pu}});
      }
      break;
    case worker_request::kind::count:
      if (request.count <= 0) {
        return error{errc::invalid_argument, "--workers " + std::to_string(request.count) + ": must be positive"};
      }
      for (int i = 0; i < request.count; ++i) {
        const auto& c = cores[static_cast<std::size_t>(i) % cores.size()];
        slots.push_back({0, c.numa, c.index, c.pus});
      }
      break;
  }
  placement p;
  p.oversubscribed = request.what == worker_request::kind::count && request.count > topo.cores();
  // Group by NUMA domain (ascending), keeping the order inside each; renumber workers in that order.
  std::map<int, std::vector<worker_slot>> by_domain;
  for (auto& s : slots) by_domain[s.numa].push_back(std::move(s));
  for (auto& [numa, members] : by_domain) {
    (void)numa;
    const int d = static_cast<int>(p.domains.size());
    p.domains.emplace_back();
    for (auto& s : members) {
      s.worker = p.size();
      s.numa = d;
      p.domains.back().push_back(s.worker);
      p.workers.push_back(std::move(s));
    }
  }
  return p;
}

std::string placement::describe() const {
  std::string s;
  for (std::size_t d = 0; d < domains.size(); ++d) {
    s += (d ? ", " : "") + std::string("numa") + std::to_string(d) + " {";
    for (std::size_t i = 0; i < domains[d].size(); ++i) {
      const auto& w = workers[static_cast<std::size_t>(domains[d][i])];
      s += (i ? ", " : "") + std::string("w") + std::to_string(w.worker) + " core" + std::to_string(w.core) + " [" +
           pu_list(w.pus) + "]";
    }
    s += "}";
  }
  return s;
}

}  // namespace banyan::cpu
