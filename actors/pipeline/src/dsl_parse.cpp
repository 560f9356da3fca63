#include "dsl_ast.hpp"

#include <banyan/base/log.hpp>

#include <cctype>

namespace banyan::pipeline {

namespace {

struct token {
  enum class type { ident, number, string, symbol, newline, end };
  type t = type::end;
  std::string text;
  int line = 1, col = 1;
  std::size_t begin = 0, end = 0;  // byte range in the source, for quoting items in errors
};

std::string describe(const token& t) {
  switch (t.t) {
    // Escaped and cut: a token may be megabytes of anything.
    case token::type::ident: return "`" + log::escape(t.text, 40) + "`";
    case token::type::number: return "number " + log::escape(t.text, 40);
    case token::type::string: return "string \"" + log::escape(t.text, 40) + "\"";
    case token::type::symbol: return "`" + log::escape(t.text, 40) + "`";
    case token::type::newline: return "end of line";
    case token::type::end: return "end of input";
  }
  return "?";
}

class parser {
 public:
  parser(std::string_view text, std::string source) : text_(text), source_(std::move(source)) {}

  result<program> run() {
    if (auto e = lex()) return *e;
    program prog;
    prog.source = source_;
    while (peek().t != token::type::end) {
      if (accept_newline()) continue;
      if (auto e = statement(prog)) return *e;
    }
    if (prog.rules.empty())
      return error{errc::parse, source_ + ": no `rank` line; a program needs at least `rank all: ...`"};
    return prog;
  }

 private:
  std::optional<error> lex() {
    int line = 1, col = 1, depth = 0;
    std::size_t i = 0;
    auto push = [&](token::type t, std::string s, int l, int c, std::size_t b, std::size_t e) {
      toks_.push_back({t, std::move(s), l, c, b, e});
    };
    while (i < text_.size()) {
      const char ch = text_[i];
      if (ch == '#') {
        while (i < text_.size() && text_[i] != '\n') ++i, ++col;
        continue;
      }
      if (ch == '\n') {
        // A newline ends a statement, except inside ( ) and before an indented line, which continues it.
        if (depth == 0 && !continues(i + 1)) push(token::type::newline, "\n", line, col, i, i + 1);
        ++i, ++line, col = 1;
        continue;
      }
      if (std::isspace(static_cast<unsigned char>(ch))) {
        ++i, ++col;
        continue;
      }
      const int l = line, c = col;
      if (std::isalpha(static_cast<unsigned char>(ch)) || ch == '_') {
        std::size_t j = i;
        while (j < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[j])) || text_[j] == '_')) ++j;
        push(token::type::ident, std::string(text_.substr(i, j - i)), l, c, i, j);
        col += static_cast<int>(j - i), i = j;
      } else if (std::isdigit(static_cast<unsigned char>(ch))) {
        std::size_t j = i;
        while (j < text_.size() && std::isdigit(static_cast<unsigned char>(text_[j]))) ++j;
        if (j - i > 9) return error{errc::parse, at(l, c) + "number too large"};
        push(token::type::number, std::string(text_.substr(i, j - i)), l, c, i, j);
        col += static_cast<int>(j - i), i = j;
      } else if (ch == '"') {
        std::size_t j = i + 1;
        while (j < text_.size() && text_[j] != '"' && text_[j] != '\n') ++j;
        if (j >= text_.size() || text_[j] != '"')
          return error{errc::parse, at(l, c) + "unterminated string; expected `\"`"};
        push(token::type::string, std::string(text_.substr(i + 1, j - i - 1)), l, c, i, j + 1);
        col += static_cast<int>(j + 1 - i), i = j + 1;
      } else if (const auto two = text_.substr(i, 2); two == ".." || two == "==" || two == "!=" || two == "<=" ||
                                                      two == ">=" || two == "&&" || two == "||") {
        push(token::type::symbol, std::string(two), l, c, i, i + 2);
        i += 2, col += 2;
      } else if (std::string_view("()[]^*?+-/%:=,<>").find(ch) != std::string_view::npos) {
        if (ch == '(') ++depth;
        if (ch == ')' && depth > 0) --depth;
        push(token::type::symbol, std::string(1, ch), l, c, i, i + 1);
        ++i, ++col;
      } else {
        return error{errc::parse, at(l, c) + "unexpected character `" + std::string(1, ch) + "`"};
      }
    }
    push(token::type::newline, "\n", line, col, text_.size(), text_.size());
    push(token::type::end, "", line, col, text_.size(), text_.size());
    return std::nullopt;
  }

  // True when the line starting at `i` is indented and has something on it besides a comment.
  bool continues(std::size_t i) const {
    if (i >= text_.size() || (text_[i] != ' ' && text_[i] != '\t')) return false;
    while (i < text_.size() && (text_[i] == ' ' || text_[i] == '\t' || text_[i] == '\r')) ++i;
    return i < text_.size() && text_[i] != '\n' && text_[i] != '#';
  }

  std::string at(int line, int col) const {
    return source_ + ":" + std::to_string(line) + ":" + std::to_string(col) + ": ";
  }
  const token& peek() const { return toks_[pos_]; }
  token next() { return toks_[pos_ < toks_.size() - 1 ? pos_++ : pos_]; }
  // The source text from token `first` to the last token consumed.
  std::string text_since(std::size_t first) const {
    const std::size_t b = toks_[first].begin, e = pos_ > first ? toks_[pos_ - 1].end : b;
    return std::string(text_.substr(b, e - b));
  }
  bool is_direction() const {
    return peek().t == token::type::ident && (peek().text == "desc" || peek().text == "asc");
  }
  bool is_symbol(const char* s) const { return peek().t == token::type::symbol && peek().text == s; }
  bool accept_newline() {
    if (peek().t != token::type::newline) return false;
    next();
    return true;
  }
  error expected(const std::string& what) const {
    return error{errc::parse, at(peek().line, peek().col) + "expected " + what + ", found " + describe(peek())};
  }
  std::optional<error> expect_symbol(const char* s) {
    if (!is_symbol(s)) return expected(std::string("`") + s + "`");
    next();
    return std::nullopt;
  }
  std::optional<error> end_of_statement() {
    if (peek().t == token::type::newline) {
      next();
      return std::nullopt;
    }
    return expected("end of line");
  }

  std::optional<error> statement(program& prog) {
    const token kw = peek();
    if (kw.t != token::type::ident) return expected("a statement (name, doc, chunks, place, group, let, rank)");
    next();
    if (kw.text == "name" || kw.text == "doc") {
      if (peek().t != token::type::string) return expected("a quoted string");
      (kw.text == "name" ? prog.name : prog.doc) = next().text;
    } else if (kw.text == "chunks" || kw.text == "group") {
      auto e = expression();
      if (!e) return e.error();
      (kw.text == "chunks" ? prog.chunks : prog.group) = *e;
    } else if (kw.text == "require") {
      auto e = expression();
      if (!e) return e.error();
      prog.requires_.push_back(*e);
    } else if (kw.text == "place") {
      if (peek().t == token::type::ident && (peek().text == "loop" || peek().text == "vshape"))
        prog.place = next().text == "loop" ? placement::loop : placement::vshape;
      else return expected("`loop` or `vshape`");
    } else if (kw.text == "let") {
      if (peek().t != token::type::ident) return expected("a name");
      std::string name = next().text;
      for (const char* reserved : {"p", "m", "v", "r", "F", "B", "I", "W", "min", "max", "asc", "desc"})
        if (name == reserved)
          return error{errc::parse, at(kw.line, kw.col) + "`" + name + "` is reserved; pick another name"};
      if (auto e = expect_symbol("=")) return e;
      auto e = expression();
      if (!e) return e.error();
      prog.lets.emplace_back(std::move(name), *e);
    } else if (kw.text == "rank") {
      rank_rule rule;
      rule.line = kw.line;
      if (peek().t == token::type::ident && peek().text == "all") {
        next();
      } else {
        auto lo = expression();
        if (!lo) return lo.error();
        rule.lo = rule.hi = *lo;
        if (is_symbol("..")) {
          next();
          auto hi = expression();
          if (!hi) return hi.error();
          rule.hi = *hi;
        }
      }
      if (auto e = expect_symbol(":")) return e;
      auto seq = sequence();
      if (!seq) return seq.error();
      if (seq->empty()) return expected("F, B, I, W or `(`");
      rule.sequence = std::move(*seq);
      prog.rules.push_back(std::move(rule));
    } else {
      return error{errc::parse,
                   at(kw.line, kw.col) +
                       "expected a statement (name, doc, chunks, place, group, let, require, rank), found " +
                       describe(kw)};
    }
    return end_of_statement();
  }

  // One level of nesting while it lives: the parser recurses once per level, so it refuses to go
  // deeper than detail::max_nesting (a program nested 20,000 deep would overflow the stack).
  class level {
   public:
    explicit level(parser& p) : p_(p) { ++p_.depth_; }
    ~level() { --p_.depth_; }
    level(const level&) = delete;
    level& operator=(const level&) = delete;
    bool too_deep() const { return p_.depth_ > detail::max_nesting; }

   private:
    parser& p_;
  };
  error too_deep(int line, int col) const {
    return error{errc::parse,
                 at(line, col) + "nested deeper than " + std::to_string(detail::max_nesting) +
                     " levels (each group, parenthesis, unary `-` and chained operator is one); simplify the program"};
  }

  result<std::vector<seq_item>> sequence() {
    level lv(*this);
    if (lv.too_deep()) return too_deep(peek().line, peek().col);
    std::vector<seq_item> items;
    while (true) {
      seq_item item;
      item.line = peek().line, item.col = peek().col;
      const std::size_t first = pos_;
      if (is_symbol("(")) {
        next();
        auto inner = sequence();
        if (!inner) return inner.error();
        if (inner->empty()) return expected("F, B, I, W or `(`");
        if (auto e = expect_symbol(")")) return *e;
        item.is_group = true;
        item.children = std::move(*inner);
      } else if (peek().t == token::type::ident && peek().text.size() == 1 &&
                 std::string_view("FBIW").find(peek().text[0]) != std::string_view::npos) {
        const char c = next().text[0];
        item.op = c == 'F' ? kind::F : c == 'B' ? kind::B : c == 'I' ? kind::I : kind::W;
        // `[c]` picks the chunk, `[desc]` or `[c, desc]` the descending microbatch order.
        if (is_symbol("[")) {
          next();
          if (!is_direction()) {
            auto e = expression();
            if (!e) return e.error();
            item.chunk = *e;
            if (is_symbol(",")) {
              next();
              if (!is_direction()) return expected("`desc` or `asc`");
            }
          }
          if (is_direction()) {
            const token d = next();
            if (item.op == kind::W)
              return error{errc::parse, at(d.line, d.col) + "`W` takes the order of the `I`s; `" + d.text +
                                            "` applies to F, B and I"};
            item.descending = d.text == "desc";
          }
          if (auto err = expect_symbol("]")) return *err;
        }
      } else {
        return items;
      }
      if (is_symbol("*")) {
        next();
        item.rep = seq_item::repeat::star;
      } else if (is_symbol("^")) {
        next();
        auto e = factor();
        if (!e) return e.error();
        item.rep = seq_item::repeat::count;
        item.count = *e;
      } else if (is_symbol("?")) {
        const token q = next();
        item.rep = seq_item::repeat::count;
        item.count = std::make_shared<const expr_node>(expr_node{expr_node::type::number, 1, "", 0, {}, q.line, q.col});
      }
      item.text = text_since(first);
      items.push_back(std::move(item));
    }
  }

  // A node, refused when its tree is deeper than max_nesting (a chain `1+1+...+1` nests without
  // parentheses: eval() and the destructor recurse down its left side).
  result<expr> make(expr_node n) {
    for (const auto& a : n.args) n.depth = std::max(n.depth, a->depth + 1);
    if (n.depth > detail::max_nesting) return too_deep(n.line, n.col);
    return std::make_shared<const expr_node>(std::move(n));
  }

  result<expr> expression() {
    level lv(*this);
    if (lv.too_deep()) return too_deep(peek().line, peek().col);
    auto lhs = conjunction();
    if (!lhs) return lhs;
    while (is_symbol("||")) {
      const token op = next();
      auto rhs = conjunction();
      if (!rhs) return rhs;
      lhs = make({expr_node::type::binary, 0, "", '|', {*lhs, *rhs}, op.line, op.col});
      if (!lhs) return lhs;
    }
    return lhs;
  }
  result<expr> conjunction() {
    auto lhs = comparison();
    if (!lhs) return lhs;
    while (is_symbol("&&")) {
      const token op = next();
      auto rhs = comparison();
      if (!rhs) return rhs;
      lhs = make({expr_node::type::binary, 0, "", '&', {*lhs, *rhs}, op.line, op.col});
      if (!lhs) return lhs;
    }
    return lhs;
  }
  // Comparisons do not chain: `a < b < c` is an error, as it is almost always a mistake.
  result<expr> comparison() {
    auto lhs = sum();
    if (!lhs) return lhs;
    static const std::pair<const char*, char> ops[] = {{"==", '='}, {"!=", '!'}, {"<=", 'l'},
                                                       {">=", 'g'}, {"<", '<'},  {">", '>'}};
    for (const auto& [text, code] : ops) {
      if (!is_symbol(text)) continue;
      const token op = next();
      auto rhs = sum();
      if (!rhs) return rhs;
      return make({expr_node::type::binary, 0, "", code, {*lhs, *rhs}, op.line, op.col});
    }
    return lhs;
  }
  result<expr> sum() {
    auto lhs = term();
    if (!lhs) return lhs;
    while (is_symbol("+") || is_symbol("-")) {
      const token op = next();
      auto rhs = term();
      if (!rhs) return rhs;
      lhs = make({expr_node::type::binary, 0, "", op.text[0], {*lhs, *rhs}, op.line, op.col});
      if (!lhs) return lhs;
    }
    return lhs;
  }
  result<expr> term() {
    auto lhs = unary();
    if (!lhs) return lhs;
    while (is_symbol("*") || is_symbol("/") || is_symbol("%")) {
      const token op = next();
      auto rhs = unary();
      if (!rhs) return rhs;
      lhs = make({expr_node::type::binary, 0, "", op.text[0], {*lhs, *rhs}, op.line, op.col});
      if (!lhs) return lhs;
    }
    return lhs;
  }
  result<expr> unary() {
    if (is_symbol("-")) {
      level lv(*this);
      if (lv.too_deep()) return too_deep(peek().line, peek().col);
      const token op = next();
      auto e = unary();
      if (!e) return e;
      return make({expr_node::type::negate, 0, "", '-', {*e}, op.line, op.col});
    }
    return factor();
  }
  result<expr> factor() {
    const token t = peek();
    if (t.t == token::type::number) {
      next();
      return make({expr_node::type::number, std::stoll(t.text), "", 0, {}, t.line, t.col});
    }
    if (t.t == token::type::ident) {
      next();
      // Only the known functions take `(`: in `F^n (F B)*` the `(` opens a group, not a call.
      if (!is_symbol("(") || (t.text != "min" && t.text != "max"))
        return make({expr_node::type::name, 0, t.text, 0, {}, t.line, t.col});
      next();
      std::vector<expr> args;
      while (true) {
        auto a = expression();
        if (!a) return a;
        args.push_back(*a);
        if (is_symbol(",")) {
          next();
          continue;
        }
        if (auto e = expect_symbol(")")) return *e;
        break;
      }
      return make({expr_node::type::call, 0, t.text, 0, std::move(args), t.line, t.col});
    }
    if (is_symbol("(")) {
      next();
      auto e = expression();
      if (!e) return e;
      if (auto err = expect_symbol(")")) return *err;
      return e;
    }
    return expected("a number, a name or `(`");
  }

  std::string_view text_;
  std::string source_;
  std::vector<token> toks_;
  std::size_t pos_ = 0;
  int depth_ = 0;  // levels of nesting being parsed (class level)
};

}  // namespace

result<program> parse_program(std::string_view text, const std::string& source) { return parser(text, source).run(); }

namespace detail {

result<long long> eval(const expr& e, const env& vars, const std::string& source) {
  const std::string where = source + ":" + std::to_string(e->line) + ":" + std::to_string(e->col) + ": ";
  switch (e->t) {
    case expr_node::type::number: return e->value;
    case expr_node::type::name: {
      auto it = vars.find(e->id);
      if (it == vars.end())
        return error{errc::invalid,
                     where + "unknown name `" + e->id + "` (known: p, m, v, r inside rank sequences, and `let` names)"};
      return it->second;
    }
    case expr_node::type::negate: {
      auto x = eval(e->args[0], vars, source);
      if (!x) return x;
      return -*x;
    }
    case expr_node::type::binary: {
      auto a = eval(e->args[0], vars, source);
      if (!a) return a;
      auto b = eval(e->args[1], vars, source);
      if (!b) return b;
      switch (e->op) {
        case '+': return *a + *b;
        case '-': return *a - *b;
        case '*': return *a * *b;
        case '|': return static_cast<long long>(*a != 0 || *b != 0);
        case '&': return static_cast<long long>(*a != 0 && *b != 0);
        case '=': return static_cast<long long>(*a == *b);
        case '!': return static_cast<long long>(*a != *b);
        case 'l': return static_cast<long long>(*a <= *b);
        case 'g': return static_cast<long long>(*a >= *b);
        case '<': return static_cast<long long>(*a < *b);
        case '>': return static_cast<long long>(*a > *b);
        case '/':
        case '%': {
          if (*b == 0) return error{errc::invalid, where + "division by zero"};
          // A negative divisor would give a negative remainder (or, truncating, a surprising one):
          // `%` is for wrapping indices, so it is refused rather than given a rule nobody expects.
          if (e->op == '%' && *b < 0)
            return error{errc::invalid,
                         where + "`%` by a negative divisor (" + std::to_string(*b) + "); `%` takes a positive one"};
          // Floor division and a non-negative remainder, so (r - 1) % p wraps like a rank index.
          long long q = *a / *b, rem = *a % *b;
          if (rem != 0 && ((rem < 0) != (*b < 0))) --q, rem += *b;
          return e->op == '/' ? q : rem;
        }
      }
      return error{errc::invalid, where + "unknown operator"};
    }
    case expr_node::type::call: {
      std::vector<long long> xs;
      for (const auto& a : e->args) {
        auto x = eval(a, vars, source);
        if (!x) return x;
        xs.push_back(*x);
      }
      if (e->id == "min" || e->id == "max") {
        long long best = xs[0];
        for (long long x : xs) best = e->id == "min" ? std::min(best, x) : std::max(best, x);
        return best;
      }
      return error{errc::invalid, where + "unknown function `" + e->id + "` (known: min, max)"};
    }
  }
  return error{errc::invalid, where + "bad expression"};
}

}  // namespace detail
}  // namespace banyan::pipeline
