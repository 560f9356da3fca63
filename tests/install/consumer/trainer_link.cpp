// Proves that the installed banyan::trainer and banyan::cpu (and banyan::nn below them) link into a
// user's program: adds the trainers' common options to an app and places workers on a made-up machine.
#include <banyan/cpu/topology.hpp>
#include <banyan/sdk/app.hpp>
#include <banyan/trainer/options.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  banyan::app app{"train"};
  banyan::trainer::common_options common;
  banyan::trainer::add_common_options(app.options(), common);
  if (auto code = app.options().parse(argc, argv)) return *code;
  auto machine = banyan::cpu::topology::synthetic("pack:1 numa:2 core:2 pu:1");
  if (!machine) {
    std::fprintf(stderr, "%s\n", machine.error().what());
    return 1;
  }
  std::printf("trainer backend %s on %s\n", common.backend.c_str(), machine->summary().c_str());
  return 0;
}
