// Graphviz rendering of a mapping: components filled with their node's colour, cut edges red.
#include "banyan/partitioner/io.hpp"

#include "detail.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>

namespace banyan::partitioner {
namespace {

const char* colour(node_id a) {
  static const char* palette[] = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462",
                                  "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f"};
  return palette[a % 12];
}

// A DOT string: quotes and backslashes escaped, a newline as DOT's line break `\n`.
std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// Plain notation for people: 20000 as `20,000`, 0.0021 as `0.0021`; 4 significant digits, and an
// exponent only outside 1e-6..1e15.
std::string num(double x) {
  const double a = std::fabs(x);
  if (x == 0) return "0";
  if (a < 1e-6 || a >= 1e15) return detail::format_number(x, 4);
  char buf[64];
  if (a >= 1000) {
    std::snprintf(buf, sizeof buf, "%.0f", std::round(x));
    std::string digits = buf, out;
    const bool negative = digits[0] == '-';
    if (negative) digits.erase(0, 1);
    for (std::size_t i = 0; i < digits.size(); ++i) {
      if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
      out += digits[i];
    }
    return negative ? "-" + out : out;
  }
  const int decimals = std::max(0, 3 - static_cast<int>(std::floor(std::log10(a))));
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  std::string out = buf;
  if (out.find('.') != std::string::npos) {
    while (out.back() == '0') out.pop_back();
    if (out.back() == '.') out.pop_back();
  }
  return out;
}

}  // namespace

void write_dot(std::ostream& out, const problem& p, const mapping& m, std::size_t max_vertices,
               const dot_units& units) {
  const auto& t = p.t;
  out << "digraph banyan {\n  rankdir=TB;\n  node [shape=box, style=filled, fontname=\"Helvetica\", fontsize=10];\n";
  out << "  label="
      << quote("boxes: component, load (" + units.load + "); red edges: cut, traffic (" + units.traffic + ")")
      << ";\n  labelloc=b;\n";
  out << "  subgraph cluster_legend {\n    label=\"nodes\";\n";
  for (std::size_t j = 0; j < p.k(); ++j) {
    out << "    legend" << j << " [label=" << quote(p.c.nodes[j].name) << ", fillcolor=\""
        << colour(static_cast<node_id>(j)) << "\"];\n";
  }
  out << "  }\n";
  if (t.size() <= max_vertices) {
    for (std::size_t v = 0; v < t.size(); ++v) {
      const auto x = static_cast<vertex_id>(v);
      std::string label = t.name(x);
      if (auto s = label.rfind('/'); s != std::string::npos && v > 0) label = label.substr(s + 1);
      out << "  v" << v << " [label=" << quote(label + "\n" + num(t.cpu[v]) + " " + units.load) << ", fillcolor=\""
          << colour(m[v]) << "\"];\n";
    }
    for (std::size_t v = 1; v < t.size(); ++v) {
      const bool cut = m[v] != m[t.parent[v]];
      out << "  v" << t.parent[v] << " -> v" << v;
      if (cut) out << " [color=red, penwidth=2, label=" << quote(num(t.weight[v]) + " " + units.traffic) << "]";
      out << ";\n";
    }
  } else {
    // Fragments: maximal connected same-node pieces, drawn as one box each.
    std::vector<std::int32_t> frag(t.size());
    std::vector<double> load;
    std::vector<vertex_id> top;
    for (std::size_t v = 0; v < t.size(); ++v) {
      if (v == 0 || m[v] != m[t.parent[v]]) {
        frag[v] = static_cast<std::int32_t>(top.size());
        top.push_back(static_cast<vertex_id>(v));
        load.push_back(0);
      } else {
        frag[v] = frag[t.parent[v]];
      }
      load[frag[v]] += t.cpu[v];
    }
    for (std::size_t f = 0; f < top.size(); ++f) {
      out << "  f" << f << " [label=" << quote(t.name(top[f]) + "\n" + num(load[f]) + " " + units.load)
          << ", fillcolor=\"" << colour(m[top[f]]) << "\"];\n";
      if (f > 0)
        out << "  f" << frag[t.parent[top[f]]] << " -> f" << f
            << " [color=red, label=" << quote(num(t.weight[top[f]]) + " " + units.traffic) << "];\n";
    }
  }
  out << "}\n";
}

}  // namespace banyan::partitioner
