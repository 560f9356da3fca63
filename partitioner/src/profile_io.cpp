// Writing a profile (docs/formats.md); profile_read.cpp reads it.
#include "banyan/partitioner/io.hpp"

#include "detail.hpp"

#include <nlohmann/json.hpp>

#include <iomanip>

namespace banyan::partitioner {

void write_profile(std::ostream& out, const tree& t, const std::string& mode) {
  using json = nlohmann::json;
  // Streamed by hand rather than through a json object: a 10^6-component tree would need GBs.
  auto q = [](const std::string& s) { return json(s).dump(); };
  out << "{\n  \"format\": \"banyan-profile\", \"version\": 1, \"mode\": " << q(mode) << ",\n  \"components\": [\n";
  out << std::setprecision(9);
  const detail::children ch(t);
  for (std::size_t v = 0; v < t.size(); ++v) {
    const auto x = static_cast<vertex_id>(v);
    out << "    {\"path\": " << q(t.name(x)) << ", \"parent\": " << (v == 0 ? "null" : q(t.name(t.parent[v])))
        << ", \"kind\": \"" << (ch.count(x) ? "composite" : "leaf") << "\", \"load\": {\"cpu\": " << t.cpu[v];
    if (t.has_memory()) out << ", \"memory\": " << t.memory[v];
    out << "}}" << (v + 1 < t.size() ? ",\n" : "\n");
  }
  out << "  ],\n  \"edges\": [\n";
  bool first = true;
  for (std::size_t v = 1; v < t.size(); ++v) {
    if (t.weight[v] == 0) continue;
    out << (first ? "" : ",\n") << "    {\"parent\": " << q(t.name(t.parent[v])) << ", \"child\": " << q(t.name(static_cast<vertex_id>(v)))
        << ", \"messages\": " << t.weight[v] << "}";
    first = false;
  }
  out << "\n  ]\n}\n";
}

}  // namespace banyan::partitioner
