// Errors as values at banyan's module boundaries (CAF's `expected`, KJ's faults-vs-bugs split).
//
// An `error` is something a caller can act on: bad input, a timeout, a missing component. Its message
// names the input and says where it is wrong. Broken invariants are bugs and are asserted instead.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace banyan {

enum class errc {
  invalid_topic,     // a topic or topic filter that does not parse
  invalid_scope,     // a scope that is not an ancestor of the publisher
  no_such_component, // a path that names no component
  invalid_payload,   // a payload that fails Cap'n Proto validation
  timeout,           // a request that got no reply in time
  request_failed,    // the callee failed or refused the request
  invalid_argument,  // any other malformed input (command line, config)
  io,                // a file that cannot be read or written
};

const char* to_string(errc code);

struct error {
  errc code;
  std::string message;

  std::string what() const { return std::string(to_string(code)) + ": " + message; }
  friend bool operator==(const error&, const error&) = default;
};

// Either a T or an error. Kept small on purpose: C++20 has no std::expected.
template <class T>
class [[nodiscard]] result {
 public:
  result(T value) : state_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  result(banyan::error err) : state_(std::move(err)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { assert(ok()); return std::get<0>(state_); }
  const T& value() const& { assert(ok()); return std::get<0>(state_); }
  T&& value() && { assert(ok()); return std::get<0>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const banyan::error& error() const { assert(!ok()); return std::get<1>(state_); }

 private:
  std::variant<T, banyan::error> state_;
};

// The result of an operation that returns nothing on success.
template <>
class [[nodiscard]] result<void> {
 public:
  result() = default;
  result(banyan::error err) : error_(std::move(err)), failed_(true) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const banyan::error& error() const { assert(failed_); return error_; }

 private:
  banyan::error error_{};
  bool failed_ = false;
};

}  // namespace banyan
