// Writing a profile (docs/formats.md); profile_read.cpp reads it.
//
// The fields the tree model holds, in the broker's key order and number format (nlohmann-json's:
// the shortest text that reads back as the same double), so a value written here reads back
// exactly, by this library's reader and by the broker's. The layout differs from the broker's (one
// component per line, to keep 10^6-component files small); tests/support/golden_profile_tree.json
// is this writer's reference.
#include "banyan/partitioner/io.hpp"

#include "detail.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <ostream>
#include <string>

namespace banyan::partitioner {

namespace {

using json = nlohmann::json;

std::string quoted(const std::string& s) { return json(s).dump(); }

// A load or duration: a double, as the broker writes one (`0.0`, `0.0021`, `1e-06`).
std::string real(double x) { return json(x).dump(); }

// A count (messages, bytes, memory): the broker holds these as integers and writes `800`, not
// `800.0`; a fraction (a hand-made weight) stays a double.
std::string count(double x) {
  if (x >= 0 && x < 18446744073709551616.0 && x == std::floor(x)) return json(static_cast<std::uint64_t>(x)).dump();
  return real(x);
}

}  // namespace

void write_profile(std::ostream& out, const tree& t, const std::string& mode) {
  // Streamed rather than built as one json value: a 10^6-component tree would need GBs.
  out << "{\n  \"format\": \"banyan-profile\", \"version\": 1, \"mode\": " << quoted(mode)
      << ",\n  \"components\": [\n";
  const detail::children ch(t);
  for (std::size_t v = 0; v < t.size(); ++v) {
    const auto x = static_cast<vertex_id>(v);
    out << "    {\"path\": " << quoted(t.name(x)) << ", \"parent\": " << (v == 0 ? "null" : quoted(t.name(t.parent[v])))
        << ", \"kind\": \"" << (ch.count(x) ? "composite" : "leaf") << "\", \"load\": {\"cpu\": " << real(t.cpu[v]);
    if (t.has_memory()) out << ", \"memory\": " << count(t.memory[v]);
    out << "}}" << (v + 1 < t.size() ? ",\n" : "\n");
  }
  out << "  ],\n  \"edges\": [";
  bool first = true;
  for (std::size_t v = 1; v < t.size(); ++v) {
    if (t.weight[v] == 0) continue;
    out << (first ? "\n" : ",\n") << "    {\"parent\": " << quoted(t.name(t.parent[v]))
        << ", \"child\": " << quoted(t.name(static_cast<vertex_id>(v))) << ", \"messages\": " << count(t.weight[v])
        << "}";
    first = false;
  }
  out << (first ? "]\n}\n" : "\n  ]\n}\n");
}

}  // namespace banyan::partitioner
