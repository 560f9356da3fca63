// Reading and writing the shared formats (docs/formats.md): the profile JSON, the cluster and
// deployment YAML, and a Graphviz rendering of a mapping.
//
// Every error names the file and, for syntax errors and YAML values, line:col; for JSON values the
// JSON location (`components[3].load.cpu`) and the component path.
#pragma once

#include "banyan/partitioner/model.hpp"

#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace banyan::partitioner {

enum class traffic_unit { messages, bytes };

struct profile_options {
  traffic_unit unit = traffic_unit::messages;  // which edge figure becomes the edge weight
  bool with_memory = true;                     // read load.memory as a second dimension when any component has it
};

// What a profile records beside the tree, for a caller that judges its loads (`banyan partition`).
struct profile_measurements {
  double duration_s = 0;         // `duration_s`: the window the loads were measured in (0: not recorded)
  bool has_messages = false;     // some component records `load.messages`
  std::vector<double> messages;  // per vertex of the tree read: `load.messages` (0 when absent)
  // Edges listed more than once. Each is read as the sum of its listings (as profiles joined by
  // hand would mean), and is named here once, for the caller to warn about: `p.json:9:5: edges[3]:
  // `/r` -> `/r/a` is listed again (first as edges[1]); their traffic is summed`. At most
  // `max_repeated_edges` are named; `repeated_edge_count` counts them all.
  static constexpr std::size_t max_repeated_edges = 10;
  std::vector<std::string> repeated_edges;
  std::size_t repeated_edge_count = 0;
};

// Reads a profile and renumbers components top-down (see tree's invariant). `name` is used in
// messages (usually the path). Not a tree (cycle, two roots, unknown parent, duplicate path): the
// error names the vertex. Only valid JSON is accepted; a syntax error or a value of the wrong kind
// names file:line:col. When `m` is given it receives the profile's measurements too.
//
// Cost: one pass, linear in the file. load_profile maps the file and hands parsed pages back as it
// goes, so its peak memory is about the file plus a third (simdjson's index) plus the tree; a
// 10^6-component profile of 280 MB is read in well under a second.
result<tree> parse_profile(const std::string& text, const std::string& name, const profile_options& o = {},
                           profile_measurements* m = nullptr);
result<tree> load_profile(const std::string& path, const profile_options& o = {}, profile_measurements* m = nullptr);
// Writes a profile (version 1) for `t`, e.g. from the generator. Vertex paths must be set. It holds
// what the tree holds: paths, parents, `kind` (from the children), `load.cpu`, `load.memory` (when
// the tree has memory) and each edge's weight as `messages`; no `load.messages`, `bytes`,
// `duration_s`, `flows` or `links`. Numbers read back exactly (the shortest text of each double;
// whole counts as integers), by parse_profile and by the broker's reader when the paths are
// hierarchical (tests/support/golden_profile_tree.json is its reference output).
void write_profile(std::ostream& out, const tree& t, const std::string& mode = "hier");

// A cluster file, or a deployment's cluster part (its `assignments` are ignored here).
result<cluster> parse_cluster(const std::string& text, const std::string& name);
result<cluster> load_cluster(const std::string& path);

struct assignment {
  std::string path;  // subtree root
  node_id node;
  int line;         // YAML line, for the runtime's own errors (unknown path)
  double load = 0;  // `loads:` — the CPU load of the components it places (0 when not given)
};

// A node's CURVE key files (`curve: {public: FILE, secret: FILE}`, written by `banyan keygen`).
// Relative paths are resolved against the folder of the deployment file.
struct curve_key_files {
  std::string public_file;  // required in a `curve` entry
  std::string secret_file;  // optional here; the node that runs needs its own (the runtime checks)
  int line = 0;             // 1-based YAML line and column of the `curve` entry, for later errors
  int column = 0;
};

struct deployment {
  std::string name;  // the file, as given to the reader (for messages)
  cluster c;
  std::vector<assignment> assignments;  // in file order
  // Per node (as c.nodes) when the deployment uses CURVE, empty when it does not: either every
  // node has a `curve` entry or none has.
  std::vector<curve_key_files> curve;
  // Per node (as c.nodes): `join: later` — the node is not started with the others and they do not
  // wait for it; it joins the running deployment when started (`banyan launch --join NAME`).
  // `join: start` (the default) is a node every other one waits for at start.
  std::vector<bool> joins_later;
};

// Reads a deployment: unknown nodes, duplicate or missing endpoints, non-absolute paths and
// malformed `curve` entries (not a mapping, no `public`, an unknown key, some nodes without one)
// are errors with the YAML line and column. Whether each path exists in the app and whether the
// key files hold keys are checked by mapping_of and the runtime. `name` is the file's path: it
// prefixes messages and relative key files are resolved against its folder.
result<deployment> parse_deployment(const std::string& text, const std::string& name);
result<deployment> load_deployment(const std::string& path);

// Writes a cluster file (no assignments). Capacities keep their form (number or percentage);
// link costs are written as a matrix.
void write_cluster(std::ostream& out, const cluster& c);

// Minimal assignments for `m`: the root, and every vertex whose node differs from its parent's.
std::vector<assignment> assignments_of(const problem& p, const mapping& m);
// The deployment YAML the runtime reads. `header` lines are written as comments on top.
void write_deployment(std::ostream& out, const problem& p, const mapping& m,
                      const std::vector<std::string>& header = {});
// Expands assignments to a mapping (unassigned components stay with their parent). Errors name the
// file and line: `d.yaml:7: assignment `/x` names no component of this app`, or
// `d.yaml: the root `/r` has no assignment`. `t` needs only paths and parents.
result<mapping> mapping_of(const tree& t, const deployment& d);

// What the numbers in a drawing are: the edge weight's unit (`banyan partition --weight`) and the
// load's (the profile's `load.cpu`, handler CPU seconds unless the profile says otherwise).
struct dot_units {
  std::string traffic = "messages";
  std::string load = "cpu s";
};

// Graphviz: one box per component filled with its node's colour and labelled with its name and
// load, cut edges bold red and labelled with their traffic, numbers in plain notation with their
// units (a legend says which). Trees above `max_vertices` are drawn as their parts only (one box
// per connected same-node fragment) so that `dot` stays usable.
void write_dot(std::ostream& out, const problem& p, const mapping& m, std::size_t max_vertices = 2000,
               const dot_units& units = {});

}  // namespace banyan::partitioner
