#include "deployment.hpp"

#include "banyan/partitioner/io.hpp"
#include "banyan/sdk/error.hpp"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>

namespace banyan::detail {

namespace {

result<std::string> read_key(const std::filesystem::path& file, const std::string& what) {
  std::ifstream in(file);
  std::string key;
  if (!in || !(in >> key))
    return error{sdk::errc::io, what + ": cannot read key file `" + file.string() + "`"};
  return key;
}

}  // namespace

result<resolved_deployment> resolve_deployment(const std::string& path, const std::string& self,
                                               const component_tree& tree) {
  auto d = partitioner::load_deployment(path);
  if (!d) return std::move(d).error();  // the partitioner's code and message, unchanged
  resolved_deployment p;
  bool found = false;
  for (std::size_t i = 0; i < d->c.nodes.size(); ++i) {
    const auto& n = d->c.nodes[i];
    p.names.push_back(n.name);
    p.endpoints.push_back(n.endpoint);
    if (n.name == self) {
      p.self = static_cast<node_id>(i);
      found = true;
    }
  }
  if (!found) {
    std::string names;
    for (const auto& n : p.names) names += (names.empty() ? "" : ", ") + n;
    return error{sdk::errc::invalid_argument, path + ": --node `" + self + "` is not in the deployment (nodes: " + names + ")"};
  }
  // Place every component: an assignment places its subtree, a descendant's assignment overrides.
  std::vector<int> assigned(tree.size(), -1);
  for (const auto& a : d->assignments) {
    auto v = tree.find(a.path);
    if (!v)
      return error{sdk::errc::invalid_argument,
                   path + ":" + std::to_string(a.line) + ": assignment `" + a.path + "` names no component of this app"};
    assigned[*v] = a.node;
  }
  if (assigned[0] < 0)
    return error{sdk::errc::invalid_argument, path + ": the root `" + tree.path(0) + "` has no assignment"};
  p.node_of.resize(tree.size());
  for (vertex_id v = 0; v < tree.size(); ++v)  // parents have smaller indices
    p.node_of[v] = static_cast<node_id>(assigned[v] >= 0 ? assigned[v] : p.node_of[tree.parent(v)]);

  // Optional CURVE keys: nodes[i].curve: {public: FILE, secret: FILE}, relative to the deployment.
  p.curve_public.assign(p.names.size(), {});
  p.curve_secret.assign(p.names.size(), {});
  try {
    YAML::Node root = YAML::LoadFile(path);
    auto base = std::filesystem::path(path).parent_path();
    for (std::size_t i = 0; i < p.names.size(); ++i) {
      YAML::Node curve = root["nodes"][i]["curve"];
      if (!curve) continue;
      std::string where = path + ":" + std::to_string(curve.Mark().line + 1) + ": node `" + p.names[i] + "` curve";
      if (!curve["public"]) return error{sdk::errc::invalid_argument, where + ": needs `public`"};
      auto pub = read_key(base / curve["public"].as<std::string>(), where);
      if (!pub) return pub.error();
      p.curve_public[i] = *pub;
      if (i == p.self) {
        if (!curve["secret"]) return error{sdk::errc::invalid_argument, where + ": this node needs `secret`"};
        auto sec = read_key(base / curve["secret"].as<std::string>(), where);
        if (!sec) return sec.error();
        p.curve_secret[i] = *sec;
      }
    }
  } catch (const YAML::Exception& e) {
    return error{sdk::errc::invalid_argument, path + ": " + e.what()};
  }
  return p;
}

}  // namespace banyan::detail
