// Private: expression nodes of the DSL and their evaluation.
#pragma once

#include <banyan/pipeline/dsl.hpp>

#include <algorithm>
#include <map>
#include <optional>

namespace banyan::pipeline {

struct expr_node {
  enum class type { number, name, binary, negate, call };
  type t = type::number;
  long long value = 0;
  std::string id;          // name, or function for call
  char op = 0;             // + - * / %
  std::vector<expr> args;  // binary: lhs, rhs; negate: operand; call: arguments
  int line = 0, col = 0;
  int depth = 1;  // levels of this tree: eval() recurses this deep (the parser bounds it)
};

namespace detail {

// The parser refuses nesting deeper than this (parentheses, groups, unary `-`, and operator chains
// such as `1+1+...`, whose tree is as deep as the chain is long), so the parser, compile() and eval(),
// which recurse once per level, cannot overflow the stack on any input. Real programs nest a few levels.
inline constexpr int max_nesting = 100;

using env = std::map<std::string, long long, std::less<>>;
// Errors name "<source>:<line>:<col>".
result<long long> eval(const expr& e, const env& vars, const std::string& source);

}  // namespace detail
}  // namespace banyan::pipeline
