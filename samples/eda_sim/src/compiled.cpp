#include <banyan/eda_sim/compiled.hpp>
#include <banyan/eda_sim/error.hpp>

#include "gates.hpp"
#include "tool.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

namespace banyan::eda {

namespace {

namespace fs = std::filesystem;

// What an op's output is, as its readers see it: a constant (0, 1, 2 = X) or the value of a slot.
struct ref {
  bool constant = false;
  std::uint32_t v = 0;  // the constant, or the slot
  friend bool operator==(const ref&, const ref&) = default;
};

int arity(opcode c) {
  switch (c) {
    case opcode::buf:
    case opcode::not_: return 1;
    case opcode::mux:
    case opcode::nmux: return 3;
    default: return 2;
  }
}

lanes constant_lanes(std::uint32_t c) { return c == 0 ? lanes::zero() : c == 1 ? lanes::one() : lanes::x(); }

// Folds one gate over its operands' refs by enumerating the distinct non-constant ones over 0, 1
// and X (at most 27 cases, one lane each): the result is a constant when every case agrees, an
// operand when it equals that operand in every case, and nullopt when it needs computing.
std::optional<ref> fold(opcode code, const ref (&in)[3]) {
  const int n = arity(code);
  std::vector<std::uint32_t> distinct;  // slots
  int digit[3] = {-1, -1, -1};
  for (int i = 0; i < n; ++i) {
    if (in[i].constant) continue;
    auto it = std::find(distinct.begin(), distinct.end(), in[i].v);
    digit[i] = static_cast<int>(it - distinct.begin());
    if (it == distinct.end()) distinct.push_back(in[i].v);
  }
  int cases = 1;
  for (std::size_t k = 0; k < distinct.size(); ++k) cases *= 3;
  lanes ops[3] = {lanes::zero(), lanes::zero(), lanes::zero()};
  std::vector<lanes> of_distinct(distinct.size(), lanes::x());
  for (std::size_t k = 0; k < distinct.size(); ++k) {
    lanes x = lanes::x();
    for (int j = 0; j < cases; ++j) {
      int d = j;  // case j's digit k (base 3) is this operand's value
      for (std::size_t q = 0; q < k; ++q) d /= 3;
      x.set(static_cast<unsigned>(j), d % 3);
    }
    of_distinct[k] = x;
  }
  for (int i = 0; i < n; ++i) ops[i] = in[i].constant ? constant_lanes(in[i].v) : of_distinct[digit[i]];
  const lanes y = detail::gate_of(code, ops[0], ops[1], ops[2]);
  const std::uint64_t used = cases >= 64 ? ~0ull : (1ull << cases) - 1;
  auto same = [&](lanes a, lanes b) { return ((a.hi ^ b.hi) & used) == 0 && ((a.lo ^ b.lo) & used) == 0; };
  for (std::uint32_t c = 0; c < 3; ++c)
    if (same(y, constant_lanes(c))) return ref{true, c};
  for (std::size_t k = 0; k < distinct.size(); ++k)
    if (same(y, of_distinct[k])) return ref{false, distinct[k]};
  return std::nullopt;
}

const char* prelude(value_layout layout) {
  if (layout == value_layout::wide)
    return R"(#define AI static inline __attribute__((always_inline))
typedef unsigned long long P;
struct W { P hi, lo; };
AI W g_not(W a) { return W{a.lo, a.hi}; }
AI W g_and(W a, W b) { return W{a.hi & b.hi, a.lo | b.lo}; }
AI W g_or(W a, W b) { return W{a.hi | b.hi, a.lo & b.lo}; }
AI W g_xor(W a, W b) { return W{(a.hi & b.lo) | (a.lo & b.hi), (a.lo & b.lo) | (a.hi & b.hi)}; }
AI W g_mux(W a, W b, W s) { return W{(s.lo & a.hi) | (s.hi & b.hi), (s.lo & a.lo) | (s.hi & b.lo)}; }
#define K0 W{0ull, ~0ull}
#define K1 W{~0ull, 0ull}
#define KX W{~0ull, ~0ull}
)";
  return R"(#define AI static inline __attribute__((always_inline))
typedef unsigned short W;
typedef unsigned int U;
AI U sw(U w) { return ((w >> 8) | (w << 8)) & 0xffffu; }
AI W g_not(U a) { return (W)sw(a); }
AI W g_and(U x, U y) { return (W)((x & y & NHI) | ((x | y) & NLO)); }
AI W g_or(U x, U y) { return (W)(((x | y) & NHI) | (x & y & NLO)); }
AI W g_xor(U x, U y) {
  const U t1 = x & sw(y), t2 = x & y;
  return (W)(((t1 | sw(t1)) & NHI) | ((t2 | sw(t2)) & NLO));
}
AI W g_mux(U a, U b, U s) {
  const U sl = (s & NLO) | sw(s & NLO), sh = (s & NHI) | sw(s & NHI);
  return (W)((sl & a) | (sh & b));
}
#define K0 ((W)NLO)
#define K1 ((W)NHI)
#define KX ((W)0xffffu)
// Lane 0 in the 2-state program: a known value's bit, a bit as a word (every lane), X in lane 0.
#define BIT(w) (((U)(w) >> SHI) & 1u)
#define ENC(b) ((W)(NLO ^ ((0u - (b)) & 0xffffu)))
#define UNKNOWN(w) ((((U)(w) >> SHI) & ((U)(w) >> SLO)) & 1u)
)";
}

std::string expression(opcode c, const std::string& a, const std::string& b, const std::string& s) {
  switch (c) {
    case opcode::buf: return a;
    case opcode::not_: return "g_not(" + a + ")";
    case opcode::and_: return "g_and(" + a + ", " + b + ")";
    case opcode::or_: return "g_or(" + a + ", " + b + ")";
    case opcode::xor_: return "g_xor(" + a + ", " + b + ")";
    case opcode::nand: return "g_not(g_and(" + a + ", " + b + "))";
    case opcode::nor: return "g_not(g_or(" + a + ", " + b + "))";
    case opcode::xnor: return "g_not(g_xor(" + a + ", " + b + "))";
    case opcode::andnot: return "g_and(" + a + ", g_not(" + b + "))";
    case opcode::ornot: return "g_or(" + a + ", g_not(" + b + "))";
    case opcode::mux: return "g_mux(" + a + ", " + b + ", " + s + ")";
    case opcode::nmux: return "g_not(g_mux(" + a + ", " + b + ", " + s + "))";
    case opcode::memrd: break;
  }
  return "KX";
}

// Every op's inputs as its readers see them after folding, and its own fold (nullopt: computed).
struct analysis {
  std::vector<std::array<ref, 3>> in;      // per op
  std::vector<std::optional<ref>> folded;  // per op
  std::vector<std::uint32_t> free_slots;   // read by a computed op, produced by none, not constant
  bool reads_x = false;                    // a computed op reads the constant X
};

analysis analyse(const program_source& p) {
  std::uint32_t slots = 3;
  for (const op& o : p.program) slots = std::max({slots, o.y + 1, o.a + 1, o.b + 1, o.s + 1});
  for (const auto& cs : p.constant_slots)
    for (auto s : cs) slots = std::max(slots, s + 1);
  std::vector<ref> of(slots);
  for (std::uint32_t s = 0; s < slots; ++s) of[s] = {false, s};
  for (std::uint32_t c = 0; c < 3; ++c)
    for (auto s : p.constant_slots[c]) of[s] = {true, c};
  std::vector<char> produced(slots, 0), listed(slots, 0);
  for (const op& o : p.program) produced[o.y] = 1;
  analysis a;
  for (const op& o : p.program) {
    a.in.push_back({of[o.a], of[o.b], of[o.s]});
    if (o.code == opcode::memrd) {
      a.folded.emplace_back();
      continue;
    }
    const ref in[3] = {of[o.a], of[o.b], of[o.s]};
    a.folded.push_back(fold(o.code, in));
    if (a.folded.back()) {
      of[o.y] = *a.folded.back();
      continue;
    }
    for (int i = 0; i < arity(o.code); ++i) {
      if (in[i].constant) {
        a.reads_x |= in[i].v == 2;
        continue;
      }
      if (!produced[in[i].v] && !listed[in[i].v]) listed[in[i].v] = 1, a.free_slots.push_back(in[i].v);
    }
  }
  return a;
}

// Which emitted function each op goes to: a new one after `per_function` ops, but never between
// the bits of one memory read port (they share the port's decoded address).
std::vector<std::size_t> parts_of(const program_source& p, std::size_t per_function) {
  std::vector<std::size_t> part(p.program.size());
  std::size_t current = 0, in_current = 0;
  for (std::size_t i = 0; i < p.program.size(); ++i) {
    const op& o = p.program[i];
    if (in_current >= per_function && !(o.code == opcode::memrd && o.s != 0)) ++current, in_current = 0;
    part[i] = current;
    ++in_current;
  }
  return part;
}

// The 4-state program: every op on whole values (every lane), in program order.
void emit_four_state(std::ostream& out, std::size_t k, const program_source& p, const analysis& an,
                     const std::vector<std::size_t>& part_of_op) {
  static const char* const literal[3] = {"K0", "K1", "KX"};
  auto text = [&](const ref& r) { return r.constant ? std::string(literal[r.v]) : "v[" + std::to_string(r.v) + "]"; };
  std::size_t parts = 0;
  for (std::size_t i = 0; i < p.program.size(); ++i) {
    if (i == 0 || part_of_op[i] != part_of_op[i - 1]) {
      if (i) out << "}\n";
      out << "__attribute__((noinline)) static void p" << k << "_" << parts++
          << "(W* v, banyan_memrd m, void* c) {\n  (void)m, (void)c;\n";
    }
    const op& o = p.program[i];
    if (o.code == opcode::memrd) {  // bit 0 of a read port comes first and reads them all
      if (o.s == 0) out << "  m(c, " << i << "u);\n";
      continue;
    }
    const auto& in = an.in[i];
    if (an.folded[i]) out << "  v[" << o.y << "] = " << text(*an.folded[i]) << ";\n";
    else out << "  v[" << o.y << "] = " << expression(o.code, text(in[0]), text(in[1]), text(in[2])) << ";\n";
  }
  if (parts) out << "}\n";
  out << "extern \"C\" void banyan_eval_" << k << "(void* values, banyan_memrd m, void* c) {\n"
      << "  W* v = static_cast<W*>(values);\n  (void)v, (void)m, (void)c;\n";
  for (std::size_t q = 0; q < parts; ++q) out << "  p" << k << "_" << q << "(v, m, c);\n";
  out << "}\n";
}

// The plain flip-flops' edge: every D read, then every state written (a state may be another's D).
void emit_edge(std::ostream& out, std::size_t k, const program_source& p) {
  out << "extern \"C\" void banyan_edge_" << k << "(void* values) {\n  W* v = static_cast<W*>(values);\n  (void)v;\n";
  for (std::size_t i = 0; i < p.edge_d.size(); ++i) out << "  const W t" << i << " = v[" << p.edge_d[i] << "];\n";
  for (std::size_t i = 0; i < p.edge_state.size(); ++i) out << "  v[" << p.edge_state[i] << "] = t" << i << ";\n";
  out << "}\n";
}

std::string two_state_expression(opcode c, const std::string& a, const std::string& b, const std::string& s) {
  switch (c) {
    case opcode::buf: return a;
    case opcode::not_: return "(" + a + " ^ 1u)";
    case opcode::and_: return "(" + a + " & " + b + ")";
    case opcode::or_: return "(" + a + " | " + b + ")";
    case opcode::xor_: return "(" + a + " ^ " + b + ")";
    case opcode::nand: return "((" + a + " & " + b + ") ^ 1u)";
    case opcode::nor: return "((" + a + " | " + b + ") ^ 1u)";
    case opcode::xnor: return "(" + a + " ^ " + b + " ^ 1u)";
    case opcode::andnot: return "(" + a + " & (" + b + " ^ 1u))";
    case opcode::ornot: return "(" + a + " | (" + b + " ^ 1u))";
    case opcode::mux: return "(" + a + " ^ ((" + a + " ^ " + b + ") & " + s + "))";
    case opcode::nmux: return "(" + a + " ^ ((" + a + " ^ " + b + ") & " + s + ") ^ 1u)";
    case opcode::memrd: break;
  }
  return "0u";
}

// The 2-state program (narrow layout, lane 0): valid when every value the program reads from
// outside (inputs, flip-flop states, undriven nets, memory words) is known in lane 0, since then
// every value it computes is known and 4-state logic is 2-state logic. It checks that first (and
// each memory read as it goes) and returns 0 at the first unknown, leaving the caller to run the
// 4-state program, which recomputes every value. A value computed in the same function stays a
// local bit; it is also stored as a whole word (all lanes equal) when something outside reads it.
void emit_two_state(std::ostream& out, std::size_t k, const program_source& p, const analysis& an,
                    const std::vector<std::size_t>& part_of_op) {
  std::vector<std::int64_t> local_in;  // per slot: the function whose local holds its bit, or -1
  std::uint32_t slots = 0;
  for (const op& o : p.program) slots = std::max(slots, o.y + 1);
  local_in.assign(slots, -1);
  // A computed value is stored when the engine reads it (observed), a later function reads it, a
  // memory port reads it as an address, or a folded op copies it; otherwise it lives in a local.
  std::vector<char> store(slots, 0);
  std::vector<std::int64_t> part_of(slots, -1);
  for (std::size_t i = 0; i < p.program.size(); ++i) part_of[p.program[i].y] = static_cast<std::int64_t>(part_of_op[i]);
  auto must = [&](std::uint32_t s) {
    if (s < slots) store[s] = 1;
  };
  for (auto s : p.observed) must(s);
  for (const auto& r : p.read_ports)
    for (auto s : r.addr) must(s);
  for (std::size_t i = 0; i < p.program.size(); ++i) {
    const op& o = p.program[i];
    if (o.code == opcode::memrd) continue;
    if (an.folded[i]) {
      if (!an.folded[i]->constant) must(an.folded[i]->v);
      continue;
    }
    for (int q = 0; q < arity(o.code); ++q) {
      const ref& r = an.in[i][q];
      if (!r.constant && r.v < slots && part_of[r.v] != static_cast<std::int64_t>(part_of_op[i])) must(r.v);
    }
  }
  for (const op& o : p.program)  // a port read through the engine reads its address from the values
    if (o.code == opcode::memrd && std::none_of(p.read_ports.begin(), p.read_ports.end(),
                                                [&](const auto& r) { return r.memory == o.a && r.port == o.b; }))
      store.assign(slots, 1);
  std::size_t part = 0;
  auto text = [&](const ref& r) {
    if (r.constant) return std::string(r.v ? "1u" : "0u");
    if (r.v < slots && local_in[r.v] == static_cast<std::int64_t>(part)) return "b" + std::to_string(r.v);
    return "BIT(v[" + std::to_string(r.v) + "])";
  };
  out << "__attribute__((noinline)) static int q" << k << "_check(const W* v) {\n  U x = 0;\n";
  if (an.reads_x) out << "  x = 1u;\n";
  for (auto s : an.free_slots) out << "  x |= UNKNOWN(v[" << s << "]);\n";
  out << "  return !x;\n}\n";
  std::size_t parts = 0;
  for (std::size_t i = 0; i < p.program.size(); ++i) {
    if (i == 0 || part_of_op[i] != part_of_op[i - 1]) {
      if (i) out << "  return 1;\n}\n";
      part = parts;
      out << "__attribute__((noinline)) static int q" << k << "_" << parts++
          << "(W* v, banyan_memrd m, void* c, void* const* mems) {\n  (void)m, (void)c, (void)mems;\n";
    }
    const op& o = p.program[i];
    if (o.code == opcode::memrd) {
      const auto port = std::find_if(p.read_ports.begin(), p.read_ports.end(),
                                     [&](const auto& r) { return r.memory == o.a && r.port == o.b; });
      if (port == p.read_ports.end()) {
        if (o.s == 0) out << "  if (!m(c, " << i << "u)) return 0;\n";
        continue;
      }
      const std::string n = std::to_string(i - o.s);  // the port's bit-0 op names its temporaries
      if (o.s == 0) {  // the address (an X or out-of-range one reads X: the 4-state program does it)
        out << "  U x" << n << " = 0, a" << n << " = 0;\n";
        for (std::size_t k = 0; k < port->addr.size(); ++k) {
          const auto s = port->addr[k];
          out << "  a" << n << " |= BIT(v[" << s << "]) << " << k << ";\n";
          if (s >= slots || local_in[s] < 0) out << "  x" << n << " |= UNKNOWN(v[" << s << "]);\n";
        }
        out << "  const long long w" << n << " = (long long)a" << n << " - (" << port->offset << "LL);\n"
            << "  if (x" << n << " || w" << n << " < 0 || w" << n << " >= " << port->size << "LL) return 0;\n"
            << "  const W* q" << n << " = (const W*)mems[" << port->memory << "] + w" << n << " * " << port->width
            << ";\n";
      }
      out << "  if (UNKNOWN(q" << n << "[" << o.s << "])) return 0;\n  const U b" << o.y << " = BIT(q" << n << "["
          << o.s << "]);\n";
      if (store[o.y]) out << "  v[" << o.y << "] = ENC(b" << o.y << ");\n";
      local_in[o.y] = static_cast<std::int64_t>(part);
      continue;
    }
    const auto& in = an.in[i];
    if (an.folded[i]) {
      const ref& f = *an.folded[i];
      if (f.constant) out << "  v[" << o.y << "] = " << (f.v == 0 ? "K0" : f.v == 1 ? "K1" : "KX") << ";\n";
      else out << "  v[" << o.y << "] = v[" << f.v << "];\n";
      continue;
    }
    out << "  const U b" << o.y << " = " << two_state_expression(o.code, text(in[0]), text(in[1]), text(in[2]))
        << ";\n";
    if (store[o.y]) out << "  v[" << o.y << "] = ENC(b" << o.y << ");\n";
    local_in[o.y] = static_cast<std::int64_t>(part);
  }
  if (parts) out << "  return 1;\n}\n";
  out << "extern \"C\" int banyan_eval2_" << k << "(void* values, banyan_memrd m, void* c, void* const* mems) {\n"
      << "  W* v = static_cast<W*>(values);\n  if (!q" << k << "_check(v)) return 0;\n";
  for (std::size_t q = 0; q < parts; ++q) out << "  if (!q" << k << "_" << q << "(v, m, c, mems)) return 0;\n";
  out << "  return 1;\n}\n";
}

std::string source_of(std::span<const program_source> programs, value_layout layout, std::size_t per_function) {
  std::ostringstream out;
  out << "// Generated by banyan eda_sim (compiled engine): " << programs.size() << " program(s), "
      << (layout == value_layout::wide ? "64 lanes (two 64-bit planes per value)" : "8 lanes (a 16-bit word per value)")
      << ". Do not edit: it is rebuilt from the netlist.\n";
  if (layout == value_layout::narrow)
    out << "#define NHI " << detail::nhi << "u\n#define NLO " << detail::nlo << "u\n#define SHI "
        << std::countr_zero(detail::nhi) << "\n#define SLO " << std::countr_zero(detail::nlo) << "\n";
  out << prelude(layout) << "typedef int (*banyan_memrd)(void*, unsigned);\n";
  for (std::size_t k = 0; k < programs.size(); ++k) {
    const analysis an = analyse(programs[k]);
    const auto part_of_op = parts_of(programs[k], per_function);
    emit_four_state(out, k, programs[k], an, part_of_op);
    emit_edge(out, k, programs[k]);
    if (layout == value_layout::narrow) emit_two_state(out, k, programs[k], an, part_of_op);
  }
  return out.str();
}

// The compiler's identity for the cache key (its version and target), asked once per compiler.
result<std::string> compiler_identity(const std::string& compiler) {
  static std::mutex m;
  static std::map<std::string, std::string> known;
  std::lock_guard lock(m);
  if (auto it = known.find(compiler); it != known.end()) return it->second;
  auto r = detail::run_tool({compiler, "-dumpfullversion", "-dumpmachine"}, "");
  if (!r || !r->status.success())
    return error{errc::compile_failed, "cannot run the compiler '" + compiler + "'" +
                                           (r ? ": " + detail::excerpt(r->out, "", 3) : ": " + r.error().message) +
                                           " (install g++: tools/setup; or choose --engine interp)"};
  return known[compiler] = r->out;
}

// Holds an exclusive flock on `path` for its lifetime (-1: none could be taken; then no exclusion).
struct file_lock {
  int fd;
  explicit file_lock(const std::string& path) : fd(::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644)) {
    if (fd >= 0) ::flock(fd, LOCK_EX);
  }
  ~file_lock() {
    if (fd >= 0) ::close(fd);
  }
  file_lock(const file_lock&) = delete;
  file_lock& operator=(const file_lock&) = delete;
};

result<std::shared_ptr<void>> load(const std::string& object) {
  void* h = ::dlopen(object.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* why = ::dlerror();
    return error{errc::compile_failed, object + ": cannot load: " + (why ? why : "unknown reason")};
  }
  return std::shared_ptr<void>(h, [](void* p) { ::dlclose(p); });
}

}  // namespace

result<engine_kind> parse_engine(const std::string& name) {
  if (name == "auto") return engine_kind::automatic;
  if (name == "compiled") return engine_kind::compiled;
  if (name == "interp") return engine_kind::interp;
  return error{errc::bad_stimulus, "engine '" + name + "': expected auto, compiled or interp"};
}

result<engine_choice> choose_engine(engine_kind kind, std::size_t ops, std::uint64_t cycles, compile_options opts,
                                    const compile_fn& compile) {
  if (kind == engine_kind::interp) return engine_choice{};
  if (kind == engine_kind::compiled) {
    auto code = compile(opts);
    if (!code) return code.error();
    return engine_choice{*code, ""};
  }
  opts.cached_only = true;
  if (auto code = compile(opts); code && *code) return engine_choice{*code, ""};
  // Worth compiling when the time it saves exceeds the time it takes. Measured on this repository's
  // designs with -O1 on 2 cores (docs/benchmarks.md): compiling both programs costs about 3 ms per
  // op, the interpreter about 1.3 ns per op and cycle for one lane, and the compiled code saves
  // 40-55% of that; so about 6 million cycles repay it, whatever the design's size.
  const double saved = 0.4 * 1.3e-9 * static_cast<double>(ops) * static_cast<double>(cycles);
  const double compiling = 0.2 + 3e-3 * static_cast<double>(ops);
  if (saved < compiling) return engine_choice{};
  opts.cached_only = false;
  auto code = compile(opts);
  if (!code) return engine_choice{nullptr, "interpreting: " + code.error().message};
  return engine_choice{*code, ""};
}

std::string describe(const native_bundle& code) {
  char buf[160];
  if (code.from_cache)
    std::snprintf(buf, sizeof buf, "loaded from the cache (%zu KiB of source)", code.source_bytes / 1024);
  else
    std::snprintf(buf, sizeof buf, "compiled in %.1f s (%zu KiB of source)", code.compile_seconds,
                  code.source_bytes / 1024);
  return std::string(buf) + (code.object.empty() ? "" : ", " + code.object);
}

std::string native_source(std::span<const program_source> programs, value_layout layout) {
  return source_of(programs, layout, compile_options{}.ops_per_function);
}

result<std::shared_ptr<const native_bundle>> compile(std::span<const program_source> programs, value_layout layout,
                                                     const compile_options& opts) {
  const std::string source = source_of(programs, layout, std::max<std::size_t>(opts.ops_per_function, 1));
  auto id = compiler_identity(opts.compiler);
  if (!id) return id.error();
  detail::hasher h;
  h.add(source);
  h.add(opts.compiler);
  h.add(*id);
  for (const auto& f : opts.flags) h.add(f);
  const std::string key = "native-" + h.hex();

  auto bundle = std::make_shared<native_bundle>();
  bundle->source_bytes = source.size();
  std::string dir = opts.cache_dir;
  const bool temporary = dir.empty();
  if (temporary && opts.cached_only) return std::shared_ptr<const native_bundle>();
  // A temporary folder goes on every way out (a loaded object stays mapped without its file).
  struct removed_at_exit {
    std::string path;
    ~removed_at_exit() {
      std::error_code ec;
      if (!path.empty()) fs::remove_all(path, ec);
    }
  } temporary_folder;
  if (temporary) {
    dir = detail::make_temp_dir();
    if (dir.empty()) return error{errc::io, "cannot create a temporary folder to compile the design in"};
    temporary_folder.path = dir;
  } else {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return error{errc::io, dir + ": cannot create the cache folder: " + ec.message()};
    dir = fs::absolute(dir).string();
  }
  const std::string object = dir + "/" + key + ".so";
  std::shared_ptr<void> handle;
  {
    // One compiler per key at a time: the others wait here, then load its object.
    std::unique_ptr<file_lock> lock;
    if (!temporary) lock = std::make_unique<file_lock>(object + ".lock");
    std::error_code ec;
    if (!temporary && fs::exists(object, ec)) {
      if (auto l = load(object)) handle = *l, bundle->from_cache = true;
      else fs::remove(object, ec);  // unreadable (cut short, another build): compile again
    }
    if (!handle && opts.cached_only) return std::shared_ptr<const native_bundle>();
    if (!handle) {
      const std::string src = dir + "/" + key + ".cpp", tmp = object + ".tmp" + std::to_string(::getpid());
      {
        std::ofstream f(src);
        f << source;
        if (!f) return error{errc::io, src + ": cannot write the generated source"};
      }
      std::vector<std::string> argv{opts.compiler};
      argv.insert(argv.end(), opts.flags.begin(), opts.flags.end());
      for (const char* f : {"-std=c++17", "-fPIC", "-shared", "-w", "-o"}) argv.emplace_back(f);
      argv.push_back(tmp);
      argv.push_back(src);
      const auto start = std::chrono::steady_clock::now();
      auto r = detail::run_tool(argv, dir);
      bundle->compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (!r || !r->status.success()) {
        std::string cmd;
        for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
        fs::remove(tmp, ec);
        return error{errc::compile_failed, cmd + ": " + (r ? detail::excerpt(r->out, "error", 6) : r.error().message)};
      }
      fs::rename(tmp, object, ec);
      if (ec) return error{errc::io, object + ": " + ec.message()};
      auto l = load(object);
      if (!l) return l.error();
      handle = *l;
    }
  }
  bundle->object = temporary ? std::string() : object;
  std::string missing;
  auto symbol = [&](const std::string& name) {
    void* s = ::dlsym(handle.get(), name.c_str());
    if (!s && missing.empty()) missing = name;
    return s;
  };
  for (std::size_t k = 0; k < programs.size(); ++k) {
    const std::string n = std::to_string(k);
    bundle->fns_.push_back(reinterpret_cast<native_fn>(symbol("banyan_eval_" + n)));
    bundle->edges_.push_back(reinterpret_cast<native_edge>(symbol("banyan_edge_" + n)));
    if (layout == value_layout::narrow)
      bundle->fns2_.push_back(reinterpret_cast<native_fn2>(symbol("banyan_eval2_" + n)));
  }
  if (!missing.empty()) return error{errc::compile_failed, object + ": no symbol " + missing};
  bundle->handle_ = std::move(handle);
  return std::shared_ptr<const native_bundle>(std::move(bundle));
}

}  // namespace banyan::eda
