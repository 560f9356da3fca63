// The schedule DSL: a short program, parametric in p (ranks), m (microbatches) and v (chunks per
// rank), that says in which order each rank runs its forwards and backwards. compile() turns it into
// an action table (action.hpp). Grammar and semantics: docs/pipeline.md. A taste (1F1B):
//
//   name "1f1b"
//   rank all: F^(p-1-r) (F B)* B*
//
// `F` takes the rank's next forward unit (chunk, microbatch) in the program's unit order, `B`/`I` the
// next backward unit, `W` the oldest backward-input whose weight gradient is pending; `F[c]` etc. pick
// from local chunk c, `B[desc]`, `B[c, desc]` take microbatches from the highest down. `X*` repeats X
// while all of it can run, `X^n` at most n times, `X?` at most once; a plain item that cannot run
// where it stands is a compile error naming it.
//
// Values: a program is an immutable, copyable AST; compile() is pure. Errors carry
// "<source>:<line>:<col>: ..." for parse errors and the rank line for compile errors.
// Nesting (groups, parentheses, unary `-`, operator chains) deeper than 100 levels is a parse error,
// so parsing, compiling and evaluating any input use a bounded stack (under 512 KiB at the limit).
#pragma once

#include <banyan/pipeline/action.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace banyan::pipeline {

enum class placement { loop, vshape };  // loop: stage = c*p + r; vshape: odd chunks run backwards

struct expr_node;
using expr = std::shared_ptr<const expr_node>;

struct seq_item {
  enum class repeat { once, star, count };
  bool is_group = false;
  kind op = kind::F;               // when !is_group
  expr chunk;                      // optional `[c]`
  bool descending = false;         // `[desc]` or `[c, desc]`: microbatches from the highest down
  std::vector<seq_item> children;  // when is_group
  repeat rep = repeat::once;
  expr count;  // when rep == count (`X?` is `X^1`)
  int line = 0, col = 0;
  std::string text;  // the item as written, for errors
};

struct rank_rule {
  expr lo, hi;  // null lo = all ranks
  std::vector<seq_item> sequence;
  int line = 0;
};

struct program {
  std::string name;
  std::string doc;
  expr chunks;  // null = 1
  expr group;   // null = p
  placement place = placement::loop;
  std::vector<std::pair<std::string, expr>> lets;
  std::vector<expr> requires_;  // `require` conditions on p, m, v (`requires` is a C++20 keyword)
  std::vector<rank_rule> rules;
  std::string source;  // file name for errors
};

struct shape {
  int p = 1;  // ranks
  int m = 1;  // microbatches
  int v = 1;  // chunks per rank (programs may fix it: `chunks 2`)
};

result<program> parse_program(std::string_view text, const std::string& source = "program");
result<table> compile(const program& prog, const shape& s);

// Chunks per rank the program uses for shape s (evaluates `chunks`).
result<int> chunks_of(const program& prog, const shape& s);

// Writes `t` as an explicit per-rank program (`rank 0: F^3 B ...`) that compiles back to exactly `t`.
// Requires, per rank and chunk, each forward and backward to take the lowest or the highest microbatch
// not yet issued (`[desc]`), and W in the order of their I (true for every compiled table and every
// searched one); errors name the action.
result<std::string> explicit_program(const table& t, int p, int v, placement place, const std::string& name);

// The programs that ship with banyan (programs/*.pipe, embedded): gpipe, 1f1b, interleaved-1f1b,
// looped-bfs, zb-h1, zb-h2, zb-v and custom variants.
struct builtin {
  std::string name;
  std::string text;
};
const std::vector<builtin>& builtin_programs();
const builtin* find_builtin(std::string_view name);

}  // namespace banyan::pipeline
