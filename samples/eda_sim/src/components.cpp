#include <banyan/eda_sim/cluster.hpp>
#include <banyan/eda_sim/components.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <type_traits>

namespace banyan::eda {
namespace {

constexpr std::size_t header = sizeof(std::uint64_t);

class gate_component;

// A moving leaf's state (gate_component::snapshot): fixed-size fields and length-prefixed arrays in
// this build's byte order (every node of a deployment runs the same eda_sim).
struct state_writer {
  std::vector<std::byte> out;
  template <class T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* b = reinterpret_cast<const std::byte*>(&v);
    out.insert(out.end(), b, b + sizeof v);
  }
  template <class T>
  void put_all(std::span<const T> v) {
    put<std::uint64_t>(v.size());
    const auto* b = reinterpret_cast<const std::byte*>(v.data());
    out.insert(out.end(), b, b + v.size_bytes());
  }
};

struct state_reader {
  std::span<const std::byte> in;
  std::string what;  // the leaf, for errors
  void need(std::size_t n, const char* field) {
    if (in.size() < n)
      throw std::runtime_error(what + ": moved state cut short at " + field + " (" + std::to_string(in.size()) +
                               " bytes left, " + std::to_string(n) + " needed)");
  }
  template <class T>
  T get(const char* field) {
    T v;
    need(sizeof v, field);
    std::memcpy(&v, in.data(), sizeof v);
    in = in.subspan(sizeof v);
    return v;
  }
  std::span<const std::byte> bytes(std::size_t n, const char* field) {
    need(n, field);
    auto b = in.first(n);
    in = in.subspan(n);
    return b;
  }
  template <class T>
  std::vector<T> get_all(const char* field) {
    const auto n = get<std::uint64_t>(field);
    if (n > in.size() / sizeof(T))
      throw std::runtime_error(what + ": moved state cut short at " + field + " (" + std::to_string(n) +
                               " entries announced, " + std::to_string(in.size()) + " bytes left)");
    std::vector<T> v(n);
    std::memcpy(v.data(), bytes(n * sizeof(T), field).data(), n * sizeof(T));
    return v;
  }
};

constexpr std::uint32_t state_magic = 0x4c414445;  // "EDAL"
constexpr std::uint32_t state_version = 2;

// The cycle a group message is for (its header).
std::uint64_t cycle_of(const banyan::payload& p) {
  std::uint64_t c = 0;
  std::memcpy(&c, p.bytes().data(), header);
  return c;
}

}  // namespace

// The leaves started in this process; complete once `ctl/go` is published (the whole tree is up then),
// so any use after a leaf's go, or after a message from another leaf (sent after its go), sees them all.
struct local_leaves {
  struct entry {
    banyan::context::poster post;  // runs a function in that leaf's incarnation
    gate_component* self;          // valid inside functions posted with `post`
  };
  std::mutex m;
  std::map<int, entry> by_leaf;
  // Leaf grain: every leaf's program (merge_leaves of that leaf alone, as each leaf builds it) in one
  // native object, chosen once per process by the first leaf that builds.
  std::mutex code_m;
  std::optional<result<engine_choice>> leaf_code;
};

namespace {

class gate_component final : public banyan::leaf {
 public:
  gate_component(std::shared_ptr<component_run> run, int leaf) : run_(std::move(run)), leaf_(leaf) {}
  ~gate_component() override {
    std::lock_guard lock(run_->local->m);
    auto it = run_->local->by_leaf.find(leaf_);
    if (it != run_->local->by_leaf.end() && it->second.self == this) run_->local->by_leaf.erase(it);
  }

  void on_start(banyan::context& ctx) override {
    ctx_ = &ctx;
    if (!unmovable_.empty()) {
      // Arrived by a live move that could not carry its state: a fresh leaf would wait for a start
      // that never comes again, so the run ends, saying why.
      ctx.log(unmovable_);
      ctx.quit(1);
      return;
    }
    const design& d = *run_->d;
    {
      std::lock_guard lock(run_->local->m);
      run_->local->by_leaf[leaf_] = {ctx.cross_thread_poster(), this};
    }
    // Every reader subscribes to its groups (the routes are those of the tree); resolve() decides
    // who passes a message on to the evaluating head.
    for (int g : d.leaves[leaf_].in_groups) {
      (void)ctx.subscribe(d.groups[g].topic, [this, g](const banyan::delivery& m) { on_group(g, m.data()); });
    }
    (void)ctx.subscribe("ctl/go", [this](const banyan::delivery&) {
      resolve();
      if (head_ != this || running_) return;
      build();
      started_ = std::chrono::steady_clock::now();
      running_ = true;
      // The first checkpoint is the start, so that a failover always finds one.
      if (run_->checkpoint_every > 0) keep_checkpoint();
      progress();
    });
    if (run_->checkpoint_every > 0) {
      (void)ctx.subscribe("ctl/replay", [this](const banyan::delivery& m) { on_replay(m.data()); });
      if (!restored_) {
        // Started afresh while the simulation runs (a failover found no durable state for it), it
        // could never catch up: the run ends, saying why. The root says whether the simulation was
        // started; at the run's start the go may still be on its way (held until every node is
        // ready), so only a leaf that has not had it 20 s later is such a leaf.
        ctx.request_text(ctx.tree().path(0), "running", "", std::chrono::seconds(30),
                         [this, &ctx](banyan::result<std::string> r) {
                           if (!r || *r != "yes" || running_) return;
                           ctx.after(std::chrono::seconds(20), [this, &ctx] {
                             if (running_) return;
                             ctx.log("eda_sim: leaf " + run_->d->leaves[leaf_].path +
                                     " restarted without a state while the simulation runs (it failed over with no "
                                     "durable checkpoint: run the nodes with --state-dir and --checkpoint-every); "
                                     "the run ends");
                             ctx.quit(1);
                           });
                         });
      }
    }
    if (eng_) ctx.report_memory(eng_->state_bytes());
    // Moved here while running: go on where the old incarnation stopped (the work it had posted
    // to itself did not move with it).
    if (running_) ctx.post([this] { progress(); });
    if (running_ && restored_ && run_->checkpoint_every > 0) resume_from_checkpoint();
  }

  // A live move carries a leaf's whole simulation state: its engine (values, flip-flops,
  // memories, what is scheduled), where it is in the cycle (groups received and sent), the groups
  // queued for later cycles, the last values it sent, and for the io leaf the run's samples and
  // signature so far. Gate leaves keep no state across restarts (no keep_state), so the SDK asks for
  // a snapshot only when the leaf moves: the io leaf's figures then leave this process with it.
  // With --grain node a process's leaves are merged into one engine, which cannot be taken apart
  // here: such a leaf says so, and its arrival ends the run with that reason.
  std::optional<banyan::payload> snapshot(banyan::context&) override {
    state_writer w;
    w.put(state_magic);
    w.put(state_version);
    w.put<std::int32_t>(leaf_);
    const bool movable = run_->how == grain::leaf && !whole_;
    w.put<std::uint8_t>(movable);
    if (movable) {
      w.put<std::uint8_t>(eng_ != nullptr);
      if (eng_) {
        w.put_all(std::span<const char>(received_));
        w.put_all(std::span<const char>(sent_));
        for (const auto& o : outs_) {
          w.put_all(std::span<const lanes>(o.last));
          // What it sent in the last checkpoint period: for lost readers that resume from an older one.
          const std::uint64_t end = o.log_from + o.log.size(), period = run_->checkpoint_every;
          const std::uint64_t keep_from = std::clamp(cycle_ >= period ? cycle_ - period : 0, o.log_from, end);
          w.put(keep_from);
          w.put<std::uint64_t>(end - keep_from);
          for (std::size_t k = keep_from - o.log_from; k < o.log.size(); ++k) w.put_all(o.log[k].bytes());
        }
        for (const auto& in : ins_) {
          w.put(in.next);
          w.put<std::uint64_t>(in.queue.size());
          for (const auto& p : in.queue) w.put_all(p.bytes());
        }
        std::vector<std::byte> e;
        eng_->save_state(e);
        w.put_all(std::span<const std::byte>(e));
      }
      w.put<std::uint8_t>(running_);
      w.put<std::uint8_t>(cycle_started_);
      w.put(cycle_);
      w.put(running_ ? std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count() : 0.0);
      w.put<std::uint8_t>(io_);
      if (io_) {
        w.put(run_->signature);
        w.put(run_->cycles_done);
        w.put_all(std::span<const std::uint8_t>(run_->samples.samples));
      }
    }
    return banyan::payload::copy_of(std::span<const std::byte>(w.out));
  }

  void restore(banyan::context&, const banyan::payload& state) override {
    const design& d = *run_->d;
    state_reader r{state.bytes(), "eda_sim leaf " + d.leaves[leaf_].path};
    if (r.get<std::uint32_t>("magic") != state_magic || r.get<std::uint32_t>("version") != state_version)
      throw std::runtime_error(r.what + ": the moved state is not an eda_sim leaf state of this version");
    if (const auto l = r.get<std::int32_t>("leaf"); l != leaf_)
      throw std::runtime_error(r.what + ": the moved state is leaf " + std::to_string(l) + "'s");
    if (!r.get<std::uint8_t>("movable")) {
      unmovable_ = "eda_sim: leaf " + d.leaves[leaf_].path +
                   " was moved live or failed over, which --grain node does not "
                   "support (a process's leaves are merged into one engine); run with --grain leaf to "
                   "reconfigure a running simulation. The run ends.";
      return;
    }
    resolve();
    if (r.get<std::uint8_t>("engine")) {
      build();
      auto flags = [&](std::vector<char>& into, const char* field) {
        auto v = r.get_all<char>(field);
        if (v.size() != into.size()) throw std::runtime_error(r.what + ": moved state has a wrong " + field + " count");
        into = std::move(v);
        return static_cast<std::size_t>(std::count(into.begin(), into.end(), 1));
      };
      n_received_ = flags(received_, "received groups");
      n_sent_ = flags(sent_, "sent groups");
      for (auto& o : outs_) {
        auto last = r.get_all<lanes>("last sent values");
        if (last.size() != o.last.size()) throw std::runtime_error(r.what + ": moved state has a wrong group width");
        o.last = std::move(last);
        o.log_from = r.get<std::uint64_t>("log start");
        o.log.clear();
        for (auto n = r.get<std::uint64_t>("log length"); n; --n)
          o.log.push_back(banyan::payload::copy_of(r.bytes(r.get<std::uint64_t>("logged group"), "logged group")));
      }
      for (auto& in : ins_) {
        in.next = r.get<std::uint64_t>("next cycle");
        for (auto n = r.get<std::uint64_t>("queue length"); n; --n)
          in.queue.push_back(banyan::payload::copy_of(r.bytes(r.get<std::uint64_t>("queued group"), "queued group")));
      }
      const auto e = r.get_all<std::byte>("engine");
      if (!eng_->load_state(e)) throw std::runtime_error(r.what + ": the moved engine state does not fit this leaf");
    }
    running_ = r.get<std::uint8_t>("running");
    cycle_started_ = r.get<std::uint8_t>("cycle started");
    cycle_ = r.get<std::uint64_t>("cycle");
    const auto elapsed = r.get<double>("elapsed");
    started_ = std::chrono::steady_clock::now() -
               std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(elapsed));
    if (r.get<std::uint8_t>("io")) {
      if (!io_) throw std::runtime_error(r.what + ": moved state carries the io leaf's figures");
      run_->signature = r.get<std::uint64_t>("signature");
      run_->cycles_done = r.get<std::uint64_t>("cycles done");
      run_->samples.samples = r.get_all<std::uint8_t>("samples");
    }
    if (!r.in.empty())
      throw std::runtime_error(r.what + ": " + std::to_string(r.in.size()) + " bytes after the moved state");
    restored_ = true;
  }

  // Publishes a group for the head (runs in this leaf, the group's driver).
  // A publish that cannot reach a lost node's readers (before the failover is applied) is in the
  // log when the run keeps checkpoints: the resumed readers ask for it. Otherwise the run cannot
  // go on without it.
  void publish_for_head(const std::string& topic, const banyan::payload& p, std::uint32_t up) {
    auto r = ctx_->publish(topic, p, banyan::scope::up(up));
    if (!r && run_->checkpoint_every == 0) throw std::runtime_error("publish " + topic + ": " + r.error().what());
  }

  // A group message for the head's merged leaf (runs in the head). Another leaf of this node may
  // pass one on before the head has had a message of its own: the head learns its members here too.
  // Each group has one message per cycle, in order; one sent again (a reader or driver resumed
  // from a checkpoint: docs/runtime.md "Failover") is dropped, and one that overtook the messages
  // sent again before it waits for them.
  void deliver(int g, banyan::payload p) {
    resolve();
    build();
    in_group& in = ins_[in_index_.at(g)];
    const std::uint64_t c = cycle_of(p);
    if (c < in.next) return;
    if (c > in.next) {
      in.ahead.emplace(c, std::move(p));
      return;
    }
    in.queue.push_back(std::move(p));
    ++in.next;
    for (auto it = in.ahead.begin(); it != in.ahead.end() && it->first == in.next; it = in.ahead.erase(it)) {
      in.queue.push_back(std::move(it->second));
      ++in.next;
    }
    progress();
  }

 private:
  struct in_group {
    int group;
    std::vector<std::uint32_t> slots;  // in the merged leaf
    int trigger;
    std::deque<banyan::payload> queue;
    std::uint64_t next = 0;                          // the cycle of the next message not yet received
    std::map<std::uint64_t, banyan::payload> ahead;  // received before the ones sent again before them
  };
  struct out_group {
    int group;
    std::vector<std::uint32_t> slots;  // in the merged leaf
    std::vector<int> deps;             // ins_ indices
    std::vector<lanes> last;
    std::uint32_t up;               // scope: levels above the driver leaf
    local_leaves::entry publisher;  // the driver leaf
    // With checkpoints: what it sent from cycle log_from on (one message per cycle), kept for two
    // periods, so that it can send again what a reader resuming from a checkpoint needs.
    std::uint64_t log_from = 0;
    std::deque<banyan::payload> log;
  };

  // Who evaluates this leaf (the head) and, per group this leaf reads, whether it passes the group's
  // messages on to the head. Done once, when the local leaves are all known.
  void resolve() {
    if (resolved_) return;
    resolved_ = true;
    const design& d = *run_->d;
    if (run_->how == grain::leaf) {
      head_ = this;
      members_ = {leaf_};
      for (int g : d.leaves[leaf_].in_groups) forward_.insert(g);
      return;
    }
    std::lock_guard lock(run_->local->m);
    const auto& local = run_->local->by_leaf;
    head_entry_ = local.begin()->second;
    head_ = head_entry_.self;
    for (const auto& [l, e] : local) members_.push_back(l);
    for (int g : d.leaves[leaf_].in_groups) {
      const group& gr = d.groups[g];
      if (local.count(gr.driver)) continue;  // the head computes it; the message is for other nodes
      int first = -1;
      for (int r : gr.readers)
        if (local.count(r)) {
          first = r;
          break;
        }
      if (first == leaf_) forward_.insert(g);
    }
  }

  void on_group(int g, const banyan::payload& p) {
    resolve();
    if (!forward_.count(g)) return;
    if (head_ == this) return deliver(g, p);
    (void)head_entry_.post([h = head_, g, p] { h->deliver(g, p); });
  }

  // The head's merged leaf, its inputs (groups from other nodes) and outputs (groups to them).
  void build() {
    if (eng_ || whole_) return;
    const design& d = *run_->d;
    if (members_.size() == d.leaves.size()) {
      // Every leaf is here (one process): the merged leaf is the whole design, which the engine's
      // flat schedule runs fastest (a byte per plane for up to 8 lanes, no cone bookkeeping).
      whole_ = std::make_unique<simulator>(d, schedule::flat, run_->lanes);
      log_engine(use_engine(*whole_, run_->engine, run_->cycles, run_->compile));
      io_ = true;
      return;
    }
    merged_ = merge_leaves(d, members_);
    eng_ = std::make_unique<leaf_engine>(merged_.spec);
    choose_engine_for_leaves();
    if (ctx_) ctx_->report_memory(eng_->state_bytes());  // what a move carries, for the partitioner
    const int io = d.io_leaf();
    io_ = std::find(members_.begin(), members_.end(), io) != members_.end();
    std::map<int, local_leaves::entry> local;
    if (run_->how == grain::node) {
      std::lock_guard lock(run_->local->m);
      local = run_->local->by_leaf;
    } else {
      local[leaf_] = {{}, this};
    }
    for (int g : merged_.spec.in_groups) {
      const group& gr = d.groups[g];
      std::size_t r = 0;
      while (!merged_.slot_of[gr.readers[r]].size()) ++r;
      std::vector<std::uint32_t> slots;
      for (auto s : gr.reader_slots[r]) slots.push_back(merged_.at(gr.readers[r], s));
      in_index_[g] = static_cast<int>(ins_.size());
      const int trigger = eng_->add_trigger(slots);
      ins_.push_back({g, std::move(slots), trigger, {}});
    }
    if (io_) {
      std::vector<std::uint32_t> slots;
      for (const auto& p : d.inputs)
        for (auto s : p.slots) slots.push_back(merged_.at(io, s));
      io_trigger_ = eng_->add_trigger(slots);
    }
    // Outputs: the input groups each one depends on (backward cone through the program).
    const eda::leaf& spec = merged_.spec;
    std::vector<int> producer(spec.slots, -1);
    for (std::size_t i = 0; i < spec.program.size(); ++i) producer[spec.program[i].y] = static_cast<int>(i);
    for (int g : spec.out_groups) {
      const auto& gr = d.groups[g];
      out_group o{g,
                  {},
                  {},
                  std::vector<lanes>(gr.driver_slots.size(), lanes::x()),
                  levels_up(d, gr.driver, gr.scope),
                  local.at(gr.driver)};
      for (auto s : gr.driver_slots) o.slots.push_back(merged_.at(gr.driver, s));
      std::vector<char> seen(spec.slots, 0);
      std::vector<std::uint32_t> stack(o.slots.begin(), o.slots.end());
      while (!stack.empty()) {
        const auto s = stack.back();
        stack.pop_back();
        if (seen[s]) continue;
        seen[s] = 1;
        if (producer[s] >= 0) {
          for_each_input(spec, spec.program[producer[s]], [&](std::uint32_t in) { stack.push_back(in); });
        }
      }
      for (std::size_t k = 0; k < ins_.size(); ++k)
        for (auto s : ins_[k].slots)
          if (seen[s]) {
            o.deps.push_back(static_cast<int>(k));
            break;
          }
      outs_.push_back(std::move(o));
    }
    received_.assign(ins_.size(), 0);
    sent_.assign(outs_.size(), 0);
  }

  // The compiled engine for eng_ (compiled.hpp): leaf grain shares one object of every leaf per
  // process; node grain compiles this node's merged program.
  void choose_engine_for_leaves() {
    const design& d = *run_->d;
    if (run_->how == grain::node) {
      const program_source src[] = {source_of(merged_.spec)};
      auto chosen = choose_engine(run_->engine, merged_.spec.program.size(), run_->cycles, run_->compile,
                                  [&](const compile_options& o) { return compile(src, value_layout::wide, o); });
      if (chosen && chosen->code) eng_->use_native(chosen->code->fn(0), chosen->code);
      return log_engine(chosen);
    }
    auto& local = *run_->local;
    std::lock_guard lock(local.code_m);
    if (!local.leaf_code) {
      std::size_t ops = 0;
      for (const auto& l : d.leaves) ops += l.program.size();
      local.leaf_code = choose_engine(run_->engine, ops, run_->cycles, run_->compile, [&](const compile_options& o) {
        std::vector<merged_leaf> alone;
        for (int l = 0; l < static_cast<int>(d.leaves.size()); ++l) alone.push_back(merge_leaves(d, {l}));
        std::vector<program_source> src;
        for (const auto& m : alone) src.push_back(source_of(m.spec));
        return compile(src, value_layout::wide, o);
      });
      log_engine(*local.leaf_code);
    }
    if (*local.leaf_code && (*local.leaf_code)->code)
      eng_->use_native((*local.leaf_code)->code->fn(static_cast<std::size_t>(leaf_)), (*local.leaf_code)->code);
  }

  void log_engine(const result<engine_choice>& chosen) {
    if (!ctx_) return;
    if (!chosen) ctx_->log("eda_sim: interpreting: " + chosen.error().message);
    else if (!chosen->note.empty()) ctx_->log("eda_sim: " + chosen->note);
    else if (chosen->code) ctx_->log("eda_sim: compiled engine: " + describe(*chosen->code));
  }

  static std::uint32_t levels_up(const design& d, int leaf, int scope_inst) {
    std::uint32_t n = 1;  // leaf -> its instance
    for (int i = d.leaves[leaf].instance; i != scope_inst; i = d.instances[i].parent) ++n;
    return n;
  }

  void start_cycle() {
    if (!io_) return;
    const design& d = *run_->d;
    in_bits_.resize(input_bits(d));
    run_->stim->fill(cycle_, in_bits_);
    const std::uint64_t mask = run_->lanes >= 64 ? ~0ull : (1ull << run_->lanes) - 1;
    std::size_t k = 0;
    bool changed = false;
    for (const auto& p : d.inputs)
      for (auto s : p.slots) {
        lanes v = in_bits_[k++];
        v.hi &= mask;
        v.lo |= ~mask;
        lanes& slot = eng_->slot(merged_.at(d.io_leaf(), s));
        changed |= !(slot == v);
        slot = v;
      }
    if (changed) eng_->mark(io_trigger_);
  }

  // Samples the outputs (io only: "just before the edge"), then clocks every flip-flop.
  void end_cycle() {
    if (io_) {
      const design& d = *run_->d;
      const int io = d.io_leaf();
      const std::uint64_t mask = run_->lanes >= 64 ? ~0ull : (1ull << run_->lanes) - 1;
      auto& t = run_->samples;
      for (const auto& p : d.outputs)
        for (auto s : p.slots) {
          const lanes v = eng_->slot(merged_.at(io, s));
          run_->signature = (run_->signature ^ (v.hi & mask)) * 0x100000001b3ull;
          run_->signature = (run_->signature ^ (v.unknown() & mask)) * 0x100000001b3ull;
        }
      if (t.lanes) {
        for (unsigned l = 0; l < t.lanes; ++l)
          for (const auto& p : d.outputs)
            for (auto s : p.slots) t.samples.push_back(static_cast<std::uint8_t>(eng_->slot(merged_.at(io, s)).get(l)));
      }
    }
    eng_->clock_edge();
    if (!io_) return;
    run_->cycles_done = cycle_ + 1;
    if (cycle_ + 1 == run_->cycles) {
      run_->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
      run_->ended_here = true;
      ctx_->quit(0);
    }
  }

  void send(out_group& o) {
    const auto& gr = run_->d->groups[o.group];
    bool changed = false;
    for (std::size_t i = 0; i < o.slots.size(); ++i) {
      const lanes v = eng_->slot(o.slots[i]);
      if (!(v == o.last[i])) o.last[i] = v, changed = true;
    }
    buf_.resize(header + (changed ? o.last.size() * sizeof(lanes) : 0));
    std::memcpy(buf_.data(), &cycle_, header);
    if (changed) std::memcpy(buf_.data() + header, o.last.data(), o.last.size() * sizeof(lanes));
    auto p = banyan::payload::copy_of(std::span<const std::byte>(buf_));
    if (run_->checkpoint_every > 0) o.log.push_back(p);
    if (o.publisher.self == this) return publish_for_head(gr.topic, p, o.up);
    (void)o.publisher.post(
        [to = o.publisher.self, topic = &gr.topic, p, up = o.up] { to->publish_for_head(*topic, p, up); });
  }

  // A checkpoint at a cycle boundary: the logs keep two periods, then the SDK takes the state
  // (snapshot(); with --state-dir it is made durable).
  void keep_checkpoint() {
    for (auto& o : outs_)
      for (; !o.log.empty() && o.log_from + 2 * run_->checkpoint_every < cycle_; ++o.log_from) o.log.pop_front();
    ctx_->checkpoint();
  }

  // Sends group `o` again from cycle `from` (what it sent since, from its log).
  void resend(out_group& o, std::uint64_t from, const std::string& to) {
    const auto& topic = run_->d->groups[o.group].topic;
    const std::uint64_t end = o.log_from + o.log.size();
    if (from >= end) return;
    if (from < o.log_from) {
      ctx_->log("eda_sim: " + to + " needs group " + topic + " again from cycle " + std::to_string(from) +
                ", but its driver kept it from cycle " + std::to_string(o.log_from) + " on only (two periods of " +
                std::to_string(run_->checkpoint_every) + " cycles); the run ends");
      ctx_->quit(1);
      return;
    }
    for (std::uint64_t c = from; c < end; ++c) publish_for_head(topic, o.log[c - o.log_from], o.up);
    run_->resent += end - from;
  }

  // Another leaf resumed from a checkpoint and asks for the groups it reads from cycle `from` on.
  void on_replay(const banyan::payload& m) {
    if (!eng_ || m.size() != sizeof(std::int32_t) + sizeof(std::uint64_t)) return;
    std::int32_t leaf = 0;
    std::uint64_t from = 0;
    std::memcpy(&leaf, m.bytes().data(), sizeof leaf);
    std::memcpy(&from, m.bytes().data() + sizeof leaf, sizeof from);
    const design& d = *run_->d;
    if (leaf == leaf_ || leaf < 0 || static_cast<std::size_t>(leaf) >= d.leaves.size()) return;
    for (auto& o : outs_) {
      const auto& readers = d.groups[o.group].readers;
      if (std::find(readers.begin(), readers.end(), leaf) != readers.end())
        resend(o, from, "leaf " + d.leaves[leaf].path);
    }
  }

  // Resumed from a checkpoint (a failover): what it sent in the period before may not have reached
  // its readers (lost with its node), and what its drivers sent it since is gone. It sends the
  // former again and asks for the latter, again each second while it makes no progress.
  void resume_from_checkpoint() {
    for (auto& o : outs_) resend(o, o.log_from, "its readers");
    ask_replay();
  }

  void ask_replay() {
    if (!running_ || cycle_ >= run_->cycles || ins_.empty()) return;
    if (replay_asks_ > 0 && cycle_ != replay_asked_at_) return;  // it goes on: its inputs came
    if (replay_asks_ == 60) {
      ctx_->log("eda_sim: leaf " + run_->d->leaves[leaf_].path + " resumed at cycle " + std::to_string(cycle_) +
                " but got no inputs for a minute; the run ends");
      ctx_->quit(1);
      return;
    }
    std::uint64_t from = ins_.front().next;
    for (const auto& in : ins_) from = std::min(from, in.next);
    ++replay_asks_;
    replay_asked_at_ = cycle_;
    std::array<std::byte, sizeof(std::int32_t) + sizeof(std::uint64_t)> ask{};
    const std::int32_t leaf = leaf_;
    std::memcpy(ask.data(), &leaf, sizeof leaf);
    std::memcpy(ask.data() + sizeof leaf, &from, sizeof from);
    (void)ctx_->publish("ctl/replay", banyan::payload::copy_of(std::span<const std::byte>(ask)), banyan::scope::root());
    ctx_->after(std::chrono::seconds(1), [this] { ask_replay(); });
  }

  void apply(in_group& in) {
    const banyan::payload p = std::move(in.queue.front());
    in.queue.pop_front();
    const auto bytes = p.bytes();
    const std::uint64_t c = cycle_of(p);
    if (c != cycle_)
      throw std::logic_error("group message for cycle " + std::to_string(c) + " arrived in cycle " +
                             std::to_string(cycle_));
    if (bytes.size() == header) return;  // unchanged
    const auto* v = reinterpret_cast<const lanes*>(bytes.data() + header);
    for (std::size_t i = 0; i < in.slots.size(); ++i) std::memcpy(&eng_->slot(in.slots[i]), v + i, sizeof(lanes));
    eng_->mark(in.trigger);
  }

  // The whole design in this head: no messages, the engine's cycle loop, yielding now and then so
  // the actor system (shutdown, heartbeats) is never starved.
  void progress_whole() {
    const design& d = *run_->d;
    const std::uint64_t mask = run_->lanes >= 64 ? ~0ull : (1ull << run_->lanes) - 1;
    auto& t = run_->samples;
    for (int batch = 0; batch < 256 && cycle_ < run_->cycles; ++batch, ++cycle_) {
      in_bits_.resize(input_bits(d));
      run_->stim->fill(cycle_, in_bits_);
      for (auto& v : in_bits_) v.hi &= mask, v.lo |= ~mask;
      whole_->set_inputs(in_bits_);
      whole_->settle();
      whole_->outputs(out_bits_);
      for (const lanes& v : out_bits_) {
        run_->signature = (run_->signature ^ (v.hi & mask)) * 0x100000001b3ull;
        run_->signature = (run_->signature ^ (v.unknown() & mask)) * 0x100000001b3ull;
      }
      for (unsigned l = 0; l < t.lanes; ++l)
        for (const lanes& v : out_bits_) t.samples.push_back(static_cast<std::uint8_t>(v.get(l)));
      whole_->clock_edge();
    }
    run_->cycles_done = cycle_;
    if (cycle_ < run_->cycles) return ctx_->post([this] { progress(); });
    run_->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    run_->ended_here = true;
    ctx_->quit(0);
  }

  void progress() {
    if (!running_) return;
    if (whole_) return progress_whole();
    int batch = 0;
    while (cycle_ < run_->cycles) {
      if (!cycle_started_) {
        start_cycle();
        cycle_started_ = true;
      }
      bool any = false;
      for (std::size_t k = 0; k < ins_.size(); ++k)
        if (!received_[k] && !ins_[k].queue.empty()) {
          apply(ins_[k]);
          received_[k] = 1;
          ++n_received_;
          any = true;
        }
      eng_->evaluate();
      for (std::size_t j = 0; j < outs_.size(); ++j) {
        if (sent_[j]) continue;
        bool ready = true;
        for (int k : outs_[j].deps) ready = ready && received_[k];
        if (!ready) continue;
        send(outs_[j]);
        sent_[j] = 1;
        ++n_sent_;
      }
      if (n_received_ == ins_.size() && n_sent_ == outs_.size()) {
        end_cycle();
        ++cycle_;
        std::fill(received_.begin(), received_.end(), 0);
        std::fill(sent_.begin(), sent_.end(), 0);
        n_received_ = n_sent_ = 0;
        cycle_started_ = false;
        if (run_->checkpoint_every > 0 && cycle_ % run_->checkpoint_every == 0) keep_checkpoint();
        // A head that needs no message (all in one process) yields now and then, so the actor
        // system (shutdown, heartbeats) is never starved.
        if (++batch == 256 && cycle_ < run_->cycles) return ctx_->post([this] { progress(); });
        continue;
      }
      if (!any) return;
    }
  }

  std::shared_ptr<component_run> run_;
  int leaf_;
  banyan::context* ctx_ = nullptr;
  bool resolved_ = false, io_ = false, running_ = false, cycle_started_ = false;
  gate_component* head_ = nullptr;
  local_leaves::entry head_entry_;
  std::vector<int> members_;
  std::set<int> forward_;
  merged_leaf merged_;
  std::unique_ptr<leaf_engine> eng_;
  std::unique_ptr<simulator> whole_;  // instead of eng_ when this process hosts every leaf
  std::vector<lanes> out_bits_;
  std::map<int, int> in_index_;
  int io_trigger_ = -1;
  std::vector<in_group> ins_;
  std::vector<out_group> outs_;
  std::vector<char> received_, sent_;
  std::size_t n_received_ = 0, n_sent_ = 0;
  std::uint64_t cycle_ = 0;
  std::vector<lanes> in_bits_;
  std::vector<std::byte> buf_;
  std::chrono::steady_clock::time_point started_;
  std::string unmovable_;  // set by restore(): why this leaf cannot go on here
  bool restored_ = false;  // this incarnation started from a state (a move or a failover)
  std::uint64_t replay_asked_at_ = 0, replay_asks_ = 0;
};

// The root composite starts the simulation once the whole tree is up, so no leaf publishes before
// every subscriber exists.
class sim_root final : public banyan::composite {
 public:
  void on_start(banyan::context& ctx) override {
    // Whether the simulation runs: a leaf started afresh while it does cannot catch up.
    ctx.serve_text("running",
                   [this](std::string_view) -> banyan::result<std::string> { return std::string(go_ ? "yes" : "no"); });
  }
  void on_children_started(banyan::context& ctx) override {
    if (go_) return;  // restarted children (a failover) go on from their states
    go_ = true;
    (void)ctx.publish("ctl/go", std::string_view{}, banyan::scope::root());
  }

 private:
  bool go_ = false;
};

std::string last_level(const std::string& path) { return path.substr(path.rfind('/') + 1); }

void add_instance(banyan::spec& parent, const design& d, int inst, const std::shared_ptr<component_run>& run) {
  const auto& in = d.instances[inst];
  if (in.leaf >= 0)
    parent.add_leaf<gate_component>(last_level(d.leaves[in.leaf].path), run, in.leaf)
        .keep_state(run->checkpoint_every > 0);
  for (int ch : in.children) add_instance(parent.add_composite(last_level(d.instances[ch].path)), d, ch, run);
}

}  // namespace

static void build_app(banyan::app& app, const std::shared_ptr<component_run>& run) {
  const design& d = *run->d;
  run->samples.bits = 0;
  for (const auto& p : d.outputs) run->samples.bits += p.slots.size();
  run->samples.lanes = run->trace_lanes;
  add_instance(app.root(), d, 0, run);
  app.root()
      .add_leaf<gate_component>(last_level(d.leaves[d.io_leaf()].path), run, d.io_leaf())
      .keep_state(run->checkpoint_every > 0);
}

std::unique_ptr<banyan::app> make_app(const std::shared_ptr<component_run>& run) {
  run->local = std::make_shared<local_leaves>();
  auto app = std::make_unique<banyan::app>(run->d->instances[0].path.substr(1), banyan::supervision{},
                                           std::in_place_type<sim_root>);
  build_app(*app, run);
  return app;
}

}  // namespace banyan::eda
