// A netlist elaborated into the component tree the simulator runs on.
//
// Every module instance is a composite; the instance's own primitive cells form one leaf that
// evaluates them together, levelised; the top-level ports are driven and sampled by an `io` leaf that
// hangs off the root. A net whose driver and readers sit in different leaves is a boundary net.
// Boundary nets with the same driver leaf and the same set of reader leaves travel together as one
// group: one topic, published at most once per settling round, scoped at the lowest common ancestor
// (LCA) of the driver and the readers. Grouping is exact: a reader of one net of a group reads all of
// them, so no leaf receives a value it does not read. Groups are also split by crossing rank (see
// group::rank) so that the group-level dependency graph is acyclic.
//
// Elaboration checks everything the simulator relies on and names the module and cell otherwise:
// latches, negedge or derived clocks, a second clock, memories, multiple drivers, combinational loops.
#pragma once

#include <banyan/eda_sim/netlist.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace banyan::eda {

enum class opcode : std::uint8_t { buf, not_, and_, or_, xor_, nand, nor, xnor, andnot, ornot, mux, nmux, memrd };

// One gate on leaf-local slots. Slots 0, 1, 2 of every leaf hold the constants 0, 1, X.
// memrd reads bit `s` of read port `b` of the leaf's memory `a` into Y; its inputs are the port's
// address slots and the memory's content slot (for_each_input).
struct op {
  opcode code;
  std::uint32_t a, b, s, y;  // inputs A, B, select S (mux only), output Y
};

// A memory kept whole (yosys $mem_v2 after memory_nordff): every read port is asynchronous (a
// clocked read is a flip-flop stage before or after it); write ports act at the clock's rising
// edge, in port order, after every flip-flop has sampled D. Per lane: a read at an X or
// out-of-range address gives X; a write with an X address or an X enable bit is skipped, as in
// Icarus's `if (we) mem[a] <= d`.
struct memory {
  std::string name;  // "module m, cell mem" for messages
  std::uint32_t size = 0, width = 0;
  std::int64_t offset = 0;         // address of word 0
  std::uint32_t content = 0;       // a slot that stands for the contents (no value of its own)
  std::vector<std::uint8_t> init;  // size * width, word 0 first, LSB first: 0, 1, 2 = X
  struct read_port {
    std::vector<std::uint32_t> addr, data;  // LSB first
  };
  struct write_port {
    std::vector<std::uint32_t> addr, data, en;  // en: one per data bit
  };
  std::vector<read_port> reads;
  std::vector<write_port> writes;
};

// A flip-flop. At the clock edge: v = D; then for each async term in order, v = ctrl ? value : v;
// state = v. Between edges Q follows `state` through the same async terms (as mux ops in the leaf's
// program), so an async set/reset acts at once, like Icarus's `always @(posedge clk or posedge rst)`.
struct flip_flop {
  std::uint32_t d, state;
  std::uint8_t init = 2;  // state before the first edge: 0, 1, or 2 = X (yosys `init` attribute)
  struct async_term {
    std::uint32_t ctrl;   // slot that is 1 when the term is active (active-low pins get a NOT op)
    std::uint32_t value;  // slot 0 or 1
  };
  std::vector<async_term> async;  // lowest priority first (set before reset, as yosys's simcells)
};

struct leaf {
  std::string path;         // "/top/alu/cells"; the io leaf is "/top/io"
  int instance;             // the composite it belongs to
  std::uint32_t slots = 3;  // local value slots
  std::vector<op> program;  // levelised: each op's inputs are computed before it
  std::vector<flip_flop> flops;
  std::vector<memory> memories;
  std::vector<int> in_groups, out_groups;
  std::size_t cells = 0;  // primitive cells (gates + flip-flops) for load reporting
};

struct instance {
  std::string path;  // "/top/alu0/add"
  std::string module;
  int parent = -1;
  std::vector<int> children;
  int leaf = -1;  // the leaf of its own cells, -1 when it has none
};

// A set of boundary nets travelling together (one topic).
struct group {
  std::string topic;                                     // "net/<first net's name>", unique
  int driver;                                            // leaf index
  int rank = 0;                                          // leaf boundaries on the longest combinational path into it; a
                                                         // group depends only on groups of lower rank
  std::vector<int> readers;                              // leaf indices, sorted
  int scope;                                             // instance at the LCA of driver and readers
  std::vector<std::uint32_t> driver_slots;               // per net, slot in the driver leaf
  std::vector<std::vector<std::uint32_t>> reader_slots;  // per reader, per net, slot in that reader
  std::vector<std::string> nets;                         // hierarchical names, for reports
};

struct top_port {
  std::string name;
  port_dir dir;
  std::vector<std::uint32_t> slots;  // in the io leaf, LSB first
};

// A named net of one instance, for waveforms: where each bit's value lives.
struct probe {
  int instance;
  std::string name;
  struct location {
    int leaf;  // clock_leaf: the bit is the clock (waveforms show the clock there)
    std::uint32_t slot;
  };
  static constexpr int clock_leaf = -1;
  std::vector<location> bits;  // LSB first
};

struct design {
  std::string top;
  std::vector<instance> instances;  // [0] is the top instance
  std::vector<leaf> leaves;         // the last one is the io leaf
  std::vector<group> groups;
  std::vector<top_port> inputs;  // without the clock
  std::vector<top_port> outputs;
  std::vector<probe> probes;  // named nets of every instance (yosys public names)
  std::string clock;          // empty for a purely combinational design
  std::size_t gates = 0, flops = 0;
  std::size_t memories = 0, memory_bits = 0;
  int io_leaf() const { return static_cast<int>(leaves.size()) - 1; }
};

// Calls f(slot) for every slot op `o` of leaf `l` reads.
template <class F>
void for_each_input(const leaf& l, const op& o, F&& f) {
  if (o.code == opcode::memrd) {
    const memory& m = l.memories[o.a];
    for (auto s : m.reads[o.b].addr) f(s);
    f(m.content);
    return;
  }
  f(o.a);
  f(o.b);
  f(o.s);
}

struct elaborate_options {
  std::string clock;  // top input that clocks every flip-flop; empty: found from the flip-flops
};

result<design> elaborate(const netlist& n, const elaborate_options& opts = {});

}  // namespace banyan::eda
