#include "banyan/command.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace banyan::cli {
namespace {
std::vector<command>& registry() {
  static std::vector<command> all;
  return all;
}
}  // namespace

bool register_command(command c) {
  auto& all = registry();
  for (const auto& existing : all) {
    if (existing.name == c.name) {
      std::fprintf(stderr, "banyan: subcommand '%s' registered twice\n", c.name.c_str());
      std::abort();  // a build bug, not a user error
    }
  }
  all.push_back(std::move(c));
  std::sort(all.begin(), all.end(), [](const command& a, const command& b) { return a.name < b.name; });
  return true;
}

const std::vector<command>& commands() { return registry(); }

}  // namespace banyan::cli
