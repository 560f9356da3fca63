// The profile reader (docs/formats.md): simdjson On-Demand over the file mapped
// into memory, one pass, no document tree. Each component's path is copied once, into the string
// the tree keeps; parent paths are resolved to indices as they are read; the pages of the file
// already parsed are handed back as it goes. So a 10^6-component profile (280 MB) peaks at about
// the file plus simdjson's structural index, not the several GB of a DOM.
//
// Errors name the file and line:col. A value of the wrong kind is named by its JSON location and
// component (`components[3] (/app/x).load.cpu`). Where simdjson reports that the text is not JSON,
// nlohmann-json's SAX parser reads it again only to say where and why in its words (a slow path
// taken by bad files alone).
//
// On-Demand checks only what it is asked for, so every value this reader does not need (a `kind`,
// `flows`, `links`) is still walked and checked; a file is accepted only when it is valid JSON.
#include "banyan/partitioner/io.hpp"

#include "detail.hpp"
#include "padded_file.hpp"
#include "path_table.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <functional>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>
#include <simdjson.h>

namespace banyan::partitioner::detail {
namespace {

namespace od = simdjson::ondemand;
using simdjson::error_code;

constexpr std::uint32_t root_mark = 0xFFFFFFFEu;  // the root's parent (no_index: named, not read yet)

// 1-based "line:col" of byte `pos` of `text`.
std::string line_col(std::string_view text, std::size_t pos) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < pos && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return std::to_string(line) + ":" + std::to_string(col);
}

// Records nlohmann-json's first error: where (bytes read) and the token it stopped on.
struct error_locator : nlohmann::json_sax<nlohmann::json> {
  std::size_t end = 0;
  std::string token, what;
  int id = 0;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string& last_token, const nlohmann::detail::exception& e) override {
    end = position;
    token = last_token;
    what = e.what();
    id = e.id;
    return false;
  }
};

class reader {
 public:
  reader(std::string_view text, std::size_t capacity, const std::string& name, const profile_options& o,
         padded_file* file)
      : text_(text), capacity_(capacity), name_(name), o_(o), file_(file) {}

  result<tree> read(profile_measurements* m);

 private:
  using failure = std::optional<error>;

  // Reads the text into the per-component vectors below.
  failure parse();
  // The tree from what was read: parents resolved, renumbered breadth-first from the root.
  result<tree> build(profile_measurements* m);

  failure components(od::value v);
  failure component(od::value v, std::size_t i);
  failure load(od::value v, std::size_t i, double& cpu, double& mem, double& messages);
  failure edges(od::value v);
  failure edge(od::value v, std::size_t e);

  // A value of the right kind but a wrong content: name:line:col: where: what.
  error fail(const char* at, const std::string& where, const std::string& what, errc code = errc::invalid) const {
    return error{
        code, name_ + ":" + line_col(text_, static_cast<std::size_t>(at - text_.data())) + ": " + where + ": " + what};
  }
  // The text is not JSON (or not JSON simdjson takes): nlohmann-json says where and why.
  error syntax(error_code e, const char* at) const;
  // nlohmann-json's error where the text is not JSON, naming line:col; nullopt when it is JSON.
  failure not_json() const;
  // Where a value starts.
  static const char* where(od::value& v) { return v.raw_json_token().data(); }
  // The token of a scalar, for messages (`got -1`).
  static std::string token(od::value& v) {
    std::string_view tok = v.raw_json_token();
    while (!tok.empty() && (tok.back() == ' ' || tok.back() == '\n' || tok.back() == '\r' || tok.back() == '\t'))
      tok.remove_suffix(1);
    if (tok == "{") return "an object";
    if (tok == "[") return "an array";
    return std::string(tok);
  }
  // The string `v` holds: a view into the text when it has no escapes (most paths), else unescaped
  // by simdjson. INCORRECT_TYPE when `v` is not a string.
  static error_code string_of(od::value& v, std::string_view& out);
  // A non-negative number, or null (0). `what()` names the field for messages.
  template <class What>
  failure number(od::value v, What what, double& x) const {
    const char* at = where(v);
    od::json_type type;
    if (auto e = v.type().get(type)) return syntax(e, at);
    if (type == od::json_type::null) {
      bool null = false;
      if (auto e = v.is_null().get(null); e || !null) return syntax(e ? e : simdjson::N_ATOM_ERROR, at);
      x = 0;
      return std::nullopt;
    }
    if (type != od::json_type::number) return fail(at, what(), "expected a number, got " + token(v));
    if (auto e = v.get_double().get(x)) return syntax(e, at);
    if (!(x >= 0)) return fail(at, what(), "must be a non-negative number, got " + token(v));
    return std::nullopt;
  }
  // Parent paths named before their component: resolved once every component is read.
  failure resolve_parents();
  // Paths enter the table a few components after they are read, once their slot has been
  // prefetched; a duplicate is reported then.
  failure defer_insert(std::uint32_t i, std::size_t h);
  failure flush_inserts();
  failure insert_now(std::uint32_t i, std::size_t h);
  // Walks a value this reader does not use, so that only valid JSON is accepted.
  error_code check(od::value v, int depth = 0) const;
  // Which of `known` the key of `f` is (its index in `known`), or -1; `out` is the key. Keys are
  // compared in place first (a 10^6-component profile has ~10^7 of them), then unescaped when none
  // matched. The compare may read past a short key: the text is padded.
  template <std::size_t... N>
  static error_code key_of(od::field& f, int& id, std::string_view& out, const char (&... known)[N]) {
    const char* raw = f.key().raw();
    id = -1;
    int i = 0;
    ((id < 0 && std::memcmp(raw, known, N - 1) == 0 && raw[N - 1] == '"' ? (id = i, out = {known, N - 1}, 0) : 0, ++i),
     ...);
    if (id >= 0) return simdjson::SUCCESS;
    if (auto e = f.unescaped_key().get(out)) return e;
    i = 0;
    ((id < 0 && out == std::string_view(known, N - 1) ? id = i : 0, ++i), ...);
    return simdjson::SUCCESS;
  }

  std::string who(std::size_t i) const {
    const std::string_view p = i < path_.size() ? std::string_view(path_[i]) : current_path_;
    return "components[" + std::to_string(i) + "]" + (p.empty() ? "" : " (" + std::string(p) + ")");
  }

  std::string_view text_;
  std::size_t capacity_;
  const std::string& name_;
  const profile_options& o_;
  padded_file* file_;

  // Per component, in file order.
  std::vector<std::string> path_;
  std::vector<std::uint32_t> parent_;  // index, root_mark, or no_index (in pending_)
  std::vector<double> cpu_, mem_, messages_, weight_;
  std::vector<std::uint64_t> at_;                               // offset of the component's `{`
  std::vector<std::pair<std::uint32_t, std::string>> pending_;  // parent paths named before the parent
  path_table index_{path_};
  std::string_view current_path_;  // the path of the component being read, once seen
  std::uint32_t root_ = no_index;
  std::uint32_t last_parent_ = no_index, last_child_ = no_index;  // guesses that save a lookup
  static constexpr std::size_t ring_size = 16;
  std::array<std::pair<std::uint32_t, std::size_t>, ring_size> ring_;  // (component, hash) not yet inserted
  std::size_t ring_head_ = 0, ring_count_ = 0;
  // Per component, the first edge to it (its index in `edges`), repeated_mark once it was listed
  // again; filled when the first edge is read.
  static constexpr std::uint32_t repeated_mark = no_index - 1;
  std::vector<std::uint32_t> first_edge_;
  std::vector<std::string> repeated_;
  std::size_t repeated_count_ = 0;
  bool any_mem_ = false, any_messages_ = false, got_components_ = false;
  double duration_ = 0;
};

error reader::syntax(error_code e, const char* at) const {
  if (auto bad = not_json()) return *bad;
  // nlohmann-json takes what simdjson does not (nesting beyond 1024 levels, say).
  const std::string place = at ? ":" + line_col(text_, static_cast<std::size_t>(at - text_.data())) : "";
  return error{errc::parse, name_ + place + ": " + simdjson::error_message(e)};
}

std::optional<error> reader::not_json() const {
  error_locator loc;
  nlohmann::json::sax_parse(text_.data(), text_.data() + text_.size(), &loc);
  if (loc.id >= 400 && loc.id < 500) {  // out_of_range: a number beyond a double
    const std::size_t start = loc.end >= loc.token.size() ? loc.end - loc.token.size() : 0;
    return error{errc::parse, name_ + ":" + line_col(text_, start) + ": number `" + loc.token +
                                  "` is out of range (beyond about 1.8e308)"};
  }
  if (loc.id != 0) {
    std::string what = loc.what;
    if (auto p = what.find("syntax error"); p != std::string::npos) what = what.substr(p);
    return error{errc::parse, name_ + ":" + line_col(text_, loc.end > 0 ? loc.end - 1 : 0) + ": " + what};
  }
  return std::nullopt;
}

error_code reader::string_of(od::value& v, std::string_view& out) {
  const std::string_view tok = v.raw_json_token();
  if (tok.empty() || tok[0] != '"') return simdjson::INCORRECT_TYPE;
  // simdjson's token for a string runs from its opening quote to its closing one, then blanks.
  const std::size_t close = tok.find_last_of('"');
  out = tok.substr(1, close - 1);
  if (out.find('\\') == std::string_view::npos) return simdjson::SUCCESS;
  return v.get_string().get(out);
}

error_code reader::check(od::value v, int depth) const {
  if (depth > 512) return simdjson::DEPTH_ERROR;
  od::json_type type;
  if (auto e = v.type().get(type)) return e;
  switch (type) {
    case od::json_type::object: {
      od::object ob;
      if (auto e = v.get_object().get(ob)) return e;
      for (auto fr : ob) {
        od::field f;
        std::string_view k;
        if (auto e = std::move(fr).get(f)) return e;
        if (auto e = f.unescaped_key().get(k)) return e;
        if (auto e = check(f.value(), depth + 1)) return e;
      }
      return simdjson::SUCCESS;
    }
    case od::json_type::array: {
      od::array ar;
      if (auto e = v.get_array().get(ar)) return e;
      for (auto er : ar) {
        od::value x;
        if (auto e = std::move(er).get(x)) return e;
        if (auto e = check(x, depth + 1)) return e;
      }
      return simdjson::SUCCESS;
    }
    case od::json_type::string: {
      std::string_view s;
      return string_of(v, s);
    }
    case od::json_type::number: {
      double x;
      return v.get_double().get(x);
    }
    case od::json_type::boolean: {
      bool b;
      return v.get_bool().get(b);
    }
    case od::json_type::null: {
      bool null = false;
      if (auto e = v.is_null().get(null)) return e;
      return null ? simdjson::SUCCESS : simdjson::N_ATOM_ERROR;
    }
  }
  return simdjson::INCORRECT_TYPE;
}

result<tree> reader::read(profile_measurements* m) {
  if (auto bad = parse()) return *bad;  // simdjson's parser and index are gone by now
  return build(m);
}

reader::failure reader::parse() {
  od::parser parser;
  od::document doc;
  if (auto e = parser.iterate(text_.data(), text_.size(), capacity_).get(doc)) return syntax(e, nullptr);
  bool edges_early = false, got_version = false, got_format = false, got_duration = false;
  {
    od::object top;
    if (auto e = doc.get_object().get(top)) {
      if (e == simdjson::INCORRECT_TYPE) {
        if (auto bad = not_json()) return bad;  // text that is not JSON at all says where it goes wrong
        const std::size_t start = std::min(text_.find_first_not_of(" \t\r\n"), text_.size());
        return error{errc::invalid, name_ + ":" + line_col(text_, start) + ": top level: expected a JSON object"};
      }
      return syntax(e, nullptr);
    }
    bool got_edges = false;
    for (auto fr : top) {
      od::field f;
      std::string_view k;
      int id;
      if (auto e = std::move(fr).get(f)) return syntax(e, nullptr);
      if (auto e = key_of(f, id, k, "components", "edges", "version", "format", "duration_s"))
        return syntax(e, nullptr);
      od::value v = f.value();
      const char* at = where(v);
      bool* seen[] = {&got_components_, &got_edges, &got_version, &got_format, &got_duration};
      if (id >= 0 && *seen[id]) return fail(at, std::string(k), "appears twice");
      if (id >= 0) *seen[id] = true;
      if (id == 0) {
        if (auto bad = components(v)) return bad;
      } else if (id == 1) {
        if (!got_components_) {
          edges_early = true;  // read after the components, below
          continue;
        }
        if (auto bad = edges(v)) return bad;
      } else if (id == 2) {
        od::number_type nt;
        std::int64_t ver = 0;
        const bool integral = !v.get_number_type().get(nt) && nt != od::number_type::floating_point_number;
        if (!integral || v.get_int64().get(ver) || ver != 1) {
          if (auto e = check(v)) return syntax(e, at);
          return fail(at, "version", "unsupported version " + token(v) + " (expected 1)");
        }
      } else if (id == 3) {
        std::string_view s;
        if (string_of(v, s) || s != "banyan-profile") {
          if (auto e = check(v)) return syntax(e, at);
          return fail(at, "format", "expected \"banyan-profile\", got " + token(v));
        }
      } else if (id == 4) {
        if (auto bad = number(
                v, [] { return std::string("duration_s"); }, duration_))
          return bad;
      } else if (auto e = check(v)) {
        return syntax(e, at);
      }
    }
    const char* rest = nullptr;
    if (!doc.current_location().get(rest)) return syntax(simdjson::TRAILING_CONTENT, rest);
  }
  if (!got_version) return error{errc::invalid, name_ + ": version: missing (expected 1)"};
  if (!got_components_) return error{errc::invalid, name_ + ": components: expected a non-empty array"};
  if (edges_early) {
    doc.rewind();
    od::object top;
    if (auto e = doc.get_object().get(top)) return syntax(e, nullptr);
    for (auto fr : top) {
      od::field f;
      std::string_view k;
      int id;
      if (auto e = std::move(fr).get(f)) return syntax(e, nullptr);
      if (auto e = key_of(f, id, k, "edges")) return syntax(e, nullptr);
      if (id != 0) continue;
      if (auto bad = edges(f.value())) return bad;
      break;
    }
  }
  return std::nullopt;
}

reader::failure reader::components(od::value v) {
  const char* at = where(v);
  od::array arr;
  std::size_t n = 0;
  if (auto e = v.get_array().get(arr); e == simdjson::INCORRECT_TYPE) {
    if (auto e2 = check(v)) return syntax(e2, at);
    return fail(at, "components", "expected a non-empty array");
  } else if (e) {
    return syntax(e, at);
  }
  if (auto e = arr.count_elements().get(n)) return syntax(e, at);
  if (n == 0) return fail(at, "components", "expected a non-empty array");
  if (n >= no_index - 1) return fail(at, "components", "more than 2^32 - 2 components");
  path_.reserve(n);
  parent_.reserve(n);
  cpu_.reserve(n);
  mem_.reserve(n);
  messages_.reserve(n);
  at_.reserve(n);
  index_.reserve(n);
  std::size_t i = 0;
  for (auto er : arr) {
    od::value c;
    if (auto e = std::move(er).get(c)) return syntax(e, at);
    if (auto bad = component(c, i)) return bad;
    ++i;
  }
  if (auto bad = flush_inserts()) return bad;
  weight_.assign(path_.size(), 0.0);
  return std::nullopt;
}

reader::failure reader::component(od::value v, std::size_t i) {
  const char* at = where(v);
  if (file_ && i % 4096 == 0) file_->release_before(at);
  current_path_ = {};
  od::object ob;
  if (auto e = v.get_object().get(ob)) {
    if (e != simdjson::INCORRECT_TYPE) return syntax(e, at);
    if (auto e2 = check(v)) return syntax(e2, at);
    return fail(at, who(i), "expected an object");
  }
  std::string_view path, parent;
  bool got_path = false, got_parent = false, got_load = false, is_root = false;
  double cpu = 0, mem = 0, messages = 0;
  for (auto fr : ob) {
    od::field f;
    std::string_view k;
    int id;
    if (auto e = std::move(fr).get(f)) return syntax(e, at);
    if (auto e = key_of(f, id, k, "path", "parent", "load")) return syntax(e, at);
    od::value x = f.value();
    const char* xat = where(x);
    if (id >= 0) {
      bool* seen[] = {&got_path, &got_parent, &got_load};
      if (*seen[id]) return fail(xat, who(i), "`" + std::string(k) + "` appears twice");
      *seen[id] = true;
    }
    if (id == 0) {
      if (auto e = string_of(x, path); e && e != simdjson::INCORRECT_TYPE) return syntax(e, xat);
      else if (e || path.empty() || path[0] != '/') {
        if (auto e2 = check(x)) return syntax(e2, xat);
        return fail(xat, who(i) + ".path", "expected an absolute path string such as \"/app/x\"");
      }
      current_path_ = path;
    } else if (id == 1) {
      od::json_type type;
      if (auto e = x.type().get(type)) return syntax(e, xat);
      if (type == od::json_type::null) {
        bool null = false;
        if (auto e = x.is_null().get(null); e || !null) return syntax(e ? e : simdjson::N_ATOM_ERROR, xat);
        is_root = true;
      } else if (type == od::json_type::string) {
        if (auto e = string_of(x, parent)) return syntax(e, xat);
      } else {
        if (auto e = check(x)) return syntax(e, xat);
        return fail(xat, who(i) + ".parent", "expected a path string or null, got " + token(x));
      }
    } else if (id == 2) {
      if (auto bad = load(x, i, cpu, mem, messages)) return bad;
    } else if (auto e = check(x)) {
      return syntax(e, xat);
    }
  }
  if (!got_path) return fail(at, who(i) + ".path", "expected an absolute path string such as \"/app/x\"");
  if (!got_parent) return fail(at, who(i), "missing `parent` (null for the root)");
  if (!is_root && parent == path) return fail(at, who(i), "is its own parent", errc::not_a_tree);
  const std::uint32_t self = static_cast<std::uint32_t>(i);
  path_.emplace_back(path);
  at_.push_back(static_cast<std::uint64_t>(at - text_.data()));
  const std::size_t h = path_table::hash(path);
  index_.prefetch(h);
  if (auto bad = defer_insert(self, h)) return bad;
  if (is_root) {
    if (root_ != no_index)
      return fail(at, who(i), "second root: " + path_[root_] + " also has parent null", errc::not_a_tree);
    root_ = self;
    parent_.push_back(root_mark);
  } else {
    // Siblings are usually listed together, breadth-first the next parent follows the previous
    // one, and a chain's parent comes just before: try those first.
    std::uint32_t p = no_index;
    if (last_parent_ < self && path_[last_parent_] == parent) p = last_parent_;
    else if (last_parent_ + 1 < self && path_[last_parent_ + 1] == parent) p = last_parent_ + 1;
    else if (self > 0 && path_[self - 1] == parent) p = self - 1;
    else if ((p = index_.find(parent)) == no_index && ring_count_ > 0) {
      if (auto bad = flush_inserts()) return bad;
      p = index_.find(parent);
    }
    if (p != no_index) last_parent_ = p;
    parent_.push_back(p);
    if (p == no_index) pending_.emplace_back(self, std::string(parent));
  }
  cpu_.push_back(cpu);
  mem_.push_back(mem);
  messages_.push_back(messages);
  return std::nullopt;
}

reader::failure reader::load(od::value v, std::size_t i, double& cpu, double& mem, double& messages) {
  const char* at = where(v);
  od::object ob;
  if (auto e = v.get_object().get(ob)) {
    if (e != simdjson::INCORRECT_TYPE) return syntax(e, at);
    if (auto e2 = check(v)) return syntax(e2, at);
    return fail(at, who(i) + ".load", "expected an object");
  }
  bool got_cpu = false, got_mem = false, got_messages = false;
  for (auto fr : ob) {
    od::field f;
    std::string_view k;
    int id;
    if (auto e = std::move(fr).get(f)) return syntax(e, at);
    if (auto e = key_of(f, id, k, "cpu", "memory", "messages")) return syntax(e, at);
    od::value x = f.value();
    if (id >= 0) {
      bool* seen[] = {&got_cpu, &got_mem, &got_messages};
      double* out[] = {&cpu, &mem, &messages};
      if (*seen[id]) return fail(where(x), who(i) + ".load", "`" + std::string(k) + "` appears twice");
      *seen[id] = true;
      if (auto bad = number(
              x, [&] { return who(i) + ".load." + std::string(k); }, *out[id]))
        return bad;
    } else if (auto e = check(x)) {
      return syntax(e, where(x));
    }
  }
  any_mem_ = any_mem_ || mem > 0;
  any_messages_ = any_messages_ || got_messages;
  return std::nullopt;
}

reader::failure reader::edges(od::value v) {
  const char* at = where(v);
  od::array arr;
  if (auto e = v.get_array().get(arr)) {
    if (e != simdjson::INCORRECT_TYPE) return syntax(e, at);
    if (auto e2 = check(v)) return syntax(e2, at);
    return fail(at, "edges", "expected an array");
  }
  if (auto bad = resolve_parents()) return bad;
  std::size_t e = 0;
  for (auto er : arr) {
    od::value x;
    if (auto err = std::move(er).get(x)) return syntax(err, at);
    if (auto bad = edge(x, e)) return bad;
    ++e;
  }
  return std::nullopt;
}

reader::failure reader::edge(od::value v, std::size_t e) {
  const char* at = where(v);
  if (file_ && e % 4096 == 0) file_->release_before(at);
  const auto where_ = [e] { return "edges[" + std::to_string(e) + "]"; };
  const char* shape = "expected {\"parent\": path, \"child\": path, ...}";
  od::object ob;
  if (auto err = v.get_object().get(ob)) {
    if (err != simdjson::INCORRECT_TYPE) return syntax(err, at);
    if (auto e2 = check(v)) return syntax(e2, at);
    return fail(at, where_(), shape);
  }
  const int unit = o_.unit == traffic_unit::bytes ? 3 : 2;
  std::string_view parent, child;
  bool got_parent = false, got_child = false;
  double w = 0;
  for (auto fr : ob) {
    od::field f;
    std::string_view k;
    int id;
    if (auto err = std::move(fr).get(f)) return syntax(err, at);
    if (auto err = key_of(f, id, k, "parent", "child", "messages", "bytes")) return syntax(err, at);
    od::value x = f.value();
    const char* xat = where(x);
    if (id == 0 || id == 1) {
      std::string_view& out = id == 0 ? parent : child;
      bool& seen = id == 0 ? got_parent : got_child;
      if (seen) return fail(xat, where_(), "`" + std::string(k) + "` appears twice");
      seen = true;
      if (auto err = string_of(x, out); err && err != simdjson::INCORRECT_TYPE) return syntax(err, xat);
      else if (err) {
        if (auto e2 = check(x)) return syntax(e2, xat);
        return fail(at, where_(), shape);
      }
    } else if (id == unit) {
      if (auto bad = number(
              x, [&] { return where_() + "." + std::string(k); }, w))
        return bad;
    } else if (auto err = check(x)) {
      return syntax(err, xat);
    }
  }
  if (!got_parent || !got_child) return fail(at, where_(), shape);
  // Edges usually follow the components' order: try the one after the previous edge's child first.
  const std::uint32_t guess = last_child_ + 1;
  const std::uint32_t c = guess < path_.size() && path_[guess] == child ? guess : index_.find(child);
  last_child_ = c;
  if (c == no_index) return fail(at, where_(), "unknown child `" + std::string(child) + "`");
  if (parent_[c] == root_mark || path_[parent_[c]] != parent) {
    return fail(at, where_(),
                "`" + std::string(parent) + "` -> `" + std::string(child) + "` is not a tree edge (the parent of " +
                    std::string(child) + " is " +
                    (parent_[c] == root_mark ? std::string("none") : "`" + path_[parent_[c]] + "`") + ")");
  }
  if (first_edge_.empty()) first_edge_.assign(path_.size(), no_index);
  if (first_edge_[c] == no_index) {
    first_edge_[c] = static_cast<std::uint32_t>(std::min<std::size_t>(e, repeated_mark - 1));
  } else if (first_edge_[c] != repeated_mark) {
    if (repeated_.size() < profile_measurements::max_repeated_edges) {
      repeated_.push_back(name_ + ":" + line_col(text_, static_cast<std::size_t>(at - text_.data())) + ": " + where_() +
                          ": `" + std::string(parent) + "` -> `" + std::string(child) +
                          "` is listed again (first as edges[" + std::to_string(first_edge_[c]) +
                          "]); their traffic is summed");
    }
    ++repeated_count_;
    first_edge_[c] = repeated_mark;  // named once, however often it is listed
  }
  weight_[c] += w;
  return std::nullopt;
}

reader::failure reader::insert_now(std::uint32_t i, std::size_t h) {
  if (const std::uint32_t other = index_.insert(i, h); other != i) {
    return fail(text_.data() + at_[i], who(i), "duplicate path; components[" + std::to_string(other) + "] has it too",
                errc::not_a_tree);
  }
  return std::nullopt;
}

reader::failure reader::defer_insert(std::uint32_t i, std::size_t h) {
  if (ring_count_ == ring_size) {
    const auto [j, hj] = ring_[ring_head_];
    ring_head_ = (ring_head_ + 1) % ring_size;
    --ring_count_;
    if (auto bad = insert_now(j, hj)) return bad;
  }
  ring_[(ring_head_ + ring_count_++) % ring_size] = {i, h};
  return std::nullopt;
}

reader::failure reader::flush_inserts() {
  for (; ring_count_ > 0; --ring_count_) {
    const auto [j, hj] = ring_[ring_head_];
    ring_head_ = (ring_head_ + 1) % ring_size;
    if (auto bad = insert_now(j, hj)) return bad;
  }
  return std::nullopt;
}

reader::failure reader::resolve_parents() {
  for (const auto& [i, parent] : pending_) {
    const std::uint32_t p = index_.find(parent);
    const char* at = text_.data() + at_[i];
    if (p == no_index) return fail(at, who(i), "unknown parent `" + parent + "`", errc::not_a_tree);
    if (p == i) return fail(at, who(i), "is its own parent", errc::not_a_tree);
    parent_[i] = p;
  }
  pending_.clear();
  return std::nullopt;
}

result<tree> reader::build(profile_measurements* m) {
  if (auto bad = resolve_parents()) return *bad;  // when there were no `edges`
  const std::size_t n = path_.size();
  if (root_ == no_index) return error{errc::not_a_tree, name_ + ": components: no root (no component has parent null)"};
  // Children in compressed form, then breadth-first from the root; a vertex not reached hangs
  // below a cycle.
  std::vector<std::uint32_t> first(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    if (parent_[i] != root_mark) ++first[parent_[i] + 1];
  }
  for (std::size_t i = 0; i < n; ++i) first[i + 1] += first[i];
  std::vector<std::uint32_t> order(n);
  {
    std::vector<std::uint32_t> pos(first.begin(), first.end() - 1), kids(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (parent_[i] != root_mark) kids[pos[parent_[i]]++] = static_cast<std::uint32_t>(i);
    }
    std::size_t tail = 0;
    order[tail++] = root_;
    for (std::size_t h = 0; h < tail; ++h) {
      for (std::uint32_t e = first[order[h]]; e < first[order[h] + 1]; ++e) order[tail++] = kids[e];
    }
    if (tail != n) {
      std::vector<char> reached(n, 0);
      for (std::size_t h = 0; h < tail; ++h) reached[order[h]] = 1;
      for (std::size_t i = 0; i < n; ++i) {
        if (reached[i]) continue;
        std::size_t v = i;  // n steps up from an unreached vertex land on its cycle
        for (std::size_t steps = 0; steps < n; ++steps) v = parent_[v];
        return fail(
            text_.data() + at_[v], "components",
            "cycle through " + path_[v] + " (its ancestors lead back to it, never to the root " + path_[root_] + ")",
            errc::not_a_tree);
      }
    }
  }
  std::vector<vertex_id> renum(n);
  for (std::size_t h = 0; h < n; ++h) renum[order[h]] = static_cast<vertex_id>(h);
  tree t;
  t.path.resize(n);
  t.parent.resize(n);
  t.cpu.resize(n);
  t.weight.resize(n);
  if (any_mem_ && o_.with_memory) t.memory.resize(n);
  for (std::size_t h = 0; h < n; ++h) {
    const std::size_t i = order[h];
    t.path[h] = std::move(path_[i]);
    t.parent[h] = h == 0 ? no_vertex : renum[parent_[i]];
    t.cpu[h] = cpu_[i];
    t.weight[h] = h == 0 ? 0.0 : weight_[i];
    if (!t.memory.empty()) t.memory[h] = mem_[i];
  }
  if (m) {
    m->duration_s = duration_;
    m->has_messages = any_messages_;
    m->messages.resize(n);
    for (std::size_t h = 0; h < n; ++h) m->messages[h] = messages_[order[h]];
    m->repeated_edges = std::move(repeated_);
    m->repeated_edge_count = repeated_count_;
  }
  return t;
}

}  // namespace

result<tree> read_profile(std::string_view padded_text, std::size_t capacity, const std::string& name,
                          const profile_options& o, profile_measurements* m, padded_file* file) {
  return reader(padded_text, capacity, name, o, file).read(m);
}

}  // namespace banyan::partitioner::detail

namespace banyan::partitioner {

result<tree> parse_profile(const std::string& text, const std::string& name, const profile_options& o,
                           profile_measurements* m) {
  const simdjson::padded_string padded(text);
  return detail::read_profile(std::string_view(padded.data(), padded.size()),
                              padded.size() + simdjson::SIMDJSON_PADDING, name, o, m, nullptr);
}

result<tree> load_profile(const std::string& path, const profile_options& o, profile_measurements* m) {
  auto file = detail::padded_file::map(path, simdjson::SIMDJSON_PADDING);
  if (!file) {  // not a regular file (a pipe): read it whole
    auto text = detail::read_file(path);
    if (!text) return text.error();
    return parse_profile(*text, path, o, m);
  }
  return detail::read_profile(std::string_view(file->data(), file->size()), file->capacity(), path, o, m, &*file);
}

}  // namespace banyan::partitioner
