#include <banyan/eda_sim/simulator.hpp>

#include "gates.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstring>
#include <tuple>
#include <type_traits>

namespace banyan::eda {

using namespace detail;

namespace {

using lane_words = std::vector<std::pair<std::int64_t, std::uint64_t>>;

// Groups the 64 lanes by the word they address (-1: X or out of range). Lanes usually share few
// addresses (one lane in use, or lanes in step), so per distinct address one pass over the address
// bits finds every lane that has it. `base` offsets the slot numbers (the flat engine's array).
template <class L>
void group_by_address(const L* v, std::size_t base, const memory& m, const std::vector<std::uint32_t>& addr,
                      lane_words& out, std::uint64_t active = ~0ull) {
  out.clear();
  if (active == 1) {  // one stimulus stream: the address of lane 0, no grouping
    std::int64_t word = 0;
    for (std::size_t i = 0; i < addr.size(); ++i) {
      const L a = v[base + addr[i]];
      if (a.unknown() & 1) return out.emplace_back(-1, 1), void();
      word |= static_cast<std::int64_t>(a.hi & 1) << i;
    }
    word -= m.offset;
    out.emplace_back(word < 0 || word >= static_cast<std::int64_t>(m.size) ? -1 : word, 1);
    return;
  }
  std::uint64_t unknown = 0;
  for (auto s : addr) unknown |= v[base + s].unknown();
  unknown &= active;
  if (unknown) out.emplace_back(-1, unknown);
  std::uint64_t left = ~unknown & all_lanes<L> & active;
  while (left) {
    const unsigned l = static_cast<unsigned>(__builtin_ctzll(left));
    std::uint64_t same = left;
    std::int64_t word = 0;
    for (std::size_t i = 0; i < addr.size(); ++i) {
      const std::uint64_t ones = v[base + addr[i]].hi;  // known lanes: hi is the value
      if ((ones >> l) & 1) {
        word |= std::int64_t{1} << i;
        same &= ones;
      } else {
        same &= ~ones;
      }
    }
    left &= ~same;
    word -= m.offset;
    if (word < 0 || word >= static_cast<std::int64_t>(m.size)) word = -1;
    out.emplace_back(word, same);
  }
}

template <class L>
L read_word_bit(const memory& m, const std::vector<L>& words, const lane_words& addr, std::uint32_t bit) {
  std::uint64_t hi = 0, lo = 0;
  for (const auto& [idx, mask] : addr) {
    const L w = idx < 0 ? L::x() : words[static_cast<std::size_t>(idx) * m.width + bit];
    hi |= w.hi & mask;
    lo |= w.lo & mask;
  }
  return make<L>(hi, lo);
}

// Applies a memory's write ports (values before the edge); true when a word changed.
template <class L>
bool write_ports(const L* v, std::size_t base, const memory& m, const std::vector<memory::write_port>& writes,
                 std::vector<L>& words, lane_words& addr, std::uint64_t active = ~0ull) {
  bool changed = false;
  for (const auto& wp : writes) {
    std::uint64_t any = 0;  // most cycles write nothing: skip the address decoding then
    for (auto e : wp.en) any |= v[base + e].hi & ~v[base + e].lo;
    if (!(any & active)) continue;
    group_by_address(v, base, m, wp.addr, addr, active);
    for (std::uint32_t b = 0; b < m.width; ++b) {
      const L en = v[base + wp.en[b]];
      const std::uint64_t write = en.hi & ~en.lo;  // lanes whose enable is a known 1
      if (!write) continue;
      const L d = v[base + wp.data[b]];
      for (const auto& [idx, mask] : addr) {
        const std::uint64_t lw = write & mask;
        if (!lw || idx < 0) continue;  // an X address writes nothing, as in Icarus
        L& w = words[static_cast<std::size_t>(idx) * m.width + b];
        const L nw = make<L>((w.hi & ~lw) | (d.hi & lw), (w.lo & ~lw) | (d.lo & lw));
        changed |= !(nw == w);
        w = nw;
      }
    }
  }
  return changed;
}

template <class L = lanes>
std::vector<L> initial_words(const memory& m) {
  std::vector<L> words(m.init.size());
  for (std::size_t i = 0; i < m.init.size(); ++i)
    words[i] = from_lanes<L>(m.init[i] == 0 ? lanes::zero() : m.init[i] == 1 ? lanes::one() : lanes::x());
  return words;
}

// A run of ops with one opcode: no dispatch inside the loop. `Op` has a, b, s, y.
template <opcode C, class L, class Op>
void run_ops(L* v, const Op* p, const Op* e) {
  for (; p != e; ++p) v[p->y] = gate<C, L>(v[p->a], v[p->b], v[p->s]);
}

// An op's operands without its opcode (the run has it): 16 bytes instead of 20.
struct operands {
  std::uint32_t a, b, s, y;
};

// Runs program[seg.begin, seg.end) for every op_run (a run of one opcode); `memrd(op)` evaluates a
// memory read op.
template <class L, class Op, class MemRead>
void run_op_runs(L* val, const Op* prog, const std::vector<op_run>& op_runs, MemRead&& memrd) {
  for (const op_run& sg : op_runs) {
    const Op* b = prog + sg.begin;
    const Op* e = prog + sg.end;
    switch (sg.code) {
      case opcode::buf: run_ops<opcode::buf>(val, b, e); break;
      case opcode::not_: run_ops<opcode::not_>(val, b, e); break;
      case opcode::and_: run_ops<opcode::and_>(val, b, e); break;
      case opcode::or_: run_ops<opcode::or_>(val, b, e); break;
      case opcode::xor_: run_ops<opcode::xor_>(val, b, e); break;
      case opcode::nand: run_ops<opcode::nand>(val, b, e); break;
      case opcode::nor: run_ops<opcode::nor>(val, b, e); break;
      case opcode::xnor: run_ops<opcode::xnor>(val, b, e); break;
      case opcode::andnot: run_ops<opcode::andnot>(val, b, e); break;
      case opcode::ornot: run_ops<opcode::ornot>(val, b, e); break;
      case opcode::mux: run_ops<opcode::mux>(val, b, e); break;
      case opcode::nmux: run_ops<opcode::nmux>(val, b, e); break;
      case opcode::memrd:
        for (const Op* o = b; o != e; ++o) memrd(*o);
        break;
    }
  }
}

// Per memory, per read port, per bit: the slot its memrd op writes (the compiled engine reads a
// whole port in one call).
std::vector<std::vector<std::vector<std::uint32_t>>> read_port_outputs(const std::vector<op>& program) {
  std::vector<std::vector<std::vector<std::uint32_t>>> out;
  for (const op& o : program) {
    if (o.code != opcode::memrd) continue;
    if (out.size() <= o.a) out.resize(o.a + 1);
    if (out[o.a].size() <= o.b) out[o.a].resize(o.b + 1);
    if (out[o.a][o.b].size() <= o.s) out[o.a][o.b].resize(o.s + 1);
    out[o.a][o.b][o.s] = o.y;
  }
  return out;
}

std::vector<op_run> op_runs_of(const std::vector<op>& program) {
  std::vector<op_run> out;
  for (std::uint32_t i = 0; i < program.size(); ++i)
    if (out.empty() || out.back().code != program[i].code) out.push_back({program[i].code, i, i + 1});
    else out.back().end = i + 1;
  return out;
}

}  // namespace

leaf_engine::leaf_engine(const leaf& l)
    : spec_(&l),
      v_(l.slots, lanes::x()),
      words_((l.program.size() + 63) / 64),
      pending_(words_, ~0ull),
      runs_(op_runs_of(l.program)) {
  v_[0] = lanes::zero();
  v_[1] = lanes::one();
  v_[2] = lanes::x();
  next_.resize(l.flops.size());
  if (l.program.size() % 64) pending_.back() = (1ull << (l.program.size() % 64)) - 1;
  std::vector<std::uint32_t> states;
  for (const auto& f : l.flops) {
    states.push_back(f.state);
    if (f.init != 2) v_[f.state] = f.init ? lanes::one() : lanes::zero();
  }
  for (const auto& m : l.memories) {
    states.push_back(m.content);
    mem_.push_back(initial_words(m));
    read_addr_.emplace_back(m.reads.size());
  }
  state_trigger_ = add_trigger(states);
}

int leaf_engine::add_trigger(std::span<const std::uint32_t> slots) {
  // Forward closure over the program: ops are levelised, so one pass in order suffices.
  std::vector<char> hot(v_.size(), 0);
  for (auto s : slots) hot[s] = 1;
  std::vector<std::uint64_t> cone(words_, 0);
  const auto& prog = spec_->program;
  for (std::size_t i = 0; i < prog.size(); ++i) {
    const op& o = prog[i];
    bool any = false;
    for_each_input(*spec_, o, [&](std::uint32_t s) { any = any || hot[s]; });
    if (any) {
      hot[o.y] = 1;
      cone[i / 64] |= 1ull << (i % 64);
    }
  }
  cones_.push_back(std::move(cone));
  return static_cast<int>(cones_.size()) - 1;
}

void leaf_engine::mark(int trigger) {
  const auto& c = cones_[trigger];
  for (std::size_t w = 0; w < words_; ++w) pending_[w] |= c[w];
}

program_source source_of(const leaf& l) {
  static constexpr std::uint32_t constants[3] = {0, 1, 2};
  return {l.program, {{&constants[0], 1}, {&constants[1], 1}, {&constants[2], 1}}};
}

void leaf_engine::use_native(native_fn fn, std::shared_ptr<const native_bundle> code) {
  native_ = fn;
  code_ = std::move(code);
  port_bits_ = read_port_outputs(spec_->program);
}

int leaf_engine::native_memrd(void* self, std::uint32_t i) {
  auto* e = static_cast<leaf_engine*>(self);
  const op& o = e->spec_->program[i];
  const memory& m = e->spec_->memories[o.a];
  e->lane_addresses(m, m.reads[o.b].addr, e->read_addr_[o.a][o.b]);
  const auto& bits = e->port_bits_[o.a][o.b];
  for (std::uint32_t b = 0; b < bits.size(); ++b)
    e->v_[bits[b]] = e->read_bit(static_cast<int>(o.a), static_cast<int>(o.b), b);
  return 0;  // wide values have no 2-state program
}

void leaf_engine::evaluate() {
  lanes* v = v_.data();
  const op* prog = spec_->program.data();
  if (native_) {
    std::fill(pending_.begin(), pending_.end(), 0);
    native_(v, &leaf_engine::native_memrd, this);
    last_ops_ = spec_->program.size();
    return;
  }
  std::size_t ran = 0;
  for (std::size_t w = 0; w < words_; ++w) ran += static_cast<std::size_t>(__builtin_popcountll(pending_[w]));
  if (ran * 2 >= spec_->program.size() && ran) {
    std::fill(pending_.begin(), pending_.end(), 0);
    run_op_runs(v, prog, runs_, [&](const op& o) {
      if (o.s == 0) lane_addresses(spec_->memories[o.a], spec_->memories[o.a].reads[o.b].addr, read_addr_[o.a][o.b]);
      v[o.y] = read_bit(static_cast<int>(o.a), static_cast<int>(o.b), o.s);
    });
    last_ops_ = spec_->program.size();
    return;
  }
  ran = 0;
  for (std::size_t w = 0; w < words_; ++w) {
    std::uint64_t bits = pending_[w];
    pending_[w] = 0;
    while (bits) {
      const op& o = prog[w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits))];
      bits &= bits - 1;
      ++ran;
      if (o.code == opcode::memrd) {
        if (o.s == 0) lane_addresses(spec_->memories[o.a], spec_->memories[o.a].reads[o.b].addr, read_addr_[o.a][o.b]);
        v[o.y] = read_bit(static_cast<int>(o.a), static_cast<int>(o.b), o.s);
        continue;
      }
      const lanes a = v[o.a], b = v[o.b];
      lanes y;
      switch (o.code) {
        case opcode::buf: y = a; break;
        case opcode::not_: y = op_not(a); break;
        case opcode::and_: y = op_and(a, b); break;
        case opcode::or_: y = op_or(a, b); break;
        case opcode::xor_: y = op_xor(a, b); break;
        case opcode::nand: y = op_not(op_and(a, b)); break;
        case opcode::nor: y = op_not(op_or(a, b)); break;
        case opcode::xnor: y = op_not(op_xor(a, b)); break;
        case opcode::andnot: y = op_and(a, op_not(b)); break;
        case opcode::ornot: y = op_or(a, op_not(b)); break;
        case opcode::mux: y = op_mux(a, b, v[o.s]); break;
        case opcode::nmux: y = op_not(op_mux(a, b, v[o.s])); break;

        default: y = lanes::x(); break;
      }
      v[o.y] = y;
    }
  }
  last_ops_ = ran;
}

void leaf_engine::lane_addresses(const memory& m, const std::vector<std::uint32_t>& addr, lane_words& out) const {
  group_by_address(v_.data(), 0, m, addr, out);
}

lanes leaf_engine::read_bit(int mem, int port, std::uint32_t bit) const {
  return read_word_bit(spec_->memories[mem], mem_[mem], read_addr_[mem][port], bit);
}

bool leaf_engine::write_memories() {
  bool changed = false;
  lane_words addr;
  for (std::size_t mi = 0; mi < spec_->memories.size(); ++mi)
    changed |= write_ports(v_.data(), 0, spec_->memories[mi], spec_->memories[mi].writes, mem_[mi], addr);
  return changed;
}

namespace {

template <class T>
void append_raw(std::vector<std::byte>& out, const T* p, std::size_t n) {
  const auto* b = reinterpret_cast<const std::byte*>(p);
  out.insert(out.end(), b, b + n * sizeof(T));
}

template <class T>
bool take_raw(std::span<const std::byte>& in, T* p, std::size_t n) {
  if (in.size() < n * sizeof(T)) return false;
  std::memcpy(p, in.data(), n * sizeof(T));
  in = in.subspan(n * sizeof(T));
  return true;
}

}  // namespace

// Layout: the sizes (values, pending words, memories, then each memory's words) as u64, then the
// values, the pending words and each memory's words. The sizes come first so a state of another
// leaf is refused before anything is overwritten.
void leaf_engine::save_state(std::vector<std::byte>& out) const {
  std::vector<std::uint64_t> sizes{v_.size(), pending_.size(), mem_.size()};
  for (const auto& m : mem_) sizes.push_back(m.size());
  append_raw(out, sizes.data(), sizes.size());
  append_raw(out, v_.data(), v_.size());
  append_raw(out, pending_.data(), pending_.size());
  for (const auto& m : mem_) append_raw(out, m.data(), m.size());
}

std::size_t leaf_engine::state_bytes() const {
  std::size_t n =
      (3 + mem_.size()) * sizeof(std::uint64_t) + v_.size() * sizeof(lanes) + pending_.size() * sizeof(std::uint64_t);
  for (const auto& m : mem_) n += m.size() * sizeof(lanes);
  return n;
}

bool leaf_engine::load_state(std::span<const std::byte> in) {
  std::vector<std::uint64_t> sizes(3 + mem_.size());
  if (!take_raw(in, sizes.data(), sizes.size())) return false;
  if (sizes[0] != v_.size() || sizes[1] != pending_.size() || sizes[2] != mem_.size()) return false;
  for (std::size_t m = 0; m < mem_.size(); ++m)
    if (sizes[3 + m] != mem_[m].size()) return false;
  std::size_t need = v_.size() * sizeof(lanes) + pending_.size() * sizeof(std::uint64_t);
  for (const auto& m : mem_) need += m.size() * sizeof(lanes);
  if (in.size() != need) return false;
  take_raw(in, v_.data(), v_.size());
  take_raw(in, pending_.data(), pending_.size());
  for (auto& m : mem_) take_raw(in, m.data(), m.size());
  // The read ports' decoded addresses follow from the address values (a port's bit-0 op computes
  // them for its other bits): decode them again rather than carry them.
  for (std::size_t m = 0; m < mem_.size(); ++m)
    for (std::size_t r = 0; r < read_addr_[m].size(); ++r)
      lane_addresses(spec_->memories[m], spec_->memories[m].reads[r].addr, read_addr_[m][r]);
  return true;
}

bool leaf_engine::clock_edge() {
  const auto& flops = spec_->flops;
  for (std::size_t i = 0; i < flops.size(); ++i) {
    lanes n = v_[flops[i].d];
    for (const auto& t : flops[i].async) n = op_mux(n, v_[t.value], v_[t.ctrl]);
    next_[i] = n;
  }
  // Memories are written from the values before the edge, as the flip-flops sample them.
  bool changed = write_memories();
  for (std::size_t i = 0; i < flops.size(); ++i) {
    lanes& s = v_[flops[i].state];
    changed |= !(s == next_[i]);
    s = next_[i];
  }
  if (changed) mark(state_trigger_);
  return changed;
}

// The flat schedule: one program over one value array (leaf l's slot s is value base[l] + s).
struct flat_engine {
  struct flat_flop {
    std::uint32_t d, state;
    std::vector<flip_flop::async_term> async;  // global slots
  };
  struct flat_memory {
    const memory* m;
    std::size_t base;
    std::vector<lanes> words;
    std::vector<lane_words> reads;                      // per read port: lanes grouped by address this pass
    std::vector<std::vector<std::uint32_t>> read_addr;  // per read port, renumbered slots
    std::vector<memory::write_port> writes;             // renumbered slots
  };
  std::vector<std::size_t> base;
  std::vector<std::uint32_t> slot_of;  // base[l] + s -> index in v (values renumbered in program order)
  std::uint32_t at(int leaf, std::uint32_t s) const { return slot_of[base[leaf] + s]; }
  std::vector<lanes> v;
  std::vector<op> program;  // memrd: a = index in mems
  std::vector<flat_flop> flops;
  std::vector<lanes> next;
  std::vector<flat_memory> mems;
  lane_words scratch;
  // The program as runs of one opcode (ordered to keep one opcode as long as possible): each run
  // is a loop without dispatch.
  std::vector<op_run> op_runs;
  std::vector<operands> compact;  // program without opcodes (memrd: a = memory, b = port, s = bit)
  // Flip-flops without async terms (most) as two parallel arrays, the others apart.
  std::vector<std::uint32_t> plain_d, plain_state;
  std::vector<std::size_t> async_flops;  // indices into flops
  std::vector<lanes> plain_next;

  std::vector<std::uint32_t> constants[3];  // slots holding 0, 1, X (each leaf has its own three)
  std::vector<std::vector<std::vector<std::uint32_t>>> port_bits;  // per memory, read port, bit: value
  native_fn native = nullptr;
  native_fn2 native2 = nullptr;
  native_edge edge = nullptr;
  std::shared_ptr<const native_bundle> code;

  std::vector<program_source::read_port> ports;  // every read port, for the 2-state program
  // What the engine reads directly (flip-flops' and write ports' inputs, and what the simulator
  // adds: outputs, group drivers); after a 2-state pass other values may not be stored (`stale`).
  std::vector<std::uint32_t> observed;
  std::vector<char> is_observed;
  bool stale = false;
  program_source source() const {
    return {program, {constants[0], constants[1], constants[2]}, plain_d, plain_state, ports, observed};
  }
  virtual value_layout layout() const = 0;

  virtual ~flat_engine() = default;
  virtual bool evaluate() = 0;  // true: the 2-state program ran
  virtual void clock_edge() = 0;
  virtual void set(const std::uint32_t* at, const lanes* x, std::size_t n) = 0;
  virtual void get(const std::uint32_t* at, lanes* x, std::size_t n) = 0;

  explicit flat_engine(const design& d) {
    std::size_t total = 0;
    for (const auto& l : d.leaves) base.push_back(total), total += l.slots;
    v.assign(total, lanes::x());
    // A boundary net's reader slots are the driver's slot (one value, no copy).
    std::vector<std::uint32_t> alias(total);
    for (std::size_t i = 0; i < total; ++i) alias[i] = static_cast<std::uint32_t>(i);
    for (const auto& g : d.groups)
      for (std::size_t r = 0; r < g.readers.size(); ++r)
        for (std::size_t i = 0; i < g.driver_slots.size(); ++i)
          alias[base[g.readers[r]] + g.reader_slots[r][i]] =
              static_cast<std::uint32_t>(base[g.driver] + g.driver_slots[i]);
    struct node {
      op o;
      std::vector<std::uint32_t> ins;
    };
    std::vector<node> nodes;
    for (std::size_t li = 0; li < d.leaves.size(); ++li) {
      const leaf& l = d.leaves[li];
      const auto b = static_cast<std::uint32_t>(base[li]);
      v[b + 0] = lanes::zero(), v[b + 1] = lanes::one(), v[b + 2] = lanes::x();
      const std::uint32_t mem0 = static_cast<std::uint32_t>(mems.size());
      for (const auto& m : l.memories)
        mems.push_back({&m, b, initial_words(m), std::vector<lane_words>(m.reads.size())});
      for (const op& o : l.program) {
        node n{o, {}};
        for_each_input(l, o, [&](std::uint32_t s) { n.ins.push_back(alias[b + s]); });
        n.o.y += b;
        if (o.code == opcode::memrd) n.o.a += mem0;
        else n.o.a = alias[b + o.a], n.o.b = alias[b + o.b], n.o.s = alias[b + o.s];
        nodes.push_back(std::move(n));
      }
      for (const auto& f : l.flops) {
        flat_flop ff{alias[b + f.d], b + f.state, {}};
        for (auto t : f.async) ff.async.push_back({alias[b + t.ctrl], alias[b + t.value]});
        if (f.init != 2) v[b + f.state] = f.init ? lanes::one() : lanes::zero();
        flops.push_back(std::move(ff));
      }
    }
    // Order the ops (a topological order over global values) for long runs of one opcode: list
    // scheduling that keeps emitting the current opcode while any op of it is ready, then switches
    // to the opcode with the most ready ops. (Sorting by level, then opcode, gave rv_soc's CPU core
    // runs of 9 ops; this is 6-16% faster there and no slower on soc and aes_round.) A memory port's
    // bit ops have the same inputs, so they become ready together and stay consecutive, bit 0 first.
    std::vector<int> producer(total, -1);
    for (std::size_t i = 0; i < nodes.size(); ++i) producer[nodes[i].o.y] = static_cast<int>(i);
    std::vector<int> indeg(nodes.size(), 0), order;
    std::vector<std::vector<int>> readers(nodes.size());
    for (std::size_t i = 0; i < nodes.size(); ++i)
      for (auto in : nodes[i].ins)
        if (producer[in] >= 0) ++indeg[i], readers[producer[in]].push_back(static_cast<int>(i));
    constexpr int codes = static_cast<int>(opcode::memrd) + 1;
    std::vector<std::vector<int>> ready(codes);
    for (std::size_t i = 0; i < nodes.size(); ++i)
      if (!indeg[i]) ready[static_cast<int>(nodes[i].o.code)].push_back(static_cast<int>(i));
    int cur = 0;
    while (order.size() < nodes.size()) {
      if (ready[cur].empty()) {
        for (int c = 0; c < codes; ++c)
          if (ready[c].size() > ready[cur].size()) cur = c;
        if (ready[cur].empty()) {
          assert(false && "elaboration rejects combinational loops");
          break;
        }
      }
      std::vector<int> batch = std::move(ready[cur]);
      ready[cur].clear();
      std::sort(batch.begin(), batch.end());
      for (int i : batch) {
        order.push_back(i);
        for (int r : readers[i])
          if (--indeg[r] == 0) ready[static_cast<int>(nodes[r].o.code)].push_back(r);
      }
    }
    for (int i : order) program.push_back(nodes[i].o);
    next.resize(flops.size());
    // Renumber values so the program writes them in order and reads recent ones: values no op
    // produces (constants, inputs, state, memory contents) first, then each op's output.
    slot_of.assign(total, UINT32_MAX);
    std::uint32_t next_slot = 0;
    std::vector<char> produced(total, 0);
    for (const op& o : program) produced[o.y] = 1;
    for (std::size_t i = 0; i < total; ++i)
      if (!produced[i] && alias[i] == i) slot_of[i] = next_slot++;
    for (const op& o : program) slot_of[o.y] = next_slot++;
    for (std::size_t i = 0; i < total; ++i) slot_of[i] = slot_of[alias[i]];
    std::vector<lanes> nv(next_slot);
    for (std::size_t i = 0; i < total; ++i)
      if (alias[i] == i) nv[slot_of[i]] = v[i];
    v.swap(nv);
    for (op& o : program) {
      o.y = slot_of[o.y];
      if (o.code != opcode::memrd) o.a = slot_of[o.a], o.b = slot_of[o.b], o.s = slot_of[o.s];
    }
    for (std::size_t l = 0; l < d.leaves.size(); ++l)
      for (std::uint32_t c = 0; c < 3; ++c) constants[c].push_back(slot_of[base[l] + c]);
    for (auto& f : flops) {
      f.d = slot_of[f.d], f.state = slot_of[f.state];
      for (auto& t : f.async) t.ctrl = slot_of[t.ctrl], t.value = slot_of[t.value];
    }
    auto remap = [&](const std::vector<std::uint32_t>& local, std::size_t b) {
      std::vector<std::uint32_t> out;
      for (auto s : local) out.push_back(slot_of[b + s]);  // slot_of already follows aliases
      return out;
    };
    for (auto& fm : mems) {
      for (const auto& rp : fm.m->reads) fm.read_addr.push_back(remap(rp.addr, fm.base));
      for (const auto& wp : fm.m->writes)
        fm.writes.push_back({remap(wp.addr, fm.base), remap(wp.data, fm.base), remap(wp.en, fm.base)});
      fm.base = 0;
    }
    op_runs = op_runs_of(program);
    port_bits = read_port_outputs(program);
    for (const auto& f : flops) {
      observed.push_back(f.d);
      for (const auto& t : f.async) observed.push_back(t.ctrl), observed.push_back(t.value);
    }
    for (const auto& fm : mems)
      for (const auto& wp : fm.writes)
        for (const auto* slots : {&wp.addr, &wp.data, &wp.en})
          observed.insert(observed.end(), slots->begin(), slots->end());
    for (std::uint32_t m = 0; m < mems.size(); ++m)
      for (std::uint32_t r = 0; r < mems[m].read_addr.size(); ++r)
        ports.push_back({m, r, mems[m].m->offset, mems[m].m->size, mems[m].m->width, mems[m].read_addr[r]});
    for (const op& o : program) compact.push_back({o.a, o.b, o.s, o.y});
    for (std::size_t i = 0; i < flops.size(); ++i) {
      if (!flops[i].async.empty()) {
        async_flops.push_back(i);
        continue;
      }
      plain_d.push_back(flops[i].d);
      plain_state.push_back(flops[i].state);
    }
    plain_next.resize(plain_d.size());
  }
};

// The flat engine's run-time state in lane type L (lanes, or narrow for runs of at most 8 lanes):
// values and memory words converted once from the layout's initial values.
template <class L>
struct flat_engine_t final : flat_engine {
  std::vector<L> val, next_async, next_plain;
  std::vector<std::vector<L>> words;  // per memory
  std::vector<void*> word_data;       // per memory, words[m].data() (their sizes never change)

  std::uint64_t active;  // lanes the caller drives: memories decode addresses in these only

  flat_engine_t(const design& d, unsigned lanes_used)
      : flat_engine(d), active(lanes_used >= 64 ? ~0ull : (1ull << lanes_used) - 1) {
    for (const lanes& x : v) val.push_back(from_lanes<L>(x));
    for (const auto& fm : mems) {
      words.emplace_back();
      for (const lanes& x : fm.words) words.back().push_back(from_lanes<L>(x));
    }
    for (auto& w : words) word_data.push_back(w.data());
    next_async.resize(flops.size());
    next_plain.resize(plain_d.size());
  }

  void set(const std::uint32_t* at, const lanes* x, std::size_t n) override {
    for (std::size_t k = 0; k < n; ++k) val[at[k]] = from_lanes<L>(x[k]);
  }
  void get(const std::uint32_t* at, lanes* x, std::size_t n) override {
    if (stale)  // the 2-state pass kept some values in locals: the 4-state program stores them all
      for (std::size_t k = 0; k < n; ++k)
        if (!is_observed[at[k]]) {
          native(val.data(), &flat_engine_t::native_memrd, this);
          stale = false;
          break;
        }
    for (std::size_t k = 0; k < n; ++k) x[k] = to_lanes(val[at[k]]);
  }

  value_layout layout() const override { return std::is_same_v<L, narrow> ? value_layout::narrow : value_layout::wide; }

  void read_memory(const operands& o) {
    L* v = val.data();
    auto& fm = mems[o.a];
    if (o.s == 0) group_by_address(v, 0, *fm.m, fm.read_addr[o.b], fm.reads[o.b], active);
    v[o.y] = read_word_bit(*fm.m, words[o.a], fm.reads[o.b], o.s);
  }
  static int native_memrd(void* self, std::uint32_t i) {  // a read port's bit-0 op: every bit
    auto* e = static_cast<flat_engine_t*>(self);
    const operands& o = e->compact[i];
    L* v = e->val.data();
    auto& fm = e->mems[o.a];
    const auto& bits = e->port_bits[o.a][o.b];
    if (e->active == 1) {  // one stream: lane 0 of the word it addresses, as read_word_bit gives it
      std::int64_t w = 0;
      const auto& addr = fm.read_addr[o.b];
      for (std::size_t k = 0; k < addr.size() && w >= 0; ++k) {
        const L a = v[addr[k]];
        if (a.unknown() & 1) w = -1;
        else w |= static_cast<std::int64_t>(a.hi & 1) << k;
      }
      if (w >= 0) w -= fm.m->offset;
      if (w >= static_cast<std::int64_t>(fm.m->size)) w = -1;
      if (w < 0) {
        for (auto y : bits) v[y] = make<L>(1, 1);
        return 0;
      }
      const L* word = e->words[o.a].data() + static_cast<std::size_t>(w) * fm.m->width;
      std::uint64_t unknown = 0;
      for (std::uint32_t b = 0; b < bits.size(); ++b) {
        v[bits[b]] = make<L>(word[b].hi & 1, word[b].lo & 1);
        unknown |= word[b].hi & word[b].lo;
      }
      return !(unknown & 1);
    }
    group_by_address(v, 0, *fm.m, fm.read_addr[o.b], fm.reads[o.b], e->active);
    for (std::uint32_t b = 0; b < bits.size(); ++b) v[bits[b]] = read_word_bit(*fm.m, e->words[o.a], fm.reads[o.b], b);
    return 0;
  }

  bool evaluate() override {
    stale = false;
    if (native2 && active == 1 && native2(val.data(), &flat_engine_t::native_memrd, this, word_data.data()))
      return stale = true;
    if (native) return native(val.data(), &flat_engine_t::native_memrd, this), false;
    run_op_runs(val.data(), compact.data(), op_runs, [&](const operands& o) { read_memory(o); });
    return false;
  }

  void clock_edge() override {
    L* v = val.data();
    for (std::size_t i : async_flops) {
      L n = v[flops[i].d];
      for (const auto& t : flops[i].async) n = g_mux(n, v[t.value], v[t.ctrl]);
      next_async[i] = n;
    }
    // Memories are written from the values before the edge, as the flip-flops sample them (writing
    // them changes no value: only the flip-flops' states below do).
    for (std::size_t m = 0; m < mems.size(); ++m)
      write_ports(v, 0, *mems[m].m, mems[m].writes, words[m], scratch, active);
    if (edge) {
      edge(v);
    } else {
      for (std::size_t i = 0; i < plain_d.size(); ++i) next_plain[i] = v[plain_d[i]];
      for (std::size_t i = 0; i < plain_d.size(); ++i) v[plain_state[i]] = next_plain[i];
    }
    for (std::size_t i : async_flops) v[flops[i].state] = next_async[i];
  }
};

simulator::~simulator() = default;
simulator::simulator(simulator&&) noexcept = default;

lanes simulator::value(int leaf, std::uint32_t slot) const {
  if (!flat_) return leaves_[leaf].slot(slot);
  const std::uint32_t at = flat_->at(leaf, slot);
  lanes x;
  flat_->get(&at, &x, 1);
  return x;
}

simulator::simulator(const design& d, schedule how, unsigned lanes_used) : d_(&d), dirty_(d.leaves.size(), 1) {
  last_sent_.resize(d.groups.size());
  for (std::size_t g = 0; g < d.groups.size(); ++g) last_sent_[g].assign(d.groups[g].driver_slots.size(), lanes::x());
  stats_.publishes.assign(d.groups.size(), 0);
  if (how == schedule::flat) {
    if (lanes_used <= 8) flat_ = std::make_unique<flat_engine_t<narrow>>(d, lanes_used);
    else flat_ = std::make_unique<flat_engine_t<lanes>>(d, lanes_used);
    flat_watch_at_.push_back(0);
    for (const auto& gr : d.groups) {
      for (auto ds : gr.driver_slots) flat_watch_.push_back(flat_->at(gr.driver, ds));
      flat_watch_at_.push_back(static_cast<std::uint32_t>(flat_watch_.size()));
    }
    flat_last_.assign(flat_watch_.size(), lanes::x());
    for (const auto& p : d.inputs)
      for (auto s : p.slots) flat_inputs_.push_back(flat_->at(d.io_leaf(), s));
    for (const auto& p : d.outputs)
      for (auto s : p.slots) flat_outputs_.push_back(flat_->at(d.io_leaf(), s));
    return;
  }
  // Leaf order: the io leaf (it only drives inputs and holds outputs), then Kahn's order over
  // driver -> reader edges; where leaves depend on each other both ways (paths that cross back and
  // forth without a loop), the leaf with the fewest unplaced drivers goes first.
  const int n = static_cast<int>(d.leaves.size());
  std::vector<std::vector<int>> succ(n);
  std::vector<int> indeg(n, 0);
  {
    std::vector<std::vector<char>> seen(n);
    for (const auto& g : d.groups)
      for (int r : g.readers) {
        if (r == d.io_leaf() || r == g.driver) continue;
        auto& row = seen[g.driver];
        if (row.empty()) row.assign(n, 0);
        if (row[r]) continue;
        row[r] = 1;
        succ[g.driver].push_back(r);
        ++indeg[r];
      }
  }
  std::vector<char> placed(n, 0);
  std::vector<int> ready;
  auto place = [&](int l) {
    placed[l] = 1;
    at_.push_back(l);
    for (int r : succ[l])
      if (--indeg[r] == 0 && !placed[r]) ready.push_back(r);
  };
  place(d.io_leaf());
  for (int l = 0; l < n; ++l)
    if (!placed[l] && indeg[l] == 0) ready.push_back(l);
  while (static_cast<int>(at_.size()) < n) {
    if (ready.empty()) {
      int best = -1;
      for (int l = 0; l < n; ++l)
        if (!placed[l] && (best < 0 || indeg[l] < indeg[best])) best = l;
      ready.push_back(best);
    }
    const int l = ready.back();
    ready.pop_back();
    if (!placed[l]) place(l);
  }
  dirty_count_ = n;
  leaves_.reserve(d.leaves.size());
  for (const auto& l : d.leaves) leaves_.emplace_back(l);
  triggers_.resize(d.groups.size());
  for (std::size_t g = 0; g < d.groups.size(); ++g)
    for (std::size_t r = 0; r < d.groups[g].readers.size(); ++r)
      triggers_[g].push_back(leaves_[d.groups[g].readers[r]].add_trigger(d.groups[g].reader_slots[r]));
}

bool simulator::native() const {
  if (flat_) return flat_->native != nullptr;
  return !leaves_.empty() && leaves_.front().native();
}

result<std::shared_ptr<const native_bundle>> simulator::compile(const compile_options& opts) {
  if (flat_) {
    std::vector<std::uint32_t> observed = flat_->observed;  // and what the simulator reads
    observed.insert(observed.end(), flat_outputs_.begin(), flat_outputs_.end());
    observed.insert(observed.end(), flat_watch_.begin(), flat_watch_.end());
    program_source src[] = {flat_->source()};
    src[0].observed = observed;
    auto code = eda::compile(src, flat_->layout(), opts);
    if (!code || !*code) return code;  // an error, or not cached (cached_only)
    flat_->native = (*code)->fn(0);
    flat_->native2 = (*code)->fn2(0);
    flat_->is_observed.assign(flat_->v.size(), 0);
    for (auto s : observed) flat_->is_observed[s] = 1;
    flat_->edge = (*code)->edge(0);
    flat_->code = *code;
    return code;
  }
  std::vector<program_source> src;
  for (const auto& l : leaves_) src.push_back(source_of(l.spec()));
  auto code = eda::compile(src, value_layout::wide, opts);
  if (!code || !*code) return code;
  for (std::size_t l = 0; l < leaves_.size(); ++l) leaves_[l].use_native((*code)->fn(l), *code);
  return code;
}

result<engine_choice> use_engine(simulator& sim, engine_kind kind, std::uint64_t cycles, compile_options opts) {
  std::size_t ops = 0;
  for (const auto& l : sim.spec().leaves) ops += l.program.size();
  return choose_engine(kind, ops, cycles, std::move(opts), [&](const compile_options& o) { return sim.compile(o); });
}

void simulator::set_inputs(std::span<const lanes> bits) {
  if (flat_) {
    assert(bits.size() >= flat_inputs_.size());
    flat_->set(flat_inputs_.data(), bits.data(), flat_inputs_.size());
    return;
  }
  auto& io = leaves_[d_->io_leaf()];
  std::size_t k = 0;
  bool changed = false;
  for (const auto& p : d_->inputs)
    for (auto s : p.slots) {
      assert(k < bits.size());
      changed |= !(io.slot(s) == bits[k]);
      io.slot(s) = bits[k++];
    }
  const int l = d_->io_leaf();
  if (changed) make_dirty(l);
}

void simulator::publish(int g) {
  const group& gr = d_->groups[g];
  const leaf_engine& src = leaves_[gr.driver];
  auto& last = last_sent_[g];
  bool changed = false;
  for (std::size_t i = 0; i < gr.driver_slots.size(); ++i) {
    const lanes v = src.slot(gr.driver_slots[i]);
    if (!(v == last[i])) {
      last[i] = v;
      changed = true;
    }
  }
  if (!changed) return;
  ++stats_.publishes[g];
  for (std::size_t r = 0; r < gr.readers.size(); ++r) {
    const int reader = gr.readers[r];
    auto& dst = leaves_[reader];
    const auto& slots = gr.reader_slots[r];
    for (std::size_t i = 0; i < slots.size(); ++i) dst.slot(slots[i]) = last[i];
    dst.mark(triggers_[g][r]);
    make_dirty(reader);
  }
}

int simulator::settle() {
  if (flat_) {
    stats_.two_state_passes += flat_->evaluate();
    // A group that changed this cycle is one message, as the component version sends it.
    if (count_messages_) {
      watched_.resize(flat_watch_.size());
      flat_->get(flat_watch_.data(), watched_.data(), watched_.size());
      lanes* last = flat_last_.data();
      for (std::size_t g = 0; g + 1 < flat_watch_at_.size(); ++g) {
        bool changed = false;
        for (std::uint32_t i = flat_watch_at_[g], e = flat_watch_at_[g + 1]; i < e; ++i)
          if (!(watched_[i] == last[i])) last[i] = watched_[i], changed = true;
        stats_.publishes[g] += changed;
      }
    }
    stats_.rounds += 1;
    stats_.leaf_evaluations += d_->leaves.size();
    stats_.gate_evaluations += flat_->program.size();
    stats_.max_rounds = 1;
    return 1;
  }
  int passes = 0;
  while (dirty_count_) {
    ++passes;
    assert(passes <= static_cast<int>(leaves_.size()) * 2 + 2 && "acyclic logic always settles");
    for (std::size_t p = 0; p < at_.size() && dirty_count_; ++p) {
      const int l = at_[p];
      if (!dirty_[l]) continue;
      dirty_[l] = 0;
      --dirty_count_;
      leaves_[l].evaluate();
      ++stats_.leaf_evaluations;
      stats_.gate_evaluations += leaves_[l].last_ops();
      for (int g : d_->leaves[l].out_groups) publish(g);
    }
  }
  stats_.rounds += passes;
  if (passes > stats_.max_rounds) stats_.max_rounds = passes;
  return passes;
}

void simulator::outputs(std::vector<lanes>& out) const {
  if (flat_) {
    out.resize(flat_outputs_.size());
    flat_->get(flat_outputs_.data(), out.data(), out.size());
    return;
  }
  out.clear();
  const auto& io = leaves_[d_->io_leaf()];
  for (const auto& p : d_->outputs)
    for (auto s : p.slots) out.push_back(io.slot(s));
}

void simulator::clock_edge() {
  if (flat_) {
    flat_->clock_edge();
    ++stats_.cycles;
    return;
  }
  for (std::size_t l = 0; l < leaves_.size(); ++l)
    if ((!d_->leaves[l].flops.empty() || !d_->leaves[l].memories.empty()) && leaves_[l].clock_edge())
      make_dirty(static_cast<int>(l));
  ++stats_.cycles;
}

}  // namespace banyan::eda
