// partition_bench --families: the quality sweep over the partitioner's instance families
// (banyan/partitioner/families.hpp), bottom-up against the proven optimum, METIS and greedy.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

struct family_sweep_options {
  std::size_t instances = 84;
  std::size_t components = 24;
  std::uint64_t first_seed = 1;
  double exact_time_limit_s = 10;
  std::string results;  // JSON rows, when not empty
};

// Prints one line per instance and the per-family tables; returns the process exit code.
int run_family_sweep(const family_sweep_options& o);
