// The cycle-based simulator: every leaf evaluates its levelised cells on 64 lanes at once, and
// boundary values move between leaves once per settling round.
//
// A cycle is: set_inputs → settle → (sample outputs) → clock_edge. settle() runs passes over the
// leaves in dependency order (driver before reader, computed once); in a pass every leaf whose
// inputs or state changed evaluates its scheduled ops and publishes every group whose value changed
// to its readers (the exchange) at once, so a reader later in the order sees it in the same pass.
// Passes repeat until nothing changes: one pass when no combinational path crosses back to a leaf
// earlier in the order, a few otherwise.
//
// The exchange is the seam the component version replaces with topics: publish(group, values) is the
// only way a value leaves a leaf. Not thread-safe; one simulator per thread.
#pragma once

#include <banyan/eda_sim/compiled.hpp>
#include <banyan/eda_sim/design.hpp>
#include <banyan/eda_sim/logic.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace banyan::eda {

// A run of a levelised program whose ops share one opcode: evaluated as a loop without dispatch.
struct op_run {
  opcode code;
  std::uint32_t begin, end;  // program[begin, end)
};

// One leaf's values and program; the unit a component wraps.
//
// Evaluation is cone-restricted: a trigger is a set of slots that change together (a delivered
// group, or the flip-flop states), and marking it schedules only the ops in its transitive fan-out.
// evaluate() runs the scheduled ops in levelised order; when at least half of them are scheduled
// it runs all of them as runs of one opcode instead (cheaper than picking them out; recomputing an
// op whose inputs did not change gives the same value). The first evaluate() runs everything.
class leaf_engine {
 public:
  explicit leaf_engine(const leaf& l);
  // Registers slots that change together; returns the id mark() takes.
  int add_trigger(std::span<const std::uint32_t> slots);
  void mark(int trigger);
  void evaluate();  // runs the scheduled ops; returns how many ran via last_ops()
  std::size_t last_ops() const { return last_ops_; }
  // All flip-flops take D at once, then memories are written; true if any state or memory word
  // changed (then marks what reads them).
  bool clock_edge();
  lanes& slot(std::uint32_t s) { return v_[s]; }
  const lanes& slot(std::uint32_t s) const { return v_[s]; }
  const leaf& spec() const { return *spec_; }

  // The engine's whole dynamic state (values, flip-flop states, memory words, what is scheduled to
  // evaluate), appended to `out` in this build's byte order: what a leaf takes along when it moves
  // to another process of the same build. load_state() into an engine of the same leaf (with the
  // same triggers added) goes on exactly where this one stopped; it returns false, leaving the
  // engine unchanged, when `in` is not such a state (sizes differ, or it is cut short).
  void save_state(std::vector<std::byte>& out) const;
  bool load_state(std::span<const std::byte> in);
  // Bytes save_state() writes: the leaf's memory footprint.
  std::size_t state_bytes() const;

  // Switches to native code compiled from source_of(spec()) (value_layout::wide): from then on
  // evaluate() runs the whole program natively whatever is scheduled (straight-line code costs less
  // than picking ops out). `code` keeps the object loaded.
  void use_native(native_fn fn, std::shared_ptr<const native_bundle> code);
  bool native() const { return native_ != nullptr; }

 private:
  const leaf* spec_;
  std::vector<lanes> v_;
  std::vector<lanes> next_;
  std::size_t words_;                              // 64-op words in a cone bitset
  std::vector<std::vector<std::uint64_t>> cones_;  // per trigger
  std::vector<std::uint64_t> pending_;
  std::vector<op_run> runs_;
  int state_trigger_ = -1;
  std::size_t last_ops_ = 0;
  native_fn native_ = nullptr;
  std::shared_ptr<const native_bundle> code_;
  std::vector<std::vector<std::vector<std::uint32_t>>> port_bits_;  // per memory, read port, bit: slot
  static int native_memrd(void* self, std::uint32_t op);
  // Memories: per memory, size * width values (64 lanes each); per read port, the words its lanes
  // read as (word index or -1 for X / out of range, lane mask) pairs, usually one or a few,
  // computed by the port's bit-0 op and used by the others.
  using lane_words = std::vector<std::pair<std::int64_t, std::uint64_t>>;
  std::vector<std::vector<lanes>> mem_;
  std::vector<std::vector<lane_words>> read_addr_;
  void lane_addresses(const memory& m, const std::vector<std::uint32_t>& addr, lane_words& out) const;
  lanes read_bit(int mem, int port, std::uint32_t bit) const;
  bool write_memories();
};

// A leaf's program as compile() takes it (constants in slots 0, 1, 2).
program_source source_of(const leaf& l);

struct sim_stats {
  std::uint64_t cycles = 0;
  std::uint64_t rounds = 0;  // settling passes, summed over cycles
  std::uint64_t leaf_evaluations = 0;
  std::uint64_t gate_evaluations = 0;    // ops run (64 lanes each)
  std::vector<std::uint64_t> publishes;  // per group: messages sent
  int max_rounds = 0;                    // most rounds any settle needed
  std::uint64_t two_state_passes = 0;    // compiled engine, one lane: passes run by the 2-state program
};

// How the engine settles a cycle:
//  - flat (default): every leaf's ops in one topologically ordered program over one value array (a
//    boundary net is one value for its driver and readers), one pass per cycle whatever the leaf
//    structure, no exchange. The order keeps one opcode as long as any op of it is ready, and the
//    program runs as runs of one opcode, each a loop without dispatch. (Running only the ops whose
//    inputs changed was tried: on soc it ran 40% of the ops and took 2.5x as long, the bookkeeping
//    costing more than the gates.) With count_messages(), boundary messages are counted as the
//    leaf grain's components send them (a group whose value changed during the cycle is one).
//  - leaves: the leaf-by-leaf exchange described above (the seam the component version mirrors),
//    with cone-restricted evaluation and a message per changed group per pass.
// Both give identical outputs (the tests check it).
enum class schedule { flat, leaves };

struct flat_engine;

class simulator {
 public:
  // `lanes_used`: how many lanes set_inputs() drives (lanes 0 .. lanes_used-1); the flat schedule
  // gives the others no meaning (memories decode addresses in the used lanes only, so the others
  // read nothing). With at most 8 it keeps a byte per plane per value instead of 64 bits (faster:
  // the values fit in the first-level cache).
  explicit simulator(const design& d, schedule how = schedule::flat, unsigned lanes_used = 64);
  ~simulator();
  simulator(simulator&&) noexcept;

  // Top inputs for this cycle, one `lanes` per bit in design.inputs order (LSB first per port).
  void set_inputs(std::span<const lanes> bits);
  // Settles combinational values across all leaves; returns the passes it took.
  int settle();
  // Top outputs after settle(), one per bit in design.outputs order.
  void outputs(std::vector<lanes>& out) const;
  // Rising clock edge: every flip-flop of every leaf takes its D.
  void clock_edge();

  // Compiles this simulator's program (the flat one, or every leaf's in one object) to native code
  // (compiled.hpp) and evaluates with it from then on; values, state and statistics carry over, and
  // every value is the interpreter's. On error (or a null bundle: opts.cached_only and not cached)
  // nothing changes and the simulator goes on interpreting.
  result<std::shared_ptr<const native_bundle>> compile(const compile_options& opts);
  bool native() const;

  // Flat schedule: also count, per group, the cycles its value changed (the messages the leaf grain
  // sends), into stats().publishes. Off by default: on soc it costs a third of the cycle time.
  void count_messages(bool on) { count_messages_ = on; }

  // A value after settle(): the interpreter's, whatever the engine. (One difference: with the
  // compiled engine's 2-state program, a value it kept in a register and read after clock_edge() but
  // before the next settle() is recomputed from the new states, where the interpreter still has the
  // last settle's.)
  lanes value(int leaf, std::uint32_t slot) const;
  const sim_stats& stats() const { return stats_; }
  const design& spec() const { return *d_; }

 private:
  void publish(int group);
  std::vector<std::vector<int>> triggers_;  // per group, per reader: trigger id in that reader

  const design* d_;
  std::unique_ptr<flat_engine> flat_;
  std::vector<leaf_engine> leaves_;
  std::vector<std::vector<lanes>> last_sent_;              // per group
  std::vector<std::uint32_t> flat_watch_at_, flat_watch_;  // flat: per group, its driver values
  std::vector<lanes> flat_last_, watched_;
  std::vector<std::uint32_t> flat_inputs_, flat_outputs_;  // flat: top port bits' values
  std::vector<char> dirty_;
  std::vector<int> at_;  // leaves in evaluation order
  int dirty_count_ = 0;
  bool count_messages_ = false;
  void make_dirty(int l) {
    if (!dirty_[l]) dirty_[l] = 1, ++dirty_count_;
  }
  sim_stats stats_;
};

// The engine a run of `cycles` uses (choose_engine, compiled.hpp), applied to `sim`.
result<engine_choice> use_engine(simulator& sim, engine_kind kind, std::uint64_t cycles, compile_options opts);

}  // namespace banyan::eda
