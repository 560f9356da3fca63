// Errors a caller can act on, as values. Every message names the input and where in it the problem
// is ("zb-h1.pipe:3:14: expected `)`", "rank 2 step 5 (1B3): ..."), so a CLI can print it verbatim.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace banyan::pipeline {

struct error {
  std::string message;
};

// A value or an error (std::expected is C++23). Accessing the wrong alternative is a bug (throws
// std::bad_variant_access), never an ordinary outcome: check ok() first.
template <class T>
class result {
 public:
  result(T value) : v_(std::move(value)) {}          // NOLINT: implicit by design
  result(error e) : v_(std::move(e)) {}              // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const error& err() const { return std::get<1>(v_); }

 private:
  std::variant<T, error> v_;
};

}  // namespace banyan::pipeline
