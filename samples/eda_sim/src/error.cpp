#include <banyan/eda_sim/error.hpp>

namespace banyan::eda {

const char* to_string(errc code) {
  switch (code) {
    case errc::yosys_failed: return "yosys failed";
    case errc::bad_netlist: return "bad netlist";
    case errc::unsupported: return "unsupported construct";
    case errc::bad_stimulus: return "bad stimulus";
    case errc::combinational_loop: return "combinational loop";
    case errc::reference_failed: return "reference simulation failed";
    case errc::io: return "i/o error";
    case errc::compile_failed: return "compiling the design failed";
  }
  return "unknown";
}

}  // namespace banyan::eda
