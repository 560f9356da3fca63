// The gate-level netlist as yosys writes it (write_json), hierarchy kept, and the yosys flow that
// produces it from Verilog.
//
// Contract of the flow: `synth -top <top>` (no flattening), `dfflegalize` to posedge flip-flops with or
// without async set/reset, `abc -g simple`, `opt_clean`. Everything after that (which cell types and
// clocking are supported) is checked when the design is elaborated (design.hpp), so that the error
// can name the cell and the module.
#pragma once

#include <banyan/eda_sim/error.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace banyan::eda {

// A bit is a yosys net id (>= 0) inside one module, or a constant.
using bit = std::int32_t;
inline constexpr bit bit_0 = -1, bit_1 = -2, bit_x = -3, bit_z = -4;

enum class port_dir { input, output, inout };

struct port {
  std::string name;
  port_dir dir;
  std::vector<bit> bits;  // LSB first
};

struct cell {
  std::string name;
  std::string type;  // "$_AND_", ... or the name of another module (an instance)
  std::string src;   // yosys "src" attribute (file:line), may be empty
  std::map<std::string, std::vector<bit>> connections;
  // Parameters as yosys writes them: bit strings, MSB first ("00001010"); strings as they are.
  std::map<std::string, std::string> params;
};

struct net_name {
  std::string name;
  std::vector<bit> bits;
  bool hidden;  // yosys hide_name: an internal name ($abc$..), not from the source
  // yosys `init` attribute (a register's initial value from `initial` or a declaration, or a memory
  // word from $readmemh after memory_map): per bit, LSB first, 0 / 1 / 2 = none. Empty when absent.
  std::vector<std::uint8_t> init;
  std::string src;  // yosys "src" attribute (file:line.col-line.col), may be empty
};

struct module {
  std::string name;
  std::vector<port> ports;  // in declaration order
  std::vector<cell> cells;
  std::vector<net_name> nets;
};

struct netlist {
  std::map<std::string, module> modules;
  std::string top;
  bool from_cache = false;  // synthesize() found it in yosys_options::cache_dir
};

// Parses yosys JSON text. `source` names the input in error messages.
result<netlist> read_yosys_json(const std::string& text, const std::string& source);

// How the user's sources are read; the same for yosys and the Icarus reference (reference.hpp), so
// that both see the same design.
struct source_options {
  std::vector<std::string> include_dirs;  // `include search path, after the including file's folder
  std::vector<std::string> defines;       // "NAME" or "NAME=VALUE", as -D
  // Parameters of the top module: NAME and a Verilog constant (8, 8'h3f, "prog.hex").
  std::vector<std::pair<std::string, std::string>> params;
};

struct yosys_options {
  std::vector<std::string> files;  // Verilog sources
  std::string top;
  std::string yosys = "yosys";  // executable
  std::string work_dir;         // where the script and JSON go; empty = a fresh temp dir
  source_options sources;
  // Memories: false keeps each as one $mem_v2 cell (a memory in its leaf, design.hpp); true maps them
  // to flip-flops and logic (yosys memory_map), which is only practical for small ones.
  bool map_memories = false;
  // A folder of netlists by source hash; empty: no cache. The key covers yosys's version, the flow
  // script (files, -I, -D, -P, top, memory mapping) and the contents of the sources and of every
  // Verilog/include/memory file (.v .vh .sv .svh .inc .hex .mem .dat .bin .txt) in their folders, the
  // -I folders and the run folder. Concurrent runs with the same key (the nodes of a launch) wait
  // for the first one's yosys instead of each running it.
  std::string cache_dir;
  // yosys runs in this folder (empty: the current one), so a relative $readmemh path is found there
  // or beside the source file, as yosys does; Icarus resolves it from the same folder.
  std::string run_dir;
};

// Parses "NAME=VALUE" (a -P/--param argument). The error names the argument.
result<std::pair<std::string, std::string>> parse_param(const std::string& arg);

// Runs the yosys flow and returns the netlist. When yosys rejects the input, the error carries
// yosys's own ERROR lines (file:line: message).
result<netlist> synthesize(const yosys_options& opts);

// Writes the flow's gate-level netlist as Verilog (for the Icarus/Verilator gate-level anchors).
result<void> write_gate_verilog(const yosys_options& opts, const std::string& out_path);

}  // namespace banyan::eda
