// Writes lane 0 as a VCD waveform (GTKWave opens it): the clock, the top ports and every public net
// of every instance, one $scope per instance.
//
// Timing matches the Icarus testbench (reference.hpp): cycle c's inputs and settled values at
// 10c+1 ns, rising edge at 10c+5, falling edge at 10c+10. Values between the edge and the next
// inputs are not shown (the simulator is cycle-based). A resource: move-only, owns the file.
#pragma once

#include <banyan/eda_sim/simulator.hpp>

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace banyan::eda {

class vcd_writer {
 public:
  static result<std::unique_ptr<vcd_writer>> open(const std::string& path, const design& d);
  void sample(std::uint64_t cycle, const simulator& sim);  // after settle, before the edge
  void finish(std::uint64_t cycles);

 private:
  struct signal {
    std::string id;
    std::vector<probe::location> bits;
    std::string last;
  };
  vcd_writer() = default;

  std::ofstream out_;
  std::string clock_id_;
  std::vector<signal> signals_;
};

}  // namespace banyan::eda
