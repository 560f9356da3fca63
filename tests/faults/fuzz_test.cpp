// A structured fuzz test of the node protocol. The test plays node n0 of
// a 2-node deployment with a bare transport; n1 is a real mesh_app node. For every envelope kind it
// starts from a well-formed envelope and mutates each field in turn (seeded, a bounded number of
// values per field: empty, huge, control bytes, out-of-range numbers and vertices, other components,
// fields the kind does not use), and sends each to n1. n1 must refuse the malformed ones (counted,
// logged rate-limited) and keep working: afterwards it answers a request correctly and ends on a
// `quit` with exit code 0.
#include "faults.hpp"

#include "../support/node_started.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>

namespace banyan::runtime::test {
namespace {

namespace fs = std::filesystem;

// The SDK's kinds and reply codes (sdk/src/cluster/node_wire.hpp; the test speaks the protocol from outside).
enum kind : std::uint16_t {
  data = 1,
  subscribe = 2,
  unsubscribe = 3,
  ready = 4,
  quit = 5,
  request = 6,
  reply = 7,
  child_start = 8,
  child_stop = 9,
  child_started = 10,
  child_failed = 11,
  undelivered = 12,
  child_stopped = 13,
  monitor = 14,
  down = 15,
  move = 16
};
constexpr std::uint16_t first_unknown_kind = 17;
// A live move's steps (node_wire.hpp). An authenticated peer's `freeze` (and `frozen`, which stands
// for one on its way) pauses a node until that move's thaw, by design: those two are not sent.
constexpr std::int32_t move_freeze = 1, move_frozen = 2, move_ack = 7;

// mesh_app's tree vertices by path, as its one-process profile lists them (in vertex order): the
// node protocol names components by vertex.
std::map<std::string, std::uint32_t> mesh_vertices(const fs::path& dir) {
  const fs::path profile = dir / "mesh_profile.json";
  auto p = process::spawn({MESH_APP, "--messages", "10", "--profile", profile.string()},
                          {.out = output_mode::capture, .err = output_mode::merge});
  if (!p || !p->wait(60s)) return {};
  std::ifstream in(profile);
  auto j = nlohmann::json::parse(in, nullptr, false);
  std::map<std::string, std::uint32_t> out;
  if (!j.is_object()) return out;
  std::uint32_t v = 0;
  for (const auto& c : j["components"]) out[c.value("path", "")] = v++;
  return out;
}

std::map<std::string, std::uint32_t> vertex;  // mesh_vertices(), filled by the test first

envelope well_formed(kind k) {
  envelope e;
  e.kind = k;
  switch (k) {
    case data:
      e.sender = vertex.at("/mesh/zone0/pub");
      e.scope = vertex.at("/mesh");
      e.topic = "data/z0";
      e.entry = 0;
      e.origin_sequence = 1;
      e.payload = shared_bytes::copy_of("x");
      break;
    case subscribe:
      e.sender = vertex.at("/mesh/zone0/sub");
      e.topic = "fuzz/+";
      e.id = 7;  // origin 0 (n0) << 40 | 7
      break;
    case unsubscribe: e.id = 7; break;
    case ready: break;
    case quit: e.code = 0; break;
    case request:
      e.sender = vertex.at("/mesh/checker");
      e.target = "/mesh/zone1/pub";
      e.topic = "echo";
      e.id = 1000;
      e.timeout_ms = 1000;
      e.payload = shared_bytes::copy_of("fuzz");
      break;
    case reply:
      e.id = 99;
      e.code = 2;
      e.text = "no";
      break;
    case child_start:
    case child_stop:
    case child_started:
    case child_failed:
    case child_stopped:
      // /mesh/zone1/pub is not a hosted root of n1 (commands are refused) and n1, not n0, hosts it
      // (reports are refused): n1 must refuse every one of these, well-formed or not.
      e.target = "/mesh/zone1/pub";
      e.id = 2;
      if (k == child_failed) e.text = "fuzz";
      break;
    case undelivered:
      e.sender = vertex.at("/mesh/zone1/pub");
      e.target = "n0";
      e.id = 3;
      e.text = "fuzz";
      break;
    case monitor:  // n0's /mesh/checker watches n1's /mesh/zone1/pub
      e.sender = vertex.at("/mesh/checker");
      e.target = "/mesh/zone1/pub";
      e.id = 5;
      break;
    case down:  // news for a watcher on n1 of an end on n0 that it never asked about
      e.sender = vertex.at("/mesh/zone0/pub");
      e.target = "/mesh/zone1/pub";
      e.id = 6;
      e.text = "stopped";
      break;
    case move:  // a step of a move n1 takes no part in: dropped
      e.code = move_ack;
      e.id = 77;
      break;
  }
  return e;
}

// Values a mutation may give a text field.
std::string text_value(std::mt19937_64& rng, int which) {
  switch (which % 8) {
    case 0: return "";
    case 1: return std::string(70000, 'a');
    case 2: return std::string("/mesh\n[n1] forged\0line", 22);
    case 3: return "/mesh/zone2/slow/sub";
    case 4: return "/nope";
    case 5: return "a/#/b";
    case 6: return "+";
    default: {
      std::string s(1 + rng() % 64, '\0');
      for (auto& c : s) c = static_cast<char>(rng());
      return s;
    }
  }
}

std::uint64_t number_value(std::mt19937_64& rng, int which) {
  switch (which % 8) {
    case 0: return 0;
    case 1: return 1;
    case 2: return 255;
    case 3: return 256;
    case 4: return 0xffffffffull;
    case 5: return ~0ull;
    case 6: return 1ull << 40;
    default: return rng();
  }
}

// Every field of `e` mutated `per_field` times: what n1 is sent.
std::vector<envelope> mutations(kind k, std::mt19937_64& rng, int per_field) {
  std::vector<envelope> out;
  for (int field = 0; field < 14; ++field) {
    for (int m = 0; m < per_field; ++m) {
      envelope e = well_formed(k);
      switch (field) {
        case 0: e.sender = static_cast<std::uint32_t>(number_value(rng, m)); break;
        case 1: e.scope = static_cast<std::uint32_t>(number_value(rng, m)); break;
        case 2: e.topic = text_value(rng, m); break;
        case 3: e.target = text_value(rng, m); break;
        case 4: e.text = text_value(rng, m); break;
        case 5: e.id = number_value(rng, m); break;
        case 6: e.origin_sequence = number_value(rng, m); break;
        case 7: e.entry = static_cast<std::uint32_t>(number_value(rng, m)); break;
        case 8: e.from = static_cast<std::uint32_t>(number_value(rng, m)); break;
        case 9: e.code = static_cast<std::int32_t>(number_value(rng, m)); break;
        case 10: e.timeout_ms = static_cast<std::uint32_t>(number_value(rng, m)); break;
        case 11: e.urgent = !e.urgent; break;
        case 12: e.payload = m % 2 ? shared_bytes() : shared_bytes::copy_of(text_value(rng, m)); break;
        case 13: e.kind = static_cast<std::uint16_t>(m % 2 ? 0 : first_unknown_kind + rng() % 60000); break;
      }
      // A mutation that leaves a `quit` well-formed (any reason text) would end n1 here; the
      // well-formed quit comes last.
      if (e.kind == quit && e.code >= 0 && e.code <= 255 && e.sender == no_vertex_field && e.scope == no_vertex_field &&
          e.topic.empty() && e.target.empty() && e.id == 0 && e.origin_sequence == 0 && e.entry == no_vertex_field &&
          e.from == no_vertex_field && e.timeout_ms == 0 && e.payload.empty()) {
        continue;
      }
      if (e.kind == move && (e.code == move_freeze || e.code == move_frozen)) continue;
      out.push_back(std::move(e));
    }
  }
  return out;
}

TEST(Fuzz, EveryFieldOfEveryKindMutatedLeavesTheNodeWorking) {
  temp_dir dir;
  const fs::path d = dir.path / "deployment.yaml";
  {
    std::ofstream out(d);
    out << "version: 1\nnodes:\n";
    for (const char* n : {"n0", "n1"})
      out << "  - {name: " << n << ", endpoint: \"" << dir.ipc(n) << "\", capacity: {cpu: 1}}\n";
    out << "assignments:\n  /mesh: n0\n  /mesh/zone1: n1\n";
  }
  vertex = mesh_vertices(dir.path);
  ASSERT_TRUE(vertex.count("/mesh/zone1/pub")) << "mesh_app's profile did not list its components";
  recorder r0;
  auto n0 = transport::start(node_options("n0", dir.ipc("n0"), {{"n1", dir.ipc("n1"), ""}}, 1000ms), r0.make());
  ASSERT_TRUE(n0.has_value()) << n0.error().what();
  auto p = process::spawn({MESH_APP, "--messages", "10", "--deployment", d.string(), "--node", "n1"},
                          {.out = output_mode::capture, .err = output_mode::merge});
  ASSERT_TRUE(p.has_value()) << p.error().what();
  node_process node{std::move(*p)};
  ASSERT_TRUE((*n0)->wait_until_up("n1", 30s).has_value()) << node.output();
  // n1 sends its subscriptions and `ready`; ours makes it cluster-ready.
  ASSERT_TRUE(r0.wait(
      [&] {
        for (auto& e : r0.got["n1"])
          if (e.kind == ready) return true;
        return false;
      },
      30s))
      << node.output();
  ASSERT_TRUE((*n0)->send("n1", well_formed(ready), never_block).has_value());

  const std::uint64_t seed = 22;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::size_t sent = 0;
  for (kind k : {data, subscribe, unsubscribe, ready, quit, request, reply, child_start, child_stop, child_started,
                 child_failed, undelivered, child_stopped, monitor, down, move}) {
    for (auto& e : mutations(k, rng, 8)) {
      ASSERT_TRUE((*n0)->send("n1", std::move(e), never_block).has_value());
      ++sent;
    }
  }
  // Still working: a request is answered as it should be.
  envelope ask = well_formed(request);
  ask.id = 424242;
  ask.payload = shared_bytes::copy_of("ping");
  ASSERT_TRUE((*n0)->send("n1", ask, never_block).has_value());
  const envelope* answer = nullptr;
  ASSERT_TRUE(r0.wait(
      [&] {
        for (auto& e : r0.got["n1"])
          if (e.kind == reply && e.id == 424242) answer = &e;
        return answer != nullptr;
      },
      30s))
      << node.output();
  {
    std::lock_guard lk(r0.mu);
    EXPECT_EQ(answer->code, 0) << answer->text;
    EXPECT_EQ(answer->payload.text(), "ping from /mesh/zone1/pub");
  }
  // The malformed ones were refused and counted, and no peer-chosen byte reached the log raw.
  EXPECT_TRUE(node.wait_for("malformed ", 10s));
  EXPECT_EQ(node.output().find("\n[n1] forged"), std::string::npos) << "a forged line";
  EXPECT_NE(node.output().find("\\n[n1] forged\\x00line"), std::string::npos) << node.output();
  // And it ends on a well-formed quit.
  ASSERT_TRUE((*n0)->send("n1", well_formed(quit), never_block).has_value());
  EXPECT_EQ(node.wait_exit(30s), 0) << node.output();
  EXPECT_GT(sent, 500u);
  std::printf("fuzz: %zu mutated envelopes sent, seed %llu\n", sent, static_cast<unsigned long long>(seed));
}

// The rogue tests' deployment: n0, n1 and n2 (the rogue, a bare transport) on ipc endpoints in
// `dir`, /mesh on n0 and `assignments` besides.
fs::path rogue_deployment(const temp_dir& dir, const std::string& assignments) {
  const fs::path d = dir.path / "deployment.yaml";
  std::ofstream out(d);
  out << "version: 1\nnodes:\n";
  for (const char* n : {"n0", "n1", "n2"})
    out << "  - {name: " << n << ", endpoint: \"" << dir.ipc(n) << "\", capacity: {cpu: 1}}\n";
  out << "assignments:\n  /mesh: n0\n" << assignments;
  return d;
}

result<std::unique_ptr<transport>> start_rogue(const temp_dir& dir, recorder& r) {
  return transport::start(
      node_options("n2", dir.ipc("n2"), {{"n0", dir.ipc("n0"), ""}, {"n1", dir.ipc("n1"), ""}}, 1000ms), r.make());
}

// A rogue peer (docs/runtime.md, "What a peer may send"): the test plays n2 of a 3-node deployment,
// a node that hosts nothing, with a bare transport: it completes the handshake and says `ready` as
// any node does, then sends well-formed envelopes of every kind that its place does not allow: data
// across an edge from a component n0 hosts, a subscription for a component n1 hosts, the end of
// every subscription n1 made, 1,000,005 copies of a publisher "undelivered", move steps and the
// lease out of turn, and requests, supervision and monitors in other nodes' names. The honest nodes
// refuse each (a log line per kind, counted in the summary and the link health) and the run ends
// as if the rogue had been quiet: exit 0, every subscriber got every message once, no publisher
// told of a loss, no link stalled.
TEST(Rogue, APeerSendingWhatItsPlaceDoesNotAllowChangesNothing) {
  temp_dir dir;
  const fs::path d = rogue_deployment(dir, "  /mesh/zone1: n1\n");
  vertex = mesh_vertices(dir.path);
  ASSERT_TRUE(vertex.count("/mesh/zone1/sub")) << "mesh_app's profile did not list its components";
  recorder r2;
  auto rogue = start_rogue(dir, r2);
  ASSERT_TRUE(rogue.has_value()) << rogue.error().what();
  constexpr std::uint64_t messages = 3000;
  std::vector<node_process> nodes;
  const fs::path hold = dir.path / "hold";  // the run ends once this exists (after the health is read)
  for (const char* n : {"n0", "n1"}) {
    auto p = process::spawn({MESH_APP, "--messages", std::to_string(messages), "--hold-until", hold.string(),
                             "--deployment", d.string(), "--node", n},
                            {.env = {{"BANYAN_CONTROL", banyan::test::control_endpoint(dir.path.string(), n)}},
                             .out = output_mode::capture,
                             .err = output_mode::merge});
    ASSERT_TRUE(p.has_value()) << p.error().what();
    nodes.push_back({std::move(*p)});
  }
  auto output = [&] { return "--- n0\n" + nodes[0].output() + "--- n1\n" + nodes[1].output(); };
  ASSERT_TRUE((*rogue)->wait_until_up("n0", 30s).has_value()) << output();
  ASSERT_TRUE((*rogue)->wait_until_up("n1", 30s).has_value()) << output();
  // n1's subscriptions reach every peer before its `ready`.
  std::vector<std::uint64_t> n1_subscriptions;
  ASSERT_TRUE(r2.wait(
      [&] {
        n1_subscriptions.clear();
        bool ready = false;
        for (auto& e : r2.got["n1"]) {
          if (e.kind == subscribe) n1_subscriptions.push_back(e.id);
          ready = ready || e.kind == kind::ready;
        }
        return ready;
      },
      30s))
      << output();
  ASSERT_FALSE(n1_subscriptions.empty());
  for (const char* n : {"n0", "n1"}) ASSERT_TRUE((*rogue)->send(n, well_formed(ready), never_block).has_value());

  envelope forged_data;  // crossing from /mesh (n0's) into /mesh/zone1, as n0 would send it
  forged_data.kind = data;
  forged_data.sender = vertex.at("/mesh/zone0/pub");
  forged_data.scope = vertex.at("/mesh");
  forged_data.topic = "data/z0";
  forged_data.entry = vertex.at("/mesh/zone1");
  forged_data.from = vertex.at("/mesh");
  forged_data.payload = shared_bytes::copy_of("forged");
  for (std::uint64_t i = 1; i <= 100; ++i) {
    forged_data.origin_sequence = messages + i;
    ASSERT_TRUE((*rogue)->send("n1", forged_data, never_block).has_value());
  }
  envelope forged_subscription;  // n1's subscriber, subscribed again through n2
  forged_subscription.kind = subscribe;
  forged_subscription.sender = vertex.at("/mesh/zone1/sub");
  forged_subscription.topic = "data/+";
  forged_subscription.id = (std::uint64_t{2} << 40) | 1;
  ASSERT_TRUE((*rogue)->send("n0", forged_subscription, never_block).has_value());
  for (auto id : n1_subscriptions) {
    envelope end;
    end.kind = unsubscribe;
    end.id = id;
    ASSERT_TRUE((*rogue)->send("n0", std::move(end), never_block).has_value());
  }
  envelope forged_loss = well_formed(undelivered);
  forged_loss.sender = vertex.at("/mesh/zone0/pub");
  forged_loss.target = "n1";
  forged_loss.id = 1000005;
  ASSERT_TRUE((*rogue)->send("n0", forged_loss, never_block).has_value());
  // Move steps (docs/runtime.md "Moving subtrees live"): a pause without the lease, one in another
  // node's name, the lease asked of and granted by the wrong nodes, steps of no move.
  auto step = [](std::int32_t code, std::uint64_t epoch, std::string target = {}, std::string text = {}) {
    envelope e;
    e.kind = move;
    e.code = code;
    e.id = epoch;
    e.target = std::move(target);
    e.text = std::move(text);
    return e;
  };
  enum : std::int32_t { freeze = 1, moved = 6, thaw = 8, lease = 9, granted = 10, release = 11 };
  const std::uint64_t own = (std::uint64_t{2} << 48) | 1, n1s = (std::uint64_t{1} << 48) | 1;
  for (const char* n : {"n1", "n0"}) {  // n1 pauses until the root's node calls it off
    ASSERT_TRUE((*rogue)->send(n, step(freeze, own, "/mesh/zone1", "n2"), never_block).has_value());
    ASSERT_TRUE((*rogue)->send(n, step(freeze, n1s, "/mesh/zone1", "n2"), never_block).has_value());
    ASSERT_TRUE((*rogue)->send(n, step(moved, n1s, "/mesh/zone1", "n2"), never_block).has_value());
  }
  // Every other kind in another node's name: a request for n0's checker, supervision of n1's
  // subtree and a report on it, a monitor for n0's checker and news of an end on n1.
  envelope ask = well_formed(request);  // /mesh/checker (n0's) asks /mesh/zone1/pub
  ASSERT_TRUE((*rogue)->send("n1", ask, never_block).has_value());
  envelope command;
  command.kind = child_start;
  command.target = "/mesh/zone1";
  command.id = 9;
  ASSERT_TRUE((*rogue)->send("n1", command, never_block).has_value());
  envelope report = command;
  report.kind = child_failed;
  report.text = "forged";
  ASSERT_TRUE((*rogue)->send("n0", report, never_block).has_value());
  envelope watch = well_formed(monitor);  // /mesh/checker (n0's) watches /mesh/zone1/pub
  ASSERT_TRUE((*rogue)->send("n1", watch, never_block).has_value());
  envelope end;
  end.kind = down;
  end.sender = vertex.at("/mesh/zone1/pub");
  end.target = "/mesh/checker";
  end.id = 5;
  end.text = "forged";
  ASSERT_TRUE((*rogue)->send("n0", end, never_block).has_value());
  ASSERT_TRUE((*rogue)->send("n1", step(lease, 7), never_block).has_value());
  ASSERT_TRUE((*rogue)->send("n1", step(granted, 7), never_block).has_value());
  ASSERT_TRUE((*rogue)->send("n0", step(release, 7), never_block).has_value());

  // The nodes' link health (what the dashboard shows) counts what each refused of n2, per kind.
  ASSERT_TRUE(nodes[0].wait_for("every subscriber got everything", 120s)) << output();
  for (const char* n : {"n0", "n1"}) {
    std::map<std::string, std::uint64_t> refused;
    const auto until = std::chrono::steady_clock::now() + 30s;
    // Dispatch may still be on its way through the last of what n2 sent: asked until it is all counted.
    while (std::chrono::steady_clock::now() < until) {
      const auto reply =
          banyan::test::control_request(banyan::test::control_endpoint(dir.path.string(), n), "profile", 10s);
      ASSERT_EQ(reply.size(), 2u) << n << "\n" << output();
      const auto health = nlohmann::json::parse(reply[1]);
      refused = health["refused"].value("n2", nlohmann::json::object()).get<std::map<std::string, std::uint64_t>>();
      if (std::string(n) == "n1" ? refused["data"] == 100 && refused["move"] >= 3 : refused["move"] >= 3) break;
    }
    if (std::string(n) == "n1") {
      EXPECT_EQ(refused["data"], 100u) << n;
      // The foreign freeze, the lease asked and granted (and its own freeze, when the call-off came first).
      EXPECT_GE(refused["move"], 3u) << n;
    } else {
      EXPECT_EQ(refused["subscribe"], 1u) << n;
      EXPECT_EQ(refused["undelivered"], 1u) << n;
      EXPECT_GE(refused["move"], 3u) << n;  // its own freeze, the foreign one, the release
    }
  }
  std::ofstream(hold) << "go\n";  // the nodes end the run
  for (auto& n : nodes) EXPECT_EQ(n.wait_exit(120s), 0) << output();
  const std::string out = output();
  std::regex digest(R"(DIGEST (\S+) (\d+) ([0-9a-f]+))");
  std::size_t subscribers = 0;
  for (std::sregex_iterator it(out.begin(), out.end(), digest), end; it != end; ++it, ++subscribers)
    EXPECT_EQ((*it)[2].str(), std::to_string(3 * messages + messages / 10)) << (*it)[1].str() << "\n" << out;
  EXPECT_EQ(subscribers, 6u) << out;
  EXPECT_EQ(out.find("UNDELIVERED"), std::string::npos) << out;
  EXPECT_EQ(out.find("order:"), std::string::npos) << out;
  for (const char* line :
       {"refused data: data across the edge from `/mesh`", "refused subscribe: a subscription for `/mesh/zone1/sub`",
        "refused unsubscribe: the end of a subscription of `/mesh/zone1/",
        "refused undelivered: 1000005 copies of `/mesh/zone0/pub`", "refused move: a freeze without the lease",
        "is called off on every node", "refused move: a freeze of a move it does not coordinate",
        "refused move: a lease is asked of the root's node", "refused move: only the root's node grants the lease",
        "refused move: a release of a lease it does not hold", "refused request: a request from `/mesh/checker`",
        "supervision of `/mesh/zone1`: its supervisor is not on node `n2`",
        "supervision report for `/mesh/zone1`: it is not hosted by node `n2`",
        "monitor by `/mesh/checker`: it is not on node `n2`",
        "down of `/mesh/zone1/pub`: it is not hosted by node `n2`"})
    EXPECT_NE(out.find(line), std::string::npos) << line << "\n" << out;
  EXPECT_NE(out.find("refused (not the sender's to send): n2 data 100"), std::string::npos) << out;
  EXPECT_EQ(out.find("stalled"), std::string::npos) << "no honest link went silent past a heartbeat\n" << out;
}

// A reply is taken only from the node the request went to. The rogue plays n2, which hosts
// /mesh/zone1: n0's checker asks it two of its five requests (the first and the fourth), which
// tells the rogue the id of the fifth, asked of n1's /mesh/zone2/sub (a 60 s stall, 90 s timeout).
// Its forged answer to that one is refused, and the request stays pending.
TEST(Rogue, AReplyFromANodeThatWasNotAskedIsRefused) {
  temp_dir dir;
  const fs::path d = rogue_deployment(dir, "  /mesh/zone1: n2\n  /mesh/zone2: n1\n");
  recorder r2;
  auto rogue = start_rogue(dir, r2);
  ASSERT_TRUE(rogue.has_value()) << rogue.error().what();
  std::vector<node_process> nodes;
  for (const char* n : {"n0", "n1"}) {
    auto p = process::spawn({MESH_APP, "--messages", "10", "--requests", "--request-lost", "--run-for", "60",
                             "--deployment", d.string(), "--node", n},
                            {.out = output_mode::capture, .err = output_mode::merge});
    ASSERT_TRUE(p.has_value()) << p.error().what();
    nodes.push_back({std::move(*p)});
  }
  auto output = [&] { return "--- n0\n" + nodes[0].output() + "--- n1\n" + nodes[1].output(); };
  ASSERT_TRUE((*rogue)->wait_until_up("n0", 30s).has_value()) << output();
  ASSERT_TRUE((*rogue)->wait_until_up("n1", 30s).has_value()) << output();
  for (const char* n : {"n0", "n1"}) ASSERT_TRUE((*rogue)->send(n, well_formed(ready), never_block).has_value());
  // The checker asks 1 of n2 (the rogue), 2 and 3 of n1, 4 of n2 and 5 of n1, in that order: 5's
  // id follows 4's.
  std::uint64_t last = 0;
  ASSERT_TRUE(r2.wait(
      [&] {
        std::size_t asked = 0;
        for (auto& e : r2.got["n0"])
          if (e.kind == request) last = std::max(last, e.id), ++asked;
        return asked == 2;
      },
      30s))
      << output();
  envelope forged = well_formed(reply);
  forged.id = last + 1;
  forged.code = 0;  // ok
  forged.text.clear();
  forged.payload = shared_bytes::copy_of("forged");
  ASSERT_TRUE((*rogue)->send("n0", forged, never_block).has_value());
  EXPECT_TRUE(nodes[0].wait_for("refused reply: a reply (id " + std::to_string(last + 1) + ")", 30s)) << output();
  EXPECT_TRUE(nodes[0].wait_for("REQUEST 2 ", 30s)) << output();  // n1's answers come as ever
  EXPECT_EQ(nodes[0].output().find("REQUEST 5"), std::string::npos) << output();
  // n0 ends on SIGTERM; n1 spins in the 60 s stall, so it is killed rather than waited for.
  nodes[0].proc.signal(SIGTERM);
  EXPECT_NE(nodes[0].wait_exit(30s), -1) << output();
  nodes[1].proc.kill();
}

}  // namespace
}  // namespace banyan::runtime::test
