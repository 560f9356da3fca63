// The workload file (docs/formats.md, "Workload"): slots, nodes, subtrees with measured wake-up and
// response-time histograms, and workflows (DAGs of requests with a period, phase, jitter, deadline
// and reliability target). Every error names file:line.
#include "banyan/partitioner/periodic.hpp"

#include "detail.hpp"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

namespace banyan::partitioner::periodic {
namespace {

struct reader {
  std::string name;
  std::string at(const YAML::Node& n) const {
    const auto m = n.Mark();
    return m.is_null() ? name : name + ":" + std::to_string(m.line + 1);
  }
  error fail(const YAML::Node& n, const std::string& what) const { return error{errc::invalid, at(n) + ": " + what}; }
  result<double> number(const YAML::Node& n, const std::string& what, bool positive = false) const {
    if (!n.IsScalar()) return fail(n, what + ": expected a number");
    char* end = nullptr;
    const double x = std::strtod(n.Scalar().c_str(), &end);
    if (end != n.Scalar().c_str() + n.Scalar().size() || n.Scalar().empty() || !std::isfinite(x) || x < 0 ||
        (positive && x == 0))
      return fail(
          n, what + ": expected a " + (positive ? "positive" : "non-negative") + " number, got `" + n.Scalar() + "`");
    return x;
  }
  result<double> duration(const YAML::Node& n, const std::string& what) const {
    if (!n.IsScalar()) return fail(n, what + ": expected a duration such as 90s, 1.5m, 1h or 1d");
    auto d = parse_duration(n.Scalar());
    if (!d) return fail(n, what + ": expected a duration such as 90s, 1.5m, 1h or 1d, got `" + n.Scalar() + "`");
    return *d;
  }
  result<std::string> text(const YAML::Node& n, const std::string& what) const {
    if (!n || !n.IsScalar() || n.Scalar().empty()) return fail(n, what + ": expected a non-empty string");
    return n.Scalar();
  }
  // A histogram ({bounds, counts}) or a duration (a point mass).
  result<histogram> hist(const YAML::Node& n, const std::string& what) const {
    if (n.IsScalar()) {
      auto d = duration(n, what);
      if (!d) return d.error();
      return histogram::constant(*d);
    }
    if (!n.IsMap() || !n["bounds"] || !n["counts"] || !n["bounds"].IsSequence() || !n["counts"].IsSequence())
      return fail(n, what + ": expected {bounds: [...], counts: [...]} (seconds) or a duration");
    histogram h;
    for (const auto& b : n["bounds"]) {
      auto x = number(b, what + ".bounds");
      if (!x) return x.error();
      if (!h.bounds.empty() && *x < h.bounds.back()) return fail(b, what + ".bounds must not decrease");
      h.bounds.push_back(*x);
    }
    double total = 0;
    for (const auto& c : n["counts"]) {
      auto x = number(c, what + ".counts");
      if (!x) return x.error();
      h.counts.push_back(*x);
      total += *x;
    }
    if (h.bounds.size() != h.counts.size() + 1)
      return fail(n, what + ": " + std::to_string(h.bounds.size()) + " bounds need " +
                         std::to_string(h.bounds.size() > 0 ? h.bounds.size() - 1 : 0) + " counts, got " +
                         std::to_string(h.counts.size()));
    if (total <= 0) return fail(n, what + ": the counts add up to 0 (no observation)");
    return h;
  }
};

result<YAML::Node> parse_yaml(const std::string& text, const std::string& name) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return error{errc::parse,
                 name + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) + ": " + e.msg};
  }
}

// Whether `path` is `root` or below it, by whole levels.
bool under(const std::string& path, const std::string& root) {
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          (root.back() == '/' || path[root.size()] == '/'));
}

struct timing {
  std::optional<histogram> wake, response;
};

result<void> read_timings(const reader& r, const YAML::Node& list, std::map<std::string, timing>& out) {
  if (!list.IsSequence()) return r.fail(list, "`subtrees` of the timings must be a list");
  for (const auto& e : list) {
    auto path = r.text(e["path"], "timing entry: path");
    if (!path) return path.error();
    timing t;
    if (e["wake"]) {
      auto h = r.hist(e["wake"], "`" + *path + "`: wake");
      if (!h) return h.error();
      t.wake = *h;
    }
    if (e["response"]) {
      auto h = r.hist(e["response"], "`" + *path + "`: response");
      if (!h) return h.error();
      t.response = *h;
    }
    out[*path] = t;
  }
  return {};
}

// Orders `f`'s requests topologically (stable); an error naming a request on a cycle.
result<void> topological(const reader& r, const YAML::Node& at, workflow_spec& f) {
  const std::size_t n = f.requests.size();
  std::vector<std::size_t> indegree(n, 0), order;
  std::vector<std::vector<std::size_t>> succ(n);
  for (std::size_t q = 0; q < n; ++q) {
    for (auto p : f.requests[q].after) {
      succ[p].push_back(q);
      ++indegree[q];
    }
  }
  for (std::size_t q = 0; q < n; ++q) {
    if (indegree[q] == 0) order.push_back(q);
  }
  for (std::size_t i = 0; i < order.size(); ++i) {
    for (auto s : succ[order[i]]) {
      if (--indegree[s] == 0) order.push_back(s);
    }
  }
  if (order.size() != n) {
    for (std::size_t q = 0; q < n; ++q) {
      if (indegree[q] > 0) {
        return error{errc::invalid, r.name + ":" + std::to_string(f.requests[q].line) + ": workflow `" + f.name +
                                        "`: request `" + f.requests[q].id + "` is on a cycle of `after`"};
      }
    }
    return r.fail(at, "workflow `" + f.name + "` has a cycle");
  }
  std::vector<std::size_t> position(n);
  for (std::size_t i = 0; i < n; ++i) position[order[i]] = i;
  std::vector<request_spec> sorted;
  for (auto q : order) {
    sorted.push_back(f.requests[q]);
    for (auto& p : sorted.back().after) p = position[p];
  }
  f.requests = std::move(sorted);
  return {};
}

}  // namespace

std::optional<double> parse_duration(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(x) || x < 0) return std::nullopt;
  const std::string unit(end);
  static const std::map<std::string, double> units{{"", 1},   {"ms", 1e-3}, {"s", 1},
                                                   {"m", 60}, {"h", 3600},  {"d", 86400}};
  auto it = units.find(unit);
  if (it == units.end()) return std::nullopt;
  return x * it->second;
}

std::string fingerprint(const deployment& d) {
  std::ostringstream s;
  s.precision(17);
  for (const auto& n : d.c.nodes) s << "node " << n.name << ' ' << n.cpu.amount << (n.cpu.percent ? "%" : "") << '\n';
  for (const auto& a : d.assignments) s << "assign " << a.path << ' ' << d.c.nodes[a.node].name << '\n';
  std::uint64_t h = 1469598103934665603ULL;
  for (const unsigned char c : s.str()) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "fnv1a64:%016llx", static_cast<unsigned long long>(h));
  return buf;
}

result<workload> parse_workload(const std::string& text, const std::string& name, const workload_context& ctx) {
  auto parsed = parse_yaml(text, name);
  if (!parsed) return parsed.error();
  const YAML::Node doc = *parsed;
  const reader r{name};
  if (!doc.IsMap()) return error{errc::invalid, name + ": expected a mapping with `version`, `subtrees`, `workflows`"};
  if (!doc["version"] || doc["version"].Scalar() != "1")
    return r.fail(doc, "missing or unsupported `version` (expected 1)");
  workload w;
  w.name = name;
  if (const auto n = doc["slot"]) {
    auto d = r.duration(n, "slot");
    if (!d) return d.error();
    if (*d <= 0) return r.fail(n, "slot must be positive");
    w.slot = *d;
  }
  if (const auto n = doc["horizon"]) {
    auto d = r.duration(n, "horizon");
    if (!d) return d.error();
    w.horizon = *d;
  }
  const double slots = w.horizon / w.slot;
  if (w.horizon <= 0 || std::abs(slots - std::round(slots)) > 1e-9 * slots)
    return r.fail(doc["horizon"] ? doc["horizon"] : doc, "horizon must be a positive multiple of the slot");
  if (const auto n = doc["message_cost"]) {
    auto x = r.number(n, "message_cost");
    if (!x) return x.error();
    w.message_cost = *x;
  }
  if (ctx.d) w.deployment_fingerprint = fingerprint(*ctx.d);
  if (const auto n = doc["deployment"]) {
    const YAML::Node fp = n.IsMap() ? n["fingerprint"] : YAML::Node();
    if (!fp || !fp.IsScalar()) return r.fail(n, "deployment: expected {fingerprint: ...} (banyan plan prints it)");
    if (ctx.d && fp.Scalar() != w.deployment_fingerprint)
      return r.fail(fp, "this workload is for another deployment (fingerprint " + fp.Scalar() + "; " + ctx.d->name +
                            " has " + w.deployment_fingerprint + ")");
  }

  // Nodes: the deployment's cluster, with costs (and capacity overrides) from the workload.
  const YAML::Node nodes = doc["nodes"];
  if (ctx.d) {
    for (const auto& n : ctx.d->c.nodes) w.nodes.push_back({n.name, n.cpu.percent ? -1.0 : n.cpu.amount, 0});
    w.link_cost = ctx.d->c.link_cost;
  }
  if (nodes) {
    if (!nodes.IsSequence()) return r.fail(nodes, "`nodes` must be a list");
    for (const auto& n : nodes) {
      auto nm = r.text(n["name"], "node: name");
      if (!nm) return nm.error();
      node_info* info = nullptr;
      for (auto& x : w.nodes) {
        if (x.name == *nm) info = &x;
      }
      if (!info) {
        if (ctx.d) return r.fail(n, "node `" + *nm + "` is not a node of " + ctx.d->name);
        w.nodes.push_back({*nm, -1, 0});
        info = &w.nodes.back();
      }
      if (n["capacity"]) {
        auto c = r.number(n["capacity"], "node `" + *nm + "`: capacity");
        if (!c) return c.error();
        info->capacity = *c;
      }
      if (n["cost_per_hour"]) {
        auto c = r.number(n["cost_per_hour"], "node `" + *nm + "`: cost_per_hour");
        if (!c) return c.error();
        info->cost_per_hour = *c;
      }
    }
  }
  if (w.nodes.empty()) return r.fail(doc, "no nodes: give `nodes` or a deployment");
  for (const auto& n : w.nodes) {
    if (n.capacity < 0)
      return r.fail(nodes ? nodes : doc, "node `" + n.name + "` has no absolute capacity (give `capacity` in `nodes`)");
  }

  // Timings: a file beside the workload, or a list inline.
  std::map<std::string, timing> timings;
  if (const auto t = doc["timings"]) {
    if (t.IsScalar()) {
      std::filesystem::path file(t.Scalar());
      if (file.is_relative()) file = std::filesystem::path(name).parent_path() / file;
      auto body = detail::read_file(file.string());
      if (!body) return r.fail(t, body.error().message);
      auto tdoc = parse_yaml(*body, file.string());
      if (!tdoc) return tdoc.error();
      const reader tr{file.string()};
      if (!tdoc->IsMap() || !(*tdoc)["subtrees"]) return tr.fail(*tdoc, "expected a mapping with `subtrees`");
      if (auto ok = read_timings(tr, (*tdoc)["subtrees"], timings); !ok) return ok.error();
    } else if (auto ok = read_timings(r, t, timings); !ok) {
      return ok.error();
    }
  }

  // Subtrees.
  const YAML::Node subs = doc["subtrees"];
  if (!subs || !subs.IsSequence() || subs.size() == 0)
    return r.fail(subs ? subs : doc, "`subtrees` must be a non-empty list");
  std::map<std::string, std::size_t> index;
  std::set<std::string> profile_paths;
  if (ctx.profile) profile_paths.insert(ctx.profile->path.begin(), ctx.profile->path.end());
  for (const auto& e : subs) {
    subtree_spec s;
    s.line = e.Mark().line + 1;
    auto path = r.text(e["path"], "subtree: path");
    if (!path) return path.error();
    s.path = *path;
    if (index.count(s.path)) return r.fail(e["path"], "subtree `" + s.path + "` is listed twice");
    if (ctx.profile && !profile_paths.count(s.path))
      return r.fail(e["path"], "unknown subtree `" + s.path + "`: no component of the profile has this path");
    node_id home = no_node;
    if (ctx.d) {
      std::size_t best = 0;
      bool exact = false;
      for (const auto& a : ctx.d->assignments) {
        if (under(s.path, a.path) && a.path.size() >= best) {
          best = a.path.size();
          home = a.node;
          exact = a.path == s.path;
        }
      }
      if (!ctx.profile && !exact)
        return r.fail(e["path"], "unknown subtree `" + s.path + "`: " + ctx.d->name +
                                     " assigns no such subtree (a periodic subtree is placed as a unit)");
    }
    if (!e["demand"]) return r.fail(e, "subtree `" + s.path + "`: missing `demand`");
    auto d = r.number(e["demand"], "subtree `" + s.path + "`: demand");
    if (!d) return d.error();
    s.demand = *d;
    const auto& t = timings[s.path];
    for (const char* key : {"wake", "response"}) {
      const bool is_wake = std::string(key) == "wake";
      histogram& target = is_wake ? s.wake : s.response;
      if (e[key]) {
        auto h = r.hist(e[key], "subtree `" + s.path + "`: " + key);
        if (!h) return h.error();
        target = *h;
      } else if (is_wake ? t.wake.has_value() : t.response.has_value()) {
        target = is_wake ? *t.wake : *t.response;
      } else {
        return r.fail(e, "subtree `" + s.path + "`: no `" + key + "` histogram (inline or in `timings`)");
      }
    }
    index[s.path] = w.subtrees.size();
    w.subtrees.push_back(std::move(s));
    w.home.push_back(home);
  }

  // Workflows.
  const YAML::Node flows = doc["workflows"];
  if (!flows || !flows.IsSequence() || flows.size() == 0)
    return r.fail(flows ? flows : doc, "`workflows` must be a non-empty list");
  std::set<std::string> flow_names;
  for (const auto& e : flows) {
    workflow_spec f;
    f.line = e.Mark().line + 1;
    auto nm = r.text(e["name"], "workflow: name");
    if (!nm) return nm.error();
    f.name = *nm;
    if (!flow_names.insert(f.name).second) return r.fail(e["name"], "workflow `" + f.name + "` is listed twice");
    const std::string wf = "workflow `" + f.name + "`: ";
    struct field {
      const char* key;
      double* target;
      bool required;
    };
    for (const field& fd : {field{"period", &f.period, true}, field{"phase", &f.phase, false},
                            field{"jitter", &f.jitter, false}, field{"deadline", &f.deadline, true}}) {
      if (!e[fd.key]) {
        if (fd.required) return r.fail(e, wf + "missing `" + fd.key + "`");
        continue;
      }
      auto d = r.duration(e[fd.key], wf + fd.key);
      if (!d) return d.error();
      *fd.target = *d;
    }
    if (f.period <= 0) return r.fail(e["period"], wf + "period must be positive, got 0");
    const double per = w.horizon / f.period;
    if (std::abs(per - std::round(per)) > 1e-9 * per || per < 0.5)
      return r.fail(e["period"],
                    wf + "period must divide the horizon (" + detail::format_number(w.horizon, 10) + " s)");
    if (f.phase >= f.period) return r.fail(e["phase"], wf + "phase must be shorter than the period");
    if (f.deadline <= 0) return r.fail(e["deadline"], wf + "deadline must be positive");
    if (e["reliability"]) {
      auto x = r.number(e["reliability"], wf + "reliability");
      if (!x) return x.error();
      if (*x <= 0 || *x > 1) return r.fail(e["reliability"], wf + "reliability must be in (0, 1]");
      f.reliability = *x;
    }
    const YAML::Node reqs = e["requests"];
    if (!reqs || !reqs.IsSequence() || reqs.size() == 0) return r.fail(e, wf + "`requests` must be a non-empty list");
    std::map<std::string, std::size_t> ids;
    for (const auto& q : reqs) {
      request_spec rq;
      rq.line = q.Mark().line + 1;
      auto sub = r.text(q["subtree"], wf + "request: subtree");
      if (!sub) return sub.error();
      auto it = index.find(*sub);
      if (it == index.end()) return r.fail(q["subtree"], wf + "unknown subtree `" + *sub + "` (not in `subtrees`)");
      rq.subtree = it->second;
      rq.id = q["id"] && q["id"].IsScalar() ? q["id"].Scalar() : *sub;
      if (ids.count(rq.id)) return r.fail(q, wf + "request id `" + rq.id + "` is used twice (give each an `id`)");
      if (const auto k = q["kind"]) {
        if (!k.IsScalar() || (k.Scalar() != "request" && k.Scalar() != "publish"))
          return r.fail(k, wf + "kind must be `request` or `publish`");
        rq.publish = k.Scalar() == "publish";
      }
      if (q["traffic"]) {
        auto x = r.number(q["traffic"], wf + "traffic");
        if (!x) return x.error();
        rq.traffic = *x;
      }
      ids[rq.id] = f.requests.size();
      f.requests.push_back(rq);
    }
    std::size_t qi = 0;
    for (const auto& q : reqs) {
      if (const auto a = q["after"]) {
        std::vector<YAML::Node> list;
        if (a.IsScalar()) list.push_back(a);
        else if (a.IsSequence()) {
          for (std::size_t i = 0; i < a.size(); ++i) list.push_back(a[i]);
        } else return r.fail(a, wf + "after must be a request id or a list of them");
        for (const auto& p : list) {
          auto it = ids.find(p.Scalar());
          if (it == ids.end()) return r.fail(p, wf + "after: no request `" + p.Scalar() + "` in this workflow");
          f.requests[qi].after.push_back(it->second);
        }
      }
      ++qi;
    }
    if (auto ok = topological(r, e, f); !ok) return ok.error();
    // The critical path at the minimum response times must fit in the deadline.
    std::vector<double> start(f.requests.size(), 0), finish(f.requests.size(), 0);
    double longest = 0;
    for (std::size_t q = 0; q < f.requests.size(); ++q) {
      for (auto p : f.requests[q].after) start[q] = std::max(start[q], f.requests[p].publish ? start[p] : finish[p]);
      finish[q] = start[q] + w.subtrees[f.requests[q].subtree].response.min();
      longest = std::max(longest, finish[q]);
    }
    if (f.deadline < longest)
      return r.fail(e["deadline"], wf + "deadline " + detail::format_number(f.deadline, 6) +
                                       " s is shorter than the critical path at the minimum response times (" +
                                       detail::format_number(longest, 6) + " s)");
    w.workflows.push_back(std::move(f));
  }
  return w;
}

result<workload> load_workload(const std::string& path, const workload_context& ctx) {
  auto text = detail::read_file(path);
  if (!text) return text.error();
  return parse_workload(*text, path, ctx);
}

}  // namespace banyan::partitioner::periodic
