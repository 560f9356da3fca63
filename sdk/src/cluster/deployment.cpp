#include "deployment.hpp"

#include "banyan/partitioner/io.hpp"
#include "banyan/runtime/curve.hpp"
#include "banyan/sdk/error.hpp"
#include "banyan/sdk/launcher.hpp"

#include <cerrno>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>

namespace banyan::detail {

namespace {

// The app's tree as the partitioner's model sees it (paths and parents are all mapping_of reads).
partitioner::tree model_of(const component_tree& tree) {
  partitioner::tree t;
  t.path.reserve(tree.size());
  t.parent.reserve(tree.size());
  for (vertex_id v = 0; v < tree.size(); ++v) {  // parents have smaller indices, as the model requires
    t.path.push_back(tree.path(v));
    t.parent.push_back(v == 0 ? -1 : static_cast<partitioner::vertex_id>(tree.parent(v)));
  }
  return t;
}

result<std::string> read_key(const partitioner::deployment& d, std::size_t node, bool secret) {
  const auto& files = d.curve[node];
  auto key = runtime::read_key_file(secret ? files.secret_file : files.public_file);
  if (!key)
    return error{sdk::errc::invalid_argument, d.name + ":" + std::to_string(files.line) + ":" +
                                                  std::to_string(files.column) + ": node `" + d.c.nodes[node].name +
                                                  "` curve: " + key.error().message};
  return key;
}

// Whether only this machine can reach `endpoint`: ipc:// (a file), or tcp:// on a loopback address
// (127.0.0.0/8, ::1, localhost).
bool loopback_only(const std::string& endpoint) {
  if (endpoint.rfind("ipc://", 0) == 0) return true;
  if (endpoint.rfind("tcp://", 0) != 0) return false;
  std::string host = endpoint.substr(6, endpoint.rfind(':') - 6);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// The nodes' endpoints, `{host}` replaced by the host of the node's rank (node i runs as rank i)
// from the launcher's host list; endpoints that differ only in `{host}` must not meet on one host.
result<std::vector<std::string>> endpoints_of(const partitioner::deployment& d) {
  constexpr std::string_view placeholder = "{host}";
  std::vector<std::string> out;
  std::optional<std::vector<std::string>> hosts;  // read at the first `{host}`
  std::map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < d.c.nodes.size(); ++i) {
    const auto& n = d.c.nodes[i];
    std::string endpoint = n.endpoint;
    const std::string where =
        d.name + ":" + std::to_string(n.line) + ": node `" + n.name + "` endpoint `" + n.endpoint + "`";
    if (endpoint.find(placeholder) != std::string::npos) {
      if (!hosts) {
        auto h = launcher::hosts_by_rank();
        if (!h) return error{sdk::errc::invalid_argument, where + ": " + h.error().message};
        hosts = std::move(*h);
      }
      if (hosts->empty())
        return error{sdk::errc::invalid_argument,
                     where +
                         " names {host}, but no launcher host list is set (BANYAN_HOSTS, e.g. "
                         "from banyan launch --hosts, or Slurm's SLURM_STEP_NODELIST)"};
      if (i >= hosts->size())
        return error{sdk::errc::invalid_argument, where + " names {host}, but the launcher's host list has " +
                                                      std::to_string(hosts->size()) + " ranks (node " +
                                                      std::to_string(i) + " runs as rank " + std::to_string(i) + ")"};
      for (auto at = endpoint.find(placeholder); at != std::string::npos;
           at = endpoint.find(placeholder, at + (*hosts)[i].size()))
        endpoint.replace(at, placeholder.size(), (*hosts)[i]);
    }
    if (auto [it, fresh] = seen.emplace(endpoint, i); !fresh)
      return error{sdk::errc::invalid_argument, where + " is `" + endpoint + "` on this host list, as node `" +
                                                    d.c.nodes[it->second].name + "`'s is: give them different ports"};
    out.push_back(std::move(endpoint));
  }
  return out;
}

}  // namespace

result<std::string> node_from_launcher(const std::string& path, const std::vector<std::string>& names) {
  for (const char* var : launcher_rank_variables) {
    const char* value = std::getenv(var);
    if (!value) continue;
    char* end = nullptr;
    errno = 0;
    const unsigned long long rank = std::strtoull(value, &end, 10);
    if (*value == '\0' || *end != '\0' || errno == ERANGE || *value == '-') {
      return error{sdk::errc::invalid_argument, std::string(var) + "=`" + value + "` is not a rank (a number from 0)"};
    }
    if (rank >= names.size()) {
      return error{sdk::errc::invalid_argument,
                   std::string(var) + "=" + value + " but " + path + " has " + std::to_string(names.size()) +
                       " nodes (rank i runs the i-th node: start " + std::to_string(names.size()) + " processes)"};
    }
    return names[rank];
  }
  return error{sdk::errc::invalid_argument,
               "--deployment needs --node NAME (or a launcher's rank: mpirun, srun and MPI launchers set " +
                   std::string(launcher_rank_variables[0]) + ", " + launcher_rank_variables[1] + " or " +
                   launcher_rank_variables[2] + ")"};
}

std::string profile_path_of(const run_options& options) {
  std::string path = options.profile_path;
  if (path.find("{node}") == std::string::npos || options.deployment.empty()) return path;
  std::string node = options.node;
  if (node.empty()) {
    auto d = partitioner::load_deployment(options.deployment);  // read by the run already: it is valid
    if (!d) return path;
    std::vector<std::string> names;
    for (const auto& n : d->c.nodes) names.push_back(n.name);
    if (auto from_rank = node_from_launcher(options.deployment, names)) node = *from_rank;
  }
  for (auto at = path.find("{node}"); at != std::string::npos; at = path.find("{node}", at + node.size()))
    path.replace(at, 6, node);
  return path;
}

result<resolved_deployment> resolve_deployment(const std::string& path, const std::string& self_or_empty,
                                               const component_tree& tree, bool insecure) {
  // The file's checks (and their messages, unchanged) are the partitioner reader's.
  auto d = partitioner::load_deployment(path);
  if (!d) return std::move(d).error();
  if (d->c.nodes.size() > std::numeric_limits<node_id>::max())
    return error{sdk::errc::invalid_argument,
                 path + ": more than " + std::to_string(std::numeric_limits<node_id>::max()) + " nodes"};
  std::string self = self_or_empty;
  if (self.empty()) {
    std::vector<std::string> names;
    for (const auto& n : d->c.nodes) names.push_back(n.name);
    auto from_rank = node_from_launcher(path, names);
    if (!from_rank) return std::move(from_rank).error();
    self = std::move(*from_rank);
  }
  resolved_deployment out;
  auto endpoints = endpoints_of(*d);
  if (!endpoints) return std::move(endpoints).error();
  out.endpoints = std::move(*endpoints);
  if (d->curve.empty() && !insecure) {
    // Plain mode trusts whoever reaches an endpoint: loopback and ipc only, unless the user says so.
    for (std::size_t i = 0; i < out.endpoints.size(); ++i) {
      if (loopback_only(out.endpoints[i])) continue;
      const auto& n = d->c.nodes[i];
      return error{sdk::errc::invalid_argument,
                   path + ":" + std::to_string(n.line) + ": node `" + n.name + "` endpoint `" + out.endpoints[i] +
                       "` is reachable from other machines, and the deployment has no CURVE keys: anyone who "
                       "reaches it could join as a node. Give every node `curve:` keys (banyan keygen), or run "
                       "with --insecure (docs/runtime.md, \"Threat model\")"};
    }
  }
  bool found = false;
  for (std::size_t i = 0; i < d->c.nodes.size(); ++i) {
    const auto& n = d->c.nodes[i];
    out.names.push_back(n.name);
    if (n.name == self) {
      out.self = static_cast<node_id>(i);
      found = true;
    }
  }
  if (!found) {
    std::string names;
    for (const auto& n : out.names) names += (names.empty() ? "" : ", ") + n;
    return error{sdk::errc::invalid_argument,
                 path + ": --node `" + self + "` is not in the deployment (nodes: " + names + ")"};
  }
  auto m = partitioner::mapping_of(model_of(tree), *d);
  if (!m) return error{sdk::errc::invalid_argument, m.error().message};
  out.node_of.reserve(m->size());
  for (auto node : *m) out.node_of.push_back(static_cast<node_id>(node));
  out.late = d->joins_later;
  out.cluster = d->c;
  out.load_of.assign(tree.size(), 0.0);
  for (const auto& a : d->assignments)
    if (auto v = tree.find(a.path); v && a.load > 0) out.load_of[*v] = a.load;

  // CURVE: every peer's public key; our own secret key.
  out.curve_public.assign(out.names.size(), {});
  out.curve_secret.assign(out.names.size(), {});
  if (!d->curve.empty()) {
    for (std::size_t i = 0; i < out.names.size(); ++i) {
      auto key = read_key(*d, i, false);
      if (!key) return key.error();
      out.curve_public[i] = std::move(*key);
    }
    if (d->curve[out.self].secret_file.empty()) {
      const auto& files = d->curve[out.self];
      return error{sdk::errc::invalid_argument, path + ":" + std::to_string(files.line) + ":" +
                                                    std::to_string(files.column) + ": node `" + self +
                                                    "` curve: this node needs `secret`"};
    }
    auto key = read_key(*d, out.self, true);
    if (!key) return key.error();
    out.curve_secret[out.self] = std::move(*key);
  }
  return out;
}

}  // namespace banyan::detail
