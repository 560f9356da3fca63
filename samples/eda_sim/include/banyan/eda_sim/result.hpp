// Errors a caller can act on come back as values. The message names the input (file, module, cell,
// signal) and where in it the problem is, so a CLI can print it verbatim.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace banyan::eda {

enum class errc {
  yosys_failed,      // yosys rejected the Verilog (message is yosys's own) or could not run
  bad_netlist,       // the JSON is not what yosys writes
  unsupported,       // a construct outside the supported subset (latch, second clock, memory, ...)
  bad_stimulus,      // the stimulus file or options are malformed
  combinational_loop,
  reference_failed,  // iverilog / vvp failed or wrote something unreadable
  io,                // a file could not be read or written
};

struct error {
  errc code;
  std::string message;
};

// A value or an error; a minimal stand-in for C++23 std::expected.
template <class T>
class result {
 public:
  result(T value) : v_(std::move(value)) {}  // NOLINT: implicit on purpose, like expected
  result(error e) : v_(std::move(e)) {}      // NOLINT
  explicit operator bool() const { return v_.index() == 0; }
  T& operator*() { assert(*this); return std::get<0>(v_); }
  const T& operator*() const { assert(*this); return std::get<0>(v_); }
  T* operator->() { return &**this; }
  const T* operator->() const { return &**this; }
  const error& err() const { assert(!*this); return std::get<1>(v_); }

 private:
  std::variant<T, error> v_;
};

// For operations that return nothing but may fail.
struct ok_t {};
using status = result<ok_t>;
inline status ok() { return ok_t{}; }

}  // namespace banyan::eda
