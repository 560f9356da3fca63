// Failover (docs/runtime.md "Failover"): the gateway's part. The root's node coordinates; it never
// fails over itself (its loss ends the run).
//
//   1. plan     the root's node hears that a node is lost, places every maximal subtree that node
//               hosted on one survivor (partitioner::place_lost: least added cross-node cost, within
//               capacity) and sends the whole new assignment to every survivor.
//   2. applied  each survivor applies it: the lost components' subscriptions go from its routing
//               table (their incarnations are gone; the orphans below them are stopped), where()
//               takes the new assignment, a hosted root whose parent was lost is stopped (its new
//               parent incarnation starts it again; when that parent now runs here it is no longer a
//               hosted root), and a lost subtree placed here under a parent elsewhere becomes a hosted
//               root waiting for its supervisor's start. Then it tells the root's node.
//   3. go       with every survivor's word, the root's node says go: each supervisor of a lost
//               subtree's root restarts it where it now runs, as its restart type, its strategy and
//               its intensity limit say (supervisor::children_failed_over).
// No restart begins before every survivor has applied the plan, so no node can drop the new
// incarnations' subscriptions with the old ones. A node lost during a failover is failed over next.
#include "actor_protocol.hpp"
#include "gateway.hpp"
#include "node.hpp"
#include "run_state.hpp"

#include "banyan/base/log.hpp"
#include "banyan/partitioner/failover.hpp"

#include <algorithm>
#include <cstring>
#include <map>

namespace banyan::detail {
namespace {

// The roots of the maximal subtrees `lost` hosted in `node_of`.
std::vector<vertex_id> lost_roots(const component_tree& tree, const std::vector<node_id>& node_of, node_id lost) {
  std::vector<vertex_id> out;
  for (vertex_id v = 0; v < tree.size(); ++v)
    if (node_of[v] == lost && (v == 0 || node_of[tree.parent(v)] != lost)) out.push_back(v);
  return out;
}

std::string encode_assignment(const std::vector<node_id>& node_of) {
  std::string out(4 * node_of.size(), '\0');
  for (std::size_t i = 0; i < node_of.size(); ++i) {
    const auto n = static_cast<std::uint32_t>(node_of[i]);  // little-endian, as every machine we run on
    std::memcpy(out.data() + 4 * i, &n, 4);
  }
  return out;
}

}  // namespace

void gateway_actor::send_failover(node_id to, failover_step step, std::string payload) {
  send_failover_step(to, step, failover_->epoch, failover_->lost, std::move(payload));
}

void gateway_actor::send_failover_step(node_id to, failover_step step, std::uint64_t epoch, node_id lost,
                                       std::string payload) {
  runtime::envelope e;
  e.kind = static_cast<std::uint16_t>(wire_kind::failover);
  e.code = static_cast<std::int32_t>(step);
  e.id = epoch;
  e.text = node_->name_of(lost);
  if (!payload.empty()) {
    auto owner = std::make_shared<std::string>(std::move(payload));
    e.payload = runtime::shared_bytes(owner, reinterpret_cast<const std::byte*>(owner->data()), owner->size());
  }
  node_->send_control(to, std::move(e));
}

void gateway_actor::start_failover(node_id lost) {
  if (shutting_down_) return;
  if (move_ || failover_) {
    if (std::find(failovers_waiting_.begin(), failovers_waiting_.end(), lost) == failovers_waiting_.end())
      failovers_waiting_.push_back(lost);
    return;
  }
  const auto& tree = state_->tree();
  const node_id self = state_->where().self();
  const std::vector<node_id> before = state_->where().node_of();
  const auto roots = lost_roots(tree, before, lost);
  const std::string& name = node_->name_of(lost);
  if (roots.empty()) return log::info(node_->self_name(), "node `" + name + "` lost: it hosted nothing; no failover");

  // The problem as this node knows it: the tree, each edge weighted by the messages this node has
  // routed on it (plus one, so that an idle edge still counts), the deployment's nodes and loads
  // (its `loads:`, per assignment, as `banyan partition` writes them: what each part was planned to
  // need; a deployment without them places by traffic alone).
  partitioner::tree t;
  const auto traffic = state_->routing().traffic();
  const auto& loads = node_->deployment().load_of;
  for (vertex_id v = 0; v < tree.size(); ++v) {
    t.path.push_back(tree.path(v));
    t.parent.push_back(v == 0 ? partitioner::no_vertex : static_cast<partitioner::vertex_id>(tree.parent(v)));
    t.cpu.push_back(v < loads.size() ? loads[v] : 0.0);
    t.weight.push_back(v == 0 ? 0.0 : 1.0 + static_cast<double>(v < traffic.size() ? traffic[v].messages : 0));
  }
  auto p = partitioner::make_problem(std::move(t), node_->deployment().cluster);
  std::vector<bool> alive(node_->deployment().names.size(), false);
  for (node_id n = 0; n < alive.size(); ++n) alive[n] = n != lost && (n == self || node_->node_ready(n));
  partitioner::mapping current(before.begin(), before.end());
  auto plan = p ? partitioner::place_lost(*p, current, static_cast<partitioner::node_id>(lost), alive)
                : result<partitioner::failover_plan>(p.error());
  if (!plan) {
    const std::string why = plan.error().message;
    log::error(node_->self_name(), "node `" + name + "` lost; no failover: " + why);
    runtime::envelope e;
    e.kind = static_cast<std::uint16_t>(wire_kind::failover);
    e.code = static_cast<std::int32_t>(failover_step::refused);
    e.id = (std::uint64_t(self) << 48) | next_epoch_++;
    e.text = name;
    auto owner = std::make_shared<std::string>(why.substr(0, max_error_text_bytes));
    e.payload = runtime::shared_bytes(owner, reinterpret_cast<const std::byte*>(owner->data()), owner->size());
    for (node_id n = 0; n < alive.size(); ++n)
      if (alive[n] && n != self) node_->send_control(n, runtime::envelope(e));
    return failover_refused(lost, why);
  }
  std::string moves;
  for (const auto& m : plan->moves)
    moves += (moves.empty() ? "" : ", ") + std::string("`") + tree.path(m.root) + "` to `" + node_->name_of(m.to) + "`";
  log::warning(node_->self_name(), "node `" + name + "` lost: failing over " + moves);

  failover_.emplace();
  failover_->epoch = (std::uint64_t(self) << 48) | next_epoch_++;
  failover_->lost = lost;
  failover_->coordinator = self;
  failover_->applied_from.assign(alive.size(), false);
  std::vector<node_id> next(plan->next.begin(), plan->next.end());
  const std::string payload = encode_assignment(next);
  for (node_id n = 0; n < alive.size(); ++n)
    if (alive[n] && n != self) send_failover(n, failover_step::plan, payload);
  apply_failover(lost, std::move(next));
  failover_->applied_from[self] = true;
  check_failover_applied();
}

void gateway_actor::on_failover(const std::string& peer, runtime::envelope& e) {
  const node_id from = node_->index_of(peer);
  const auto step = static_cast<failover_step>(e.code);
  const node_id root_node = state_->where().node_of(0);
  const auto& names = node_->deployment().names;
  const auto lost_it = std::find(names.begin(), names.end(), e.text);
  if (lost_it == names.end()) return log_dropped(peer, "failover of `" + e.text + "`: no such node");
  const auto lost = static_cast<node_id>(lost_it - names.begin());
  switch (step) {
    case failover_step::plan: {
      // Only the root's node places subtrees (a peer could otherwise move any of them).
      if (from != root_node) return log_dropped(peer, "failover plan: only the root's node decides one");
      if (lost == state_->where().self() || lost == root_node)
        return log_dropped(peer, "failover plan for node `" + e.text + "`: not a lost node");
      std::vector<node_id> next(state_->tree().size());
      const auto* bytes = e.payload.data();
      for (std::size_t i = 0; i < next.size(); ++i) {
        std::uint32_t n;
        std::memcpy(&n, bytes + 4 * i, 4);
        if (n >= names.size() || n == static_cast<std::uint32_t>(lost))
          return log_dropped(peer, "failover plan: component " + std::to_string(i) + " on node " + std::to_string(n));
        next[i] = static_cast<node_id>(n);
      }
      // A plan moves the lost node's components only.
      const auto& now = state_->where().node_of();
      for (std::size_t i = 0; i < next.size(); ++i)
        if (now[i] != lost && next[i] != now[i])
          return log_dropped(peer, "failover plan moves `" + state_->tree().path(static_cast<vertex_id>(i)) +
                                       "`, which did not run on `" + e.text + "`");
      pending_plan p{e.id, from, lost, std::move(next)};
      if (!loss_found(lost)) {
        pending_plan_ = std::move(p);  // applied when this node finds the loss (on_peer_lost)
        return;
      }
      return take_plan(std::move(p));
    }
    case failover_step::applied:
      // It applied the plan after the go went (it was not ready then): its go now.
      if (auto done = failovers_done_.find(e.id); done != failovers_done_.end())
        return send_failover_step(from, failover_step::go, e.id, done->second);
      if (!failover_ || failover_->coordinator != state_->where().self() || e.id != failover_->epoch)
        return log_dropped(peer, "failover step of no failover this node coordinates");
      failover_->applied_from[from] = true;
      return check_failover_applied();
    case failover_step::go:
      if (from != root_node || !failover_ || e.id != failover_->epoch)
        return log_dropped(peer, "failover go of no failover in progress here");
      return failover_go();
    case failover_step::refused: {
      if (from != root_node) return log_dropped(peer, "failover refusal: only the root's node decides one");
      pending_plan p{0, from, lost, {}, std::string(reinterpret_cast<const char*>(e.payload.data()), e.payload.size())};
      if (p.refused.empty()) p.refused = "no survivor can take its subtrees";
      if (!loss_found(lost)) {
        pending_plan_ = std::move(p);  // taken when this node finds the loss (on_peer_lost)
        return;
      }
      return take_plan(std::move(p));
    }
  }
}

// Whether this node has found `lost` lost itself, or never had a live link to it (a node that
// joined after it, or whose link never came up): no loss will be found here, and the plan's
// coordinator waits for this node.
bool gateway_actor::loss_found(node_id lost) const {
  return (lost < loss_seen_.size() && loss_seen_[lost]) || !node_->node_ready(lost);
}

void gateway_actor::take_plan(pending_plan p) {
  if (!p.refused.empty()) return failover_refused(p.lost, p.refused);
  failover_.emplace();
  failover_->epoch = p.epoch;
  failover_->lost = p.lost;
  failover_->coordinator = p.coordinator;
  apply_failover(p.lost, std::move(p.next));
  send_failover(p.coordinator, failover_step::applied);
}

void gateway_actor::apply_failover(node_id lost, std::vector<node_id> next) {
  const auto& tree = state_->tree();
  const node_id self = state_->where().self();
  node_->set_failing_over(true);
  failover_->before = state_->where().node_of();
  const auto& before = failover_->before;
  const auto roots = lost_roots(tree, before, lost);
  // The lost incarnations' subscriptions, and those of everything below them (orphans are stopped):
  // no restart runs anywhere yet, so nothing new is dropped.
  for (vertex_id r : roots) state_->forget_subtree(r, /*lost=*/true);
  state_->where().assign(next);
  // Hosted roots whose parent was lost: stopped (OTP: children go with their supervisor). The new
  // parent incarnation starts them again, under its node's generations: any start is new.
  for (auto it = hosted_.begin(); it != hosted_.end();) {
    const vertex_id parent = tree.parent(it->vertex);
    if (before[parent] != lost) {
      ++it;
      continue;
    }
    stop_hosted(*it);
    it->generation = 0;
    if (next[parent] != self) {
      ++it;
      continue;
    }
    // Its parent runs here now: a local child of that parent from now on, no hosted root.
    it = hosted_.erase(it);
    state_->done().root_left();
  }
  restore_lost_states(lost, before, next);
  // Lost subtrees placed here under a parent elsewhere: hosted roots that wait for their start.
  for (vertex_id r : roots) {
    if (next[r] != self || next[tree.parent(r)] == self || hosted_of(r)) continue;
    hosted h{r, caf::actor{}};
    h.generation = 0;
    h.counted_started = true;
    hosted_.push_back(h);
    state_->done().root_arrived();
  }
}

void gateway_actor::restore_lost_states(node_id lost, const std::vector<node_id>& before,
                                        const std::vector<node_id>& next) {
  const auto& tree = state_->tree();
  const node_id self = state_->where().self();
  std::vector<std::string> paths;
  for (vertex_id v = 0; v < tree.size(); ++v)
    if (before[v] == lost && next[v] == self && state_->spec_of(v).keeps_state()) paths.push_back(tree.path(v));
  if (paths.empty()) return;
  auto list = [](const std::vector<std::string>& l) {
    std::string out;
    for (std::size_t i = 0; i < l.size() && i < 5; ++i) out += (i ? ", `" : "`") + l[i] + "`";
    return out + (l.size() > 5 ? ", ..." : "");
  };
  const std::string& dir = state_->options().state_dir;
  if (dir.empty()) {
    return log::warning(node_->self_name(), "failover: " + list(paths) +
                                                " keep state but restart fresh here: the run has no --state-dir to "
                                                "keep states durable");
  }
  const std::string folder = durable_states::folder(dir, node_->name_of(lost));
  auto states = durable_states::read(dir, node_->name_of(lost), paths);
  if (!states) {
    return log::error(node_->self_name(), "failover: the lost node's states cannot be read (" + states.error().message +
                                              "); " + list(paths) + " restart fresh");
  }
  std::vector<std::string> restored, fresh;
  std::uint64_t bytes = 0;
  for (const auto& path : paths) {
    auto it = states->find(path);
    if (it == states->end()) {
      fresh.push_back(path);
      continue;
    }
    bytes += it->second.size();
    auto state = payload::copy_of(std::span<const std::byte>(it->second));
    // Durable here too, so that a loss of this node finds it as well.
    if (auto* durable = state_->durable()) durable->put(path, state);
    state_->kept().put(*tree.find(path), std::move(state));
    restored.push_back(path);
  }
  if (!restored.empty()) {
    log::info(node_->self_name(), "failover: " + list(restored) + " restart from their last durable state in `" +
                                      folder + "` (" + std::to_string(bytes) + " bytes)");
  }
  if (!fresh.empty())
    log::warning(node_->self_name(), "failover: " + list(fresh) + " have no durable state in `" + folder +
                                         "` (never checkpointed): they restart fresh");
}

void gateway_actor::check_failover_applied() {
  if (!failover_ || failover_->coordinator != state_->where().self()) return;
  for (node_id n = 0; n < failover_->applied_from.size(); ++n)
    if (!failover_->applied_from[n] && n != failover_->lost && node_->node_ready(n)) return;
  for (node_id n = 0; n < failover_->applied_from.size(); ++n)
    if (failover_->applied_from[n] && n != state_->where().self()) send_failover(n, failover_step::go);
  failover_go();
}

void gateway_actor::failover_go() {
  count_node_time();  // the lost node's subtrees run here now, or elsewhere
  const node_id lost = failover_->lost;
  tell_parents_of_lost(failover_->before, lost, "node `" + node_->name_of(lost) + "` lost; failed over to `");
  // Dynamic starts held for the lost node go where the failover put their children.
  node_->set_failing_over(false);
  for (const auto& a : state_->actors().running()) anon_send(a, joined_atom::value, lost);
  if (failover_->coordinator == state_->where().self()) failovers_done_[failover_->epoch] = lost;
  failover_.reset();
  next_failover();
}

void gateway_actor::failover_refused(node_id lost, const std::string& why) {
  node_->refuse_starts_on(lost);
  // The lost incarnations' subscriptions: routes stop leading to the lost node.
  for (vertex_id r : lost_roots(state_->tree(), state_->where().node_of(), lost)) state_->forget_subtree(r, true);
  tell_parents_of_lost(state_->where().node_of(), lost,
                       "node `" + node_->name_of(lost) + "` lost; no failover: " + why);
}

void gateway_actor::tell_parents_of_lost(const std::vector<node_id>& before, node_id lost,
                                         const std::string& reason_prefix) {
  const auto& tree = state_->tree();
  const bool placed = state_->where().node_of() != before;  // a plan: each reason names the new node
  std::map<vertex_id, std::pair<std::vector<vertex_id>, std::vector<std::string>>> by_parent;
  for (vertex_id r : lost_roots(tree, before, lost)) {
    if (!state_->is_local(tree.parent(r))) continue;
    auto& [children, reasons] = by_parent[tree.parent(r)];
    children.push_back(r);
    reasons.push_back(placed ? reason_prefix + node_->name_of(state_->where().node_of(r)) + "`" : reason_prefix);
  }
  for (auto& [parent_vertex, children] : by_parent)
    if (auto parent = state_->actors().get(parent_vertex))
      anon_send(parent, failover_atom::value, children.first, children.second);
}

void gateway_actor::next_failover() {
  while (!failover_ && !move_ && !failovers_waiting_.empty()) {
    const node_id lost = failovers_waiting_.front();
    failovers_waiting_.erase(failovers_waiting_.begin());
    start_failover(lost);
  }
  if (!failover_) run_waiting();
}

}  // namespace banyan::detail
