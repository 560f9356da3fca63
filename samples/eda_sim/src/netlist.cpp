#include <banyan/eda_sim/netlist.hpp>

#include "tool.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <set>
#include <sstream>

namespace banyan::eda {
namespace {

using json = nlohmann::ordered_json;

error bad(const std::string& source, const std::string& where, const std::string& what) {
  return {errc::bad_netlist, source + ": " + where + ": " + what};
}

// One connection list: yosys writes net ids as numbers and constants as "0", "1", "x", "z".
result<std::vector<bit>> read_bits(const json& j, const std::string& source, const std::string& where) {
  if (!j.is_array()) return bad(source, where, "bits must be an array");
  std::vector<bit> bits;
  bits.reserve(j.size());
  for (const auto& b : j) {
    if (b.is_number_integer()) {
      const auto v = b.get<std::int64_t>();
      if (v < 0 || v > INT32_MAX) return bad(source, where, "net id out of range");
      bits.push_back(static_cast<bit>(v));
    } else if (b.is_string()) {
      const auto s = b.get<std::string>();
      if (s == "0") bits.push_back(bit_0);
      else if (s == "1") bits.push_back(bit_1);
      else if (s == "x") bits.push_back(bit_x);
      else if (s == "z") bits.push_back(bit_z);
      else return bad(source, where, "unknown constant bit '" + s + "'");
    } else {
      return bad(source, where, "a bit must be a net id or a constant string");
    }
  }
  return bits;
}

std::string str_attr(const json& obj, const char* key) {
  if (obj.contains("attributes") && obj["attributes"].contains(key) && obj["attributes"][key].is_string())
    return obj["attributes"][key].get<std::string>();
  return {};
}

// The `init` attribute: yosys writes a bit string, MSB first ("0101", x for no value); an integer
// (write_json -compat-int) is accepted too.
result<std::vector<std::uint8_t>> read_init(const json& jn, std::size_t width, const std::string& source,
                                            const std::string& where) {
  std::vector<std::uint8_t> v;
  if (!jn.contains("attributes") || !jn["attributes"].contains("init")) return v;
  const json& a = jn["attributes"]["init"];
  v.assign(width, 2);
  if (a.is_number_integer()) {
    const auto n = a.get<std::int64_t>();
    for (std::size_t i = 0; i < width; ++i) v[i] = i < 63 ? static_cast<std::uint8_t>((n >> i) & 1) : (n < 0);
    return v;
  }
  if (!a.is_string()) return bad(source, where, "init attribute is neither a bit string nor a number");
  const auto s = a.get<std::string>();
  for (std::size_t i = 0; i < s.size() && i < width; ++i) {
    const char c = s[s.size() - 1 - i];
    if (c == '0' || c == '1') v[i] = static_cast<std::uint8_t>(c - '0');
    else if (c != 'x' && c != 'z') return bad(source, where, "init attribute '" + s + "' is not a bit string");
  }
  return v;
}

result<module> read_module(const std::string& name, const json& jm, const std::string& source) {
  module m;
  m.name = name;
  const std::string where = "module " + name;
  if (!jm.is_object()) return bad(source, where, "not an object");
  if (jm.contains("ports")) {
    for (const auto& [pname, jp] : jm["ports"].items()) {
      const std::string pw = where + ", port " + pname;
      if (!jp.contains("direction") || !jp.contains("bits")) return bad(source, pw, "needs direction and bits");
      const auto dir = jp["direction"].get<std::string>();
      port p{pname, port_dir::input, {}};
      if (dir == "output") p.dir = port_dir::output;
      else if (dir == "inout") p.dir = port_dir::inout;
      else if (dir != "input") return bad(source, pw, "unknown direction '" + dir + "'");
      auto bits = read_bits(jp["bits"], source, pw);
      if (!bits) return bits.error();
      p.bits = std::move(*bits);
      m.ports.push_back(std::move(p));
    }
  }
  if (jm.contains("cells")) {
    for (const auto& [cname, jc] : jm["cells"].items()) {
      const std::string cw = where + ", cell " + cname;
      if (!jc.contains("type") || !jc["type"].is_string()) return bad(source, cw, "needs a type");
      cell c{cname, jc["type"].get<std::string>(), str_attr(jc, "src"), {}, {}};
      if (jc.contains("parameters") && jc["parameters"].is_object())
        for (const auto& [pname, jv] : jc["parameters"].items()) {
          if (jv.is_string()) {
            c.params.emplace(pname, jv.get<std::string>());
          } else if (jv.is_number_integer()) {  // write_json -compat-int
            const auto v = jv.get<std::int64_t>();
            std::string b(32, '0');
            for (int i = 0; i < 32; ++i) b[31 - i] = ((v >> i) & 1) ? '1' : '0';
            c.params.emplace(pname, b);
          }
        }
      if (jc.contains("connections")) {
        for (const auto& [pin, jb] : jc["connections"].items()) {
          auto bits = read_bits(jb, source, cw + ", pin " + pin);
          if (!bits) return bits.error();
          c.connections.emplace(pin, std::move(*bits));
        }
      }
      m.cells.push_back(std::move(c));
    }
  }
  if (jm.contains("netnames")) {
    for (const auto& [nname, jn] : jm["netnames"].items()) {
      if (!jn.contains("bits")) return bad(source, where + ", net " + nname, "needs bits");
      auto bits = read_bits(jn["bits"], source, where + ", net " + nname);
      if (!bits) return bits.error();
      const bool hidden = jn.contains("hide_name") && jn["hide_name"].is_number() && jn["hide_name"].get<int>() != 0;
      auto init = read_init(jn, bits->size(), source, where + ", net " + nname);
      if (!init) return init.error();
      m.nets.push_back({nname, std::move(*bits), hidden, std::move(*init), str_attr(jn, "src")});
    }
  }
  return m;
}

// A yosys script string: "..." with `"` and `\` escaped.
std::string quote(const std::string& s) {
  std::ostringstream out;
  out << std::quoted(s);
  return out.str();
}

// The flow script shared by synthesize() and write_gate_verilog(); `tail` is the write command.
result<std::string> flow_script(const yosys_options& opts, const std::string& tail) {
  if (opts.files.empty()) return error{errc::yosys_failed, "no Verilog files given"};
  if (opts.top.empty()) return error{errc::yosys_failed, "no top module given (--top)"};
  std::ostringstream script;
  std::string flags;
  for (const auto& dir : opts.sources.include_dirs) {
    if (!std::filesystem::is_directory(dir)) return error{errc::io, "-I " + dir + ": no such directory"};
    const std::string abs = std::filesystem::absolute(dir).string();
    // yosys takes -I<dir> as one unquoted word.
    if (abs.find_first_of(" \t\n\"") != std::string::npos)
      return error{errc::yosys_failed, "-I " + dir + ": yosys cannot take an include folder whose path has spaces"};
    flags += " -I" + abs;
  }
  for (const auto& def : opts.sources.defines) {
    if (def.empty() || def.find_first_of(" \t\n\"") != std::string::npos)
      return error{errc::yosys_failed, "-D " + def + ": expected NAME or NAME=VALUE without spaces or quotes"};
    flags += " -D" + def;
  }
  for (const auto& f : opts.files) {
    if (!std::filesystem::exists(f)) return error{errc::io, f + ": no such file"};
    script << "read_verilog -sv" << flags << " " << quote(std::filesystem::absolute(f).string()) << "\n";
  }
  // chparam (not hierarchy -chparam) because it also takes string values: -P MEMFILE="prog.hex".
  for (const auto& [name, value] : opts.sources.params)
    script << "chparam -set " << name << " " << value << " " << opts.top << "\n";
  script << "hierarchy -check -top " << opts.top
         << "\n"
         // synth's script up to `fine`, then its `fine` steps without memory_map unless asked: a
         // memory stays one $mem_v2 cell with asynchronous read ports (memory_nordff moves a clocked
         // read into flip-flops, memory_narrow splits wide ports).
         << "synth -top " << opts.top << " -run :fine\n"
         << "memory_nordff\nmemory_narrow\n"
         << "opt -fast -full\n"
         << (opts.map_memories ? "memory_map\n" : "")
         << "opt -full\ntechmap\nopt -fast\nabc -fast\nopt -fast\n"
         // Plain and async set/reset posedge flip-flops are what the simulator evaluates. Negedge
         // flip-flops and latches are allowed through only so that elaboration can name them.
         << "dfflegalize -cell $_DFF_P_ 01 -cell $_DFF_PP0_ 01 -cell $_DFF_PP1_ 01"
            " -cell $_DFF_PN0_ 01 -cell $_DFF_PN1_ 01 -cell $_DFFSR_PPP_ 01 -cell $_DFFSR_PNN_ 01"
            " -cell $_DFF_N_ 01 -cell $_DLATCH_P_ x -cell $_DLATCH_N_ x\n"
         << "abc -g simple\n"
         << "opt_clean\n"
         << tail << "\n";
  return script.str();
}

// Where `include "name"` is written, as FILE:LINE, among the sources and what they include (found
// beside the including file or in the -I folders, as yosys and Icarus look): yosys names the missing
// file but not who asked for it.
std::vector<std::string> includers_of(const std::string& name, const yosys_options& opts) {
  namespace fs = std::filesystem;
  std::vector<std::string> at, queue(opts.files.begin(), opts.files.end());
  std::set<std::string> seen;
  while (!queue.empty()) {
    const std::string file = queue.back();
    queue.pop_back();
    if (!seen.insert(fs::weakly_canonical(file).string()).second) continue;
    std::ifstream in(file);
    std::string line;
    for (std::size_t number = 1; std::getline(in, line); ++number) {
      const auto directive = line.find("`include");
      if (directive == std::string::npos) continue;
      const auto open = line.find('"', directive), close = open == std::string::npos ? open : line.find('"', open + 1);
      if (close == std::string::npos) continue;
      const std::string included = line.substr(open + 1, close - open - 1);
      if (included == name) {
        at.push_back(file + ":" + std::to_string(number));
        continue;
      }
      std::vector<fs::path> where{fs::path(file).parent_path() / included};
      for (const auto& dir : opts.sources.include_dirs) where.push_back(fs::path(dir) / included);
      for (const auto& candidate : where) {
        std::error_code ec;
        if (fs::is_regular_file(candidate, ec)) {
          queue.push_back(candidate.string());
          break;
        }
      }
    }
  }
  return at;
}

result<void> run_flow(const yosys_options& opts, const std::string& dir, const std::string& tail) {
  auto script = flow_script(opts, tail);
  if (!script) return script.error();
  const std::string script_path = dir + "/flow.ys";
  {
    std::ofstream out(script_path);
    out << *script;
    if (!out) return error{errc::io, script_path + ": cannot write the yosys script"};
  }
  // A large design takes yosys minutes: say so now and then, with how much source it reads.
  std::uintmax_t bytes = 0;
  for (const auto& f : opts.files) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(f, ec);
    if (!ec) bytes += size;
  }
  auto r = detail::run_tool({opts.yosys, "-q", "-s", script_path}, opts.run_dir, [&](double seconds) {
    std::fprintf(stderr, "eda_sim: yosys is still synthesizing %s (%.1f MB of source), %.0f s so far\n",
                 opts.top.c_str(), static_cast<double>(bytes) / 1e6, seconds);
  });
  if (!r) return error{errc::yosys_failed, r.error().message + " (is yosys installed? tools/setup)"};
  if (!r->status.success()) {
    std::string msg = "yosys rejected the design:\n" + detail::excerpt(r->out, "ERROR");
    // yosys's words for two mistakes made on the command line, said in the command line's terms.
    if (msg.find("defparam") != std::string::npos && !opts.sources.params.empty())
      msg += "\n(a -P/--param names a parameter that top module " + opts.top + " does not have)";
    if (const auto missing = msg.find("Can't open include file `"); missing != std::string::npos) {
      const auto from = missing + std::string("Can't open include file `").size();
      const std::string name = msg.substr(from, msg.find('\'', from) - from);
      std::string folders;
      for (const auto& d : opts.sources.include_dirs) folders += (folders.empty() ? "" : ", ") + d;
      for (const auto& where : includers_of(name, opts))
        msg += "\n" + where + ": `include \"" + name + "\" is found neither beside that file nor in the -I folders" +
               (folders.empty() ? " (none given)" : " (" + folders + ")");
    }
    if (msg.find("include file") != std::string::npos)
      msg += "\n(`include files are looked for beside the including file and in the -I folders)";
    return error{errc::yosys_failed, msg};
  }
  return {};
}

std::string work_dir(const yosys_options& opts) {
  if (!opts.work_dir.empty()) {
    std::filesystem::create_directories(opts.work_dir);
    return std::filesystem::absolute(opts.work_dir).string();
  }
  return detail::make_temp_dir();
}

}  // namespace

result<std::pair<std::string, std::string>> parse_param(const std::string& arg) {
  const auto eq = arg.find('=');
  auto bad_param = [&](const std::string& why) { return error{errc::bad_stimulus, "--param " + arg + ": " + why}; };
  if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size()) return bad_param("expected NAME=VALUE");
  std::string name = arg.substr(0, eq), value = arg.substr(eq + 1);
  const bool ident = (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_') &&
                     std::all_of(name.begin(), name.end(),
                                 [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
  if (!ident) return bad_param("'" + name + "' is not a Verilog identifier");
  if (value.find_first_of(" \t\n;") != std::string::npos)
    return bad_param("the value must be one Verilog constant (8, 8'h3f, \"file.hex\") without spaces");
  if (value.front() == '"' && (value.size() < 2 || value.back() != '"')) return bad_param("unterminated string");
  return std::pair{name, value};
}

result<netlist> read_yosys_json(const std::string& text, const std::string& source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    return error{errc::bad_netlist, source + ": not JSON: " + e.what()};
  }
  if (!j.is_object() || !j.contains("modules") || !j["modules"].is_object())
    return bad(source, "top level", "no \"modules\" object");
  netlist n;
  try {
    for (const auto& [name, jm] : j["modules"].items()) {
      auto m = read_module(name, jm, source);
      if (!m) return m.error();
      if (jm.contains("attributes") && jm["attributes"].contains("top")) n.top = name;
      n.modules.emplace(name, std::move(*m));
    }
  } catch (const json::exception& e) {
    return error{errc::bad_netlist, source + ": unexpected JSON shape: " + e.what()};
  }
  if (n.top.empty()) return bad(source, "modules", "no module is marked top");
  return n;
}

namespace {

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

result<std::string> cache_key(const yosys_options& opts, const std::string& script) {
  namespace fs = std::filesystem;
  detail::hasher h;
  auto v = detail::run_tool({opts.yosys, "-V"}, "");
  if (!v || !v->status.success())
    return error{errc::yosys_failed, "cannot run " + opts.yosys + " -V (is yosys installed? tools/setup)"};
  h.add(v->out);
  h.add(script);
  std::set<fs::path> folders, files;
  for (const auto& f : opts.files) {
    files.insert(fs::absolute(f));
    folders.insert(fs::absolute(f).parent_path());
  }
  for (const auto& d : opts.sources.include_dirs) folders.insert(fs::absolute(d));
  folders.insert(opts.run_dir.empty() ? fs::current_path() : fs::absolute(opts.run_dir));
  static const std::set<std::string> exts = {".v",   ".vh",  ".sv",  ".svh", ".inc",
                                             ".hex", ".mem", ".dat", ".bin", ".txt"};
  for (const auto& d : folders) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(d, ec))
      if (e.is_regular_file(ec) && exts.count(e.path().extension().string())) files.insert(e.path());
  }
  for (const auto& f : files) {
    h.add(f.string());
    h.add(read_all(f));
  }
  return h.hex();
}

}  // namespace

result<netlist> synthesize(const yosys_options& opts) {
  namespace fs = std::filesystem;
  std::string cached, key;
  int lock_fd = -1;
  if (!opts.cache_dir.empty()) {
    auto script = flow_script(opts, "");
    if (!script) return script.error();
    auto k = cache_key(opts, *script);
    if (!k) return k.error();
    key = *k;
    std::error_code ec;
    fs::create_directories(opts.cache_dir, ec);
    cached = (fs::absolute(opts.cache_dir) / (key + ".json")).string();
    // One yosys per key at a time: the others wait here, then find its netlist.
    lock_fd = ::open((cached + ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (lock_fd >= 0) ::flock(lock_fd, LOCK_EX);
    if (fs::exists(cached)) {
      auto n = read_yosys_json(read_all(cached), cached);
      if (lock_fd >= 0) ::close(lock_fd);
      if (n) {
        n->from_cache = true;
        return n;
      }
      fs::remove(cached, ec);  // unreadable: synthesize again
      lock_fd = ::open((cached + ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
      if (lock_fd >= 0) ::flock(lock_fd, LOCK_EX);
    }
  }
  struct unlock {
    int fd;
    ~unlock() {
      if (fd >= 0) ::close(fd);
    }
  } guard{lock_fd};
  const std::string dir = work_dir(opts);
  if (dir.empty()) return error{errc::io, "cannot create a temporary directory"};
  auto st = run_flow(opts, dir, "write_json " + quote(dir + "/netlist.json"));
  if (!st) return st.error();
  std::ifstream in(dir + "/netlist.json");
  std::stringstream ss;
  ss << in.rdbuf();
  auto n = read_yosys_json(ss.str(), dir + "/netlist.json");
  if (n && !cached.empty()) {  // written whole, then renamed: a reader never sees half a file
    const std::string tmp = cached + ".tmp" + std::to_string(::getpid());
    std::ofstream(tmp) << ss.str();
    std::error_code ec;
    fs::rename(tmp, cached, ec);
  }
  if (opts.work_dir.empty()) std::filesystem::remove_all(dir);
  return n;
}

result<void> write_gate_verilog(const yosys_options& opts, const std::string& out_path) {
  const std::string dir = work_dir(opts);
  if (dir.empty()) return error{errc::io, "cannot create a temporary directory"};
  auto st = run_flow(opts, dir, "write_verilog -noattr -noexpr " + quote(std::filesystem::absolute(out_path).string()));
  if (opts.work_dir.empty()) std::filesystem::remove_all(dir);
  return st;
}

}  // namespace banyan::eda
