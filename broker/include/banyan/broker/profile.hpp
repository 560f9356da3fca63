// The traffic profile of a run: the component tree with per-component load and per-edge traffic,
// exported as JSON for `banyan partition` (schema: docs/formats.md). The JSON travels as text: the
// JSON library is private to the broker.
#pragma once

#include "banyan/broker/routing.hpp"
#include "banyan/broker/tree.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace banyan {

// Durations on one fixed grid of buckets: [0, 1 us), then four per decade from 1 us up to 10^4 s
// (the last bucket also takes anything longer). Counts only, so profiles add up.
struct timing_histogram {
  static constexpr std::size_t buckets = 42;
  static double bound(std::size_t i);            // bucket i is [bound(i), bound(i + 1)) seconds
  static std::size_t bucket_of(double seconds);  // where a duration goes
  std::vector<std::uint64_t> counts;             // empty, or `buckets` counts
  bool empty() const;
  // The buckets from the first to the last with a count: [first, last) (first == last: none).
  std::pair<std::size_t, std::size_t> used() const;
  void add(const timing_histogram& other);
  void subtract(const timing_histogram& earlier);  // clamped at 0
};

enum class timing_kind : std::uint8_t {
  start,  // a (re)start of the component's subtree, from its supervisor's spawn until it started
  reply,  // a request to it, from the requester's send until the reply came back
  held,   // a message or request that reached it asleep, from then until its woken subtree got it
};

struct component_load {
  std::uint64_t messages = 0;           // messages handled (deliveries, requests, posted work)
  double cpu_seconds = 0;               // time the component's actor ran: its handlers and the work done for them
  std::uint64_t memory = 0;             // bytes, when the component reports it
  timing_histogram start, reply, held;  // measured durations (timing_kind), on the fixed grid
  // The histograms with their JSON names, in timing_kind's order.
  auto timings() {
    return std::array{std::pair{"start", &start}, std::pair{"reply", &reply}, std::pair{"held", &held}};
  }
  auto timings() const {
    return std::array{std::pair{"start", &start}, std::pair{"reply", &reply}, std::pair{"held", &held}};
  }
};

// Per-component load counters. Each component's cell is written by that component's actor only and
// read by anyone, so cells are relaxed atomics.
class load_meter {
 public:
  explicit load_meter(std::size_t components) : cells_(components), timings_(components) {}
  ~load_meter();
  load_meter(const load_meter&) = delete;
  load_meter& operator=(const load_meter&) = delete;
  // `n` messages handled (calls into the component's code).
  void handled(vertex_id v, std::uint64_t n) { cells_[v].messages.fetch_add(n, std::memory_order_relaxed); }
  std::uint64_t messages(vertex_id v) const { return cells_[v].messages.load(std::memory_order_relaxed); }
  // Time the component's actor ran (its handlers and the middleware's work for them).
  void busy(vertex_id v, std::uint64_t ns) { cells_[v].busy_ns.fetch_add(ns, std::memory_order_relaxed); }
  void set_memory(vertex_id v, std::uint64_t bytes) { cells_[v].memory.store(bytes, std::memory_order_relaxed); }
  // One measured duration of component `v` (any thread; its histograms are made on first use).
  void timed(vertex_id v, timing_kind kind, double seconds);
  std::vector<component_load> snapshot() const;

 private:
  struct timing_cell {
    std::atomic<std::uint64_t> counts[3][timing_histogram::buckets] = {};
  };
  struct alignas(64) cell {  // one cache line each: cells of different actors never share one
    std::atomic<std::uint64_t> messages{0};
    std::atomic<std::uint64_t> busy_ns{0};
    std::atomic<std::uint64_t> memory{0};
  };
  std::vector<cell> cells_;
  std::vector<std::atomic<timing_cell*>> timings_;  // per component, null until it has a duration
};

// Messages that crossed one node link in a multi-node run, as the transport counted them.
struct link_traffic {
  std::string from, to;  // node names
  std::uint64_t messages = 0;
  std::uint64_t bytes = 0;
};

struct profile {
  std::shared_ptr<const component_tree> tree;
  std::vector<bool> composite;  // per vertex: composite (true) or leaf
  routing_mode mode = routing_mode::hier;
  double duration_s = 0;
  std::vector<component_load> loads;  // per vertex
  std::vector<edge_traffic> edges;    // per edge, indexed by child vertex
  std::vector<flow> flows;            // per publisher → target set
  std::vector<link_traffic> links;    // multi-node runs only

  // The profile as JSON text (docs/formats.md), one space of indent per level, keys in the order
  // the format lists them, components in vertex order. Deterministic: equal profiles give equal
  // text; tests/support/golden_profile.json is a sample of it, byte for byte.
  std::string to_json_text() const;
  // Reads a profile; `name` (usually the file) prefixes every error. Accepts what the partitioner's
  // reader accepts, except that each `parent` must be its path's prefix and counts must be whole
  // (docs/formats.md, "Readers"). Components listed parents first, as to_json_text() writes them,
  // keep their order as vertex ids, so from_json_text(to_json_text()) gives the same text back.
  // Malformed JSON and a document that is not a profile fail with broker::errc::invalid_profile.
  static result<profile> from_json_text(std::string_view text, const std::string& name);
  // from_json_text() of a file; broker::errc::io when it cannot be read.
  static result<profile> load(const std::string& path);
  // Writes to_json_text() to `path`; an error (broker::errc::io) names the file.
  result<void> write(const std::string& path) const;
  // Adds another node's profile of the same app and run (same tree): loads, edges, flows and links
  // are summed; the duration is the longest. Profiles of different trees fail with
  // broker::errc::invalid_profile.
  result<void> merge(const profile& other);
  // The traffic of the window between `earlier` and this profile, two totals of the same run (a live
  // profile's snapshots, docs/formats.md): counts (loads' messages and CPU, edges, flows, links) are
  // this minus `earlier`, memory is this one's, and duration_s is the difference of the durations.
  // A profile of another tree fails with broker::errc::invalid_profile.
  result<profile> since(const profile& earlier) const;
  // A human-readable table of the edges that carried traffic, heaviest first.
  std::string traffic_table(std::size_t max_rows = 20) const;
};

}  // namespace banyan
