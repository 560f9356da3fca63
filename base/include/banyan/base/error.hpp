// Errors as values at every banyan module boundary (CAF's `error` with one code enum per module).
//
// An `error` is something a caller can act on: bad input, a timeout, a missing component, a solver
// that gave up. Its message names the input and says where it is wrong ("topic `a/#/b`: `#` must be
// the last level"), so a tool prints it as is. Broken invariants are bugs and are asserted instead.
//
// Each module declares one code enum and registers it with BANYAN_ERROR_ENUM; an error carries the
// enum's module name and value, so a caller can ask `e.code == nn::errc::io` or switch exhaustively on
// `e.code.as<nn::errc>()` without knowing which module's enum it is in advance. Values, copyable,
// compared by value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace banyan {

// Specialised by BANYAN_ERROR_ENUM for each module's code enum.
template <class Enum>
struct error_enum_traits;

template <class Enum>
concept error_enum = std::is_enum_v<Enum> && requires {
  { error_enum_traits<Enum>::module } -> std::convertible_to<std::string_view>;
  { error_enum_traits<Enum>::name(Enum{}) } -> std::convertible_to<std::string_view>;
};

// A module's code: the module's name ("broker", "nn", ...) and the enum value. Converts implicitly
// from any registered enum, so `error{nn::errc::io, "..."}` and `e.code == nn::errc::io` read naturally.
class error_code {
 public:
  template <error_enum Enum>
  error_code(Enum code)  // NOLINT(google-explicit-constructor): implicit by design
      : module_(error_enum_traits<Enum>::module),
        name_(error_enum_traits<Enum>::name(code)),
        value_(static_cast<std::uint32_t>(code)) {}

  std::string_view module() const { return module_; }
  // The code's short description from the module's to_string, e.g. "invalid topic".
  std::string_view name() const { return name_; }

  // The code as `Enum` when it comes from Enum's module; nullopt when another module raised it.
  template <error_enum Enum>
  std::optional<Enum> as() const {
    if (module_ != std::string_view(error_enum_traits<Enum>::module)) return std::nullopt;
    return static_cast<Enum>(value_);
  }

  friend bool operator==(const error_code& a, const error_code& b) {
    return a.value_ == b.value_ && a.module_ == b.module_;
  }
  template <error_enum Enum>
  friend bool operator==(const error_code& a, Enum b) {
    return a == error_code(b);
  }

 private:
  std::string_view module_;  // static storage: the traits' literals
  std::string_view name_;
  std::uint32_t value_;
};

struct error {
  error_code code;
  std::string message;

  // "invalid topic: topic `a/#/b`: `#` must be the last level"
  std::string what() const { return std::string(code.name()) + ": " + message; }
  friend bool operator==(const error&, const error&) = default;
};

}  // namespace banyan

// Registers `Enum` (fully qualified) as module `module_name`'s error codes. Use it at global scope.
// `to_string(Enum)` must be findable by argument-dependent lookup and return the code's short
// description in lower case ("invalid topic", "i/o error"), with static storage.
#define BANYAN_ERROR_ENUM(Enum, module_name)                            \
  template <>                                                           \
  struct banyan::error_enum_traits<Enum> {                              \
    static constexpr const char* module = module_name;                  \
    static std::string_view name(Enum code) { return to_string(code); } \
  }
