// Elaboration: instances → composites, own cells → levelised leaf programs, boundary nets → groups.
//
// Nets are identified globally by union-find over (instance, yosys bit): a child's port bit and the
// parent's connected bit are the same net. Levelisation is one global Kahn pass over every op, so a
// combinational loop is found whether it stays inside one instance or crosses several; each leaf's
// program is then its ops in that global order.
#include <banyan/eda_sim/design.hpp>

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <tuple>
#include <unordered_map>

namespace banyan::eda {
namespace {

constexpr int gid_0 = 0, gid_1 = 1, gid_x = 2, gid_z = 3, first_gid = 4;

error unsupported(const std::string& what) { return {errc::unsupported, what}; }

std::string where(const std::string& module, const cell& c) {
  std::string s = "module " + module + ", cell " + c.name + " (" + c.type + ")";
  if (!c.src.empty()) s += " from " + c.src;
  return s;
}

std::optional<opcode> gate_opcode(const std::string& type) {
  static const std::map<std::string, opcode> table = {
      {"$_BUF_", opcode::buf},       {"$_NOT_", opcode::not_},    {"$_AND_", opcode::and_}, {"$_OR_", opcode::or_},
      {"$_XOR_", opcode::xor_},      {"$_NAND_", opcode::nand},   {"$_NOR_", opcode::nor},  {"$_XNOR_", opcode::xnor},
      {"$_ANDNOT_", opcode::andnot}, {"$_ORNOT_", opcode::ornot}, {"$_MUX_", opcode::mux},  {"$_NMUX_", opcode::nmux}};
  auto it = table.find(type);
  if (it == table.end()) return std::nullopt;
  return it->second;
}

bool is_flop(const std::string& t) { return t.rfind("$_DFF", 0) == 0 || t.rfind("$_SDFF", 0) == 0; }

// $_DFF_P_, $_DFF_P[NP][01]_ and $_DFFSR_P[NP][NP]_: what dfflegalize is asked for.
bool supported_flop(const std::string& t) {
  auto pol = [](char c) { return c == 'N' || c == 'P'; };
  if (t == "$_DFF_P_") return true;
  if (t.size() == 10 && t.rfind("$_DFF_P", 0) == 0) return pol(t[7]) && (t[8] == '0' || t[8] == '1') && t[9] == '_';
  if (t.size() == 12 && t.rfind("$_DFFSR_P", 0) == 0) return pol(t[9]) && pol(t[10]) && t[11] == '_';
  return false;
}

// A numeric cell parameter (yosys writes a bit string, MSB first); nullopt when absent or not numeric.
std::optional<std::int64_t> param_int(const cell& c, const char* name) {
  auto it = c.params.find(name);
  if (it == c.params.end() || it->second.empty() || it->second.size() > 62) return std::nullopt;
  std::int64_t v = 0;
  for (char ch : it->second) {
    if (ch != '0' && ch != '1') return std::nullopt;
    v = v * 2 + (ch - '0');
  }
  return v;
}

// A bit-mask parameter (one bit per port, LSB = port 0) as a string LSB first; empty when absent.
std::string param_bits(const cell& c, const char* name) {
  auto it = c.params.find(name);
  return it == c.params.end() ? std::string() : std::string(it->second.rbegin(), it->second.rend());
}

// Replaces characters that would split or wildcard a path or topic level.
std::string level(std::string s) {
  for (char& c : s)
    if (c == '/' || c == '+' || c == '#' || c == ' ') c = '_';
  return s;
}

class builder {
 public:
  builder(const netlist& n, const elaborate_options& o) : n_(n), opts_(o) {
    parent_.resize(first_gid);
    std::iota(parent_.begin(), parent_.end(), 0);
  }

  result<design> run();

 private:
  struct inst_rec {
    const module* m;
    std::unordered_map<bit, int> gids;
  };
  struct prim {
    int inst;
    const cell* c;
  };
  // An op before levelisation, with global keys for its inputs and output.
  struct pending_op {
    int leaf;
    op o;
    std::vector<long> in_keys;
    long out_key;
    std::string name;  // for loop reports
  };

  int find(int g) {
    while (parent_[g] != g) g = parent_[g] = parent_[parent_[g]];
    return g;
  }
  void unite(int a, int b) {
    a = find(a), b = find(b);
    if (a == b) return;
    if (a < first_gid || b < first_gid) {  // constants stay the root
      if (b < a) std::swap(a, b);
    }
    parent_[b] = a;
  }
  int gid(int inst, bit b) {
    switch (b) {
      case bit_0: return gid_0;
      case bit_1: return gid_1;
      case bit_x: return gid_x;
      case bit_z: return gid_z;
      default: break;
    }
    auto [it, fresh] = recs_[inst].gids.try_emplace(b, 0);
    if (fresh) {
      it->second = static_cast<int>(parent_.size());
      parent_.push_back(it->second);
    }
    return it->second;
  }

  result<void> instantiate(const module& m, const std::string& path, int parent, int depth);
  result<void> collect_cells();
  result<void> check_memory(int inst, const cell& c);
  result<void> build_memory(int inst, const cell& c, int leaf, const std::string& who);
  result<void> build_ops();
  result<void> levelise();
  error loop_error(const std::vector<int>& indeg, const std::unordered_map<long, int>& producer) const;
  void build_groups();
  void build_probes();

  std::uint32_t slot(int leaf, int g);  // g canonical
  result<void> drive_(int g, int leaf, const std::string& who) {
    if (g < first_gid) return error{errc::bad_netlist, who + ": drives a constant"};
    auto [it, fresh] = driver_.try_emplace(g, leaf);
    if (!fresh)
      return unsupported("net " + net_name(g) + " has two drivers: " + driver_cell_[g] + " and " + who +
                         " (tri-state and wired logic are not supported)");
    driver_cell_[g] = who;
    return {};
  }
  long key(int leaf, std::uint32_t s) {  // global identity of a slot's value
    auto it = slot_gid_[leaf].find(s);
    return it != slot_gid_[leaf].end() ? it->second : -1 - static_cast<long>(leaf) * (1L << 32) - s;
  }
  std::string net_name(int g) const {
    auto it = names_.find(g);
    return it != names_.end() ? it->second : "n" + std::to_string(g);
  }

  const netlist& n_;
  const elaborate_options& opts_;
  design d_;
  std::vector<int> parent_;
  std::vector<inst_rec> recs_;
  std::vector<prim> prims_;
  std::vector<int> inst_leaf_;                                 // instance -> leaf or -1
  std::vector<std::unordered_map<int, std::uint32_t>> slots_;  // per leaf: gid -> slot
  std::vector<std::unordered_map<std::uint32_t, int>> slot_gid_;
  std::unordered_map<int, int> driver_;               // gid -> leaf
  std::unordered_map<int, std::string> driver_cell_;  // gid -> description, for errors
  std::map<int, std::vector<int>> users_;             // gid -> leaves that hold a slot for it
  std::unordered_map<int, std::string> names_;        // gid -> shallowest public name
  std::unordered_map<int, std::string> name_src_;     // gid -> where that name is declared (yosys src)
  std::vector<pending_op> ops_;
  std::unordered_map<long, int> cross_;  // key -> crossing rank
  std::vector<int> input_gids_;
  std::unordered_map<int, std::uint8_t> init_;  // gid -> initial value (yosys init attribute)
  int clock_gid_ = -1;
};

result<void> builder::instantiate(const module& m, const std::string& path, int parent, int depth) {
  if (depth > 64) return error{errc::bad_netlist, "instance " + path + ": hierarchy deeper than 64 levels"};
  const int idx = static_cast<int>(d_.instances.size());
  d_.instances.push_back({path, m.name, parent, {}, -1});
  recs_.push_back({&m, {}});
  if (parent >= 0) d_.instances[parent].children.push_back(idx);
  for (const auto& c : m.cells) {
    auto sub = n_.modules.find(c.type);
    if (sub == n_.modules.end()) {
      prims_.push_back({idx, &c});
      continue;
    }
    const int child = static_cast<int>(d_.instances.size());
    auto st = instantiate(sub->second, path + "/" + level(c.name), idx, depth + 1);
    if (!st) return st;
    for (const auto& p : sub->second.ports) {
      auto conn = c.connections.find(p.name);
      if (conn == c.connections.end()) continue;  // unconnected: the child's bits stay undriven
      if (conn->second.size() != p.bits.size())
        return error{errc::bad_netlist, "module " + m.name + ", instance " + c.name + ", port " + p.name + ": " +
                                            std::to_string(conn->second.size()) + " bits connected, " +
                                            std::to_string(p.bits.size()) + " declared"};
      if (p.dir == port_dir::inout)
        return unsupported("module " + sub->second.name + ", port " + p.name + ": inout ports are not supported");
      for (std::size_t i = 0; i < p.bits.size(); ++i) unite(gid(child, p.bits[i]), gid(idx, conn->second[i]));
    }
  }
  return {};
}

std::uint32_t builder::slot(int leaf, int g) {
  if (g == gid_0) return 0;
  if (g == gid_1) return 1;
  if (g == gid_x || g == gid_z) return 2;
  auto [it, fresh] = slots_[leaf].try_emplace(g, 0);
  if (fresh) {
    it->second = d_.leaves[leaf].slots++;
    slot_gid_[leaf][it->second] = g;
    users_[g].push_back(leaf);
  }
  return it->second;
}

result<void> builder::check_memory(int inst, const cell& c) {
  const std::string who = where(d_.instances[inst].module, c);
  const auto size = param_int(c, "SIZE"), width = param_int(c, "WIDTH"), abits = param_int(c, "ABITS"),
             rd = param_int(c, "RD_PORTS"), wr = param_int(c, "WR_PORTS");
  if (!size || !width || !abits || !rd || !wr || *width <= 0 || *size <= 0 || *abits > 40)
    return error{errc::bad_netlist, who + ": SIZE, WIDTH, ABITS, RD_PORTS and WR_PORTS must be numbers"};
  auto pins = [&](const char* pin, std::int64_t n) -> bool {
    auto it = c.connections.find(pin);
    return n == 0 ? (it == c.connections.end() || it->second.empty())
                  : (it != c.connections.end() && static_cast<std::int64_t>(it->second.size()) == n);
  };
  if (!pins("RD_ADDR", *rd * *abits) || !pins("RD_DATA", *rd * *width) || !pins("WR_ADDR", *wr * *abits) ||
      !pins("WR_DATA", *wr * *width) || !pins("WR_EN", *wr * *width) || !pins("WR_CLK", *wr))
    return error{errc::bad_netlist, who + ": port connections do not match SIZE/WIDTH/ABITS/RD_PORTS/WR_PORTS"};
  if (param_bits(c, "RD_CLK_ENABLE").find('1') != std::string::npos)
    return unsupported(who + ": a clocked read port is left after memory_nordff");
  if (param_bits(c, "RD_WIDE_CONTINUATION").find('1') != std::string::npos ||
      param_bits(c, "WR_WIDE_CONTINUATION").find('1') != std::string::npos)
    return unsupported(who + ": wide memory ports are not supported");
  const std::string wce = param_bits(c, "WR_CLK_ENABLE"), wcp = param_bits(c, "WR_CLK_POLARITY");
  for (std::int64_t p = 0; p < *wr; ++p)
    if (p >= static_cast<std::int64_t>(wce.size()) || wce[p] != '1' || p >= static_cast<std::int64_t>(wcp.size()) ||
        wcp[p] != '1')
      return unsupported(who + ": write port " + std::to_string(p) + " is not on a rising clock edge");
  if (*size * *width > (std::int64_t{1} << 31)) return unsupported(who + ": memory larger than 2^31 bits");
  return {};
}

result<void> builder::build_memory(int inst, const cell& c, int leaf, const std::string& who) {
  auto& lf = d_.leaves[leaf];
  const auto size = *param_int(c, "SIZE"), width = *param_int(c, "WIDTH"), abits = *param_int(c, "ABITS"),
             rd = *param_int(c, "RD_PORTS"), wr = *param_int(c, "WR_PORTS");
  memory m;
  m.name = who;
  m.size = static_cast<std::uint32_t>(size);
  m.width = static_cast<std::uint32_t>(width);
  m.offset = param_int(c, "OFFSET").value_or(0);
  m.content = lf.slots++;
  m.init.assign(static_cast<std::size_t>(size * width), 2);
  if (auto it = c.params.find("INIT"); it != c.params.end()) {
    const std::string& bits = it->second;  // MSB first: the last character is word 0's bit 0
    for (std::size_t i = 0; i < bits.size() && i < m.init.size(); ++i) {
      const char ch = bits[bits.size() - 1 - i];
      m.init[i] = ch == '0' ? 0 : ch == '1' ? 1 : 2;
    }
  }
  auto slots_of = [&](const char* pin, std::int64_t from, std::int64_t n) {
    std::vector<std::uint32_t> v;
    const auto& bits = c.connections.at(pin);
    for (std::int64_t i = 0; i < n; ++i) v.push_back(slot(leaf, find(gid(inst, bits[from + i]))));
    return v;
  };
  const int index = static_cast<int>(lf.memories.size());
  for (std::int64_t p = 0; p < wr; ++p)
    m.writes.push_back({slots_of("WR_ADDR", p * abits, abits), slots_of("WR_DATA", p * width, width),
                        slots_of("WR_EN", p * width, width)});
  for (std::int64_t p = 0; p < rd; ++p) {
    memory::read_port port{slots_of("RD_ADDR", p * abits, abits), {}};
    const auto& data = c.connections.at("RD_DATA");
    for (std::int64_t b = 0; b < width; ++b) {
      const int g = find(gid(inst, data[p * width + b]));
      auto st = drive_(g, leaf, who);
      if (!st) return st;
      const std::uint32_t y = slot(leaf, g);
      port.data.push_back(y);
      pending_op po{leaf,
                    {opcode::memrd, static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(p),
                     static_cast<std::uint32_t>(b), y},
                    {},
                    key(leaf, y),
                    who};
      for (auto a : port.addr) po.in_keys.push_back(key(leaf, a));
      po.in_keys.push_back(key(leaf, m.content));
      ops_.push_back(std::move(po));
    }
    m.reads.push_back(std::move(port));
  }
  ++d_.memories;
  d_.memory_bits += m.init.size();
  lf.memories.push_back(std::move(m));
  return {};
}

result<void> builder::collect_cells() {
  // Clock: every flip-flop's C pin must be the same top-level input.
  const cell* first_flop = nullptr;
  int first_inst = 0;
  for (const auto& [inst, c] : prims_) {
    const std::string& t = c->type;
    const std::string& mod = d_.instances[inst].module;
    if (t.rfind("$_DLATCH", 0) == 0 || t.rfind("$_DLATCHSR", 0) == 0 || t.rfind("$_SR_", 0) == 0)
      return unsupported(where(mod, *c) + ": latches are not supported (make the logic combinational or clocked)");
    if (gate_opcode(t)) continue;
    std::vector<bit> clocks;  // the clock pins this cell has
    if (t == "$mem_v2") {
      auto st = check_memory(inst, *c);
      if (!st) return st;
      clocks = c->connections.at("WR_CLK");
      if (clocks.empty()) continue;  // a ROM
    } else if (t.rfind("$mem", 0) == 0) {
      return unsupported(where(mod, *c) + ": memory cell type not supported (the flow leaves $mem_v2)");
    } else if (!is_flop(t)) {
      return unsupported(where(mod, *c) + ": cell type not supported by the simulator");
    } else if (!supported_flop(t)) {
      return unsupported(where(mod, *c) + ": only posedge flip-flops with optional async set/reset are supported");
    } else {
      auto cp = c->connections.find("C");
      if (cp == c->connections.end() || cp->second.size() != 1)
        return error{errc::bad_netlist, where(mod, *c) + ": no clock pin"};
      clocks = cp->second;
    }
    for (bit clock_bit : clocks) {
      const int g = find(gid(inst, clock_bit));
      if (clock_gid_ < 0) {
        clock_gid_ = g, first_flop = c, first_inst = inst;
      } else if (g != clock_gid_) {
        return unsupported(where(mod, *c) + ": clocked by a second clock (net " + net_name(g) +
                           "); only one clock is supported and " + where(d_.instances[first_inst].module, *first_flop) +
                           " is clocked by " + net_name(clock_gid_));
      }
    }
  }
  const module& top = n_.modules.at(n_.top);
  std::string clock_name = opts_.clock;
  int named_clock = -1;
  for (const auto& p : top.ports) {
    if (p.dir == port_dir::inout)
      return unsupported("top module " + top.name + ", port " + p.name + ": inout ports are not supported");
    if (p.name == opts_.clock && p.dir == port_dir::input && p.bits.size() == 1) named_clock = find(gid(0, p.bits[0]));
  }
  if (!opts_.clock.empty() && named_clock < 0)
    return unsupported("top module " + top.name + ": clock '" + opts_.clock + "' is not a 1-bit input port");
  if (clock_gid_ >= 0) {
    bool is_input = false;
    for (const auto& p : top.ports)
      if (p.dir == port_dir::input && p.bits.size() == 1 && find(gid(0, p.bits[0])) == clock_gid_) {
        is_input = true;
        clock_name = p.name;
      }
    if (!is_input)
      return unsupported(where(d_.instances[first_inst].module, *first_flop) + ": clocked by derived net " +
                         net_name(clock_gid_) + ", not a top-level input");
    if (named_clock >= 0 && named_clock != clock_gid_)
      return unsupported(where(d_.instances[first_inst].module, *first_flop) + ": clocked by " + clock_name +
                         ", not by the requested clock " + opts_.clock);
  } else {
    clock_gid_ = named_clock;
  }
  d_.clock = clock_gid_ >= 0 ? clock_name : "";
  return {};
}

result<void> builder::build_ops() {
  // Leaves: one per instance with primitive cells, then the io leaf.
  inst_leaf_.assign(d_.instances.size(), -1);
  for (const auto& p : prims_) {
    if (inst_leaf_[p.inst] >= 0) continue;
    auto& in = d_.instances[p.inst];
    std::string name = "cells";
    for (int ch : in.children)
      if (d_.instances[ch].path == in.path + "/" + name) name += "_";
    inst_leaf_[p.inst] = static_cast<int>(d_.leaves.size());
    in.leaf = inst_leaf_[p.inst];
    d_.leaves.push_back({in.path + "/" + name, p.inst});
  }
  {
    std::string name = "io";
    for (int ch : d_.instances[0].children)
      if (d_.instances[ch].path == d_.instances[0].path + "/" + name) name += "_";
    d_.leaves.push_back({d_.instances[0].path + "/" + name, 0});
  }
  slots_.resize(d_.leaves.size());
  slot_gid_.resize(d_.leaves.size());
  const int io = d_.io_leaf();

  auto drive = [&](int g, int leaf, const std::string& who) { return drive_(g, leaf, who); };

  // Top ports first so that their slots in the io leaf are stable.
  const module& top = n_.modules.at(n_.top);
  for (const auto& p : top.ports) {
    top_port tp{p.name, p.dir, {}};
    const bool is_clock = p.dir == port_dir::input && p.bits.size() == 1 && find(gid(0, p.bits[0])) == clock_gid_;
    if (is_clock) continue;
    for (bit b : p.bits) {
      const int g = find(gid(0, b));
      if (p.dir == port_dir::input) {
        auto st = drive(g, io, "top input " + p.name);
        if (!st) return st;
        input_gids_.push_back(g);
      }
      tp.slots.push_back(slot(io, g));
    }
    (p.dir == port_dir::input ? d_.inputs : d_.outputs).push_back(std::move(tp));
  }

  auto pin = [&](int inst, const cell& c, const char* name, std::size_t& missing) -> int {
    auto it = c.connections.find(name);
    if (it == c.connections.end() || it->second.size() != 1) {
      ++missing;
      return gid_x;
    }
    return find(gid(inst, it->second[0]));
  };

  for (const auto& [inst, cp] : prims_) {
    const cell& c = *cp;
    const int leaf = inst_leaf_[inst];
    const std::string who = where(d_.instances[inst].module, c) + " in " + d_.instances[inst].path;
    auto& lf = d_.leaves[leaf];
    ++lf.cells;
    std::size_t missing = 0;
    auto add_op = [&](opcode code, std::uint32_t a, std::uint32_t b, std::uint32_t s, std::uint32_t y,
                      std::vector<std::uint32_t> ins) {
      pending_op p{leaf, {code, a, b, s, y}, {}, key(leaf, y), who};
      for (auto i : ins) p.in_keys.push_back(key(leaf, i));
      ops_.push_back(std::move(p));
    };
    if (auto code = gate_opcode(c.type)) {
      ++d_.gates;
      const bool unary = *code == opcode::buf || *code == opcode::not_;
      const bool mux = *code == opcode::mux || *code == opcode::nmux;
      const int ga = pin(inst, c, "A", missing);
      const int gb = unary ? ga : pin(inst, c, "B", missing);
      const int gs = mux ? pin(inst, c, "S", missing) : ga;
      const int gy = pin(inst, c, "Y", missing);
      if (missing) return error{errc::bad_netlist, who + ": a pin is missing or not 1 bit wide"};
      auto st = drive(gy, leaf, who);
      if (!st) return st;
      const auto a = slot(leaf, ga), b = slot(leaf, gb), s = slot(leaf, gs), y = slot(leaf, gy);
      std::vector<std::uint32_t> ins{a};
      if (!unary) ins.push_back(b);
      if (mux) ins.push_back(s);
      add_op(*code, a, b, s, y, ins);
      continue;
    }
    if (c.type == "$mem_v2") {
      auto st = build_memory(inst, c, leaf, who);
      if (!st) return st;
      continue;
    }
    // A posedge flip-flop: $_DFF_P_, $_DFF_P[NP][01]_, $_DFFSR_P[NP][NP]_.
    ++d_.flops;
    const int gd = pin(inst, c, "D", missing), gq = pin(inst, c, "Q", missing);
    if (missing) return error{errc::bad_netlist, who + ": a pin is missing or not 1 bit wide"};
    auto st = drive(gq, leaf, who);
    if (!st) return st;
    flip_flop ff{slot(leaf, gd), 0, 2, {}};
    if (auto in = init_.find(gq); in != init_.end()) ff.init = in->second;
    const std::uint32_t q = slot(leaf, gq);
    auto ctrl = [&, inst = inst](const char* pin_name, char polarity) -> std::uint32_t {
      const std::uint32_t raw = slot(leaf, pin(inst, c, pin_name, missing));
      if (polarity == 'P') return raw;
      const std::uint32_t inv = lf.slots++;
      add_op(opcode::not_, raw, raw, raw, inv, {raw});
      return inv;
    };
    const std::string& t = c.type;
    if (t == "$_DFF_P_") {
      ff.state = q;
    } else if (t.size() == 10 && t.rfind("$_DFF_P", 0) == 0) {
      ff.async.push_back({ctrl("R", t[7]), t[8] == '1' ? 1u : 0u});
    } else if (t.size() == 12 && t.rfind("$_DFFSR_P", 0) == 0) {
      ff.async.push_back({ctrl("S", t[9]), 1u});
      ff.async.push_back({ctrl("R", t[10]), 0u});
    } else {
      return unsupported(who + ": flip-flop type not supported");
    }
    if (missing) return error{errc::bad_netlist, who + ": a set/reset pin is missing"};
    if (!ff.async.empty()) {
      ff.state = lf.slots++;
      std::uint32_t v = ff.state;
      for (std::size_t i = 0; i < ff.async.size(); ++i) {
        const std::uint32_t out = i + 1 == ff.async.size() ? q : lf.slots++;
        add_op(opcode::mux, v, ff.async[i].value, ff.async[i].ctrl, out, {v, ff.async[i].ctrl});
        v = out;
      }
    }
    lf.flops.push_back(std::move(ff));
  }
  // Top outputs are read by the io leaf (slots made above); the clock must not be read as data.
  for (const auto& [g, leaves] : users_)
    if (g == clock_gid_)
      return unsupported("clock " + d_.clock + " is also used as data (by a cell in " + d_.leaves[leaves.front()].path +
                         "); only flip-flop clock pins may read it");
  return {};
}

// A loop left ops with inputs never ready: each has a producer that is left too, so walking back
// from one along such producers comes round to an op already seen. The report names the loop's nets
// as the source declares them, with their lines (gates from abc have no lines of their own).
error builder::loop_error(const std::vector<int>& indeg, const std::unordered_map<long, int>& producer) const {
  const auto left = [&](int i) { return indeg[static_cast<std::size_t>(i)] > 0; };
  int at = 0;
  while (!left(at)) ++at;
  std::vector<int> path, seen(ops_.size(), -1);
  while (seen[static_cast<std::size_t>(at)] < 0) {
    seen[static_cast<std::size_t>(at)] = static_cast<int>(path.size());
    path.push_back(at);
    for (long k : ops_[static_cast<std::size_t>(at)].in_keys)
      if (auto p = producer.find(k); p != producer.end() && left(p->second)) {
        at = p->second;
        break;
      }
  }
  std::vector<int> loop(path.begin() + seen[static_cast<std::size_t>(at)], path.end());
  std::reverse(loop.begin(), loop.end());  // in the direction values flow
  std::string nets, first;
  std::size_t named = 0;
  for (int i : loop) {
    const long k = ops_[static_cast<std::size_t>(i)].out_key;
    if (k < 0) continue;
    auto name = names_.find(static_cast<int>(k));
    if (name == names_.end()) continue;
    std::string line = name->second;
    if (auto src = name_src_.find(static_cast<int>(k)); src != name_src_.end() && !src->second.empty()) {
      // yosys writes file:line.col-line.col (several joined by |): file:line is what a reader wants.
      std::string at_line = src->second.substr(0, src->second.find('|'));
      if (auto colon = at_line.rfind(':'); colon != std::string::npos)
        at_line = at_line.substr(0, at_line.find('.', colon));
      line += " (declared at " + at_line + ")";
    }
    nets += (named++ ? " -> " : "") + line;
    if (first.empty()) first = name->second;
  }
  const std::string count = std::to_string(std::count_if(indeg.begin(), indeg.end(), [](int d) { return d > 0; }));
  if (named == 1)
    return error{errc::combinational_loop,
                 "combinational loop through net " + nets + ": " + count + " gates lie on or behind it"};
  if (named > 1)
    return error{errc::combinational_loop, "combinational loop through nets " + nets + " -> " + first + ": " + count +
                                               " gates lie on or behind it"};
  std::string cells;
  for (std::size_t n = 0; n < loop.size() && n < 4; ++n) cells += "\n  " + ops_[static_cast<std::size_t>(loop[n])].name;
  return error{errc::combinational_loop, "combinational loop (its nets have no names in the source): " + count +
                                             " gates lie on or behind it; on it:" + cells};
}

result<void> builder::levelise() {
  // Kahn over ops; a key's producer is the op writing it (keys of inputs, FF state: no producer).
  std::unordered_map<long, int> producer;
  for (std::size_t i = 0; i < ops_.size(); ++i) producer[ops_[i].out_key] = static_cast<int>(i);
  std::vector<int> indeg(ops_.size(), 0);
  std::unordered_map<long, std::vector<int>> readers;
  for (std::size_t i = 0; i < ops_.size(); ++i)
    for (long k : ops_[i].in_keys)
      if (producer.count(k)) {
        ++indeg[i];
        readers[k].push_back(static_cast<int>(i));
      }
  std::vector<int> order;
  order.reserve(ops_.size());
  for (std::size_t i = 0; i < ops_.size(); ++i)
    if (indeg[i] == 0) order.push_back(static_cast<int>(i));
  std::vector<int> depth(ops_.size(), 0);
  for (std::size_t h = 0; h < order.size(); ++h) {
    auto it = readers.find(ops_[order[h]].out_key);
    if (it == readers.end()) continue;
    for (int r : it->second) {
      depth[r] = std::max(depth[r], depth[order[h]] + 1);
      if (--indeg[r] == 0) order.push_back(r);
    }
  }
  if (order.size() != ops_.size()) return loop_error(indeg, producer);
  // Crossing rank: how many leaf boundaries the longest combinational path into a value crosses.
  // Groups are split by it so that a group only depends on groups of lower rank (acyclic), which
  // lets components publish each group once per cycle as soon as it is final.
  for (int i : order) {
    const auto& p = ops_[i];
    int r = 0;
    for (long k : p.in_keys) {
      auto it = cross_.find(k);
      int v = it == cross_.end() ? 0 : it->second;
      if (k >= 0) {
        auto drv = driver_.find(static_cast<int>(k));
        if (drv != driver_.end() && drv->second != p.leaf) ++v;
      }
      r = std::max(r, v);
    }
    cross_[p.out_key] = r;
  }
  // Within a level ops are independent; grouping them by opcode keeps the evaluator's dispatch
  // branch predictable (runs of the same gate).
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
    return depth[x] != depth[y] ? depth[x] < depth[y] : ops_[x].o.code < ops_[y].o.code;
  });
  for (int i : order) d_.leaves[ops_[i].leaf].program.push_back(ops_[i].o);
  return {};
}

void builder::build_groups() {
  std::map<std::tuple<int, int, std::vector<int>>, int> by_key;
  std::map<std::string, int> topic_uses;
  for (const auto& [g, leaves] : users_) {
    auto drv = driver_.find(g);
    if (drv == driver_.end()) continue;  // undriven nets read as X in every reader (slot value X)
    std::vector<int> readers;
    for (int l : leaves)
      if (l != drv->second) readers.push_back(l);
    if (readers.empty()) continue;
    std::sort(readers.begin(), readers.end());
    auto rk = cross_.find(g);
    const int rank = rk == cross_.end() ? 0 : rk->second;
    auto [it, fresh] = by_key.try_emplace({drv->second, rank, readers}, static_cast<int>(d_.groups.size()));
    if (fresh) {
      group gr;
      std::string name = "net/" + level(net_name(g));
      const int n = topic_uses[name]++;
      gr.topic = n ? name + "_" + std::to_string(n + 1) : name;
      gr.driver = drv->second;
      gr.rank = rank;
      gr.readers = readers;
      gr.reader_slots.resize(readers.size());
      // Scope: LCA of the instances of the leaves (a leaf's parent is its instance).
      auto ancestors = [&](int inst) {
        std::vector<int> a;
        for (; inst >= 0; inst = d_.instances[inst].parent) a.push_back(inst);
        std::reverse(a.begin(), a.end());
        return a;
      };
      std::vector<int> lca = ancestors(d_.leaves[drv->second].instance);
      for (int r : readers) {
        auto a = ancestors(d_.leaves[r].instance);
        std::size_t k = 0;
        while (k < lca.size() && k < a.size() && lca[k] == a[k]) ++k;
        lca.resize(k);
      }
      gr.scope = lca.back();
      d_.leaves[drv->second].out_groups.push_back(it->second);
      for (int r : readers) d_.leaves[r].in_groups.push_back(it->second);
      d_.groups.push_back(std::move(gr));
    }
    auto& gr = d_.groups[it->second];
    gr.driver_slots.push_back(slots_[drv->second].at(g));
    for (std::size_t i = 0; i < readers.size(); ++i) gr.reader_slots[i].push_back(slots_[readers[i]].at(g));
    gr.nets.push_back(net_name(g));
  }
}

void builder::build_probes() {
  for (std::size_t i = 0; i < d_.instances.size(); ++i) {
    for (const auto& nn : recs_[i].m->nets) {
      if (nn.hidden) continue;
      probe p{static_cast<int>(i), nn.name, {}};
      for (bit b : nn.bits) {
        const int g = find(gid(static_cast<int>(i), b));
        probe::location loc{d_.io_leaf(), 2};
        if (g == clock_gid_) {
          loc = {probe::clock_leaf, 0};
        } else if (g == gid_0 || g == gid_1) {
          loc.slot = static_cast<std::uint32_t>(g);
        } else if (auto drv = driver_.find(g); drv != driver_.end()) {
          loc = {drv->second, slots_[drv->second].at(g)};
        }
        p.bits.push_back(loc);
      }
      d_.probes.push_back(std::move(p));
    }
  }
}

result<design> builder::run() {
  auto top = n_.modules.find(n_.top);
  if (top == n_.modules.end()) return error{errc::bad_netlist, "top module " + n_.top + " is not in the netlist"};
  d_.top = n_.top;
  auto st = instantiate(top->second, "/" + level(n_.top), -1, 0);
  if (!st) return st.error();
  // Names: the shallowest public name of each net (instances are numbered parents first).
  for (std::size_t i = 0; i < recs_.size(); ++i) {
    const std::string prefix = d_.instances[i].path.substr(d_.instances[0].path.size());
    for (const auto& nn : recs_[i].m->nets) {
      if (nn.hidden) continue;
      for (std::size_t k = 0; k < nn.bits.size(); ++k) {
        if (nn.bits[k] < 0) continue;
        const int g = find(gid(static_cast<int>(i), nn.bits[k]));
        std::string name = (prefix.empty() ? "" : prefix.substr(1) + "/") + nn.name;
        if (nn.bits.size() > 1) name += "[" + std::to_string(k) + "]";
        if (k < nn.init.size() && nn.init[k] != 2) {
          auto [in, fresh_init] = init_.try_emplace(g, nn.init[k]);
          if (!fresh_init && in->second != nn.init[k])
            return error{errc::unsupported, "net " + name + " in " + d_.instances[i].path +
                                                ": two different initial values (init attributes disagree)"};
        }
        auto [it, fresh] = names_.try_emplace(g, name);
        if (!fresh && std::count(name.begin(), name.end(), '/') < std::count(it->second.begin(), it->second.end(), '/'))
          it->second = name;
        if (it->second == name) name_src_[g] = nn.src;
      }
    }
  }
  if (st = collect_cells(); !st) return st.error();
  if (st = build_ops(); !st) return st.error();
  if (st = levelise(); !st) return st.error();
  build_groups();
  build_probes();
  return std::move(d_);
}

}  // namespace

result<design> elaborate(const netlist& n, const elaborate_options& opts) { return builder(n, opts).run(); }

}  // namespace banyan::eda
