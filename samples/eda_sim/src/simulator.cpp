#include <banyan/eda_sim/simulator.hpp>

#include <cassert>

namespace banyan::eda {

leaf_engine::leaf_engine(const leaf& l)
    : spec_(&l), v_(l.slots, lanes::x()), words_((l.program.size() + 63) / 64), pending_(words_, ~0ull) {
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
    auto& words = mem_.emplace_back(m.init.size());
    for (std::size_t i = 0; i < m.init.size(); ++i)
      words[i] = m.init[i] == 0 ? lanes::zero() : m.init[i] == 1 ? lanes::one() : lanes::x();
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

void leaf_engine::evaluate() {
  lanes* v = v_.data();
  const op* prog = spec_->program.data();
  std::size_t ran = 0;
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
  // Lanes usually share few addresses (one lane in use, or lanes in step), so lanes are grouped by
  // address: per distinct address, one pass over the address bits finds every lane that has it.
  out.clear();
  std::uint64_t unknown = 0;
  for (auto s : addr) unknown |= v_[s].unknown();
  if (unknown) out.emplace_back(-1, unknown);
  std::uint64_t left = ~unknown;
  while (left) {
    const unsigned l = static_cast<unsigned>(__builtin_ctzll(left));
    std::uint64_t same = left;
    std::int64_t word = 0;
    for (std::size_t i = 0; i < addr.size(); ++i) {
      const std::uint64_t ones = v_[addr[i]].hi;  // known lanes: hi is the value
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

lanes leaf_engine::read_bit(int mem, int port, std::uint32_t bit) const {
  const memory& m = spec_->memories[mem];
  const auto& words = mem_[mem];
  lanes y{0, 0};
  for (const auto& [idx, mask] : read_addr_[mem][port]) {
    const lanes w = idx < 0 ? lanes::x() : words[static_cast<std::size_t>(idx) * m.width + bit];
    y.hi |= w.hi & mask;
    y.lo |= w.lo & mask;
  }
  return y;
}

bool leaf_engine::write_memories() {
  bool changed = false;
  lane_words addr;
  for (std::size_t mi = 0; mi < spec_->memories.size(); ++mi) {
    const memory& m = spec_->memories[mi];
    auto& words = mem_[mi];
    for (const auto& wp : m.writes) {
      lane_addresses(m, wp.addr, addr);
      for (std::uint32_t b = 0; b < m.width; ++b) {
        const lanes en = v_[wp.en[b]];
        const std::uint64_t write = en.hi & ~en.lo;  // lanes whose enable is a known 1
        if (!write) continue;
        const lanes d = v_[wp.data[b]];
        for (const auto& [idx, mask] : addr) {
          const std::uint64_t lanes_w = write & mask;
          if (!lanes_w || idx < 0) continue;  // an X address writes nothing, as in Icarus
          lanes& w = words[static_cast<std::size_t>(idx) * m.width + b];
          const lanes nw{(w.hi & ~lanes_w) | (d.hi & lanes_w), (w.lo & ~lanes_w) | (d.lo & lanes_w)};
          changed |= !(nw == w);
          w = nw;
        }
      }
    }
  }
  return changed;
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

simulator::simulator(const design& d) : d_(&d), dirty_(d.leaves.size(), 1) {
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
  last_sent_.resize(d.groups.size());
  for (std::size_t g = 0; g < d.groups.size(); ++g) last_sent_[g].assign(d.groups[g].driver_slots.size(), lanes::x());
  stats_.publishes.assign(d.groups.size(), 0);
  triggers_.resize(d.groups.size());
  for (std::size_t g = 0; g < d.groups.size(); ++g)
    for (std::size_t r = 0; r < d.groups[g].readers.size(); ++r)
      triggers_[g].push_back(leaves_[d.groups[g].readers[r]].add_trigger(d.groups[g].reader_slots[r]));
}

void simulator::set_inputs(std::span<const lanes> bits) {
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
  out.clear();
  const auto& io = leaves_[d_->io_leaf()];
  for (const auto& p : d_->outputs)
    for (auto s : p.slots) out.push_back(io.slot(s));
}

void simulator::clock_edge() {
  for (std::size_t l = 0; l < leaves_.size(); ++l)
    if ((!d_->leaves[l].flops.empty() || !d_->leaves[l].memories.empty()) && leaves_[l].clock_edge())
      make_dirty(static_cast<int>(l));
  ++stats_.cycles;
}

}  // namespace banyan::eda
