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
// "load": "cores" (CPU seconds per second of the window, the default) | "cpu" (the window's CPU
// seconds)}; the partitioner's migration plan from the current deployment, computed in-process:
// plan_proposal below). Requests whose Host
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
#include <utility>
#include <vector>

namespace banyan::cli {

struct dashboard_options {
  std::string address = "127.0.0.1";   // a loopback address unless `remote`
  int port = 0;                        // 0: the system picks one (see url())
  bool remote = false;                 // allow any address, and any Host header
  std::string deployment_file;         // shown on the page and in the plan's deployment header
  partitioner::deployment deployment;  // the running one: node names, capacities, assignments
};

// One reading of every node, merged, taken by the launch.
struct dashboard_reading {
  std::optional<profile> total;     // the run's merged profile so far; empty when the reading failed
  std::string error;                // why it failed ("node n1 has ended; ...")
  std::vector<std::string> health;  // per node that answered: its <node>.live.health.json text
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

// What POST /api/propose asks for; a field the body leaves out keeps its default here.
struct proposal_request {
  double window_s = 30;             // the traffic of the last S seconds; 0: of the run so far
  double migration_cost = 0;        // cost per byte of state moved
  std::string weight = "messages";  // or "bytes": the edge figure the cost counts
  // How the deployment's absolute `capacity.cpu` reads against the window's loads: "cores", CPU
  // seconds per second of the window (`cpu: 2` for two cores), or "cpu", the window's CPU seconds.
  // "cores" is the default because it is the only reading under which one capacity means the same
  // for every window the page offers (10 s, 30 s, 60 s, the run so far); percentages (`"40%"`) are
  // shares of the load and read the same either way.
  std::string load = "cores";
};
// The request in `body` (JSON; empty: every default); nullopt with `why` naming the bad field.
std::optional<proposal_request> parse_proposal_request(const std::string& body, std::string& why);

// The migration-aware plan from deployment `d` (file `deployment_file`, for messages) for the traffic
// of `window` (a live profile's window, or the run's total): the partitioner's plan_migration from
// the current mapping, with the bottom-up heuristic's mapping as a candidate. Returns the HTTP status
// and the JSON body: 200 and the plan, or 422 and {"error": TEXT} (a window that does not fit the
// capacities, a tree the deployment does not name). Pure: no server, no lock; seconds on a big tree.
std::pair<int, std::string> plan_proposal(const profile& window, const partitioner::deployment& d,
                                          const std::string& deployment_file, const proposal_request& r);

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
