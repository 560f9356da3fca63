// Live moves (docs/runtime.md, "Moving subtrees live"): the gateway's part. The node that hosts the
// subtree coordinates its move; every node takes part in the pause.
//
//   1. freeze   the coordinator tells every node to freeze; each holds its components' publishes
//               and requests (as during the start) and the data that arrives, waits until every
//               local actor has finished the message it was handling (a barrier), then sends
//               `frozen` to every peer: nothing it sends after that is data.
//   2. quiet    a node that has every live peer's `frozen` has received all the data that was in
//               flight to it; it tells the coordinator.
//   3. move out with every node quiet, no message is on its way to the subtree: each of its
//               actors has handled everything sent to it before the freeze (mailboxes are FIFO).
//               Each hands over its state (move_state.hpp) and goes idle; its supervisor (or this
//               gateway, for a hosted root) ends it quietly.
//   4. state    the states go to the new node with the supervisor's generation; the data this node
//               held for the subtree follows, then `handed`. The new node starts the subtree from
//               the states (restore, subscriptions by filter, sequence numbers, held publishes).
//   5. moved    once started and handed, the new node tells every node where the subtree runs;
//               each acknowledges to the coordinator.
//   6. thaw     with every acknowledgement the coordinator thaws every node: held publishes,
//               requests and data go on, routed to the new place.
// Per-publisher order holds: everything sent before the freeze reached the subtree on its old node
// (handled there, or held and handed over ahead of anything newer), and nothing newer is sent before
// the thaw. A request in flight to the subtree was answered there or is held by its requester.
#include "actor_protocol.hpp"
#include "gateway.hpp"
#include "node.hpp"
#include "run_state.hpp"

#include "banyan/base/duration.hpp"
#include "banyan/base/log.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace banyan::detail {
void gateway_actor::send_move(node_id to, std::uint16_t step, std::string target, std::string text,
                              std::uint64_t generation, std::string payload) {
  runtime::envelope e;
  e.kind = static_cast<std::uint16_t>(wire_kind::move);
  e.code = step;
  e.id = move_->epoch;
  e.target = std::move(target);
  e.text = std::move(text);
  e.origin_sequence = generation;
  if (!payload.empty()) {
    auto owner = std::make_shared<std::string>(std::move(payload));
    e.payload = runtime::shared_bytes(owner, reinterpret_cast<const std::byte*>(owner->data()), owner->size());
  }
  node_->send_control(to, std::move(e));
}

// A move, sleep or wake that cannot be: logged, and answered to whoever asked (`answer`).
void gateway_actor::refuse_change(const char* what, const std::string& path, std::uint64_t answer,
                                  const std::string& why) {
  log::error(node_->self_name(), std::string(what) + " of `" + path + "` refused: " + why);
  const nlohmann::json a = {{"path", path}, {"error", why}};
  node_->answer_move(answer, a.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void gateway_actor::start_move(const std::string& path, const std::string& to_name, std::uint64_t answer) {
  const auto& tree = state_->tree();
  const node_id self = state_->where().self();
  auto refuse = [&](const std::string& why) { refuse_change("move", path, answer, why); };
  if (move_ || failover_ || !failovers_waiting_.empty()) {
    // This node still takes part in the previous move (its thaw is on the way), or a failover runs:
    // started after it.
    waiting_moves_.push_back({path, to_name, answer, 'm', {}});
    return;
  }
  if (node_->mode() != routing_mode::hier) return refuse("live moves need hier routing");
  auto v = tree.find(path);
  if (!v) return refuse(v.error().what());
  if (*v == 0) return refuse("the tree's root does not move");
  const auto& names = node_->deployment().names;
  auto found = std::find(names.begin(), names.end(), to_name);
  if (found == names.end()) return refuse("no node `" + to_name + "` in the deployment");
  const auto to = static_cast<node_id>(found - names.begin());
  if (to == self) return refuse("it runs on `" + to_name + "` already");
  for (auto u : subtree_of(tree, *v)) {
    if (!state_->is_local(u))
      return refuse("`" + path + "` is not wholly on node `" + node_->self_name() + "`: `" + tree.path(u) +
                    "` runs on `" + names[state_->where().node_of(u)] +
                    "` (a move takes a whole subtree from one node)");
  }
  if (!state_->actors().get(*v)) return refuse("`" + path + "` is not running");
  if (state_->frozen()) {  // another node's pause: after its thaw
    waiting_moves_.push_back({path, to_name, answer, 'm', {}});
    return;
  }
  if (!state_->cluster_ready()) return refuse("the deployment is not ready (still starting)");
  if (!node_->node_ready(to)) return refuse("node `" + to_name + "` is not ready");
  if (!take_lease({path, to_name, answer, 'm', {}})) return;
  move_.emplace();
  move_->epoch = (std::uint64_t(self) << 48) | next_epoch_++;
  move_->root = *v;
  move_->from = self;
  move_->to = to;
  move_->answer = answer;
  move_->began = std::chrono::steady_clock::now();
  log::info(node_->self_name(), "moving `" + path + "` to node `" + to_name + "`: freezing the deployment");
  send_freeze();
  delayed_send(this, pause_limit(), movelimit_atom::value, move_->epoch);
  freeze(move_->epoch, self);
}

// How long the coordinator waits for the deployment to pause (every node frozen and quiet) before
// it gives the move up: BANYAN_MOVE_PAUSE_LIMIT (a duration), 10 s by default.
std::chrono::milliseconds gateway_actor::pause_limit() const {
  static const std::chrono::milliseconds limit = [] {
    const char* text = std::getenv("BANYAN_MOVE_PAUSE_LIMIT");
    if (!text || !*text) return std::chrono::milliseconds(10000);
    auto d = parse_duration(text);
    if (d && d->count() > 0) return *d;
    log::warning("banyan", std::string("BANYAN_MOVE_PAUSE_LIMIT=") + text + " is not a positive duration; using 10s");
    return std::chrono::milliseconds(10000);
  }();
  return limit;
}

// The pause limit passed. Before the move-out nothing has moved: every node thaws and the move ends
// as an error naming who had not paused (a node whose actor is still in a long handler, say). Once
// the subtree is moving out it is past turning back, and the move goes on.
void gateway_actor::on_move_limit(std::uint64_t epoch) {
  if (!move_ || move_->epoch != epoch || move_->coordinator != state_->where().self() || move_->moved_out) return;
  // Who holds the pause: a node whose `frozen` has not come (its barrier waits on a busy actor),
  // else one that has not said it is quiet.
  const node_id self = state_->where().self();
  auto names_where = [&](auto holds) {
    std::string out;
    for (node_id n = 0; n < move_->frozen_from.size(); ++n)
      if ((n == self || node_->node_ready(n)) && holds(n)) out += (out.empty() ? "`" : ", `") + node_->name_of(n) + "`";
    return out;
  };
  std::string waiting =
      names_where([&](node_id n) { return n == self ? !move_->barrier_done : !move_->frozen_from[n]; });
  waiting = waiting.empty() ? "not yet quiet: " + names_where([&](node_id n) { return !move_->quiet_from[n]; })
                            : "not yet frozen: " + waiting;
  for (node_id n = 0; n < node_->deployment().names.size(); ++n)
    send_move(n, static_cast<std::uint16_t>(move_step::thaw));
  end_move("the deployment did not pause within " + format_duration(pause_limit()) + " (" + waiting +
           "; an actor busy in a long handler holds its node's pause); nothing moved, every node goes on");
}

void gateway_actor::freeze(std::uint64_t epoch, node_id coordinator) {
  const std::size_t nodes = node_->deployment().names.size();
  if (move_ && move_->epoch != epoch) {
    // The move before this one is still on here, but its coordinator has thawed every node (a new
    // move starts only on a thawed node): its thaw is on its way, over another link than this
    // freeze. That move is over here too; its late steps are dropped.
    superseded_epoch_ = move_->epoch;
    move_.reset();
  }
  if (!move_) move_.emplace();
  move_->epoch = epoch;
  move_->coordinator = coordinator;
  for (auto* v : {&move_->frozen_from, &move_->quiet_from, &move_->acked_from}) v->resize(nodes, false);
  state_->freeze();
  // The barrier: every local actor answers between two messages, so whatever a handler running now
  // sends is sent before this node's `frozen`.
  auto actors = state_->actors().running();
  auto pending = std::make_shared<std::size_t>(actors.size() + 1);
  auto one_done = [this, pending, epoch] {
    if (--*pending != 0 || !move_ || move_->epoch != epoch) return;
    move_->barrier_done = true;
    for (node_id n = 0; n < node_->deployment().names.size(); ++n)
      send_move(n, static_cast<std::uint16_t>(move_step::frozen));
    check_quiet();
  };
  for (auto& a : actors)
    request(a, caf::infinite, sync_atom::value)
        .then([one_done] { one_done(); }, [one_done](caf::error&) { one_done(); });
  one_done();
}

void gateway_actor::send_freeze() {
  move_->subtree = move_->root;
  move_->destination = move_->to;
  const std::string path = state_->tree().path(move_->root), to = node_->name_of(move_->to);
  for (node_id n = 0; n < node_->deployment().names.size(); ++n)
    send_move(n, static_cast<std::uint16_t>(move_step::freeze), path, to);
}

void gateway_actor::check_quiet() {
  if (!move_ || !move_->barrier_done || move_->quiet_sent) return;
  const node_id self = state_->where().self();
  for (node_id n = 0; n < move_->frozen_from.size(); ++n)
    if (n != self && !move_->frozen_from[n] && node_->node_ready(n)) return;
  move_->quiet_sent = true;
  if (move_->coordinator != self) return send_move(move_->coordinator, static_cast<std::uint16_t>(move_step::quiet));
  move_->quiet_from[self] = true;
  maybe_thaw();
}

// The coordinator's next step once every live node said what it waits for (quiet, then ack).
void gateway_actor::maybe_thaw() {
  if (!move_ || move_->coordinator != state_->where().self()) return;
  auto all = [&](const std::vector<bool>& said) {
    for (node_id n = 0; n < said.size(); ++n)
      if (!said[n] && (n == state_->where().self() || node_->node_ready(n))) return false;
    return true;
  };
  if (!move_->moved_out) {
    if (all(move_->quiet_from)) move_out();
    return;
  }
  if (!all(move_->acked_from)) return;
  for (node_id n = 0; n < node_->deployment().names.size(); ++n)
    send_move(n, static_cast<std::uint16_t>(move_step::thaw));
  end_move(move_->aborted);
}

void gateway_actor::move_out() {
  move_->moved_out = true;
  if (move_->wake) return wake_out();
  std::vector<caf::actor> actors;
  for (auto u : subtree_of(state_->tree(), move_->root))
    if (auto a = state_->actors().get(u)) actors.push_back(std::move(a));
  if (actors.empty()) return hand_over({});  // it ended meanwhile: its new node starts it afresh
  auto states = std::make_shared<std::vector<std::shared_ptr<vertex_state>>>();
  auto pending = std::make_shared<std::size_t>(actors.size());
  const auto epoch = move_->epoch;
  auto one_done = [this, states, pending, epoch] {
    if (--*pending == 0 && move_ && move_->epoch == epoch) hand_over(std::move(*states));
  };
  for (auto& a : actors) {
    request(a, caf::infinite, moveout_atom::value)
        .then(
            [states, one_done](std::shared_ptr<vertex_state>& s) {
              states->push_back(std::move(s));
              one_done();
            },
            [one_done](caf::error&) { one_done(); });  // it ended meanwhile: nothing to carry
  }
}

void gateway_actor::hand_over(std::vector<std::shared_ptr<vertex_state>> states) {
  const auto& tree = state_->tree();
  const vertex_id root = move_->root;
  std::sort(states.begin(), states.end(), [](const auto& a, const auto& b) { return a->vertex < b->vertex; });
  std::vector<vertex_state> plain;
  for (auto& s : states) {
    if (!s->snapshot) move_->without_state.push_back(tree.path(s->vertex));
    plain.push_back(std::move(*s));
  }
  move_->shipped = encode(plain);
  move_->state_bytes = move_->shipped.size();
  move_->components = plain.size();
  if (move_->sleep) {
    make_durable(plain);    // a loss of this node while it sleeps finds them
    return put_to_sleep();  // the states stay here
  }
  // Its supervisor lets it go: a local parent ends the old incarnation quietly and from now on
  // supervises it on its new node; for a hosted root, this gateway does.
  const vertex_id parent = tree.parent(root);
  if (state_->is_local(parent)) {
    move_->generation = node_->next_generation(root);
    if (auto p = state_->actors().get(parent)) anon_send(p, childmove_atom::value, root, move_->to, move_->generation);
  } else if (auto* h = hosted_of(root)) {
    move_->generation = h->generation;
    if (h->actor) anon_send(h->actor, movequit_atom::value);
    std::erase_if(hosted_, [&](const hosted& x) { return x.vertex == root; });
    state_->done().root_left();
  }
  state_->where().move(tree, root, move_->to);
  send_move(move_->to, static_cast<std::uint16_t>(move_step::state), tree.path(root), {}, move_->generation,
            move_->shipped);
  // Data that arrived here for the subtree before the freeze follows its state, in arrival order.
  std::erase_if(early_data_, [&](auto& held) {
    auto& e = held.second;
    if (static_cast<wire_kind>(e.kind) != wire_kind::data || !tree.contains(root, e.entry)) return false;
    const vertex_id from = e.from == runtime::no_vertex_field ? no_vertex : e.from;
    auto sent = node_->forward({move_->to, e.entry, from}, e.topic, e.sender, e.scope, e.origin_sequence,
                               payload::view_of(e.payload.owner(), e.payload.data(), e.payload.size()), e.receipt,
                               runtime::never_block);
    if (!sent) unforwarded(e.sender, move_->to, sent.error().message);
    move_->handed_held.push_back(std::move(held));  // kept until the move is over: a revert delivers it here
    return true;
  });
  send_move(move_->to, static_cast<std::uint16_t>(move_step::handed));
  move_->handed = true;
  if (!node_->node_ready(move_->to)) revert();  // lost meanwhile
}

void gateway_actor::revert() {
  const std::string name = node_->name_of(move_->to);
  const std::string path = state_->tree().path(move_->root);
  log::error(node_->self_name(), "move: node `" + name + "` was lost after the hand-over; starting `" + path +
                                     "` here again from the states it was handed");
  move_->aborted = "node `" + name + "` was lost during the move; `" + path + "` runs on `" + node_->self_name() +
                   "` again, from the states it had when it moved out";
  move_->to = state_->where().self();
  move_->handed_marker = true;
  move_->acked_from.assign(move_->acked_from.size(), false);
  // The data held for the subtree went to the lost node with the states; the subtree starts again
  // here from those states, so that data is delivered here at the thaw, ahead of anything newer.
  early_data_.insert(early_data_.begin(), std::make_move_iterator(move_->handed_held.begin()),
                     std::make_move_iterator(move_->handed_held.end()));
  move_->handed_held.clear();
  take_over(move_->root, move_->to, move_->generation, move_->shipped);
  // announce_moved runs when it has started here (arrived_atom), then the acks, then the thaw.
}

void gateway_actor::take_over(vertex_id root, node_id from, std::uint64_t generation, std::string_view bytes) {
  const auto& tree = state_->tree();
  auto states = decode(bytes, tree, root);
  if (!states) {
    log::error(node_->self_name(), std::string("move refused: ") + states.error().what());
    return;
  }
  const node_id self = state_->where().self();
  move_->arriving = true;
  move_->root = root;
  move_->from = from;
  move_->to = self;
  move_->generation = generation;
  state_->where().move(tree, root, self);
  make_durable(*states);  // a loss of this node finds them here, not on the node they left
  state_->arrivals().put(std::move(*states));
  start_arrived(root, generation);
}

void gateway_actor::make_durable(const std::vector<vertex_state>& states) {
  auto* durable = state_->durable();
  if (!durable) return;
  for (const auto& s : states) {
    if (!s.snapshot || !state_->spec_of(s.vertex).keeps_state()) continue;
    durable->put(state_->tree().path(s.vertex), payload::copy_of(*s.snapshot));
  }
}

// Starts a subtree whose states wait in arrivals(): its local supervisor adopts it, or this gateway
// hosts it. Its root says arrived_atom once the subtree has started.
void gateway_actor::start_arrived(vertex_id root, std::uint64_t generation) {
  const auto& tree = state_->tree();
  state_->arrivals().begin(root);
  const vertex_id parent = tree.parent(root);
  if (state_->is_local(parent)) {
    if (auto p = state_->actors().get(parent))
      return anon_send(p, childmove_atom::value, root, state_->where().self(), generation);
    log::error(node_->self_name(), "`" + tree.path(root) + "` arrived, but its supervisor is not running here");
    return;
  }
  hosted_.push_back({root, caf::actor{}});
  auto& h = hosted_.back();
  h.arrived = true;
  h.counted_started = true;
  state_->done().root_arrived();
  start_hosted(h, generation, /*initial=*/false);
}

void gateway_actor::announce_moved() {
  if (!move_ || !move_->arriving || !move_->arrived || !move_->handed_marker || move_->announced) return;
  move_->announced = true;
  // Tests of a node lost mid-move: the new node stops here (the subtree started, not announced) and
  // says so in the file this names, so a test can kill it at that point without waiting on time.
  if (const char* stall = std::getenv("BANYAN_TEST_STALL_MOVE");
      stall && *stall && move_->from != state_->where().self()) {
    std::ofstream(stall) << state_->tree().path(move_->root) << "\n";
    return;
  }
  const std::string path = state_->tree().path(move_->root);
  for (node_id n = 0; n < node_->deployment().names.size(); ++n)
    send_move(n, static_cast<std::uint16_t>(move_step::moved), path, node_->self_name());
  settle(move_->root, state_->where().self());
}

// Node `to` runs the subtree now: this node routes there from the thaw on.
void gateway_actor::settle(vertex_id root, node_id to) {
  if (state_->where().node_of(root) != to) state_->where().move(state_->tree(), root, to);
  if (move_->coordinator == state_->where().self()) {
    move_->acked_from[state_->where().self()] = true;
    return maybe_thaw();
  }
  send_move(move_->coordinator, static_cast<std::uint16_t>(move_step::ack));
}

// Move steps carry authority from the move itself (docs/runtime.md "What a peer may send"): the
// epoch names its coordinator, the root's node knows who holds the lease, and the freeze says which
// subtree moves to which node.
std::string gateway_actor::move_unauthorised(node_id from, move_step step, std::uint64_t epoch) const {
  const node_id self = state_->where().self(), root_node = state_->where().node_of(0);
  const auto name = [&](node_id n) { return "`" + node_->name_of(n) + "`"; };
  switch (step) {
    case move_step::lease: return self == root_node ? "" : "a lease is asked of the root's node, not of this one";
    case move_step::granted: return from == root_node ? "" : "only the root's node grants the lease";
    case move_step::release:
      return self == root_node && lease_holder_ == from ? "" : "a release of a lease it does not hold";
    case move_step::freeze:
      if ((epoch >> 48) != from) return "a freeze of a move it does not coordinate (its epoch names another node)";
      return "";
    default: break;
  }
  if (!move_ || move_->epoch != epoch) return "";  // (dropped as steps of no move, or of another)
  switch (step) {
    case move_step::quiet:
    case move_step::ack: return move_->coordinator == self ? "" : "only the coordinator of a move hears that step";
    case move_step::state:
    case move_step::handed:
      return from == move_->coordinator
                 ? ""
                 : "only the move's coordinator " + name(move_->coordinator) + " hands its subtree over";
    case move_step::moved:
      return from == move_->destination || from == move_->coordinator
                 ? ""
                 : "the move takes its subtree to " + name(move_->destination) + ", not to the sender";
    case move_step::thaw:
      return from == move_->coordinator || from == root_node ? ""
                                                             : "only the move's coordinator or the root's node thaws";
    default: return "";
  }
}

void gateway_actor::call_off(node_id from, std::uint64_t epoch) {
  log::warning(node_->self_name(),
               "the pause `" + node_->name_of(from) + "` asked for (without the lease) is called off on every node");
  remember_called_off(epoch);
  for (node_id n = 0; n < node_->deployment().names.size(); ++n) send_step(n, move_step::thaw, epoch);
}

void gateway_actor::remember_called_off(std::uint64_t epoch) {
  called_off_.push_back(epoch);
  if (called_off_.size() > 64) called_off_.erase(called_off_.begin());  // the latest are the ones still on their way
}

void gateway_actor::check_early_move(std::uint64_t epoch) {
  if (!move_ || move_->epoch != epoch || state_->frozen() || move_->coordinator == state_->where().self()) return;
  log::warning(node_->self_name(), "peers said they froze for a move of `" + node_->name_of(move_->coordinator) +
                                       "` whose freeze never came; forgotten");
  move_.reset();
  run_waiting();
}

void gateway_actor::on_move(const std::string& peer, runtime::envelope& e) {
  const node_id from = node_->index_of(peer), root_node = state_->where().node_of(0);
  const auto step = static_cast<move_step>(e.code);
  if (auto why = move_unauthorised(from, step, e.id); !why.empty()) return refuse_unauthorised(peer, e, why);
  if (step >= move_step::lease) return on_lease(from, step, e.id);
  const bool called_off = std::find(called_off_.begin(), called_off_.end(), e.id) != called_off_.end();
  if (step == move_step::freeze) {
    if (called_off) return refuse_unauthorised(peer, e, "a freeze of a pause the root's node called off");
    const auto subtree = state_->tree().find(e.target);
    const auto& names = node_->deployment().names;
    const auto to = std::find(names.begin(), names.end(), e.text);
    if (!subtree || *subtree == 0 || to == names.end())
      return refuse(peer, "move freeze: no subtree (target) and node (text) it moves");
    // Only the holder of the lease pauses the deployment; the root's node grants it, and calls off
    // any other pause on every node.
    if (state_->where().self() == root_node && lease_holder_ != from) {
      refuse_unauthorised(peer, e, "a freeze without the lease");
      return call_off(from, e.id);
    }
    freeze(e.id, from);
    move_->subtree = *subtree;
    move_->destination = static_cast<node_id>(to - names.begin());
    return;
  }
  if (e.id == superseded_epoch_) return;  // a late step (its thaw) of a move a newer one replaced here
  if (step == move_step::thaw && from == root_node && (!move_ || move_->epoch != e.id || move_->coordinator != from)) {
    // The root's node calls off a pause of a node without the lease: its freeze, if it comes
    // after this, is not obeyed.
    remember_called_off(e.id);
    if (move_ && move_->epoch == e.id) return thaw_here();
    return;
  }
  if (!move_) {
    if (step != move_step::frozen)
      return log_dropped(peer, "move step " + std::to_string(e.code) + " of no move in progress");
    if (called_off) return;
    move_.emplace();  // a peer froze before the coordinator's freeze reached us
    move_->epoch = e.id;
    move_->coordinator = static_cast<node_id>(e.id >> 48);  // (start_move's epoch): its loss ends this
    for (auto* v : {&move_->frozen_from, &move_->quiet_from, &move_->acked_from})
      v->resize(node_->deployment().names.size(), false);
    // A forged `frozen` must not hold this node's own moves back: forgotten if no freeze follows.
    delayed_send(this, pause_limit(), earlymove_atom::value, e.id);
  }
  if (e.id != move_->epoch) return log_dropped(peer, "move step of another move (epoch " + std::to_string(e.id) + ")");
  switch (step) {
    case move_step::frozen: move_->frozen_from[from] = true; return check_quiet();
    case move_step::quiet: move_->quiet_from[from] = true; return maybe_thaw();
    case move_step::state: {
      auto root = state_->tree().find(e.target);
      if (!root) return log_dropped(peer, "move state without a subtree");
      return take_over(*root, from, e.origin_sequence,
                       std::string_view(reinterpret_cast<const char*>(e.payload.data()), e.payload.size()));
    }
    case move_step::handed: move_->handed_marker = true; return announce_moved();
    case move_step::moved: {
      auto root = state_->tree().find(e.target);
      if (!root) return log_dropped(peer, "move without a subtree");
      if (*root != move_->subtree)
        return refuse_unauthorised(peer, e, "`" + e.target + "` is not the subtree this move takes");
      return settle(*root, from);
    }
    case move_step::ack: move_->acked_from[from] = true; return maybe_thaw();
    case move_step::thaw: return thaw_here();
    case move_step::freeze:
    case move_step::lease:
    case move_step::granted:
    case move_step::release: return;  // handled above
  }
}

void gateway_actor::thaw_here() {
  move_.reset();
  count_node_time();
  // The data held here goes first: routed now, its local deliveries are queued ahead of anything
  // the local publishers send when they hear of the thaw (their held publishes are newer).
  auto waiting = std::move(early_data_);
  early_data_.clear();
  for (auto& [from_peer, envelope] : waiting) on_data(from_peer, envelope);
  state_->thaw();
  release_held();
  if (!failovers_waiting_.empty()) return next_failover();  // it starts the waiting moves after it
  run_waiting();
}

void gateway_actor::start_next(waiting_move next) {
  switch (next.kind) {
    case 's': return start_sleep(next.path, next.keep, next.answer);
    case 'w': return start_wake(next.path, next.to, next.answer);
    default: return start_move(next.path, next.to, next.answer);
  }
}

void gateway_actor::end_move(std::string error) {  // by value: thaw_here ends the move that may hold it
  give_lease_back();
  if (move_->arriving) state_->arrivals().over(move_->root);
  const auto& tree = state_->tree();
  const auto& names = node_->deployment().names;
  const double pause_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - move_->began).count();
  const std::string path = tree.path(move_->root), from = names[move_->from], to = names[move_->to];
  nlohmann::json answer = {{"path", path},
                           {"from", from},
                           {"to", to},
                           {"components", move_->components},
                           {"state_bytes", move_->state_bytes},
                           {"pause_ms", pause_ms},
                           {"without_state", move_->without_state}};
  if (move_->sleep) answer["slept"] = true;
  if (move_->wake) {
    answer["woke"] = true;
    answer["held"] = move_->held;
    answer["held_wait_ms"] = move_->held_wait_ms;
    answer["wake_ms"] = move_->wake_ms > 0 ? move_->wake_ms : pause_ms;
  }
  if (!error.empty()) answer["error"] = error;
  const std::uint64_t token = move_->answer;
  const bool sleep_or_wake = move_->sleep || move_->wake;
  if (sleep_or_wake) {
    if (!error.empty())
      log::error(node_->self_name(), (move_->sleep ? "sleep of `" : "wake of `") + path + "`: " + error);
    else log_sleep_or_wake(pause_ms);
    if (move_->wake && !error.empty()) wake_failed(move_->root);
  } else if (error.empty()) {
    char line[200];
    std::snprintf(line, sizeof line, ": %zu component(s), %llu bytes of state; the deployment paused %.1f ms",
                  move_->components, static_cast<unsigned long long>(move_->state_bytes), pause_ms);
    log::info(node_->self_name(), "moved `" + path + "` from `" + from + "` to `" + to + "`" + line);
    if (const auto& fresh = move_->without_state; !fresh.empty()) {
      std::string list;
      for (std::size_t i = 0; i < fresh.size() && i < 5; ++i) list += (i ? ", " : "") + fresh[i];
      if (fresh.size() > 5) list += ", ...";
      log::warning(
          node_->self_name(),
          "moved `" + path + "`: " + std::to_string(fresh.size()) + " of its " + std::to_string(move_->components) +
              " component(s) gave no state (snapshot() returned nothing) and start afresh on `" + to + "`: " + list);
    }
  } else {
    log::error(node_->self_name(), "move of `" + path + "` to `" + to + "`: " + error);
  }
  thaw_here();
  if (token) node_->answer_move(token, answer.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

// A node lost during a move. The coordinator lost: this node thaws on its own (the move ends there,
// whichever step it reached). For the coordinator: a node it waits for no longer counts; the new
// node lost after the hand-over: the subtree starts again here from the states it handed over, and
// the move ends as aborted.
void gateway_actor::on_peer_lost(node_id n) {
  if (loss_seen_.size() <= n) loss_seen_.resize(node_->deployment().names.size(), false);
  loss_seen_[n] = true;
  // The pause lease (the root's node keeps it): a lost holder gives it back, a lost asker leaves.
  std::erase_if(lease_queue_, [n](const auto& asked) { return asked.first == n; });
  if (lease_holder_ == n) on_lease(n, move_step::release, 0);
  if (state_->where().node_of(0) == state_->where().self()) start_failover(n);  // the root's node decides
  if (pending_plan_ && pending_plan_->lost == n) take_plan(*std::exchange(pending_plan_, std::nullopt));
  if (failover_) check_failover_applied();  // a survivor that will not answer no longer counts
  if (!move_) return;
  const node_id self = state_->where().self();
  const std::string& name = node_->name_of(n);
  if (move_->coordinator != self) {
    if (n != move_->coordinator) return check_quiet();
    log::error(node_->self_name(), "move: its coordinator `" + name + "` was lost; thawing");
    return thaw_here();
  }
  if (n != move_->to) {
    check_quiet();
    return maybe_thaw();
  }
  if (!move_->moved_out) {
    for (node_id m = 0; m < node_->deployment().names.size(); ++m)
      send_move(m, static_cast<std::uint16_t>(move_step::thaw));
    return end_move("node `" + name + "` was lost before the move began; nothing moved");
  }
  if (move_->handed && !move_->arriving) revert();  // else hand_over notices it
}

}  // namespace banyan::detail
