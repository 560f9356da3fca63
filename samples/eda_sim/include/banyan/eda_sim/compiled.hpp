// The compiled engine: a levelised program (design.hpp's ops) emitted as straight-line C++, compiled
// with the system compiler into a shared object and loaded at run time.
//
// What is emitted: one statement per op on the value array at fixed indices, in program order, so
// the compiler keeps recent values in registers, folds the constants, and fuses chains of gates
// (and-or, xor chains, mux trees) into a few word operations. With the narrow layout a second,
// 2-state program is emitted for one stimulus stream: one word operation per gate on local bits, run
// in every cycle where nothing it reads from outside is X (after reset, most cycles of most designs),
// the 4-state one otherwise. Before emitting, every op is folded by
// enumerating its inputs over 0, 1 and X: an op whose value is fixed becomes a constant, one that
// passes an input through (a buf, `a & 1`, a mux with a constant select) becomes that input for its
// readers. The 4-state program stores every op's value, so anything that reads values (flip-flops,
// outputs, waveforms, the exchange of the component version) sees exactly the interpreter's values;
// the 2-state one stores what program_source::observed names and keeps the rest in registers. A
// memory read is a call back into the engine (`native_memrd`), which owns the memories, or (2-state)
// an inline read of its words.
//
// Cache: the shared object's name is a hash of the generated source, the compiler and its flags;
// with a cache folder, it is compiled once per program (a file lock makes concurrent processes
// compile it once) and loaded by every later run and every process of a launch that evaluates the
// same program. Without one, it is compiled in a temporary folder that is removed once loaded.
//
// Failure: a missing or failing compiler is an error that names the command and its output; the
// caller decides whether to fall back to the interpreter. Thread-safety: compile() is a free
// function safe to call from any thread; a native_bundle is immutable and shared.
#pragma once

#include <banyan/base/result.hpp>
#include <banyan/eda_sim/design.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace banyan::eda {

// Which engine evaluates the cells: the compiled one, the interpreter (the reference, and the
// fallback), or auto (compiled when the shared object is already cached or the run is long enough
// to repay compiling it; the interpreter otherwise or when no compiler works).
enum class engine_kind { automatic, compiled, interp };
// "auto", "compiled" or "interp"; an error naming the value otherwise.
result<engine_kind> parse_engine(const std::string& name);

struct compile_options {
  std::string cache_dir;  // shared objects by hash; empty: compile in a temporary folder, keep nothing
  std::string compiler = "c++";
  std::vector<std::string> flags = {"-O1"};
  // Ops per emitted function: the compiler's time grows faster than linearly with a function's size.
  std::size_t ops_per_function = 4000;
  // Only load an object the cache already has: no compiler runs, and a miss is a null bundle.
  bool cached_only = false;
};

// How the engine lays out one value: `narrow` is a 16-bit word (lanes 0-7: the hi plane's byte and
// the lo plane's byte as simulator.cpp's narrow), `wide` is logic.hpp's lanes (two 64-bit planes).
enum class value_layout : std::uint8_t { narrow, wide };

// A read port's bit-0 op (a port's ops come bit 0 first, as the interpreter reads them) calls back
// with its index in the program; the engine writes every bit of that port and returns nonzero when
// every bit it wrote is known in lane 0 (only the 2-state program reads this).
using native_memrd = int (*)(void* ctx, std::uint32_t op);
// Evaluates every op of one program over `values` (value_layout elements).
using native_fn = void (*)(void* values, native_memrd memrd, void* ctx);
// The 2-state program (narrow layout; lane 0 only, the others set equal to it): evaluates every op
// and returns 1 when every value the program reads from outside it (inputs, flip-flop states,
// undriven nets, memory words read) is known in lane 0; returns 0 at the first that is not, with
// values partly written, and the caller runs the 4-state program, which recomputes them all.
// A read port not in program_source::read_ports is read through `memrd`.
using native_fn2 = int (*)(void* values, native_memrd memrd, void* ctx, void* const* memories);
// The clock edge of program_source::edge_d/edge_state: every state takes its D's value, all at once.
using native_edge = void (*)(void* values);

// One program to compile: its ops (program order) and which of its slots hold constants.
struct program_source {
  std::span<const op> program;
  std::span<const std::uint32_t> constant_slots[3];  // slots holding 0, 1, X
  // Flip-flops without async terms, as parallel lists (optional): native_edge sets every state to
  // its D at once.
  std::span<const std::uint32_t> edge_d, edge_state;
  // The read ports (optional; narrow layout): the 2-state program reads them inline from the
  // memories' words (native_fn2's `memories`: per memory, its words, size * width values).
  struct read_port {
    std::uint32_t memory, port;  // memrd's a and b
    std::int64_t offset;         // address of word 0
    std::uint32_t size, width;
    std::span<const std::uint32_t> addr;  // LSB first
  };
  std::span<const read_port> read_ports;
  // Slots the engine reads directly after a pass (flip-flops' inputs, write ports, outputs): the
  // 2-state program stores these (and what it needs itself) and keeps the other values in locals;
  // a caller that reads another slot after a 2-state pass runs the 4-state program first.
  std::span<const std::uint32_t> observed;
};

// Loaded native code for several programs (one shared object).
class native_bundle {
 public:
  native_fn fn(std::size_t k) const { return fns_[k]; }
  native_fn2 fn2(std::size_t k) const { return fns2_.empty() ? nullptr : fns2_[k]; }  // narrow only
  native_edge edge(std::size_t k) const { return edges_[k]; }
  std::size_t size() const { return fns_.size(); }
  bool from_cache = false;     // loaded without compiling
  double compile_seconds = 0;  // 0 when from the cache
  std::string object;          // the shared object's path ("" once a temporary one is removed)
  std::size_t source_bytes = 0;

 private:
  friend result<std::shared_ptr<const native_bundle>> compile(std::span<const program_source>, value_layout,
                                                              const compile_options&);
  std::shared_ptr<void> handle_;  // dlclose on the last reference
  std::vector<native_fn> fns_;
  std::vector<native_fn2> fns2_;
  std::vector<native_edge> edges_;
};

// Emits, compiles (or finds in the cache) and loads the programs' code. Errors: errc::tool_failed
// naming the compiler command and the first lines of its output; errc::io for the cache folder.
result<std::shared_ptr<const native_bundle>> compile(std::span<const program_source> programs, value_layout layout,
                                                     const compile_options& opts);

// The engine a run uses, chosen by `kind`: compiled calls `compile` or fails; interp compiles
// nothing; automatic loads a cached object, else compiles when `cycles` of `ops` ops repay
// compiling them, and interprets when compiling fails (`note` says why).
struct engine_choice {
  std::shared_ptr<const native_bundle> code;  // null: interpreting
  std::string note;                           // automatic fell back to the interpreter: the reason
};
using compile_fn = std::function<result<std::shared_ptr<const native_bundle>>(const compile_options&)>;
result<engine_choice> choose_engine(engine_kind kind, std::size_t ops, std::uint64_t cycles, compile_options opts,
                                    const compile_fn& compile);

// One line for a log: the object, whether it came from the cache, the compile time.
std::string describe(const native_bundle& code);

// The C++ source compile() builds (for tests and for a user who wants to read it).
std::string native_source(std::span<const program_source> programs, value_layout layout);

}  // namespace banyan::eda
