#include "banyan/broker/profile.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>

namespace banyan {

std::vector<component_load> load_meter::snapshot() const {
  std::vector<component_load> out(cells_.size());
  for (std::size_t i = 0; i < cells_.size(); ++i) {
    out[i].messages = cells_[i].messages.load(std::memory_order_relaxed);
    out[i].cpu_seconds = static_cast<double>(cells_[i].busy_ns.load(std::memory_order_relaxed)) * 1e-9;
    out[i].memory = cells_[i].memory.load(std::memory_order_relaxed);
  }
  return out;
}

nlohmann::json profile::to_json() const {
  using nlohmann::json;
  json components = json::array();
  json edge_list = json::array();
  for (vertex_id v = 0; v < tree->size(); ++v) {
    const component_load load = v < loads.size() ? loads[v] : component_load{};
    components.push_back({
        {"path", tree->path(v)},
        {"parent", v == 0 ? json(nullptr) : json(tree->path(tree->parent(v)))},
        {"kind", v < composite.size() && composite[v] ? "composite" : "leaf"},
        {"load", {{"cpu", load.cpu_seconds}, {"messages", load.messages}, {"memory", load.memory}}},
    });
    if (v != 0 && v < edges.size() && (edges[v].messages || edges[v].bytes)) {
      edge_list.push_back({{"parent", tree->path(tree->parent(v))},
                           {"child", tree->path(v)},
                           {"messages", edges[v].messages},
                           {"bytes", edges[v].bytes}});
    }
  }
  return {{"format", "banyan-profile"}, {"version", 1}, {"mode", to_string(mode)},
          {"duration_s", duration_s}, {"components", components}, {"edges", edge_list}};
}

result<void> profile::write(const std::string& path) const {
  std::ofstream out(path);
  if (!out) return error{errc::io, "profile `" + path + "`: cannot open for writing"};
  out << to_json().dump(1) << "\n";
  if (!out) return error{errc::io, "profile `" + path + "`: write failed"};
  return {};
}

std::string profile::traffic_table(std::size_t max_rows) const {
  std::vector<vertex_id> used;
  std::uint64_t total_messages = 0, total_bytes = 0;
  for (vertex_id v = 1; v < edges.size(); ++v) {
    if (edges[v].messages == 0) continue;
    used.push_back(v);
    total_messages += edges[v].messages;
    total_bytes += edges[v].bytes;
  }
  std::sort(used.begin(), used.end(), [&](vertex_id a, vertex_id b) {
    return edges[a].messages != edges[b].messages ? edges[a].messages > edges[b].messages : a < b;
  });
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-44s %10s %12s\n", "edge (parent -> child)", "messages", "bytes");
  out += line;
  for (std::size_t i = 0; i < used.size() && i < max_rows; ++i) {
    vertex_id v = used[i];
    std::string name = tree->path(tree->parent(v)) + " -> " + tree->path(v).substr(tree->path(tree->parent(v)).size() + 1);
    std::snprintf(line, sizeof line, "%-44s %10llu %12llu\n", name.c_str(),
                  static_cast<unsigned long long>(edges[v].messages), static_cast<unsigned long long>(edges[v].bytes));
    out += line;
  }
  if (used.size() > max_rows) out += "  ... " + std::to_string(used.size() - max_rows) + " more edges\n";
  std::snprintf(line, sizeof line, "%-44s %10llu %12llu   (%s, %zu edges used)\n", "total edge traffic",
                static_cast<unsigned long long>(total_messages), static_cast<unsigned long long>(total_bytes),
                to_string(mode), used.size());
  out += line;
  return out;
}

}  // namespace banyan
