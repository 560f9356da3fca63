// End-to-end property test through real component actors: random trees (up to 2,000 components),
// random subscriptions and random scoped publishes. Delivered messages must equal a brute-force
// computation, and every edge counter must equal an independent computation of propagation paths.
#include "../support/topic_oracle.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <set>

namespace banyan {
namespace {

struct publish_step {
  std::string topic;
  std::uint32_t levels_up;
};

struct script {
  std::vector<std::vector<std::string>> filters;     // per vertex
  std::vector<std::vector<publish_step>> publishes;  // per vertex
  std::vector<bool> is_leaf;
  std::vector<std::string> leaf_paths;
  std::string starter;  // the leaf that asks every leaf to `go` (written before the run ends)
  std::size_t expected_deliveries = 0;
  std::atomic<int> started{0};
  std::atomic<int> finished{0};
  std::atomic<std::size_t> delivered{0};
  std::mutex mutex;
  std::multiset<std::string> got;  // "subscriber|filter|topic|sender|sequence"
};

class prop_leaf : public leaf {
 public:
  prop_leaf(std::shared_ptr<script> s, vertex_id v) : s_(std::move(s)), v_(v) {}
  void on_start(context& ctx) override {
    for (const auto& f : s_->filters[v_]) {
      ASSERT_TRUE(ctx.subscribe(f,
                                [this, &ctx, f](const delivery& d) {
                                  {
                                    std::lock_guard lock(s_->mutex);
                                    s_->got.insert(ctx.path() + "|" + f + "|" + d.topic() + "|" + d.sender() + "|" +
                                                   std::to_string(d.sequence()));
                                  }
                                  s_->delivered.fetch_add(1);
                                  maybe_quit(ctx);
                                })
                      .has_value())
          << f;
    }
    ctx.serve("go", [this, &ctx](const payload&) -> result<payload> {
      for (const auto& p : s_->publishes[v_]) {
        auto r = ctx.publish(p.topic, std::string_view("x"), scope::up(p.levels_up));
        EXPECT_TRUE(r.has_value()) << r.error().what();
      }
      s_->finished.fetch_add(1);
      maybe_quit(ctx);
      return payload{};
    });
    if (s_->started.fetch_add(1) + 1 == static_cast<int>(s_->leaf_paths.size())) {
      // Every leaf has subscribed: start all publishers.
      s_->starter = ctx.path();
      for (const auto& path : s_->leaf_paths)
        ctx.request(path, "go", payload{}, std::chrono::seconds(30),
                    [](result<payload> r) { EXPECT_TRUE(r.has_value()); });
    }
  }

 private:
  void maybe_quit(context& ctx) {
    if (s_->finished.load() == static_cast<int>(s_->leaf_paths.size()) &&
        s_->delivered.load() == s_->expected_deliveries)
      ctx.quit(0);
  }
  std::shared_ptr<script> s_;
  vertex_id v_;
};

using testing::brute_match;
using testing::split;

void run_case(std::uint64_t seed, std::size_t max_n, routing_mode mode) {
  SCOPED_TRACE("seed " + std::to_string(seed) + " mode " + to_string(mode));
  std::mt19937_64 rng(seed);
  const std::vector<std::string> words = {"a", "b", "c"};
  auto topic_text = [&](bool filter) {
    int levels = 1 + static_cast<int>(rng() % 3);
    std::string out;
    for (int i = 0; i < levels; ++i) {
      if (i) out += "/";
      auto pick = rng() % 8;
      if (filter && pick == 0) out += "+";
      else if (filter && pick == 1 && i == levels - 1) out += "#";
      else out += words[rng() % words.size()];
    }
    return out;
  };

  // Shape: vertex 0 is the root composite; parents are always composites.
  std::size_t n = 3 + rng() % (max_n - 2);
  std::vector<vertex_id> parent{0};
  std::vector<bool> composite{true};
  std::vector<vertex_id> composites{0};
  for (std::size_t v = 1; v < n; ++v) {
    parent.push_back(composites[rng() % composites.size()]);
    bool is_comp = rng() % 3 == 0;
    composite.push_back(is_comp);
    if (is_comp) composites.push_back(static_cast<vertex_id>(v));
  }
  auto s = std::make_shared<script>();
  s->filters.resize(n);
  s->publishes.resize(n);
  app a{"r"};
  std::vector<spec*> specs{&a.root()};
  std::vector<std::string> paths{"/r"};
  std::vector<std::uint32_t> depth{0};
  for (std::size_t v = 1; v < n; ++v) {
    paths.push_back(paths[parent[v]] + "/c" + std::to_string(v));
    depth.push_back(depth[parent[v]] + 1);
    if (composite[v]) {
      specs.push_back(&specs[parent[v]]->add_composite("c" + std::to_string(v)));
    } else {
      specs.push_back(&specs[parent[v]]->add_leaf<prop_leaf>("c" + std::to_string(v), s, static_cast<vertex_id>(v)));
      s->leaf_paths.push_back(paths[v]);
      for (auto k = rng() % 3; k > 0; --k) s->filters[v].push_back(topic_text(true));
      for (auto k = rng() % 4; k > 0; --k)
        s->publishes[v].push_back({topic_text(false), static_cast<std::uint32_t>(rng() % (depth[v] + 1))});
    }
  }
  if (s->leaf_paths.empty()) return;

  // Brute force: deliveries and per-edge traffic.
  auto ancestors = [&](vertex_id v) {
    std::vector<vertex_id> out{v};
    while (v != 0) out.push_back(v = parent[v]);
    return out;
  };
  std::multiset<std::string> want;
  std::vector<std::uint64_t> edge_messages(n, 0);
  for (std::size_t p = 0; p < n; ++p) {
    std::uint64_t seq = 0;
    for (const auto& step : s->publishes[p]) {
      ++seq;
      vertex_id sc = ancestors(static_cast<vertex_id>(p))[step.levels_up];
      auto levels = split(step.topic);
      std::set<vertex_id> targets;
      for (std::size_t q = 0; q < n; ++q) {
        auto up = ancestors(static_cast<vertex_id>(q));
        if (std::find(up.begin(), up.end(), sc) == up.end()) continue;
        for (const auto& f : s->filters[q]) {
          if (!brute_match(split(f), levels)) continue;
          want.insert(paths[q] + "|" + f + "|" + step.topic + "|" + paths[p] + "|" + std::to_string(seq));
          targets.insert(static_cast<vertex_id>(q));
        }
      }
      std::map<vertex_id, std::uint64_t> copies;
      for (auto t : targets) {
        auto ua = ancestors(static_cast<vertex_id>(p)), ub = ancestors(t);
        std::set<vertex_id> sa(ua.begin(), ua.end()), sb(ub.begin(), ub.end());
        for (auto v : sa)
          if (!sb.count(v)) ++copies[v];
        for (auto v : sb)
          if (!sa.count(v)) ++copies[v];
      }
      for (auto [e, c] : copies) edge_messages[e] += mode == routing_mode::hier ? 1 : c;
    }
  }
  s->expected_deliveries = want.size();

  auto r = run(a, testing::test_options(mode));
  ASSERT_EQ(r.exit_code, 0) << "run did not complete: delivered " << s->delivered.load() << " of " << want.size();
  EXPECT_EQ(s->got, want);
  // The starter's `go` requests and their replies are traffic too: one of each
  // on every edge between the starter and each leaf.
  const auto starter = std::find(paths.begin(), paths.end(), s->starter);
  ASSERT_NE(starter, paths.end()) << s->starter;
  for (const auto& leaf_path : s->leaf_paths) {
    auto ua = ancestors(static_cast<vertex_id>(starter - paths.begin()));
    auto ub = ancestors(static_cast<vertex_id>(std::find(paths.begin(), paths.end(), leaf_path) - paths.begin()));
    std::set<vertex_id> sa(ua.begin(), ua.end()), sb(ub.begin(), ub.end());
    for (auto v : sa)
      if (!sb.count(v)) edge_messages[v] += 2;
    for (auto v : sb)
      if (!sa.count(v)) edge_messages[v] += 2;
  }
  // The run numbers vertices its own way: compare edges by path.
  for (std::size_t v = 1; v < n; ++v)
    ASSERT_EQ(r.traffic.edges[*r.traffic.tree->find(paths[v])].messages, edge_messages[v]) << "edge " << paths[v];
}

TEST(SdkProperty, DeliveriesAndEdgeCountersMatchBruteForceHier) {
  for (std::uint64_t seed = 1; seed <= 12; ++seed) run_case(seed, 200, routing_mode::hier);
  for (std::uint64_t seed = 50; seed <= 51; ++seed) run_case(seed, 2000, routing_mode::hier);
}

TEST(SdkProperty, DeliveriesAndEdgeCountersMatchBruteForceFlatP2P) {
  for (std::uint64_t seed = 201; seed <= 206; ++seed) run_case(seed, 200, routing_mode::flat_p2p);
}

}  // namespace
}  // namespace banyan
