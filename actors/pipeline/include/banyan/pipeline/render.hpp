// Pictures of a simulated schedule. Both need a sim_result with events (sim_options::record_events).
// Time is in the costs' unit; `us_per_unit` converts it to the microseconds trace viewers expect
// (default 1000: one cost unit shows as one millisecond).
#pragma once

#include <banyan/pipeline/simulate.hpp>

#include <string>

namespace banyan::pipeline {

// Chrome trace event JSON (chrome://tracing, ui.perfetto.dev): one track per rank, one complete
// ("X") event per compute action (name "2F0", category F/B/I/W) and per RECV wait (category comm).
std::string chrome_trace(const sim_result& sim, double us_per_unit = 1000);

// A standalone SVG Gantt chart: one row per rank, F blue, B green, I teal, W orange, labelled with
// stage.microbatch where there is room, a time axis, and the makespan and bubble in the title.
std::string svg_gantt(const sim_result& sim, const std::string& title);

}  // namespace banyan::pipeline
