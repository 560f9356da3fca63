// Property test: on random trees, subscriptions and publishes, the routing table's delivered sets and
// per-edge counters equal an independent brute-force computation of scopes and propagation paths.
#include "banyan/broker/routing.hpp"

#include "../support/topic_oracle.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

namespace banyan {
namespace {

const std::vector<std::string> vocab = {"net", "carry", "sum", "clk", "x", "y"};

std::string random_topic(std::mt19937_64& rng, bool filter) {
  int levels = 1 + static_cast<int>(rng() % 3);
  std::string out;
  for (int i = 0; i < levels; ++i) {
    if (i) out += "/";
    auto pick = rng() % 10;
    if (filter && pick == 0) out += "+";
    else if (filter && pick == 1 && i == levels - 1) out += "#";
    else out += vocab[rng() % vocab.size()];
  }
  return out;
}

using testing::brute_match;
using testing::split;

std::vector<vertex_id> ancestors_inclusive(const std::vector<vertex_id>& parent, vertex_id v) {
  std::vector<vertex_id> out{v};
  while (v != 0) out.push_back(v = parent[v]);
  return out;
}

// Edges of the path a—b: the symmetric difference of the two ancestor chains (edge = child vertex).
std::set<vertex_id> path_edges(const std::vector<vertex_id>& parent, vertex_id a, vertex_id b) {
  auto ua = ancestors_inclusive(parent, a), ub = ancestors_inclusive(parent, b);
  std::set<vertex_id> sa(ua.begin(), ua.end()), sb(ub.begin(), ub.end()), out;
  for (auto v : sa)
    if (!sb.count(v)) out.insert(v);
  for (auto v : sb)
    if (!sa.count(v)) out.insert(v);
  return out;
}

void run_case(std::uint64_t seed, routing_mode mode) {
  SCOPED_TRACE("seed " + std::to_string(seed) + " mode " + to_string(mode));
  std::mt19937_64 rng(seed);
  std::size_t n = 2 + rng() % 2000;
  auto tree = std::make_shared<component_tree>("root");
  std::vector<vertex_id> parent{0};
  for (std::size_t v = 1; v < n; ++v) {
    // Bias towards recent vertices so some trees are deep and some bushy.
    vertex_id p = static_cast<vertex_id>(rng() % 2 ? rng() % v : v - 1 - rng() % std::min<std::size_t>(v, 4));
    ASSERT_TRUE(tree->add(p, "c" + std::to_string(v)).has_value());
    parent.push_back(p);
  }
  routing_table table(tree, mode);
  struct sub {
    vertex_id who;
    std::vector<std::string> filter;
  };
  std::vector<sub> subs;
  std::size_t sub_count = rng() % (2 * n);
  for (std::size_t i = 0; i < sub_count; ++i) {
    vertex_id who = static_cast<vertex_id>(rng() % n);
    std::string f = random_topic(rng, true);
    ASSERT_TRUE(table.subscribe(who, f).has_value()) << f;
    subs.push_back({who, split(f)});
  }
  std::vector<edge_traffic> expected(n);
  for (int p = 0; p < 200; ++p) {
    vertex_id pub = static_cast<vertex_id>(rng() % n);
    auto chain = ancestors_inclusive(parent, pub);
    vertex_id sc = chain[rng() % chain.size()];
    std::string t = random_topic(rng, false);
    auto levels = split(t);
    std::set<vertex_id> want;
    for (const auto& s : subs) {
      auto up = ancestors_inclusive(parent, s.who);
      bool inside = std::find(up.begin(), up.end(), sc) != up.end();
      if (inside && brute_match(s.filter, levels)) want.insert(s.who);
    }
    std::map<vertex_id, std::uint64_t> copies;
    std::set<vertex_id> steiner;
    for (auto target : want) {
      for (auto e : path_edges(parent, pub, target)) {
        steiner.insert(e);
        ++copies[e];
      }
    }
    auto r = table.plan(pub, sc, *topic::parse(t));
    std::set<vertex_id> got;
    for (const auto& target : r->targets()) got.insert(target.component);
    ASSERT_EQ(got, want) << "publish `" << t << "` from " << tree->path(pub) << " scope " << tree->path(sc);
    std::size_t bytes = 1 + rng() % 100;
    r->record(bytes);
    if (mode == routing_mode::hier) {
      for (auto e : steiner) {
        expected[e].messages += 1;
        expected[e].bytes += bytes;
      }
    } else {
      for (auto [e, c] : copies) {
        expected[e].messages += c;
        expected[e].bytes += c * bytes;
      }
    }
  }
  auto traffic = table.traffic();
  for (vertex_id v = 0; v < n; ++v) {
    ASSERT_EQ(traffic[v].messages, expected[v].messages) << "edge " << tree->path(v);
    ASSERT_EQ(traffic[v].bytes, expected[v].bytes) << "edge " << tree->path(v);
  }
}

TEST(RoutingProperty, HierMatchesBruteForceOnRandomTrees) {
  for (std::uint64_t seed = 1; seed <= 25; ++seed) run_case(seed, routing_mode::hier);
}

TEST(RoutingProperty, FlatP2PMatchesBruteForceOnRandomTrees) {
  for (std::uint64_t seed = 101; seed <= 115; ++seed) run_case(seed, routing_mode::flat_p2p);
}

}  // namespace
}  // namespace banyan
