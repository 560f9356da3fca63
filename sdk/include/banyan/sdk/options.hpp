// An app's command-line options, declared beside banyan's own and spelled as docs/cli.md says.
// The SDK parses them (with CLI11, kept inside the SDK); apps see only this header.
//
//   struct config { int messages = 1000; std::chrono::milliseconds pause{0}; std::vector<int> sizes{16};
//                   bool verbose = false; };
//   config c;
//   banyan::app app{"mesh"};
//   app.options().add("--messages", c.messages, "Messages per publisher").positive();
//   app.options().add("--pause", c.pause, "Wait between two messages");
//   app.options().add("--sizes", c.sizes, "Payload sizes in bytes");
//   app.options().add("--verbose", c.verbose, "Say more");
//   if (auto exit_code = app.options().parse(argc, argv)) return *exit_code;  // see parse()
//   ... build the tree from c ...
//   return banyan::run(app, argc, argv);
//
// Value types: integers, floating point, std::string, bool (a flag: given means true),
// std::chrono durations (`250ms`, `2s`, `1.5m`, `1h`, or a bare number of seconds; millisecond
// resolution), and std::vector of any of these but bool (a comma list, `--sizes 16,64`; given, it
// replaces the default). What the variable holds when add() is called is the default --help shows.
//
// Thread-safety: none; use from main(), before banyan::run. Variables given to add() must outlive
// the last parse, and the run when a component was added with them (app.hpp: such an argument is
// read when the component is built, so it sees the parsed value).
#pragma once

#include "banyan/base/duration.hpp"

#include <charconv>
#include <chrono>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace banyan {

class app;

namespace detail {

struct command_line;

// How one option's text becomes its value; made by options::add.
struct option_binding {
  std::string type;          // shown in --help: INT, NUMBER, TEXT, DURATION
  std::string default_text;  // shown in --help; empty: none
  bool flag = false;         // bool: takes no value
  bool list = false;         // a comma list; `reset` runs before its first item
  bool positive = false;     // numbers and durations must be > 0
  std::function<void()> reset;
  // Parses one value (or one list item) into the variable; returns what is wrong, if anything.
  std::function<std::optional<std::string>(std::string_view text, bool positive)> parse;
  std::function<void(bool)> set_flag;
  const void* variable = nullptr;  // the bound variable (see holds_option_variable)
};

// Whether [begin, begin + size) is, or holds, a variable bound to a command-line option of a live
// banyan::options (app.hpp reads such constructor arguments when it builds the component, after the
// command line was parsed, instead of copying them before).
bool holds_option_variable(const void* begin, std::size_t size);

template <class T>
inline constexpr bool is_duration = false;
template <class Rep, class Period>
inline constexpr bool is_duration<std::chrono::duration<Rep, Period>> = true;

template <class T>
concept option_scalar = (std::integral<T> && !std::same_as<T, bool>) || std::floating_point<T> ||
                        std::same_as<T, std::string> || is_duration<T>;

template <option_scalar T>
std::optional<std::string> parse_option_value(std::string_view text, T& out, bool positive) {
  const std::string quoted = "`" + std::string(text) + "`";
  if constexpr (std::same_as<T, std::string>) {
    out = std::string(text);
  } else if constexpr (is_duration<T>) {
    auto d = parse_duration(text);
    if (!d) return d.error().message;
    if (positive && d->count() <= 0) return "must be longer than 0, got " + quoted;
    out = std::chrono::duration_cast<T>(*d);
  } else {
    T v{};
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec == std::errc::result_out_of_range) return quoted + " is out of range";
    if (ec != std::errc{} || end != text.data() + text.size() || text.empty())
      return std::string(std::integral<T> ? "expected an integer" : "expected a number") + ", got " + quoted;
    if constexpr (std::floating_point<T>) {
      if (!std::isfinite(v)) return "expected a finite number, got " + quoted;
    }
    if (positive && !(v > 0)) return "must be positive, got " + quoted;
    out = v;
  }
  return std::nullopt;
}

template <option_scalar T>
std::string option_text(const T& v) {
  if constexpr (std::same_as<T, std::string>) {
    return v;
  } else if constexpr (is_duration<T>) {
    return format_duration(std::chrono::duration_cast<std::chrono::milliseconds>(v));
  } else if constexpr (std::integral<T>) {
    return std::to_string(v);
  } else {
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    return ec == std::errc{} ? std::string(buf, end) : std::string();
  }
}

template <option_scalar T>
const char* option_type() {
  if constexpr (std::same_as<T, std::string>) return "TEXT";
  else if constexpr (is_duration<T>) return "DURATION";
  else if constexpr (std::integral<T>) return "INT";
  else return "NUMBER";
}

}  // namespace detail

class options {
 public:
  // The option just added, to refine it.
  class option {
   public:
    // Numbers and durations (each item of a list too) must be > 0.
    option& positive() {
      binding_->positive = true;
      return *this;
    }

   private:
    friend class options;
    explicit option(detail::option_binding* b) : binding_(b) {}
    detail::option_binding* binding_;
  };

  ~options();
  options(options&&) noexcept;
  options& operator=(options&&) noexcept;

  // The text --help prints above the options.
  void description(std::string text);

  template <detail::option_scalar T>
  option add(std::string name, T& value, std::string help) {
    detail::option_binding b;
    b.type = detail::option_type<T>();
    b.default_text = detail::option_text(value);
    b.parse = [&value](std::string_view text, bool positive) {
      return detail::parse_option_value(text, value, positive);
    };
    b.variable = &value;
    return add_binding(std::move(name), std::move(help), std::move(b));
  }
  template <detail::option_scalar T>
  option add(std::string name, std::vector<T>& value, std::string help) {
    detail::option_binding b;
    b.type = std::string(detail::option_type<T>()) + ",...";
    for (const auto& v : value) b.default_text += (b.default_text.empty() ? "" : ",") + detail::option_text(v);
    b.list = true;
    b.reset = [&value] { value.clear(); };
    b.parse = [&value](std::string_view text, bool positive) {
      T item{};
      auto wrong = detail::parse_option_value(text, item, positive);
      if (!wrong) value.push_back(std::move(item));
      return wrong;
    };
    b.variable = &value;
    return add_binding(std::move(name), std::move(help), std::move(b));
  }
  option add(std::string name, bool& value, std::string help) {
    detail::option_binding b;
    b.flag = true;
    b.set_flag = [&value](bool on) { value = on; };
    b.variable = &value;
    return add_binding(std::move(name), std::move(help), std::move(b));
  }

  // Parses argv: the app's options and banyan's (--mode, --threads, --run-for, --deployment, ...).
  // Returns nothing when the program should go on; 0 after printing --help (every option, the app's
  // and banyan's); 2 after printing what is wrong (a bad value, an unknown option, a missing value)
  // and a hint to --help. banyan::run(app, argc, argv) calls it itself: call it earlier only to use
  // the values before the tree is built (run parses the same argv again, to the same values).
  std::optional<int> parse(int argc, char** argv);

 private:
  friend class app;
  friend int run(app& application, int argc, char** argv);
  explicit options(const std::string& app_name);
  option add_binding(std::string name, std::string help, detail::option_binding b);

  std::unique_ptr<detail::command_line> impl_;
};

}  // namespace banyan
