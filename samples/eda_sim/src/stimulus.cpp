#include <banyan/eda_sim/stimulus.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

namespace banyan::eda {
namespace {

std::uint64_t mix(std::uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// What the random source does with one input port.
struct port_role {
  enum kind_t { random, reset, hold } kind = random;
  bool active_low = false;
  std::vector<std::uint8_t> value;  // hold: per bit, 0 / 1 / 2 = X
};

class random_source final : public stimulus {
 public:
  random_source(const design& d, random_options o, std::vector<port_role> roles, std::vector<std::string> warnings)
      : d_(d), o_(std::move(o)), roles_(std::move(roles)), warnings_(std::move(warnings)) {}

  void fill(std::uint64_t cycle, std::span<lanes> bits) const override {
    std::size_t k = 0;
    const std::uint64_t base = mix(o_.seed ^ mix(cycle));
    for (std::size_t p = 0; p < d_.inputs.size(); ++p) {
      const port_role& role = roles_[p];
      for (std::size_t i = 0; i < d_.inputs[p].slots.size(); ++i, ++k) {
        switch (role.kind) {
          case port_role::reset: {
            const bool asserted = cycle < o_.reset_cycles;
            bits[k] = (asserted != role.active_low) ? lanes::one() : lanes::zero();
            break;
          }
          case port_role::hold:
            bits[k] = role.value[i] == 0 ? lanes::zero() : role.value[i] == 1 ? lanes::one() : lanes::x();
            break;
          case port_role::random: {
            // The hash of the bit's position k is kept even when other ports are held, so a port's
            // random values do not depend on which others are held.
            const std::uint64_t r = mix(base + k);
            bits[k] = {r, ~r};
            break;
          }
        }
      }
    }
  }
  std::string describe() const override {
    std::string s = "random, seed " + std::to_string(o_.seed);
    for (std::size_t p = 0; p < roles_.size(); ++p) {
      if (roles_[p].kind == port_role::reset)
        s += ", reset " + d_.inputs[p].name + (roles_[p].active_low ? " (active low)" : " (active high)") + " for " +
             std::to_string(o_.reset_cycles) + " cycles";
      else if (roles_[p].kind == port_role::hold) s += ", " + d_.inputs[p].name + " held";
    }
    return s;
  }
  std::vector<std::string> warnings() const override { return warnings_; }

 private:
  const design& d_;
  random_options o_;
  std::vector<port_role> roles_;
  std::vector<std::string> warnings_;
};

class file_source final : public stimulus {
 public:
  file_source(std::string path, std::size_t bits, std::vector<std::uint8_t> values, std::string kind = "file ")
      : path_(kind + std::move(path)), bits_(bits), v_(std::move(values)) {}
  void fill(std::uint64_t cycle, std::span<lanes> out) const override {
    const std::uint8_t* row = v_.data() + cycle * bits_;
    for (std::size_t k = 0; k < bits_; ++k)
      out[k] = row[k] == 0 ? lanes::zero() : row[k] == 1 ? lanes::one() : lanes::x();
  }
  std::optional<std::uint64_t> length() const override { return bits_ ? v_.size() / bits_ : 0; }
  std::string describe() const override { return path_; }

 private:
  std::string path_;
  std::size_t bits_;
  std::vector<std::uint8_t> v_;  // cycles x bits, 0 / 1 / 2 = X
};

// Parses one value into `width` bits (LSB first): decimal, 0x.. hex, 0b.. binary (x/z digits allowed
// in hex and binary), or a lone x. Returns an error text or empty.
std::string parse_value(const std::string& tok, std::size_t width, std::uint8_t* out) {
  std::fill(out, out + width, 0);
  if (tok == "x" || tok == "X") {
    std::fill(out, out + width, 2);
    return {};
  }
  std::string digits;
  int radix_bits = 0;
  if (tok.size() > 2 && tok[0] == '0' && (tok[1] == 'x' || tok[1] == 'X')) radix_bits = 4, digits = tok.substr(2);
  else if (tok.size() > 2 && tok[0] == '0' && (tok[1] == 'b' || tok[1] == 'B')) radix_bits = 1, digits = tok.substr(2);
  if (radix_bits) {
    std::size_t pos = 0;
    for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
      const char c = static_cast<char>(std::tolower(*it));
      if (c == '_') continue;
      int v;
      bool unknown = c == 'x' || c == 'z';
      if (c >= '0' && c <= '9') v = c - '0';
      else if (radix_bits == 4 && c >= 'a' && c <= 'f') v = c - 'a' + 10;
      else if (unknown) v = 0;
      else return "'" + tok + "' is not a valid " + std::string(radix_bits == 4 ? "hex" : "binary") + " number";
      if (radix_bits == 1 && v > 1 && !unknown) return "'" + tok + "' is not a valid binary number";
      for (int b = 0; b < radix_bits; ++b, ++pos) {
        const int bitv = unknown ? 2 : (v >> b) & 1;
        if (pos < width) out[pos] = static_cast<std::uint8_t>(bitv);
        else if (bitv != 0) return "'" + tok + "' does not fit in " + std::to_string(width) + " bits";
      }
    }
    return {};
  }
  if (tok.empty() || !std::all_of(tok.begin(), tok.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return "'" + tok + "' is not a number (use decimal, 0x.., 0b.. or x)";
  if (tok.size() > 19) return "'" + tok + "' is too large for decimal; use 0x..";
  const std::uint64_t v = std::stoull(tok);
  for (std::size_t b = 0; b < 64; ++b) {
    const int bitv = (v >> b) & 1;
    if (b < width) out[b] = static_cast<std::uint8_t>(bitv);
    else if (bitv) return "'" + tok + "' does not fit in " + std::to_string(width) + " bits";
  }
  return {};
}

}  // namespace

std::size_t input_bits(const design& d) {
  std::size_t n = 0;
  for (const auto& p : d.inputs) n += p.slots.size();
  return n;
}

bool reset_like(const std::string& name, bool& active_low) {
  std::vector<std::string> words;
  std::string w;
  for (char c : name + "_") {
    if (c == '_') {
      if (!w.empty()) words.push_back(w);
      w.clear();
    } else {
      w += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  for (std::size_t i = 0; i < words.size(); ++i) {
    for (const std::string core : {"reset", "rst"}) {
      const std::string& x = words[i];
      const auto at = x.find(core);
      if (at == std::string::npos || at > 1) continue;
      const std::string pre = x.substr(0, at), post = x.substr(at + core.size());
      if (!(pre.empty() || pre == "a" || pre == "s" || pre == "n")) continue;
      if (!(post.empty() || post == "n" || post == "b" || post == "l")) continue;
      const std::string next = i + 1 < words.size() ? words[i + 1] : "";
      active_low = pre == "n" || !post.empty() || next == "n" || next == "ni" || next == "b" || next == "l";
      return true;
    }
  }
  return false;
}

result<reset_spec> parse_reset(const std::string& arg) {
  reset_spec r;
  const auto colon = arg.find(':');
  r.name = arg.substr(0, colon);
  if (r.name.empty()) return error{errc::bad_stimulus, "--reset " + arg + ": expected NAME, NAME:low or NAME:high"};
  if (colon != std::string::npos) {
    const std::string pol = arg.substr(colon + 1);
    if (pol == "low") r.active_low = true;
    else if (pol == "high") r.active_low = false;
    else return error{errc::bad_stimulus, "--reset " + arg + ": polarity '" + pol + "' is neither low nor high"};
  }
  return r;
}

result<hold_spec> parse_hold(const std::string& arg) {
  const auto eq = arg.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size())
    return error{errc::bad_stimulus, "--hold " + arg + ": expected NAME=VALUE"};
  return hold_spec{arg.substr(0, eq), arg.substr(eq + 1)};
}

result<std::unique_ptr<stimulus>> random_stimulus(const design& d, const random_options& o) {
  std::vector<port_role> roles(d.inputs.size());
  std::vector<std::string> warnings;
  auto port_index = [&](const std::string& name) -> int {
    for (std::size_t p = 0; p < d.inputs.size(); ++p)
      if (d.inputs[p].name == name) return static_cast<int>(p);
    return -1;
  };
  auto no_such = [&](const char* opt, const std::string& name) {
    std::string ins;
    for (const auto& p : d.inputs) ins += (ins.empty() ? "" : ", ") + p.name;
    std::string what =
        std::string(opt) + " " + name + ": the top module " + d.top + " has no such input (inputs: " + ins + ")";
    if (name == d.clock) what = std::string(opt) + " " + name + ": that is the clock; the simulator drives it";
    return error{errc::bad_stimulus, what};
  };
  for (const auto& r : o.resets) {
    const int p = port_index(r.name);
    if (p < 0) return no_such("--reset", r.name);
    if (d.inputs[p].slots.size() != 1)
      return error{errc::bad_stimulus, "--reset " + r.name + ": the input is " +
                                           std::to_string(d.inputs[p].slots.size()) +
                                           " bits wide; a reset must be 1 bit"};
    if (roles[p].kind == port_role::reset) return error{errc::bad_stimulus, "--reset " + r.name + ": named twice"};
    bool low = false;
    reset_like(r.name, low);
    roles[p].kind = port_role::reset;
    roles[p].active_low = r.active_low.value_or(low);
  }
  for (const auto& h : o.holds) {
    const int p = port_index(h.name);
    if (p < 0) return no_such("--hold", h.name);
    if (roles[p].kind != port_role::random)
      return error{errc::bad_stimulus, "--hold " + h.name + ": the input is already a reset or held"};
    roles[p].kind = port_role::hold;
    roles[p].value.resize(d.inputs[p].slots.size());
    auto msg = parse_value(h.value, roles[p].value.size(), roles[p].value.data());
    if (!msg.empty()) return error{errc::bad_stimulus, "--hold " + h.name + "=" + h.value + ": " + msg};
  }
  static const std::vector<std::string> plain = {"rst", "reset", "rst_n", "reset_n", "rstn", "resetn"};
  for (std::size_t p = 0; p < d.inputs.size(); ++p) {
    bool low = false;
    const auto& name = d.inputs[p].name;
    if (roles[p].kind != port_role::random || d.inputs[p].slots.size() != 1 || !reset_like(name, low)) continue;
    if (o.no_reset) continue;
    if (!o.resets.empty()) {
      warnings.push_back("input " + name +
                         " looks like a reset but is not named by --reset, so it gets random values "
                         "every cycle");
      continue;
    }
    roles[p].kind = port_role::reset;
    roles[p].active_low = low;
    if (std::find(plain.begin(), plain.end(), name) == plain.end())
      warnings.push_back("input " + name + " looks like a reset: held asserted (active-" + (low ? "low" : "high") +
                         ", from its name) for " + std::to_string(o.reset_cycles) +
                         " cycles; name resets with --reset NAME[:low|:high], or --reset none");
  }
  return std::unique_ptr<stimulus>(new random_source(d, o, std::move(roles), std::move(warnings)));
}

result<std::unique_ptr<stimulus>> file_stimulus(const design& d, const std::string& path) {
  std::ifstream in(path);
  if (!in) return error{errc::io, path + ": cannot open the stimulus file"};
  const std::size_t total = input_bits(d);
  std::map<std::string, std::size_t> port_of;
  for (std::size_t p = 0; p < d.inputs.size(); ++p) port_of[d.inputs[p].name] = p;
  std::vector<std::size_t> offset(d.inputs.size(), 0);
  for (std::size_t p = 1; p < d.inputs.size(); ++p) offset[p] = offset[p - 1] + d.inputs[p - 1].slots.size();

  std::vector<std::size_t> columns;  // column -> port
  std::vector<std::uint8_t> values;
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream ls(line);
    std::vector<std::string> toks;
    for (std::string t; ls >> t;) toks.push_back(t);
    if (toks.empty()) continue;
    const std::string at = path + ":" + std::to_string(lineno);
    if (columns.empty()) {
      std::vector<bool> seen(d.inputs.size(), false);
      for (const auto& t : toks) {
        auto it = port_of.find(t);
        if (it == port_of.end()) {
          if (t == d.clock)
            return error{errc::bad_stimulus, at + ": '" + t + "' is the clock; the simulator drives it"};
          return error{errc::bad_stimulus, at + ": header names '" + t + "', which is not an input of " + d.top};
        }
        if (seen[it->second]) return error{errc::bad_stimulus, at + ": input '" + t + "' appears twice in the header"};
        seen[it->second] = true;
        columns.push_back(it->second);
      }
      for (std::size_t p = 0; p < d.inputs.size(); ++p)
        if (!seen[p]) return error{errc::bad_stimulus, at + ": header lacks input '" + d.inputs[p].name + "'"};
      continue;
    }
    if (toks.size() != columns.size())
      return error{errc::bad_stimulus, at + ": " + std::to_string(toks.size()) + " values, the header names " +
                                           std::to_string(columns.size()) + " inputs"};
    const std::size_t row = values.size();
    values.resize(row + total, 0);
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const auto& port = d.inputs[columns[c]];
      auto msg = parse_value(toks[c], port.slots.size(), values.data() + row + offset[columns[c]]);
      if (!msg.empty())
        return error{errc::bad_stimulus, at + ", column " + std::to_string(c + 1) + " (" + port.name + "): " + msg};
    }
  }
  if (columns.empty() && !d.inputs.empty())
    return error{errc::bad_stimulus, path + ": no header line naming the inputs"};
  if (values.empty()) return error{errc::bad_stimulus, path + ": no stimulus lines after the header"};
  return std::unique_ptr<stimulus>(new file_source(path, total, std::move(values)));
}

}  // namespace banyan::eda

namespace banyan::eda {

result<std::unique_ptr<stimulus>> vcd_stimulus(const design& d, const std::string& path,
                                               const std::string& want_scope) {
  std::ifstream in(path);
  if (!in) return error{errc::io, path + ": cannot open the VCD file"};
  if (d.clock.empty()) return error{errc::bad_stimulus, path + ": the design has no clock to find the cycles by"};
  struct var {
    std::string id;
    std::size_t width;
  };
  // Header: per scope (dotted path), the variables by name.
  std::vector<std::string> scope;
  std::vector<std::pair<std::string, std::map<std::string, var>>> scopes;
  std::map<std::string, std::size_t> scope_index;
  std::string tok;
  std::size_t line_no = 1;
  auto next = [&](std::string& t) -> bool {
    t.clear();
    char c;
    while (in.get(c)) {
      if (c == '\n') ++line_no;
      if (std::isspace(static_cast<unsigned char>(c))) {
        if (!t.empty()) return true;
      } else {
        t += c;
      }
    }
    return !t.empty();
  };
  auto at = [&] { return path + ":" + std::to_string(line_no); };
  auto skip_to_end = [&]() -> bool {
    std::string t;
    while (next(t))
      if (t == "$end") return true;
    return false;
  };
  bool defs_done = false;
  while (!defs_done && next(tok)) {
    if (tok == "$scope") {
      std::string kind, name;
      if (!next(kind) || !next(name)) return error{errc::bad_stimulus, at() + ": truncated $scope"};
      scope.push_back(name);
      std::string full;
      for (const auto& s2 : scope) full += (full.empty() ? "" : ".") + s2;
      if (!scope_index.count(full)) scope_index[full] = scopes.size(), scopes.push_back({full, {}});
      if (!skip_to_end()) return error{errc::bad_stimulus, at() + ": $scope without $end"};
    } else if (tok == "$upscope") {
      if (scope.empty()) return error{errc::bad_stimulus, at() + ": $upscope outside a scope"};
      scope.pop_back();
      if (!skip_to_end()) return error{errc::bad_stimulus, at() + ": $upscope without $end"};
    } else if (tok == "$var") {
      std::string type, width, id, ref;
      if (!next(type) || !next(width) || !next(id) || !next(ref))
        return error{errc::bad_stimulus, at() + ": truncated $var"};
      if (scope.empty()) return error{errc::bad_stimulus, at() + ": $var outside a scope"};
      if (auto b = ref.find('['); b != std::string::npos) ref.resize(b);
      std::size_t w = 0;
      try {
        w = std::stoul(width);
      } catch (...) {
        return error{errc::bad_stimulus, at() + ": $var " + ref + ": width '" + width + "' is not a number"};
      }
      std::string full;
      for (const auto& s2 : scope) full += (full.empty() ? "" : ".") + s2;
      scopes[scope_index[full]].second.emplace(ref, var{id, w});
      if (!skip_to_end()) return error{errc::bad_stimulus, at() + ": $var without $end"};
    } else if (tok == "$enddefinitions") {
      if (!skip_to_end()) return error{errc::bad_stimulus, at() + ": $enddefinitions without $end"};
      defs_done = true;
    } else if (!tok.empty() && tok[0] == '$') {
      if (!skip_to_end()) return error{errc::bad_stimulus, at() + ": " + tok + " without $end"};
    } else {
      return error{errc::bad_stimulus, at() + ": unexpected '" + tok + "' in the VCD header"};
    }
  }
  if (!defs_done) return error{errc::bad_stimulus, path + ": no $enddefinitions"};
  // The DUT's scope: every input and the clock, with the port widths.
  const std::map<std::string, var>* vars = nullptr;
  std::string chosen, why_not;
  for (const auto& [name, vs] : scopes) {
    if (!want_scope.empty() && !(name == want_scope || name.ends_with("." + want_scope))) continue;
    std::string missing;
    if (!vs.count(d.clock)) missing = d.clock;
    for (const auto& p : d.inputs) {
      auto it = vs.find(p.name);
      if (it == vs.end() || it->second.width != p.slots.size()) missing = missing.empty() ? p.name : missing;
    }
    if (missing.empty()) {
      vars = &vs, chosen = name;
      break;
    }
    if (why_not.empty()) why_not = "scope " + name + " lacks input '" + missing + "' (or its width differs)";
  }
  if (!vars)
    return error{errc::bad_stimulus, path + ": no scope" +
                                         (want_scope.empty() ? "" : " matching '" + want_scope + "'") +
                                         " declares the clock " + d.clock + " and every input of " + d.top +
                                         (why_not.empty() ? "" : "; " + why_not)};
  // Values: per input (and the clock), the current value, MSB first.
  std::map<std::string, std::size_t> slot_of_id;  // id -> index into cur
  std::vector<std::string> cur;
  for (const auto& p : d.inputs) {
    slot_of_id[vars->at(p.name).id] = cur.size();
    cur.emplace_back(p.slots.size(), 'x');
  }
  const std::string clock_id = vars->at(d.clock).id;
  char clock = 'x';
  std::vector<std::string> snap = cur;  // values at the end of the previous timestamp
  std::vector<std::uint8_t> values;
  const std::size_t total = input_bits(d);
  auto set = [&](const std::string& id, std::string v) -> result<void> {
    if (id == clock_id) {
      const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(v.back())));
      if (clock == '0' && c == '1') {  // a rising edge: one cycle, from the values before this timestamp
        const std::size_t row = values.size();
        values.resize(row + total);
        std::size_t k = row;
        for (const auto& s2 : snap)
          for (std::size_t i = 0; i < s2.size(); ++i, ++k) {
            const char b = s2[s2.size() - 1 - i];
            values[k] = b == '0' ? 0 : b == '1' ? 1 : 2;
          }
      }
      clock = c;
      return {};
    }
    auto it = slot_of_id.find(id);
    if (it == slot_of_id.end()) return {};
    std::string& dst = cur[it->second];
    for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (v.find_first_not_of("01xz") != std::string::npos)
      return error{errc::bad_stimulus, at() + ": value '" + v + "' is not made of 0 1 x z"};
    if (v.size() > dst.size()) v = v.substr(v.size() - dst.size());
    const char fill = v[0] == '1' ? '0' : v[0];  // VCD left-extends with 0, or with x / z
    dst = std::string(dst.size() - v.size(), fill) + v;
    return {};
  };
  while (next(tok)) {
    if (tok[0] == '#') {
      snap = cur;
    } else if (tok[0] == '$') {
      continue;  // $dumpvars, $dumpall, $dumpon, $dumpoff, $end: their changes are plain changes
    } else if (tok[0] == 'b' || tok[0] == 'B') {
      std::string id;
      if (!next(id)) return error{errc::bad_stimulus, at() + ": vector value without an identifier"};
      auto st = set(id, tok.substr(1));
      if (!st) return st.error();
    } else if (tok[0] == 'r' || tok[0] == 'R') {
      std::string id;
      next(id);  // reals are not inputs of a gate-level design
    } else {
      auto st = set(tok.substr(1), tok.substr(0, 1));
      if (!st) return st.error();
    }
  }
  if (values.empty())
    return error{errc::bad_stimulus, path + ": the clock " + d.clock + " in scope " + chosen + " never rises"};
  return std::unique_ptr<stimulus>(new file_source(path + " (scope " + chosen + ")", total, std::move(values), "vcd "));
}

}  // namespace banyan::eda
