// `banyan launch --dashboard ADDR:PORT`: a web page that shows the run live — the component tree
// coloured by node, per-edge and per-link traffic and rates, link health and publisher pauses — and
// proposes a migration-aware re-partitioning from the recent traffic (docs/runtime.md, "Dashboard").
//
// Who does what: the launch's own thread owns the node processes and the only way to read them (the
// live-profile request files), so it takes every reading; the server's threads never touch a node.
// A page asks through `GET /api/state`: its thread raises `wanted()` and waits (at most 15 s) for the
// launch to `deliver()` a reading taken after it asked, unless one less than 0.5 s old is at hand, so
// any number of open pages cost the nodes at most two readings a second.
//
// HTTP: GET / (the page: HTML, CSS and JS in the binary; no other origin is ever contacted),
// GET /api/state (JSON: nodes, components with their node, edges and links with totals and rates,
// link health, the latest reading's error if any), POST /api/propose (JSON body
// {"window_s": S (0: since the start), "migration_cost": ALPHA, "weight": "messages"|"bytes",
// "load": "cpu" (the window's CPU seconds) | "cores" (CPU seconds per second of the window)}; the
// partitioner's migration plan from the current deployment, computed in-process). Requests whose Host
// header names neither the bound address nor localhost are refused (403), so another site cannot
// read the page through DNS rebinding; with `remote` that check is off.
//
// Thread-safety: wanted() and deliver() are called from the launch's thread, the rest is internal.
// The destructor stops the server and joins its threads (a waiting page gets a 503).
#pragma once

#include "banyan/broker/profile.hpp"
#include "banyan/partitioner/io.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace banyan::cli {

struct dashboard_options {
  std::string address = "127.0.0.1";  // a loopback address unless `remote`
  int port = 0;                       // 0: the system picks one (see url())
  bool remote = false;                // allow any address, and any Host header
  std::string deployment_file;        // shown on the page and in the plan's deployment header
  partitioner::deployment deployment; // the running one: node names, capacities, assignments
};

// One reading of every node, merged, taken by the launch.
struct dashboard_reading {
  std::optional<profile> total;    // the run's merged profile so far; empty when the reading failed
  std::string error;               // why it failed ("node n1 has ended; ...")
  std::vector<std::string> health; // per node that answered: its <node>.live.health.json text
  // Per node of the deployment, what the launch sees of its process: "running", "exited 0",
  // "killed by signal 9", "not started" (join: later).
  std::vector<std::pair<std::string, std::string>> processes;
  // The assignments the launch runs now (they change with `banyan reconfigure`).
  std::vector<partitioner::assignment> assignments;
  // When the launch asked the nodes: every count up to then is in it.
  std::chrono::steady_clock::time_point taken = std::chrono::steady_clock::now();
};

// "127.0.0.1:8080", "[::1]:0", "localhost:80", or a bare port "8080" (127.0.0.1). Errors say what is
// wrong with `spec`; a non-loopback address is an error unless `remote`.
struct dashboard_address {
  std::string host;
  int port = 0;
};
std::optional<dashboard_address> parse_dashboard_address(const std::string& spec, bool remote, std::string& why);

class dashboard {
 public:
  // Binds and starts serving; nullopt-like: nullptr with `why` set when the address cannot be bound.
  static std::unique_ptr<dashboard> start(dashboard_options o, std::string& why);
  ~dashboard();
  dashboard(const dashboard&) = delete;
  dashboard& operator=(const dashboard&) = delete;

  std::string url() const;  // http://HOST:PORT/ with the port actually bound
  // Launch thread: a page waits for a fresh reading; take one and deliver() it.
  bool wanted() const;
  void deliver(dashboard_reading r);

  struct impl;

 private:
  explicit dashboard(std::unique_ptr<impl> i);
  std::unique_ptr<impl> impl_;
};

// The page (HTML with its CSS and JS inline), compiled into the binary from dashboard/index.html.
extern const char* const dashboard_page;

}  // namespace banyan::cli
