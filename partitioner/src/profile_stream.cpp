// The streaming profile reader (issue #11 item 5): one pass over the file through a 1 MiB buffer,
// no document tree. Component paths go into one arena with an open-addressing index, so 10^6
// components cost about the arena plus the tree itself instead of a DOM several times the file.
//
// It is a fast path only: it accepts strict JSON (every value it skips is still checked against
// the grammar) in the shape banyan writes, and answers "not mine" (nullopt) for anything else:
// a syntax error, a value of an unexpected type, a number out of range, a duplicate key, a string
// with escapes other than the simple ones or bytes outside ASCII, edges before components, or any
// tree error. load_profile then reads the file again with the full reader, whose messages name
// file:line:col or the JSON location. So both readers accept the same files and report the same
// errors; the streaming one is just the path that valid files take.
//
// Why not simdjson: its parsers keep the whole padded document plus a structural index (about
// 4 bytes per structural character) in memory, roughly twice the file; a 10^6-component profile
// is 280 MB, which alone would exceed the 500 MB budget.
#include "banyan/partitioner/io.hpp"

#include "detail.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>

namespace banyan::partitioner::detail {
namespace {

class lexer {
 public:
  explicit lexer(std::FILE* f) : f_(f), buf_(1 << 20) {}
  explicit lexer(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

  bool ok() const { return ok_; }
  void fail() { ok_ = false; }

  // Next non-blank byte without consuming it; 0 at the end.
  char peek() {
    for (;;) {
      if (p_ == end_ && !refill()) return 0;
      const char c = *p_;
      if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
        ++p_;
        continue;
      }
      return c;
    }
  }
  bool expect(char c) {
    if (peek() != c) return fail_false();
    ++p_;
    return true;
  }
  // Consumes `c` when it is next.
  bool accept(char c) {
    if (peek() != c) return false;
    ++p_;
    return true;
  }

  // A string into `out` (appended). Simple escapes only; bytes >= 0x80 and \u are "not mine".
  bool string(std::string& out) {
    if (!expect('"')) return false;
    for (;;) {
      if (p_ == end_ && !refill()) return fail_false();
      const char* q = p_;
      while (q < end_ && *q != '"' && *q != '\\' && static_cast<unsigned char>(*q) >= 0x20 && static_cast<unsigned char>(*q) < 0x80) ++q;
      out.append(p_, q);
      p_ = q;
      if (p_ == end_) continue;
      const char c = *p_++;
      if (c == '"') return true;
      if (c != '\\') return fail_false();
      if (p_ == end_ && !refill()) return fail_false();
      switch (*p_++) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        default: return fail_false();
      }
    }
  }

  // A number token checked against JSON's grammar, converted; out of range is "not mine".
  bool number(double& x, bool* integer = nullptr) {
    peek();
    tok_.clear();
    auto more = [&](auto pred) {
      for (;;) {
        if (p_ == end_ && !refill()) return;
        if (!pred(*p_)) return;
        tok_ += *p_++;
      }
    };
    auto digit = [](char c) { return c >= '0' && c <= '9'; };
    more([](char c) { return c == '-'; });
    if (tok_.size() > 1) return fail_false();
    const std::size_t int_start = tok_.size();
    more(digit);
    const std::size_t int_digits = tok_.size() - int_start;
    if (int_digits == 0 || (int_digits > 1 && tok_[int_start] == '0')) return fail_false();
    bool is_int = true;
    if (p_ < end_ || refill()) {
      if (*p_ == '.') {
        is_int = false;
        tok_ += *p_++;
        const std::size_t at = tok_.size();
        more(digit);
        if (tok_.size() == at) return fail_false();
      }
    }
    if (p_ < end_ || refill()) {
      if (*p_ == 'e' || *p_ == 'E') {
        is_int = false;
        tok_ += *p_++;
        if (p_ < end_ || refill()) {
          if (*p_ == '+' || *p_ == '-') tok_ += *p_++;
        }
        const std::size_t at = tok_.size();
        more(digit);
        if (tok_.size() == at) return fail_false();
      }
    }
    const auto r = std::from_chars(tok_.data(), tok_.data() + tok_.size(), x);
    if (r.ec != std::errc() || r.ptr != tok_.data() + tok_.size() || !std::isfinite(x)) return fail_false();
    if (integer) *integer = is_int;
    return true;
  }

  bool literal(const char* word) {
    peek();
    for (const char* w = word; *w; ++w) {
      if (p_ == end_ && !refill()) return fail_false();
      if (*p_++ != *w) return fail_false();
    }
    return true;
  }

  // Any JSON value, checked and dropped.
  bool skip(int depth = 0) {
    if (depth > 512) return fail_false();
    switch (peek()) {
      case '"': scratch_.clear(); return string(scratch_);
      case 't': return literal("true");
      case 'f': return literal("false");
      case 'n': return literal("null");
      case '{': {
        ++p_;
        if (accept('}')) return true;
        do {
          scratch_.clear();
          if (!string(scratch_) || !expect(':') || !skip(depth + 1)) return false;
        } while (accept(','));
        return expect('}');
      }
      case '[': {
        ++p_;
        if (accept(']')) return true;
        do {
          if (!skip(depth + 1)) return false;
        } while (accept(','));
        return expect(']');
      }
      default: {
        double x;
        return number(x);
      }
    }
  }

  bool at_end() { return peek() == 0; }

 private:
  bool fail_false() {
    ok_ = false;
    return false;
  }
  bool refill() {
    if (!f_) return false;
    const std::size_t got = std::fread(buf_.data(), 1, buf_.size(), f_);
    p_ = buf_.data();
    end_ = p_ + got;
    return got > 0;
  }

  std::FILE* f_ = nullptr;
  std::vector<char> buf_;
  const char* p_ = nullptr;
  const char* end_ = nullptr;
  bool ok_ = true;
  std::string tok_, scratch_;
};

// Paths in one arena; an open-addressing table from path to component index.
class path_index {
 public:
  std::string_view at(std::size_t i) const { return {arena_.data() + start_[i], start_[i + 1] - start_[i]}; }
  std::size_t size() const { return start_.size() - 1; }
  void push(std::string_view s) {
    arena_.append(s);
    start_.push_back(arena_.size());
  }
  // Builds the table; false on a duplicate path.
  bool build() {
    std::size_t cap = 16;
    while (cap < 2 * size()) cap *= 2;
    slot_.assign(cap, none);
    for (std::size_t i = 0; i < size(); ++i) {
      std::size_t h = hash(at(i)) & (cap - 1);
      while (slot_[h] != none) {
        if (at(slot_[h]) == at(i)) return false;
        h = (h + 1) & (cap - 1);
      }
      slot_[h] = static_cast<std::uint32_t>(i);
    }
    return true;
  }
  std::optional<std::size_t> find(std::string_view s) const {
    const std::size_t cap = slot_.size();
    for (std::size_t h = hash(s) & (cap - 1); slot_[h] != none; h = (h + 1) & (cap - 1)) {
      if (at(slot_[h]) == s) return slot_[h];
    }
    return std::nullopt;
  }

 private:
  static constexpr std::uint32_t none = 0xFFFFFFFFu;
  static std::size_t hash(std::string_view s) {
    std::uint64_t h = 1469598103934665603ull;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
  std::string arena_;
  std::vector<std::size_t> start_{0};
  std::vector<std::uint32_t> slot_;
};

constexpr std::size_t no_parent = static_cast<std::size_t>(-1);

// Key comparison without a library call per key (about ten per component on 10^6 components).
inline bool is(const std::string& key, std::string_view word) {
  return key.size() == word.size() && key[0] == word[0] && std::memcmp(key.data(), word.data(), word.size()) == 0;
}

struct reader {
  lexer& lx;
  const profile_options& o;
  path_index paths, parents;  // parents: the parent path of each component ("" for the root)
  std::vector<double> cpu, mem;
  std::vector<char> has_parent;
  bool any_mem = false;
  std::vector<std::size_t> edge_child;
  std::vector<double> edge_weight;
  std::string s, s2, path_, parent_, key_;

  // An optional non-negative number or null (0).
  bool load_number(double& x) {
    if (lx.peek() == 'n') {
      x = 0;
      return lx.literal("null");
    }
    return lx.number(x) && x >= 0;
  }

  bool component() {
    if (!lx.expect('{')) return false;
    bool got_path = false, got_parent = false, got_load = false, is_root = false;
    double c = 0, m = 0;
    bool m_present = false;
    std::string& path = path_;
    std::string& parent = parent_;
    path.clear();
    parent.clear();
    if (!lx.accept('}')) {
      do {
        s.clear();
        if (!lx.string(s) || !lx.expect(':')) return false;
        if (is(s, "path")) {
          if (got_path) return false;
          got_path = true;
          if (!lx.string(path) || path.empty() || path[0] != '/') return false;
        } else if (is(s, "parent")) {
          if (got_parent) return false;
          got_parent = true;
          if (lx.peek() == 'n') {
            if (!lx.literal("null")) return false;
            is_root = true;
          } else if (!lx.string(parent)) {
            return false;
          }
        } else if (is(s, "load")) {
          if (got_load || !lx.expect('{')) return false;
          got_load = true;
          bool got_cpu = false;
          if (!lx.accept('}')) {
            do {
              s.clear();
              if (!lx.string(s) || !lx.expect(':')) return false;
              if (is(s, "cpu")) {
                if (got_cpu || !load_number(c)) return false;
                got_cpu = true;
              } else if (is(s, "memory")) {
                if (m_present || !load_number(m)) return false;
                m_present = true;
              } else if (!lx.skip()) {
                return false;
              }
            } while (lx.accept(','));
            if (!lx.expect('}')) return false;
          }
        } else if (!lx.skip()) {
          return false;
        }
      } while (lx.accept(','));
      if (!lx.expect('}')) return false;
    }
    if (!got_path || !got_parent) return false;
    paths.push(path);
    parents.push(is_root ? std::string_view{} : std::string_view{parent});
    has_parent.push_back(is_root ? 0 : 1);
    if (is_root == false && parent.empty()) return false;  // "" names no component: let the full reader say so
    cpu.push_back(c);
    mem.push_back(m);
    any_mem = any_mem || m > 0;
    return true;
  }

  bool edge(const char* unit) {
    if (!lx.expect('{')) return false;
    bool got_p = false, got_c = false, got_w = false;
    double w = 0;
    s.clear();
    s2.clear();
    std::string& key = key_;
    if (!lx.accept('}')) {
      do {
        key.clear();
        if (!lx.string(key) || !lx.expect(':')) return false;
        if (is(key, "parent")) {
          if (got_p || !lx.string(s)) return false;
          got_p = true;
        } else if (is(key, "child")) {
          if (got_c || !lx.string(s2)) return false;
          got_c = true;
        } else if (is(key, unit)) {
          if (got_w || !load_number(w)) return false;
          got_w = true;
        } else if (!lx.skip()) {
          return false;
        }
      } while (lx.accept(','));
      if (!lx.expect('}')) return false;
    }
    if (!got_p || !got_c) return false;
    const auto ci = paths.find(s2);
    if (!ci || !has_parent[*ci] || parents.at(*ci) != s) return false;
    edge_child.push_back(*ci);
    edge_weight.push_back(w);
    return true;
  }

  std::optional<tree> read() {
    if (!lx.expect('{')) return std::nullopt;
    bool got_format = false, got_version = false, got_components = false, got_edges = false;
    const char* unit = o.unit == traffic_unit::bytes ? "bytes" : "messages";
    std::string key;
    if (lx.accept('}')) return std::nullopt;
    do {
      key.clear();
      if (!lx.string(key) || !lx.expect(':')) return std::nullopt;
      if (is(key, "format")) {
        if (got_format) return std::nullopt;
        got_format = true;
        s.clear();
        if (!lx.string(s) || s != "banyan-profile") return std::nullopt;
      } else if (is(key, "version")) {
        if (got_version) return std::nullopt;
        got_version = true;
        double v;
        bool integer = false;
        if (!lx.number(v, &integer) || !integer || v != 1) return std::nullopt;
      } else if (is(key, "components")) {
        if (got_components || !lx.expect('[')) return std::nullopt;
        got_components = true;
        if (lx.accept(']')) return std::nullopt;
        do {
          if (!component()) return std::nullopt;
        } while (lx.accept(','));
        if (!lx.expect(']') || !paths.build()) return std::nullopt;
      } else if (is(key, "edges")) {
        if (got_edges || !got_components || !lx.expect('[')) return std::nullopt;
        got_edges = true;
        if (!lx.accept(']')) {
          do {
            if (!edge(unit)) return std::nullopt;
          } while (lx.accept(','));
          if (!lx.expect(']')) return std::nullopt;
        }
      } else if (!lx.skip()) {
        return std::nullopt;
      }
    } while (lx.accept(','));
    if (!lx.expect('}') || !lx.at_end() || !lx.ok() || !got_version || !got_components) return std::nullopt;
    return build();
  }

  std::optional<tree> build() {
    const std::size_t n = paths.size();
    std::size_t root = no_parent;
    std::vector<std::size_t> parent(n, no_parent);
    std::vector<std::uint32_t> first(n + 1, 0);
    for (std::size_t i = 0; i < n; ++i) {
      if (!has_parent[i]) {
        if (root != no_parent) return std::nullopt;
        root = i;
        continue;
      }
      const auto pi = paths.find(parents.at(i));
      if (!pi || *pi == i) return std::nullopt;
      parent[i] = *pi;
      ++first[*pi + 1];
    }
    if (root == no_parent) return std::nullopt;
    for (std::size_t i = 0; i < n; ++i) first[i + 1] += first[i];
    std::vector<std::uint32_t> kids(n), pos(first.begin(), first.end() - 1);
    for (std::size_t i = 0; i < n; ++i) {
      if (parent[i] != no_parent) kids[pos[parent[i]]++] = static_cast<std::uint32_t>(i);
    }
    // Breadth-first from the root, as the full reader numbers them.
    std::vector<std::uint32_t> order;
    order.reserve(n);
    order.push_back(static_cast<std::uint32_t>(root));
    std::vector<vertex_id> renum(n, no_vertex);
    renum[root] = 0;
    for (std::size_t h = 0; h < order.size(); ++h) {
      for (std::uint32_t e = first[order[h]]; e < first[order[h] + 1]; ++e) {
        renum[kids[e]] = static_cast<vertex_id>(order.size());
        order.push_back(kids[e]);
      }
    }
    if (order.size() != n) return std::nullopt;  // a cycle: the full reader names it
    tree t;
    t.path.resize(n);
    t.parent.resize(n);
    t.cpu.resize(n);
    t.weight.assign(n, 0.0);
    if (any_mem && o.with_memory) t.memory.resize(n);
    for (std::size_t h = 0; h < n; ++h) {
      const std::size_t i = order[h];
      t.path[h] = std::string(paths.at(i));
      t.parent[h] = h == 0 ? no_vertex : renum[parent[i]];
      t.cpu[h] = cpu[i];
      if (!t.memory.empty()) t.memory[h] = mem[i];
    }
    for (std::size_t e = 0; e < edge_child.size(); ++e) t.weight[renum[edge_child[e]]] += edge_weight[e];
    return t;
  }
};

}  // namespace

std::optional<tree> read_profile_stream(const std::string& path, const profile_options& o) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return std::nullopt;
  lexer lx(f);
  reader r{lx, o};
  auto t = r.read();
  std::fclose(f);
  return t;
}

std::optional<tree> parse_profile_stream(std::string_view text, const profile_options& o) {
  lexer lx(text);
  reader r{lx, o};
  return r.read();
}

}  // namespace banyan::partitioner::detail
