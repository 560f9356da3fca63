#include "banyan/broker/profile.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string_view>
#include <unordered_set>

namespace banyan {

double timing_histogram::bound(std::size_t i) {
  return i == 0 ? 0.0 : std::pow(10.0, (static_cast<double>(i) - 25.0) / 4.0);  // bound(1) = 1e-6
}

std::size_t timing_histogram::bucket_of(double seconds) {
  if (!(seconds >= bound(1))) return 0;
  const double steps = std::floor(4.0 * std::log10(seconds) + 24.0 + 1e-9);  // whole quarter-decades above 1 us
  return std::min(static_cast<std::size_t>(std::min(steps, 1e6)) + 1, buckets - 1);
}

bool timing_histogram::empty() const {
  const auto [first, last] = used();
  return first == last;
}

std::pair<std::size_t, std::size_t> timing_histogram::used() const {
  std::size_t first = 0, last = counts.size();
  while (first < last && counts[first] == 0) ++first;
  while (last > first && counts[last - 1] == 0) --last;
  return {first, last};
}

void timing_histogram::add(const timing_histogram& other) {
  if (other.counts.empty()) return;
  counts.resize(buckets, 0);
  for (std::size_t i = 0; i < buckets; ++i) counts[i] += other.counts[i];
}

void timing_histogram::subtract(const timing_histogram& earlier) {
  for (std::size_t i = 0; i < counts.size() && i < earlier.counts.size(); ++i)
    counts[i] = counts[i] > earlier.counts[i] ? counts[i] - earlier.counts[i] : 0;
}

load_meter::~load_meter() {
  for (auto& t : timings_) delete t.load(std::memory_order_relaxed);
}

void load_meter::timed(vertex_id v, timing_kind kind, double seconds) {
  timing_cell* cell = timings_[v].load(std::memory_order_acquire);
  if (!cell) {
    auto fresh = std::make_unique<timing_cell>();
    if (timings_[v].compare_exchange_strong(cell, fresh.get(), std::memory_order_acq_rel)) cell = fresh.release();
  }
  cell->counts[static_cast<int>(kind)][timing_histogram::bucket_of(seconds)].fetch_add(1, std::memory_order_relaxed);
}

std::vector<component_load> load_meter::snapshot() const {
  std::vector<component_load> out(cells_.size());
  for (std::size_t i = 0; i < cells_.size(); ++i) {
    out[i].messages = cells_[i].messages.load(std::memory_order_relaxed);
    out[i].cpu_seconds = static_cast<double>(cells_[i].busy_ns.load(std::memory_order_relaxed)) * 1e-9;
    out[i].memory = cells_[i].memory.load(std::memory_order_relaxed);
    if (const timing_cell* t = timings_[i].load(std::memory_order_acquire)) {
      std::size_t k = 0;
      for (auto [key, h] : out[i].timings()) {
        h->counts.resize(timing_histogram::buckets);
        for (std::size_t b = 0; b < timing_histogram::buckets; ++b)
          h->counts[b] = t->counts[k][b].load(std::memory_order_relaxed);
        ++k;
      }
    }
  }
  return out;
}

namespace {

using nlohmann::json;
// Written in the order docs/formats.md lists the fields (and the partitioner's writer uses): a
// std::map-backed json would sort the keys alphabetically.
using ordered = nlohmann::ordered_json;

// The buckets from the first to the last with a count: bounds (seconds) and counts.
ordered histogram_json(const timing_histogram& h) {
  const auto [first, last] = h.used();
  ordered bounds = ordered::array(), counts = ordered::array();
  for (std::size_t i = first; i < last; ++i) {
    bounds.push_back(timing_histogram::bound(i));
    counts.push_back(h.counts[i]);
  }
  bounds.push_back(timing_histogram::bound(last));
  return {{"bounds", bounds}, {"counts", counts}};
}

// A histogram written by histogram_json: its bounds must be on the grid.
std::string histogram_from_json(const json& j, timing_histogram& h) {
  if (!j.is_object() || !j.contains("bounds") || !j.contains("counts") || !j["bounds"].is_array() ||
      !j["counts"].is_array())
    return "expected {bounds: [...], counts: [...]}";
  const auto& bounds = j["bounds"];
  const auto& counts = j["counts"];
  if (bounds.size() != counts.size() + 1) return "needs one bound more than counts";
  h.counts.assign(timing_histogram::buckets, 0);
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (!bounds[i].is_number() || !counts[i].is_number_unsigned()) return "bounds are numbers, counts whole";
    const double lower = bounds[i].get<double>();
    const std::size_t b = timing_histogram::bucket_of(lower);
    if (std::abs(timing_histogram::bound(b) - lower) > 1e-9 * std::max(1.0, lower))
      return "bound " + std::to_string(lower) + " is not on the timing grid";
    h.counts[b] += counts[i].get<std::uint64_t>();
  }
  return "";
}

ordered profile_to_json(const profile& p) {
  const component_tree& tree = *p.tree;
  ordered components = ordered::array();
  ordered edge_list = ordered::array();
  for (vertex_id v = 0; v < tree.size(); ++v) {
    const component_load load = v < p.loads.size() ? p.loads[v] : component_load{};
    components.push_back({
        {"path", tree.path(v)},
        {"parent", v == 0 ? ordered(nullptr) : ordered(tree.path(tree.parent(v)))},
        {"kind", v < p.composite.size() && p.composite[v] ? "composite" : "leaf"},
        {"load", {{"cpu", load.cpu_seconds}, {"messages", load.messages}, {"memory", load.memory}}},
    });
    ordered timings = ordered::object();
    for (auto [key, h] : load.timings())
      if (!h->empty()) timings[key] = histogram_json(*h);
    if (!timings.empty()) components.back()["timings"] = std::move(timings);
    if (v != 0 && v < p.edges.size() && (p.edges[v].messages || p.edges[v].bytes)) {
      edge_list.push_back({{"parent", tree.path(tree.parent(v))},
                           {"child", tree.path(v)},
                           {"messages", p.edges[v].messages},
                           {"bytes", p.edges[v].bytes}});
    }
  }
  ordered flow_list = ordered::array();
  for (const auto& f : p.flows) {
    ordered targets = ordered::array();
    for (auto t : f.targets) targets.push_back(tree.path(t));
    flow_list.push_back(
        {{"publisher", tree.path(f.publisher)}, {"targets", targets}, {"messages", f.messages}, {"bytes", f.bytes}});
  }
  ordered link_list = ordered::array();
  for (const auto& l : p.links)
    link_list.push_back({{"from", l.from}, {"to", l.to}, {"messages", l.messages}, {"bytes", l.bytes}});
  return {{"format", "banyan-profile"}, {"version", 1},       {"mode", to_string(p.mode)}, {"duration_s", p.duration_s},
          {"components", components},   {"edges", edge_list}, {"flows", flow_list},        {"links", link_list}};
}

error bad(const std::string& name, const std::string& where, const std::string& what) {
  return {broker::errc::invalid_profile, name + ": " + where + ": " + what};
}
error invalid(const std::string& name, const std::string& failure) {
  return {broker::errc::invalid_profile, name + ": " + failure};
}

std::string field(const std::string& where, const char* key) { return where.empty() ? key : where + "." + key; }

// The value of `key` in object `o` as the partitioner's reader takes it: absent or null is 0, any
// other value must be a non-negative number. Sets `failure` (naming `where`.`key`) otherwise.
double number_at(const json& o, const char* key, const std::string& where, std::string& failure) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return 0;
  if (!it->is_number() || !(it->get<double>() >= 0)) {
    if (failure.empty()) failure = field(where, key) + ": must be a non-negative number, got " + it->dump();
    return 0;
  }
  return it->get<double>();
}

// A count (messages, bytes, memory): a non-negative integer. A number written as a double (`800.0`)
// is taken when it is whole; a fraction is an error, not truncated.
std::uint64_t count_at(const json& o, const char* key, const std::string& where, std::string& failure) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return 0;
  if (it->is_number_unsigned()) return it->get<std::uint64_t>();
  const double x = number_at(o, key, where, failure);
  if (!failure.empty()) return 0;
  if (x != std::floor(x) || x >= 18446744073709551616.0) {
    failure = field(where, key) + ": must be a whole number of at most 2^64 - 1, got " + it->dump();
    return 0;
  }
  return static_cast<std::uint64_t>(x);
}

std::string component_place(std::size_t i, const std::string& path) {
  return "components[" + std::to_string(i) + "] (" + path + ")";
}

result<profile> profile_from_json(const json& j, const std::string& name) {
  if (!j.is_object() || !j.contains("components") || !j["components"].is_array())
    return bad(name, "top level", "expected an object with a `components` array");
  // The same document checks as the partitioner's reader, so that a file one accepts the other does.
  if (auto v = j.find("version"); v == j.end()) {
    return bad(name, "version", "missing (expected 1)");
  } else if (!v->is_number_integer() || v->get<std::int64_t>() != 1) {
    return bad(name, "version", "unsupported version " + v->dump() + " (expected 1)");
  }
  if (auto f = j.find("format"); f != j.end() && *f != "banyan-profile")
    return bad(name, "format", "expected \"banyan-profile\", got " + f->dump());
  auto mode = j.find("mode");
  if (mode != j.end() && !mode->is_string()) return bad(name, "mode", "expected a string, got " + mode->dump());
  auto m = parse_routing_mode(mode != j.end() ? mode->get<std::string>() : std::string("hier"));
  if (!m) return bad(name, "mode", m.error().message);
  std::string failure;
  profile p;
  p.mode = *m;
  p.duration_s = number_at(j, "duration_s", "", failure);
  if (!failure.empty()) return invalid(name, failure);
  const auto& comps = j["components"];
  // Parents before children. A file this writer wrote lists them so (a tree's vertices are numbered
  // top-down) and is read in its own order, so vertex ids and the text survive a round trip; any
  // other file is read by path depth.
  std::vector<std::pair<std::size_t, std::size_t>> order;  // (depth, index)
  for (std::size_t i = 0; i < comps.size(); ++i) {
    const auto& c = comps[i];
    if (!c.is_object() || !c.contains("path") || !c["path"].is_string() || c["path"].get<std::string>().empty() ||
        c["path"].get<std::string>()[0] != '/')
      return bad(name, "components[" + std::to_string(i) + "].path",
                 "expected an absolute path string such as \"/app/x\"");
    const std::string path = c["path"].get<std::string>();
    // The broker's tree names every component below its parent, so `parent` must be the path's
    // prefix (the partitioner, whose paths are labels, takes any parent: docs/formats.md).
    auto parent = c.find("parent");
    if (parent == c.end()) return bad(name, component_place(i, path), "missing `parent` (null for the root)");
    const auto slash = path.rfind('/');
    if (slash == 0) {
      if (!parent->is_null())
        return bad(name, component_place(i, path),
                   "parent " + parent->dump() + ": a top-level path is the root, whose parent is null");
    } else if (!parent->is_string() || parent->get<std::string>() != path.substr(0, slash)) {
      return bad(name, component_place(i, path),
                 "parent " + parent->dump() + " is not the path's parent `" + path.substr(0, slash) + "`");
    }
    order.emplace_back(std::count(path.begin(), path.end(), '/'), i);
  }
  std::unordered_set<std::string_view> listed;
  bool parents_first = true;
  for (std::size_t i = 0; i < comps.size() && parents_first; ++i) {
    const std::string& path = comps[i]["path"].get_ref<const std::string&>();
    const auto slash = path.rfind('/');
    parents_first = slash == 0 ? i == 0 : listed.count(std::string_view(path).substr(0, slash)) != 0;
    listed.insert(path);
  }
  if (!parents_first) std::stable_sort(order.begin(), order.end());
  if (order.empty() || order[0].first != 1) return bad(name, "components", "no root component (`/name`)");
  const std::string root_path = comps[order[0].second]["path"].get<std::string>();
  auto tree = std::make_shared<component_tree>(root_path.substr(1));
  for (std::size_t k = 1; k < order.size(); ++k) {
    const auto& c = comps[order[k].second];
    std::string path = c["path"].get<std::string>();
    auto slash = path.rfind('/');
    if (slash == 0)
      return bad(name, component_place(order[k].second, path), "second root: " + root_path + " also has parent null");
    auto parent = tree->find(path.substr(0, slash));
    if (!parent) return bad(name, "component `" + path + "`", "its parent is not in the profile");
    auto v = tree->add(*parent, path.substr(slash + 1));
    if (!v) return bad(name, "component `" + path + "`", v.error().message);
  }
  tree->freeze();
  p.tree = tree;
  p.composite.assign(tree->size(), false);
  p.loads.assign(tree->size(), {});
  p.edges.assign(tree->size(), {});
  try {
    for (std::size_t i = 0; i < comps.size(); ++i) {
      const auto& c = comps[i];
      vertex_id v = *tree->find(c["path"].get<std::string>());
      p.composite[v] = c.value("kind", std::string("leaf")) == "composite";
      auto l = c.find("load");
      if (l == c.end() || l->is_null()) continue;
      const std::string where = component_place(i, c["path"].get<std::string>()) + ".load";
      if (!l->is_object()) return bad(name, where, "expected an object");
      p.loads[v].cpu_seconds = number_at(*l, "cpu", where, failure);
      p.loads[v].messages = count_at(*l, "messages", where, failure);
      p.loads[v].memory = count_at(*l, "memory", where, failure);
      if (!failure.empty()) return invalid(name, failure);
      if (auto t = c.find("timings"); t != c.end()) {
        const std::string at = component_place(i, c["path"].get<std::string>()) + ".timings";
        if (!t->is_object()) return bad(name, at, "expected an object");
        for (auto [key, h] : p.loads[v].timings()) {
          if (!t->contains(key)) continue;
          if (auto why = histogram_from_json((*t)[key], *h); !why.empty()) return bad(name, at + "." + key, why);
        }
      }
    }
    const json& edge_list = j.contains("edges") ? j["edges"] : json::array();
    for (std::size_t i = 0; i < edge_list.size(); ++i) {
      const auto& e = edge_list[i];
      const std::string where = "edges[" + std::to_string(i) + "]";
      auto child = tree->find(e.at("child").get<std::string>());
      if (!child) return bad(name, where, child.error().message);
      if (*child == 0 || e.at("parent").get<std::string>() != tree->path(tree->parent(*child)))
        return bad(name, where, e["parent"].dump() + " -> " + e["child"].dump() + " is not a tree edge");
      p.edges[*child].messages += count_at(e, "messages", where, failure);
      p.edges[*child].bytes += count_at(e, "bytes", where, failure);
      if (!failure.empty()) return invalid(name, failure);
    }
    const json& flow_list = j.contains("flows") ? j["flows"] : json::array();
    for (std::size_t i = 0; i < flow_list.size(); ++i) {
      const auto& f = flow_list[i];
      const std::string where = "flows[" + std::to_string(i) + "]";
      auto pub = tree->find(f.at("publisher").get<std::string>());
      if (!pub) return bad(name, where, pub.error().message);
      flow fl{*pub, {}, count_at(f, "messages", where, failure), count_at(f, "bytes", where, failure)};
      if (!failure.empty()) return invalid(name, failure);
      for (const auto& t : f.at("targets")) {
        auto tv = tree->find(t.get<std::string>());
        if (!tv) return bad(name, where, tv.error().message);
        fl.targets.push_back(*tv);
      }
      std::sort(fl.targets.begin(), fl.targets.end());
      p.flows.push_back(std::move(fl));
    }
    const json& link_list = j.contains("links") ? j["links"] : json::array();
    for (std::size_t i = 0; i < link_list.size(); ++i) {
      const auto& l = link_list[i];
      const std::string where = "links[" + std::to_string(i) + "]";
      p.links.push_back({l.at("from").get<std::string>(), l.at("to").get<std::string>(),
                         count_at(l, "messages", where, failure), count_at(l, "bytes", where, failure)});
      if (!failure.empty()) return invalid(name, failure);
    }
  } catch (const json::exception& e) {
    return bad(name, "value", e.what());
  }
  return p;
}

}  // namespace

std::string profile::to_json_text() const { return profile_to_json(*this).dump(1); }

result<profile> profile::from_json_text(std::string_view text, const std::string& name) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    return error{broker::errc::invalid_profile, name + ": " + e.what()};
  }
  return profile_from_json(j, name);
}

result<profile> profile::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return error{broker::errc::io, "profile `" + path + "`: cannot open"};
  std::ostringstream text;
  text << in.rdbuf();
  return from_json_text(text.str(), path);
}

result<void> profile::merge(const profile& other) {
  if (other.tree->size() != tree->size())
    return error{broker::errc::invalid_profile, "profiles of different trees cannot be merged"};
  for (vertex_id v = 0; v < tree->size(); ++v) {
    auto w = other.tree->find(tree->path(v));
    if (!w) return error{broker::errc::invalid_profile, "profiles differ: " + w.error().message};
    loads[v].messages += other.loads[*w].messages;
    loads[v].cpu_seconds += other.loads[*w].cpu_seconds;
    loads[v].memory += other.loads[*w].memory;
    for (std::size_t k = 0; k < 3; ++k) loads[v].timings()[k].second->add(*other.loads[*w].timings()[k].second);
    edges[v].messages += other.edges[*w].messages;
    edges[v].bytes += other.edges[*w].bytes;
  }
  std::map<std::pair<vertex_id, std::vector<vertex_id>>, std::size_t> index;
  for (std::size_t i = 0; i < flows.size(); ++i) index[{flows[i].publisher, flows[i].targets}] = i;
  for (const auto& f : other.flows) {
    flow g{*tree->find(other.tree->path(f.publisher)), {}, f.messages, f.bytes};
    for (auto t : f.targets) g.targets.push_back(*tree->find(other.tree->path(t)));
    std::sort(g.targets.begin(), g.targets.end());
    auto [it, fresh] = index.try_emplace({g.publisher, g.targets}, flows.size());
    if (fresh) {
      flows.push_back(std::move(g));
    } else {
      flows[it->second].messages += g.messages;
      flows[it->second].bytes += g.bytes;
    }
  }
  for (const auto& l : other.links) {
    auto same = std::find_if(links.begin(), links.end(),
                             [&](const link_traffic& x) { return x.from == l.from && x.to == l.to; });
    if (same == links.end()) links.push_back(l);
    else {
      same->messages += l.messages;
      same->bytes += l.bytes;
    }
  }
  duration_s = std::max(duration_s, other.duration_s);
  return {};
}

result<profile> profile::since(const profile& earlier) const {
  if (earlier.tree->size() != tree->size())
    return error{broker::errc::invalid_profile, "profiles of different trees have no window between them"};
  // Counters only grow, but two snapshots read them at slightly different moments per node: clamp
  // rather than wrap if a reading ever came out behind.
  auto minus = [](std::uint64_t a, std::uint64_t b) { return a > b ? a - b : 0; };
  profile out = *this;
  for (vertex_id v = 0; v < tree->size(); ++v) {
    auto w = earlier.tree->find(tree->path(v));
    if (!w) return error{broker::errc::invalid_profile, "profiles differ: " + w.error().message};
    out.loads[v].messages = minus(loads[v].messages, earlier.loads[*w].messages);
    out.loads[v].cpu_seconds = std::max(0.0, loads[v].cpu_seconds - earlier.loads[*w].cpu_seconds);
    for (std::size_t k = 0; k < 3; ++k)
      out.loads[v].timings()[k].second->subtract(*earlier.loads[*w].timings()[k].second);
    out.edges[v].messages = minus(edges[v].messages, earlier.edges[*w].messages);
    out.edges[v].bytes = minus(edges[v].bytes, earlier.edges[*w].bytes);
  }
  std::map<std::pair<std::string, std::vector<std::string>>, const flow*> before;
  auto key_of = [](const profile& p, const flow& f) {
    std::vector<std::string> targets;
    for (auto t : f.targets) targets.push_back(p.tree->path(t));
    return std::pair{p.tree->path(f.publisher), std::move(targets)};
  };
  for (const auto& f : earlier.flows) before[key_of(earlier, f)] = &f;
  out.flows.clear();
  for (const auto& f : flows) {
    flow g = f;
    if (auto it = before.find(key_of(*this, f)); it != before.end()) {
      g.messages = minus(f.messages, it->second->messages);
      g.bytes = minus(f.bytes, it->second->bytes);
    }
    if (g.messages) out.flows.push_back(std::move(g));
  }
  for (auto& l : out.links) {
    for (const auto& e : earlier.links) {
      if (e.from != l.from || e.to != l.to) continue;
      l.messages = minus(l.messages, e.messages);
      l.bytes = minus(l.bytes, e.bytes);
    }
  }
  out.duration_s = std::max(0.0, duration_s - earlier.duration_s);
  return out;
}

result<void> profile::write(const std::string& path) const {
  std::ofstream out(path);
  if (!out) return error{broker::errc::io, "profile `" + path + "`: cannot open for writing"};
  out << to_json_text() << "\n";
  if (!out) return error{broker::errc::io, "profile `" + path + "`: write failed"};
  return {};
}

std::string profile::traffic_table(std::size_t max_rows) const {
  std::vector<vertex_id> used;
  std::uint64_t total_messages = 0, total_bytes = 0;
  for (vertex_id v = 1; v < edges.size(); ++v) {
    if (edges[v].messages == 0) continue;
    used.push_back(v);
    total_messages += edges[v].messages;
    total_bytes += edges[v].bytes;
  }
  std::sort(used.begin(), used.end(), [&](vertex_id a, vertex_id b) {
    return edges[a].messages != edges[b].messages ? edges[a].messages > edges[b].messages : a < b;
  });
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-44s %10s %12s\n", "edge (parent -> child)", "messages", "bytes");
  out += line;
  for (std::size_t i = 0; i < used.size() && i < max_rows; ++i) {
    vertex_id v = used[i];
    std::string name =
        tree->path(tree->parent(v)) + " -> " + tree->path(v).substr(tree->path(tree->parent(v)).size() + 1);
    std::snprintf(line, sizeof line, "%-44s %10llu %12llu\n", name.c_str(),
                  static_cast<unsigned long long>(edges[v].messages), static_cast<unsigned long long>(edges[v].bytes));
    out += line;
  }
  if (used.size() > max_rows) out += "  ... " + std::to_string(used.size() - max_rows) + " more edges\n";
  std::snprintf(line, sizeof line, "%-44s %10llu %12llu   (%s, %zu edges used)\n", "total edge traffic",
                static_cast<unsigned long long>(total_messages), static_cast<unsigned long long>(total_bytes),
                to_string(mode), used.size());
  out += line;
  return out;
}

}  // namespace banyan
