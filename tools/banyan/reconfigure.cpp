#include "reconfigure.hpp"

#include <algorithm>
#include <map>

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

bool under(const std::string& q, const std::string& p) {
  return q.size() > p.size() && q.compare(0, p.size(), p) == 0 && q[p.size()] == '/';
}

std::string parent_of(const std::string& path) { return path.substr(0, path.rfind('/')); }

// What a move does to the assignments: the subtree goes whole, its assigned parts included.
void apply_move(std::map<std::string, std::string>& assigned, const planned_move& m) {
  for (auto& [q, n] : assigned)
    if (under(q, m.path)) n = m.to;
  assigned[m.path] = m.to;
}

// Plans whole-subtree moves on `current`, which follows them.
struct planner {
  std::map<std::string, std::string> current;
  std::vector<planned_move> out;

  void move(const std::string& p, const std::string& to, const std::string& gathers_for) {
    const std::string from = node_of(current, p);
    if (from == to) return;
    gather(p, from, gathers_for.empty() ? p : gathers_for);
    out.push_back({p, from, to, gathers_for});
    apply_move(current, out.back());
  }

  // Makes p's subtree run wholly on `node`: each outermost part of it that runs elsewhere (its
  // ancestors below p all run on `node`) moves there, whole, gathering its own parts first.
  void gather(const std::string& p, const std::string& node, const std::string& why) {
    std::vector<std::string> parts;
    for (const auto& [q, n] : current) {
      if (!under(q, p) || n == node) continue;
      bool outermost = true;
      for (std::string a = parent_of(q); a != p && outermost; a = parent_of(a)) outermost = node_of(current, a) == node;
      if (outermost) parts.push_back(q);
    }
    for (const auto& q : parts) move(q, node, why);
  }
};

}  // namespace

result<std::vector<planned_move>> moves_between(const partitioner::deployment& now,
                                                const partitioner::deployment& next) {
  auto refuse = [&](const std::string& why) { return error{partitioner::errc::invalid, next.name + ": " + why}; };
  if (now.c.nodes.size() != next.c.nodes.size())
    return refuse("it has other nodes than the running deployment " + now.name);
  for (std::size_t i = 0; i < now.c.nodes.size(); ++i) {
    const auto& a = now.c.nodes[i];
    const auto& b = next.c.nodes[i];
    if (a.name != b.name || a.endpoint != b.endpoint)
      return refuse("node " + std::to_string(i) + " is `" + b.name + "` at " + b.endpoint +
                    ", but the running deployment " + now.name + " has `" + a.name + "` at " + a.endpoint +
                    " (a reconfiguration moves components between the running nodes)");
  }
  planner plan{assignments(now), {}};
  const auto wanted = assignments(next);
  std::vector<std::string> paths;
  for (const auto& [p, n] : wanted) paths.push_back(p);
  for (const auto& [p, n] : plan.current)
    if (!wanted.count(p)) paths.push_back(p);
  auto depth = [](const std::string& p) { return std::count(p.begin(), p.end(), '/'); };
  std::stable_sort(paths.begin(), paths.end(), [&](const auto& a, const auto& b) { return depth(a) < depth(b); });
  for (const auto& p : paths) {
    const std::string from = node_of(plan.current, p), to = node_of(wanted, p);
    if (to.empty()) return refuse("no assignment for `" + p + "` nor any ancestor of it (the root needs one)");
    if (from == to) continue;
    if (depth(p) == 1)
      return refuse("it puts the root `" + p + "` on `" + to + "`, but it runs on `" + from +
                    "` and the root does not move live (a fresh launch can start it there)");
    plan.move(p, to, {});
  }
  for (const auto& p : paths)  // the planner's own check: every path ends where NEW puts it
    if (node_of(plan.current, p) != node_of(wanted, p))
      return error{partitioner::errc::invalid, "internal: the planned moves leave `" + p + "` on `" +
                                                   node_of(plan.current, p) + "`, not `" + node_of(wanted, p) + "`"};
  return std::move(plan.out);
}

std::vector<partitioner::assignment> after_moves(const partitioner::deployment& now,
                                                 const std::vector<planned_move>& moves) {
  auto assigned = assignments(now);
  for (const auto& m : moves) apply_move(assigned, m);
  std::vector<partitioner::assignment> out;
  for (const auto& [p, n] : assigned) out.push_back({p, now.c.find(n), 0});
  return out;
}

nlohmann::json run_moves(const std::vector<planned_move>& moves, const move_channel& channel,
                         const std::function<void(std::chrono::milliseconds)>& wait,
                         const std::function<std::string(const std::string& node)>& ended,
                         std::chrono::milliseconds limit) {
  nlohmann::json out = {{"moves", nlohmann::json::array()}};
  for (const auto& m : moves) {
    const std::uint64_t id = channel.ask(m.from, {"move", m.path, m.to});
    const auto until = std::chrono::steady_clock::now() + limit;
    std::optional<std::vector<std::string>> reply;
    while (!(reply = channel.reply(m.from, id)) && std::chrono::steady_clock::now() < until) {
      wait(std::chrono::milliseconds(2));
      if (auto why = ended(m.from); !why.empty()) {
        out["error"] = "move of `" + m.path + "` from `" + m.from + "` to `" + m.to + "`: " + why;
        return out;
      }
    }
    if (!reply) {
      out["error"] = "node `" + m.from + "` did not answer the move of `" + m.path + "` within " +
                     std::to_string(limit.count() / 1000) + " s";
      return out;
    }
    auto a = reply->size() == 1 ? nlohmann::json::parse(reply->front(), nullptr, false) : nlohmann::json();
    if (!a.is_object()) {
      out["error"] = "node `" + m.from + "` answered the move of `" + m.path +
                     "` with something that is not a JSON object: " +
                     (reply->empty() ? std::string() : reply->front().substr(0, 200));
      return out;
    }
    if (!m.gathers_for.empty()) a["gathers_for"] = m.gathers_for;
    out["moves"].push_back(a);
    if (a.contains("error")) {
      out["error"] =
          "move of `" + m.path + "` from `" + m.from + "` to `" + m.to + "`: " + a["error"].get<std::string>();
      return out;
    }
  }
  return out;
}

}  // namespace banyan::cli
