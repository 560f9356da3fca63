// Errors a caller can act on, returned as values. Every message names the input and where it is
// wrong ("cluster.yaml:4:5: node `n1`: capacity.cpu must be a number"), so tools print it as is.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace banyan::partitioner {

enum class errc {
  io,                 // a file cannot be read or written
  parse,              // malformed JSON or YAML (message carries file:line:col)
  invalid,            // well-formed but wrong: missing field, negative load, bad link-cost matrix
  not_a_tree,         // cycle, two roots, unknown parent, duplicate path
  over_capacity,      // total load above total capacity, or a component heavier than every node
  unknown_algorithm,  // a name `make_algorithm` does not know
};

struct error {
  errc code;
  std::string message;
};

// A value or an error; a minimal std::expected (C++23) stand-in. Accessing the wrong alternative
// is a bug and asserts.
template <class T>
class result {
 public:
  result(T value) : v_(std::move(value)) {}
  result(error e) : v_(std::move(e)) {}

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & { assert(has_value()); return std::get<0>(v_); }
  const T& value() const& { assert(has_value()); return std::get<0>(v_); }
  T&& value() && { assert(has_value()); return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const error& err() const { assert(!has_value()); return std::get<1>(v_); }

 private:
  std::variant<T, error> v_;
};

// result<void>: success or an error.
struct ok_t {};
using status_or_error = result<ok_t>;

}  // namespace banyan::partitioner
