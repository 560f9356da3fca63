// Errors a caller can act on, as values. Every message names the input and what is wrong with it
// ("checkpoint `run.ckpt`: checksum mismatch (stored 0x1234, computed 0x5678)").
// Broken invariants inside the engine (a shape mismatch between our own layers) are assertions, not
// errors: they are bugs, never reported here.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace banyan::nn {

enum class errc {
  invalid_argument,  // a config or option out of range
  io,                // a file is missing or cannot be read or written
  corrupt,           // a file's bytes are not what its format says (magic, size, checksum)
  mismatch,          // a well-formed file made for another model or config
  unsupported,       // a valid request this build or machine cannot serve (no CUDA, no GPU)
};

const char* to_string(errc code);

struct error {
  errc code;
  std::string message;
};

// An expected-like holder: either a T or an error. Accessing the wrong side is a bug (asserted).
template <class T>
class [[nodiscard]] result {
 public:
  result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design, like std::expected
  result(error e) : v_(std::move(e)) {}      // NOLINT
  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & { assert(has_value()); return std::get<0>(v_); }
  T&& value() && { assert(has_value()); return std::get<0>(std::move(v_)); }
  const T& value() const& { assert(has_value()); return std::get<0>(v_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const error& err() const { assert(!has_value()); return std::get<1>(v_); }

 private:
  std::variant<T, error> v_;
};

struct ok_t {};
inline constexpr ok_t ok{};
// For operations that return nothing on success.
using status = result<ok_t>;

inline error make_error(errc code, std::string message) { return error{code, std::move(message)}; }

}  // namespace banyan::nn
