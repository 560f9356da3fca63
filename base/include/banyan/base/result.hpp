// Either a value or an `error`: banyan's one result type (C++20 has no std::expected).
//
// Spelled like C++23's std::expected (has_value, value, error, *, ->) so that it can become an alias
// of it later. Marked [[nodiscard]]: ignoring a result is a bug the compiler reports. Reading the
// wrong side (value() of an error, error() of a value) is a bug and asserts.
#pragma once

#include "banyan/base/error.hpp"

#include <cassert>
#include <utility>
#include <variant>

namespace banyan {

template <class T>
class [[nodiscard]] result {
 public:
  result(T value) : state_(std::move(value)) {}          // NOLINT(google-explicit-constructor)
  result(banyan::error err) : state_(std::move(err)) {}  // NOLINT(google-explicit-constructor)

  bool has_value() const { return state_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & {
    assert(has_value());
    return std::get<0>(state_);
  }
  const T& value() const& {
    assert(has_value());
    return std::get<0>(state_);
  }
  T&& value() && {
    assert(has_value());
    return std::get<0>(std::move(state_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const banyan::error& error() const& {
    assert(!has_value());
    return std::get<1>(state_);
  }
  banyan::error&& error() && {
    assert(!has_value());
    return std::get<1>(std::move(state_));
  }

 private:
  std::variant<T, banyan::error> state_;
};

// Success with nothing to return, or an error. `return {};` is success.
template <>
class [[nodiscard]] result<void> {
 public:
  result() = default;
  result(banyan::error err) : error_(std::move(err)) {}  // NOLINT(google-explicit-constructor)

  bool has_value() const { return !error_.has_value(); }
  explicit operator bool() const { return has_value(); }

  const banyan::error& error() const& {
    assert(!has_value());
    return *error_;
  }
  banyan::error&& error() && {
    assert(!has_value());
    return std::move(*error_);
  }

 private:
  std::optional<banyan::error> error_;
};

}  // namespace banyan
