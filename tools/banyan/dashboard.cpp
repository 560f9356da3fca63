#include "banyan/dashboard.hpp"

#include "banyan/partitioner/algorithm.hpp"
#include "banyan/partitioner/migration.hpp"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

namespace banyan::cli {

namespace bp = banyan::partitioner;
using clock_type = std::chrono::steady_clock;
using json = nlohmann::json;

namespace {

bool is_loopback(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

double seconds_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Counts per second between two readings, or null when there is no earlier one.
json rate(std::uint64_t now, std::uint64_t before, double dt) {
  if (dt <= 0 || now < before) return nullptr;
  return static_cast<double>(now - before) / dt;
}

// {"error": WHY}. Paths are the app's own names: bytes that are not UTF-8 must not make it fail.
std::string error_body(const std::string& why) {
  return json{{"error", why}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

std::optional<dashboard_address> parse_dashboard_address(const std::string& spec, bool remote, std::string& why) {
  dashboard_address a{"127.0.0.1", 0};
  std::string port = spec;
  if (const auto colon = spec.rfind(':'); colon != std::string::npos) {
    a.host = spec.substr(0, colon);
    port = spec.substr(colon + 1);
    if (a.host.size() >= 2 && a.host.front() == '[' && a.host.back() == ']')
      a.host = a.host.substr(1, a.host.size() - 2);
  }
  char* end = nullptr;
  const long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || p < 0 || p > 65535) {
    why = "--dashboard `" + spec + "`: expected ADDR:PORT (e.g. 127.0.0.1:8080; port 0 picks a free one), got port `" +
          port + "`";
    return std::nullopt;
  }
  a.port = static_cast<int>(p);
  if (a.host.empty()) {
    why = "--dashboard `" + spec + "`: no address before the port (e.g. 127.0.0.1:" + port + ")";
    return std::nullopt;
  }
  if (!remote && !is_loopback(a.host)) {
    why = "--dashboard `" + spec + "`: `" + a.host +
          "` is not a loopback address; the dashboard has no authentication " +
          "and anyone who reaches it sees the run, so it listens on 127.0.0.1 or ::1 only unless --dashboard-remote " +
          "is given (or reach it through `ssh -L`)";
    return std::nullopt;
  }
  return a;
}

struct dashboard::impl {
  dashboard_options o;
  httplib::Server server;
  std::thread thread;
  int port = 0;

  mutable std::mutex m;
  std::condition_variable cv;
  std::atomic<bool> wanted{false};
  bool closing = false;
  clock_type::time_point last_ask;                                 // when a page last asked for a fresh reading
  std::optional<dashboard_reading> latest;                         // the newest reading, failed or not
  std::deque<std::pair<clock_type::time_point, profile>> history;  // good readings, oldest first
  std::uint64_t readings = 0;
  std::vector<int> node_of;   // per vertex of the app's tree, index into o.deployment.c.nodes
  std::string mapping_error;  // why node_of could not be computed
  std::mutex propose_mutex;   // one plan at a time

  // Keeps readings for the longest window a plan may ask for, and some slack.
  static constexpr double history_s = 70;

  std::string url() const {
    const bool v6 = o.address.find(':') != std::string::npos;
    return "http://" + (v6 ? "[" + o.address + "]" : o.address) + ":" + std::to_string(port) + "/";
  }

  // Waits for a reading taken after this call (or one less than 0.5 s old); false when none came.
  bool fresh_reading(std::unique_lock<std::mutex>& lock) {
    const auto asked = clock_type::now();
    if (latest && asked - latest->taken < std::chrono::milliseconds(500)) return true;
    last_ask = asked;
    wanted = true;
    return cv.wait_for(lock, std::chrono::seconds(15), [&] { return closing || (latest && latest->taken >= asked); }) &&
           !closing;
  }

  // Which node each component runs on, from the deployment the launch started (the rule the nodes
  // apply: a component is on its nearest assigned ancestor's node).
  void compute_mapping(const profile& p) {
    if (!node_of.empty() || !mapping_error.empty()) return;
    bp::tree t;
    for (vertex_id v = 0; v < p.tree->size(); ++v) {
      t.path.push_back(p.tree->path(v));
      t.parent.push_back(v == 0 ? bp::no_vertex : static_cast<bp::vertex_id>(p.tree->parent(v)));
    }
    auto m = bp::mapping_of(t, o.deployment);
    if (!m) {
      mapping_error = m.error().message;
      return;
    }
    node_of.assign(m->begin(), m->end());
  }

  // The newest good reading at least `age` s older than `now` (the oldest one when none is that old;
  // nullptr when there is none other than `now` itself).
  const profile* baseline(clock_type::time_point now, double age) const {
    const profile* best = nullptr;
    for (const auto& [t, p] : history) {
      if (t >= now) break;
      if (!best || seconds_between(t, now) >= age) best = &p;
    }
    return best;
  }
  clock_type::time_point time_of(const profile* p) const {
    for (const auto& [t, q] : history)
      if (&q == p) return t;
    return {};
  }

  json state() const {
    json s{{"deployment", o.deployment_file}, {"reading", readings}, {"error", nullptr}, {"stale", false}};
    if (latest && !latest->error.empty()) {
      s["error"] = latest->error;
      s["stale"] = !history.empty();
    }
    if (!mapping_error.empty()) s["error"] = "cannot colour the tree by node: " + mapping_error;
    const auto& nodes = o.deployment.c.nodes;
    std::map<std::string, std::string> process;
    if (latest)
      for (const auto& [n, what] : latest->processes) process[n] = what;
    std::map<std::string, json> health;  // node -> its health file
    if (latest)
      for (const auto& text : latest->health) {
        auto h = json::parse(text, nullptr, false);
        if (h.is_object() && h.contains("node")) health[h["node"].get<std::string>()] = h;
      }
    s["nodes"] = json::array();
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      json n{{"name", nodes[i].name},
             {"index", i},
             {"process", process.count(nodes[i].name) ? process[nodes[i].name] : "unknown"},
             {"publisher_pauses", nullptr},
             {"components", 0}};
      if (auto h = health.find(nodes[i].name); h != health.end())
        n["publisher_pauses"] = h->second.value("publisher_pauses", 0);
      s["nodes"].push_back(n);
    }
    if (history.empty()) return s;
    const auto& [now, p] = history.back();
    const profile* base = baseline(now, 1.0);
    const double dt = base ? seconds_between(time_of(base), now) : 0;
    s["taken_ago_s"] = seconds_between(now, clock_type::now());
    s["duration_s"] = p.duration_s;
    s["rate_window_s"] = dt;
    json comps = json::array(), edges = json::array();
    std::uint64_t edge_messages = 0;
    for (vertex_id v = 0; v < p.tree->size(); ++v) {
      const std::string& path = p.tree->path(v);
      const int node = v < node_of.size() ? node_of[v] : -1;
      if (node >= 0)
        s["nodes"][static_cast<std::size_t>(node)]["components"] =
            s["nodes"][static_cast<std::size_t>(node)]["components"].get<int>() + 1;
      json c{{"path", path},
             {"name", path.substr(path.rfind('/') + 1)},
             {"node", node},
             {"parent", v == 0 ? -1 : static_cast<long long>(p.tree->parent(v))},
             {"composite", v < p.composite.size() && p.composite[v]}};
      if (v < p.loads.size()) {
        c["handled"] = p.loads[v].messages;
        c["cpu_s"] = p.loads[v].cpu_seconds;
        c["memory"] = p.loads[v].memory;
      }
      comps.push_back(c);
      if (v == 0 || v >= p.edges.size()) continue;
      const auto& e = p.edges[v];
      const int parent_node = p.tree->parent(v) < node_of.size() ? node_of[p.tree->parent(v)] : -1;
      json ej{{"child", v},       {"messages", e.messages},
              {"bytes", e.bytes}, {"cut", node >= 0 && node != parent_node},
              {"rate", nullptr},  {"byte_rate", nullptr}};
      if (base && v < base->edges.size()) {
        ej["rate"] = rate(e.messages, base->edges[v].messages, dt);
        ej["byte_rate"] = rate(e.bytes, base->edges[v].bytes, dt);
      }
      edge_messages += e.messages;
      edges.push_back(ej);
    }
    s["components"] = std::move(comps);
    s["edges"] = std::move(edges);
    json links = json::array();
    std::uint64_t cross_messages = 0, cross_bytes = 0;
    for (const auto& l : p.links) {
      json lj{{"from", l.from},  {"to", l.to},           {"messages", l.messages}, {"bytes", l.bytes},
              {"rate", nullptr}, {"byte_rate", nullptr}, {"health", "unknown"}};
      cross_messages += l.messages;
      cross_bytes += l.bytes;
      if (base)
        for (const auto& b : base->links)
          if (b.from == l.from && b.to == l.to) {
            lj["rate"] = rate(l.messages, b.messages, dt);
            lj["byte_rate"] = rate(l.bytes, b.bytes, dt);
          }
      if (auto h = health.find(l.from); h != health.end() && h->second["links"].is_array()) {
        for (const auto& hl : h->second["links"]) {
          if (hl.value("to", "") != l.to) continue;
          for (const auto& [k, v] : hl.items())
            if (k != "to") lj[k] = v;
        }
      }
      // What the receiving node refused of this sender's envelopes (not its place to send them).
      std::uint64_t refused = 0;
      if (auto h = health.find(l.to); h != health.end() && h->second.contains("refused")) {
        if (auto r = h->second["refused"].find(l.from); r != h->second["refused"].end() && r->is_object()) {
          for (const auto& [kind, count] : r->items())
            if (count.is_number_unsigned()) refused += count.get<std::uint64_t>();
          lj["refused_kinds"] = *r;
        }
      }
      lj["refused"] = refused;
      // A node whose process is gone answers nothing: its links are lost, or ended with the run.
      for (const auto* end : {&l.from, &l.to}) {
        auto it = process.find(*end);
        if (it == process.end() || (it->second.rfind("exited", 0) != 0 && it->second.rfind("killed", 0) != 0)) continue;
        lj["health"] = it->second == "exited 0" ? "ended" : "lost";
      }
      links.push_back(lj);
    }
    s["links"] = std::move(links);
    s["totals"] = {
        {"edge_messages", edge_messages}, {"cross_node_messages", cross_messages}, {"cross_node_bytes", cross_bytes}};
    return s;
  }

  // POST /api/propose: the migration plan from the running deployment for the traffic of the
  // window asked for. Errors are {"error": TEXT} with status 422 (400 for a malformed request).
  std::pair<int, std::string> propose(const std::string& body) {
    const auto fail = [](int status, const std::string& why) {
      return std::pair<int, std::string>{status, error_body(why)};
    };
    std::string why;
    const auto request = parse_proposal_request(body, why);
    if (!request) return fail(400, why);
    std::lock_guard one(propose_mutex);
    profile window;
    bp::deployment current;
    {
      std::unique_lock lock(m);
      if (!fresh_reading(lock) && history.empty()) return fail(422, "no reading of the run yet");
      if (history.empty()) return fail(422, latest ? latest->error : std::string("no reading of the run yet"));
      const auto& [now, total] = history.back();
      const profile* base = request->window_s > 0 ? baseline(now, request->window_s) : nullptr;
      if (base) {
        auto w = total.since(*base);
        if (!w) return fail(422, w.error().what());
        window = std::move(*w);
      } else {
        window = total;
      }
      current = o.deployment;  // deliver() replaces its assignments when a reconfiguration moved some
    }
    return plan_proposal(window, current, o.deployment_file, *request);
  }

  bool host_allowed(const httplib::Request& req) const {
    if (o.remote) return true;
    const std::string host = req.get_header_value("Host");
    const std::string p = ":" + std::to_string(port);
    const bool v6 = o.address.find(':') != std::string::npos;
    for (const std::string& ok :
         {(v6 ? "[" + o.address + "]" : o.address) + p, "localhost" + p, "127.0.0.1" + p, "[::1]" + p})
      if (host == ok) return true;
    return false;
  }

  void routes() {
    server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (host_allowed(req)) return httplib::Server::HandlerResponse::Unhandled;
      res.status = 403;
      res.set_content("banyan dashboard: Host `" + req.get_header_value("Host") + "` is not this dashboard's address\n",
                      "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    });
    server.Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_header("Cache-Control", "no-store");
      // Nothing on the page may come from elsewhere: scripts and styles are inline, data is ours.
      res.set_header("Content-Security-Policy",
                     "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; "
                     "img-src data:");
      res.set_content(dashboard_page, "text/html; charset=utf-8");
    });
    server.Get("/api/state", [this](const httplib::Request&, httplib::Response& res) {
      std::unique_lock lock(m);
      if (!fresh_reading(lock) && !closing && latest) latest->error = "the launch took no reading within 15 s";
      if (closing) {
        res.status = 503;
        res.set_content(R"({"error": "the launch is ending"})", "application/json");
        return;
      }
      res.set_header("Cache-Control", "no-store");
      // Paths are the app's own names: bytes that are not UTF-8 must not make the reply fail.
      res.set_content(state().dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
    });
    server.Post("/api/propose", [this](const httplib::Request& req, httplib::Response& res) {
      auto [status, body] = propose(req.body);
      res.status = status;
      res.set_content(body, "application/json");
    });
  }
};

std::optional<proposal_request> parse_proposal_request(const std::string& body, std::string& why) {
  auto in = json::parse(body.empty() ? "{}" : body, nullptr, false);
  if (!in.is_object()) {
    why = "the request body is not a JSON object";
    return std::nullopt;
  }
  proposal_request r;
  const auto number = [&](const char* key, double& out) {
    if (!in.contains(key)) return true;
    if (!in[key].is_number()) return false;
    out = in[key].get<double>();
    return true;
  };
  const auto text = [&](const char* key, std::string& out) {
    if (!in.contains(key)) return true;
    if (!in[key].is_string()) return false;
    out = in[key].get<std::string>();
    return true;
  };
  if (!number("migration_cost", r.migration_cost) || !std::isfinite(r.migration_cost) || r.migration_cost < 0)
    why = "migration_cost must be a non-negative number (cost per byte of state)";
  else if (!number("window_s", r.window_s) || !std::isfinite(r.window_s) || r.window_s < 0)
    why = "window_s must be a non-negative number of seconds";
  else if (!text("weight", r.weight) || (r.weight != "messages" && r.weight != "bytes"))
    why = "weight must be `messages` or `bytes`";
  else if (!text("load", r.load) || (r.load != "cpu" && r.load != "cores"))
    why = "load must be `cores` (CPU seconds per second of the window) or `cpu` (CPU seconds of the window)";
  if (!why.empty()) return std::nullopt;
  return r;
}

std::pair<int, std::string> plan_proposal(const profile& window, const bp::deployment& d,
                                          const std::string& deployment_file, const proposal_request& r) {
  const auto fail = [](const std::string& why) { return std::pair<int, std::string>{422, error_body(why)}; };
  const double window_s = window.duration_s;
  bp::profile_options po;
  if (r.weight == "bytes") po.unit = bp::traffic_unit::bytes;
  auto t = bp::parse_profile(window.to_json_text(), "the live profile", po);
  if (!t) return fail(t.error().message);
  if (r.load == "cores") {
    if (!(window_s > 0))
      return fail(
          "the window has no length yet, so its CPU seconds cannot be read as cores; ask again, or choose CPU seconds");
    for (auto& c : t->cpu) c /= window_s;
  }
  auto pr = bp::make_problem(std::move(*t), d.c);
  if (!pr) {
    std::ostringstream unit;
    unit << (r.load == "cores" ? "cores (CPU seconds per second of a " : "CPU seconds (of a ") << window_s
         << " s window)";
    return fail("the live profile on " + deployment_file + "'s nodes, loads in " + unit.str() + ": " +
                pr.error().message);
  }
  const bp::problem& p = *pr;
  auto current = bp::mapping_of(p.t, d);  // the deployment's own nodes: same numbering
  if (!current) return fail(current.error().message);
  std::vector<bp::mapping> candidates;
  auto heuristic = bp::solve("bottom-up", p, {.timeout_s = 5, .seed = 1});
  if (heuristic && (heuristic->status == bp::solve_status::optimal || heuristic->status == bp::solve_status::feasible))
    candidates.push_back(heuristic->map);
  const auto started = clock_type::now();
  // A plan for `banyan reconfigure`, which moves everything but the root.
  auto plan = bp::plan_migration(
      p, *current, {.alpha = r.migration_cost, .candidates = std::move(candidates), .seed = 1, .root_stays = true});
  if (!plan) return fail(plan.error().message);
  json moves = json::array();
  for (const auto& mv : plan->moves)
    moves.push_back({{"path", p.t.name(mv.root)},
                     {"from", p.c.nodes[mv.from].name},
                     {"to", p.c.nodes[mv.to].name},
                     {"components", mv.components},
                     {"state_bytes", mv.state_bytes}});
  std::ostringstream yaml;
  std::ostringstream head;
  head << "migration plan from " << deployment_file << " at " << r.migration_cost << " per byte: cost "
       << plan->cost_before << " -> " << plan->cost_after << " (" << r.weight << " x link cost over " << window_s
       << " s), " << plan->bytes_moved << " bytes of state moved";
  bp::write_deployment(yaml, p, plan->map, {"proposed by banyan launch --dashboard from the live profile", head.str()});
  const double saving = plan->cost_before - plan->cost_after;
  json out{{"window_s", window_s},
           {"weight", r.weight},
           {"load", r.load},
           {"migration_cost", r.migration_cost},
           {"cost_before", plan->cost_before},
           {"cost_after", plan->cost_after},
           {"saving", saving},
           {"saving_share", plan->cost_before > 0 ? json(saving / plan->cost_before) : json(nullptr)},
           {"saving_per_s", window_s > 0 ? json(saving / window_s) : json(nullptr)},
           {"bytes_moved", plan->bytes_moved},
           {"objective", plan->objective},
           {"objective_current", plan->objective_current},
           {"current_feasible", plan->current_feasible},
           {"start", plan->start},
           {"moves", moves},
           {"has_memory", p.t.has_memory()},
           {"deployment", yaml.str()},
           {"seconds", seconds_between(started, clock_type::now())}};
  if (!plan->current_feasible) out["current_violation"] = plan->current_violation;
  return {200, out.dump(-1, ' ', false, json::error_handler_t::replace)};
}

dashboard::dashboard(std::unique_ptr<impl> i) : impl_(std::move(i)) {}

std::unique_ptr<dashboard> dashboard::start(dashboard_options o, std::string& why) {
  auto i = std::make_unique<impl>();
  i->o = std::move(o);
  i->routes();
  // Long enough for a plan on a big tree; a page that went away frees its thread.
  i->server.set_read_timeout(std::chrono::seconds(30));
  i->server.set_write_timeout(std::chrono::seconds(30));
  if (i->o.port == 0) {
    i->port = i->server.bind_to_any_port(i->o.address);
  } else if (i->server.bind_to_port(i->o.address, i->o.port)) {
    i->port = i->o.port;
  }
  if (i->port <= 0) {
    why = "--dashboard " + i->o.address + ":" + std::to_string(i->o.port) +
          ": cannot listen there (in use, or not an address of this machine)";
    return nullptr;
  }
  i->thread = std::thread([p = i.get()] { p->server.listen_after_bind(); });
  return std::unique_ptr<dashboard>(new dashboard(std::move(i)));
}

dashboard::~dashboard() {
  {
    std::lock_guard lock(impl_->m);
    impl_->closing = true;
  }
  impl_->cv.notify_all();
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

std::string dashboard::url() const { return impl_->url(); }

bool dashboard::wanted() const { return impl_->wanted.load(); }

void dashboard::deliver(dashboard_reading r) {
  {
    std::lock_guard lock(impl_->m);
    // A failed reading has no health of its own: the links keep their last known one (and state()
    // marks those of a node whose process is gone).
    if (!r.total && impl_->latest) r.health = impl_->latest->health;
    auto same = [](const bp::assignment& a, const bp::assignment& b) { return a.path == b.path && a.node == b.node; };
    if (!std::equal(r.assignments.begin(), r.assignments.end(), impl_->o.deployment.assignments.begin(),
                    impl_->o.deployment.assignments.end(), same)) {
      impl_->o.deployment.assignments = r.assignments;  // a reconfiguration moved components: colour anew
      impl_->node_of.clear();
      impl_->mapping_error.clear();
    }
    if (r.total) {
      impl_->compute_mapping(*r.total);
      impl_->history.emplace_back(r.taken, *r.total);
      while (impl_->history.size() > 2 && seconds_between(impl_->history.front().first, r.taken) > impl::history_s)
        impl_->history.pop_front();
    }
    impl_->latest = std::move(r);
    ++impl_->readings;
    // A page that asked after this reading began waits for the next one.
    impl_->wanted = impl_->last_ask > impl_->latest->taken;
  }
  impl_->cv.notify_all();
}

}  // namespace banyan::cli
