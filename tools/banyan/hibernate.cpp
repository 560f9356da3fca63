#include "banyan/hibernate.hpp"

#include "banyan/reconfigure.hpp"

#include "banyan/base/log.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace banyan::cli {
namespace {
constexpr const char* tool = "banyan launch";
}  // namespace

std::string node_of_path(const partitioner::deployment& d, const std::string& path) {
  std::string node;
  std::size_t longest = 0;
  for (const auto& a : d.assignments) {
    const bool covers = path == a.path || (path.size() > a.path.size() && path.compare(0, a.path.size(), a.path) == 0 &&
                                           path[a.path.size()] == '/');
    if (covers && a.path.size() >= longest) {
      longest = a.path.size();
      node = d.c.nodes[static_cast<std::size_t>(a.node)].name;
    }
  }
  return node;
}

result<partitioner::periodic::plan_file> load_plan_for(const std::string& file, const partitioner::deployment& d,
                                                       std::vector<std::string>& paths, double& slot, double& horizon) {
  partitioner::periodic::workload shape;
  auto plan = partitioner::periodic::load_plan(file, d, shape);
  if (!plan) return plan.error();
  paths.clear();
  for (const auto& s : shape.subtrees) paths.push_back(s.path);
  slot = shape.slot;
  horizon = shape.horizon;
  return plan;
}

plan_driver::plan_driver(partitioner::periodic::plan_file plan, std::vector<std::string> paths, double slot,
                         double horizon)
    : horizon_(horizon) {
  const auto& s = plan.s;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    subtree t;
    t.path = paths[i];
    t.keep_ms = std::llround(s.keep_alive[i] * 1000);
    const auto& awake = s.awake[i];
    const std::size_t T = awake.size();
    // A change at every slot boundary where awake differs from the slot before (cyclically).
    for (std::size_t k = 0; k < T; ++k) {
      const bool before = awake[(k + T - 1) % T] != 0, now = awake[k] != 0;
      if (before != now) t.cycle.push_back({static_cast<double>(k) * slot, now});
    }
    subtrees_.push_back(std::move(t));
  }
  plan_ = std::move(plan);
}

void plan_driver::step(double elapsed, node_controls& controls, partitioner::deployment& running, bool quiet) {
  for (std::size_t i = 0; i < subtrees_.size(); ++i) {
    subtree& s = subtrees_[i];
    const std::string plan_node = running.c.nodes[static_cast<std::size_t>(plan_.s.node[i])].name;
    auto wake = [&] { return std::vector<std::string>{"wake", s.path, plan_node}; };
    auto sleep = [&] {
      std::vector<std::string> r{"sleep", s.path};
      if (s.keep_ms > 0) r.push_back(std::to_string(s.keep_ms));
      return r;
    };
    if (!started_) {
      // The start: a subtree the plan has asleep now goes to sleep (with its keep-alive, on its
      // plan node: a wake on demand happens where it sleeps); one awake now goes to its plan node.
      const bool awake_now = plan_.s.awake[i].empty() || plan_.s.awake[i][0] != 0;
      if (node_of_path(running, s.path) != plan_node) s.queue.push_back(wake());
      if (!awake_now) s.queue.push_back(sleep());
    }
    // Every change of the endless repetition of the cycle that is due.
    while (!s.cycle.empty()) {
      const std::size_t n = s.cycle.size();
      const change& c = s.cycle[s.next % n];
      const std::size_t cycle = s.next / n;  // whole horizons gone by
      const double at = static_cast<double>(cycle) * horizon_ + c.at;
      if (at > elapsed) break;
      if (at > 0 || started_) s.queue.push_back(c.wake ? wake() : sleep());  // t = 0 is the start's
      ++s.next;
    }
    if (s.asked) {
      auto r = controls.reply(s.asked_node, *s.asked);
      if (!r) continue;
      s.asked.reset();
      answer(s, r->empty() ? std::string() : r->front(), running, quiet);
    }
    if (s.queue.empty()) continue;
    s.asked_request = s.queue.front();
    s.queue.erase(s.queue.begin());
    s.asked_node = node_of_path(running, s.path);
    s.asked = controls.ask(s.asked_node, s.asked_request);
    (s.asked_request[0] == "wake" ? totals_.wakes : totals_.sleeps) += 1;
  }
  started_ = true;
}

void plan_driver::answer(subtree& s, const std::string& reply, partitioner::deployment& running, bool quiet) {
  const auto a = nlohmann::json::parse(reply, nullptr, false);
  const std::string what = s.asked_request[0] + " of `" + s.path + "` on node " + s.asked_node;
  if (!a.is_object() || a.contains("error")) {
    ++totals_.failed;
    banyan::log::warning(tool, "plan: " + what + " failed: " +
                                   (a.is_object() ? a["error"].get<std::string>() : banyan::log::escape(reply, 200)));
    return;
  }
  // A wake (or the move it became) on another node: the launch asks that node from now on.
  const std::string to = a.value("to", std::string());
  if (!to.empty() && to != s.asked_node) {
    running.assignments = after_moves(running, {{s.path, s.asked_node, to, {}}});
  }
  if (!quiet) banyan::log::info(tool, "plan: " + what + " done");
}

}  // namespace banyan::cli
