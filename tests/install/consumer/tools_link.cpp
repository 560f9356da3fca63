// Proves that the other installed components link into a user's program with nothing but
// find_package(banyan): the partitioner (its solvers' libraries stay private), the pipeline schedules
// and the node transport.
#include <banyan/partitioner/algorithm.hpp>
#include <banyan/pipeline/action.hpp>
#include <banyan/runtime/transport.hpp>

#include <cstdio>

int main() {
  const auto algorithms = banyan::partitioner::algorithm_names();
  const auto forward = banyan::pipeline::parse_action("2F0");
  std::printf("%zu partitioning algorithms; pipeline action %s\n", algorithms.size(),
              forward ? banyan::pipeline::to_string(*forward).c_str() : "unparsed");
  return algorithms.empty() || !forward ? 1 : 0;
}
