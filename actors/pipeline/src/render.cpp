#include <banyan/pipeline/render.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace banyan::pipeline {

std::string chrome_trace(const sim_result& sim, double us_per_unit) {
  nlohmann::json events = nlohmann::json::array();
  const int ranks = static_cast<int>(sim.busy.size());
  for (int r = 0; r < ranks; ++r)
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", r},
                      {"args", {{"name", "rank " + std::to_string(r)}}}});
  for (const auto& e : sim.events) {
    const bool comm = !is_compute(e.a.op);
    if (comm && !(e.a.op == kind::recv_f || e.a.op == kind::recv_b)) continue;  // sends take no rank time
    if (comm && e.end <= e.start) continue;                                     // no wait
    events.push_back({{"name", to_string(e.a)},
                      {"cat", comm ? std::string("comm") : std::string(kind_name(e.a.op))},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", e.rank},
                      {"ts", e.start * us_per_unit},
                      {"dur", (e.end - e.start) * us_per_unit},
                      {"args", {{"stage", e.a.stage}, {"microbatch", e.a.microbatch}}}});
  }
  nlohmann::json doc{
      {"traceEvents", events},
      {"displayTimeUnit", "ms"},
      {"otherData",
       {{"makespan", sim.makespan}, {"bubble_ratio", sim.bubble_ratio}, {"span_bubble_ratio", sim.span_bubble_ratio}}}};
  return doc.dump(1) + "\n";
}

namespace {
std::string fmt(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", x);
  return buf;
}
std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}
const char* colour(kind k) {
  switch (k) {
    case kind::F: return "#4c78a8";
    case kind::B: return "#54a24b";
    case kind::I: return "#72b7b2";
    case kind::W: return "#f58518";
    default: return "#bbbbbb";
  }
}
}  // namespace

std::string svg_gantt(const sim_result& sim, const std::string& title) {
  const int ranks = static_cast<int>(sim.busy.size());
  const double left = 70, top = 40, row = 28, width = 1100, chart = width - left - 20;
  const double span = sim.makespan > 0 ? sim.makespan : 1;
  const double height = top + ranks * row + 60;
  auto x = [&](double t) { return left + chart * t / span; };
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt(width) + "\" height=\"" + fmt(height) +
                  "\" font-family=\"sans-serif\" font-size=\"10\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += "<text x=\"" + fmt(left) + "\" y=\"20\" font-size=\"13\">" + escape(title) + " — makespan " + fmt(sim.makespan) +
       ", bubble " + fmt(100 * sim.bubble_ratio) + "% (global), " + fmt(100 * sim.span_bubble_ratio) +
       "% (span)</text>\n";
  for (int r = 0; r < ranks; ++r) {
    const double y = top + r * row;
    s += "<text x=\"8\" y=\"" + fmt(y + row / 2 + 4) + "\">rank " + std::to_string(r) + "</text>\n";
    s += "<rect x=\"" + fmt(left) + "\" y=\"" + fmt(y + 2) + "\" width=\"" + fmt(chart) + "\" height=\"" +
         fmt(row - 4) + "\" fill=\"#f2f2f2\"/>\n";
  }
  for (const auto& e : sim.events) {
    if (!is_compute(e.a.op) || e.end <= e.start) continue;
    const double y = top + e.rank * row, x0 = x(e.start), w = std::max(0.5, x(e.end) - x0);
    s += "<rect x=\"" + fmt(x0) + "\" y=\"" + fmt(y + 2) + "\" width=\"" + fmt(w) + "\" height=\"" + fmt(row - 4) +
         "\" fill=\"" + colour(e.a.op) + "\" stroke=\"white\" stroke-width=\"0.5\"><title>" + to_string(e.a) + " " +
         fmt(e.start) + "–" + fmt(e.end) + "</title></rect>\n";
    const std::string label = std::to_string(e.a.stage) + "." + std::to_string(e.a.microbatch);
    if (w > 6.0 * static_cast<double>(label.size()))
      s += "<text x=\"" + fmt(x0 + w / 2) + "\" y=\"" + fmt(y + row / 2 + 3) +
           "\" text-anchor=\"middle\" fill=\"white\">" + label + "</text>\n";
  }
  // Time axis with about ten ticks at round values.
  const double raw = span / 10, mag = std::pow(10, std::floor(std::log10(raw)));
  const double step = raw / mag < 2 ? 2 * mag : raw / mag < 5 ? 5 * mag : 10 * mag;
  const double axis_y = top + ranks * row + 12;
  for (double t = 0; t <= span + 1e-9; t += step) {
    s += "<line x1=\"" + fmt(x(t)) + "\" y1=\"" + fmt(top) + "\" x2=\"" + fmt(x(t)) + "\" y2=\"" + fmt(axis_y - 8) +
         "\" stroke=\"#ddd\" stroke-width=\"0.5\"/>\n";
    s += "<text x=\"" + fmt(x(t)) + "\" y=\"" + fmt(axis_y + 4) + "\" text-anchor=\"middle\">" + fmt(t) + "</text>\n";
  }
  double lx = left;
  for (kind k : {kind::F, kind::B, kind::I, kind::W}) {
    s += "<rect x=\"" + fmt(lx) + "\" y=\"" + fmt(axis_y + 12) + "\" width=\"10\" height=\"10\" fill=\"" + colour(k) +
         "\"/>";
    s += "<text x=\"" + fmt(lx + 14) + "\" y=\"" + fmt(axis_y + 21) + "\">" + std::string(kind_name(k)) + "</text>\n";
    lx += 40;
  }
  s += "</svg>\n";
  return s;
}

}  // namespace banyan::pipeline
