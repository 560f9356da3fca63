#include "reconfigure.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

namespace banyan::cli {
namespace {

// The node of `path` under `assigned` (path -> node name): its own assignment, else its nearest
// assigned ancestor's.
std::string node_of(const std::map<std::string, std::string>& assigned, std::string path) {
  while (true) {
    if (auto it = assigned.find(path); it != assigned.end()) return it->second;
    const auto cut = path.rfind('/');
    if (cut == 0 || cut == std::string::npos) return {};
    path.resize(cut);
  }
}

std::map<std::string, std::string> assignments(const partitioner::deployment& d) {
  std::map<std::string, std::string> out;
  for (const auto& a : d.assignments) out[a.path] = d.c.nodes[a.node].name;
  return out;
}

}  // namespace

result<std::vector<planned_move>> moves_between(const partitioner::deployment& now, const partitioner::deployment& next) {
  auto refuse = [&](const std::string& why) { return error{partitioner::errc::invalid, next.name + ": " + why}; };
  if (now.c.nodes.size() != next.c.nodes.size()) return refuse("it has other nodes than the running deployment " + now.name);
  for (std::size_t i = 0; i < now.c.nodes.size(); ++i) {
    const auto& a = now.c.nodes[i];
    const auto& b = next.c.nodes[i];
    if (a.name != b.name || a.endpoint != b.endpoint)
      return refuse("node " + std::to_string(i) + " is `" + b.name + "` at " + b.endpoint + ", but the running deployment " +
                    now.name + " has `" + a.name + "` at " + a.endpoint + " (a reconfiguration moves components between the running nodes)");
  }
  auto current = assignments(now);
  const auto wanted = assignments(next);
  std::vector<std::string> paths;
  for (const auto& [p, n] : wanted) paths.push_back(p);
  for (const auto& [p, n] : current)
    if (!wanted.count(p)) paths.push_back(p);
  auto depth = [](const std::string& p) { return std::count(p.begin(), p.end(), '/'); };
  std::stable_sort(paths.begin(), paths.end(), [&](const auto& a, const auto& b) { return depth(a) < depth(b); });
  std::vector<planned_move> out;
  for (const auto& p : paths) {
    const std::string from = node_of(current, p), to = node_of(wanted, p);
    if (to.empty()) return refuse("no assignment for `" + p + "` nor any ancestor of it (the root needs one)");
    if (from == to) continue;
    out.push_back({p, from, to});
    current[p] = to;  // what the move does: the subtree goes along, except parts assigned elsewhere
  }
  return out;
}

nlohmann::json run_moves(const std::vector<planned_move>& moves, const std::filesystem::path& scratch,
                         const std::function<void(std::chrono::milliseconds)>& wait,
                         const std::function<std::string(const std::string& node)>& ended, std::chrono::milliseconds limit) {
  namespace fs = std::filesystem;
  nlohmann::json out = {{"moves", nlohmann::json::array()}};
  for (const auto& m : moves) {
    const fs::path answer = scratch / (m.from + ".live.move.json");
    const fs::path request = scratch / (m.from + ".live.move.req");
    fs::remove(answer);
    {
      std::ofstream(request.string() + ".tmp") << m.path << " " << m.to << "\n";
    }
    fs::rename(request.string() + ".tmp", request);  // the node never reads half a request
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!fs::exists(answer) && std::chrono::steady_clock::now() < until) {
      wait(std::chrono::milliseconds(10));
      if (auto why = ended(m.from); !why.empty()) {
        out["error"] = "move of `" + m.path + "` from `" + m.from + "` to `" + m.to + "`: " + why;
        return out;
      }
    }
    if (!fs::exists(answer)) {
      out["error"] = "node `" + m.from + "` did not answer the move of `" + m.path + "` within " +
                     std::to_string(limit.count() / 1000) + " s";
      return out;
    }
    std::ifstream in(answer);
    std::stringstream text;
    text << in.rdbuf();
    auto a = nlohmann::json::parse(text.str(), nullptr, false);
    if (!a.is_object()) {
      out["error"] = "node `" + m.from + "` answered the move of `" + m.path + "` with something that is not JSON: " +
                     text.str().substr(0, 200);
      return out;
    }
    out["moves"].push_back(a);
    if (a.contains("error")) {
      out["error"] = "move of `" + m.path + "` from `" + m.from + "` to `" + m.to + "`: " + a["error"].get<std::string>();
      return out;
    }
  }
  return out;
}

}  // namespace banyan::cli
