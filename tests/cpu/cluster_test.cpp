// The cluster level over real runtime links (issue 14 item 4): two nodes, each a transport and a
// worker group of two workers, in one process on ipc:// endpoints in a fresh folder. Same losses as
// one instance with the whole batch; exactly one gradient up and one down per non-server node per
// step, as the transport counts them; both nodes end with the same parameters.
#include "banyan/cpu/cluster.hpp"
#include "banyan/cpu/replicas.hpp"

#include <banyan/nn/adamw.hpp>
#include <banyan/nn/gpt.hpp>
#include <banyan/nn/rng.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>

namespace banyan::cpu {
namespace {

constexpr std::uint64_t seed = 20261202;
const nn::gpt_config cfg{.vocab_size = 11, .max_seq_len = 8, .num_layers = 1, .num_heads = 2, .channels = 16};
constexpr int T = 8, b = 2, workers_per_node = 2, nodes = 2, steps = 12;
constexpr int B = b * workers_per_node * nodes;

void global_batch(std::int64_t step, std::vector<int>& tok, std::vector<int>& tgt) {
  nn::rng r(seed + static_cast<std::uint64_t>(step) * 977);
  tok.resize(static_cast<std::size_t>(B) * T);
  tgt.resize(tok.size());
  for (auto& t : tok) t = static_cast<int>(r.below(cfg.vocab_size));
  for (std::size_t i = 0; i < tok.size(); ++i) tgt[i] = (2 * tok[i] + 3) % cfg.vocab_size;
}

struct scratch {
  std::filesystem::path dir;
  scratch() {
    char tmpl[] = "/tmp/banyan-cpu-XXXXXX";
    dir = mkdtemp(tmpl);
  }
  ~scratch() { std::filesystem::remove_all(dir); }
  std::string ipc(const std::string& name) const { return "ipc://" + (dir / name).string(); }
};

struct node {
  std::unique_ptr<nn::backend> be;
  std::optional<nn::gpt> master;
  std::optional<nn::adamw> opt;
  std::unique_ptr<cluster_link> link;
  std::unique_ptr<worker_group> group;
};

TEST(Cluster, TwoNodesOverRuntimeLinksMatchOneInstanceWithOneGradientEachWay) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  const nn::adamw_config opt_cfg{.lr = 1e-3f, .grad_clip = 1.0f};
  // The reference: one instance, the whole batch.
  auto be = nn::make_backend({.name = "cpu", .threads = 1});
  auto one = nn::gpt::create(cfg, B, T, **be);
  one->init(seed);
  nn::adamw one_opt(**be, one->params());
  std::vector<float> expected;
  std::vector<int> tok, tgt;
  for (int s = 0; s < steps; ++s) {
    global_batch(s, tok, tgt);
    expected.push_back(one->forward(tok.data(), tgt.data(), B, T));
    one->zero_grad();
    one->backward();
    one_opt.step(one->params().base(), one->grads().base(), opt_cfg);
  }

  scratch dir;
  const std::vector<std::string> names{"n0", "n1"};
  auto topo = topology::synthetic("pack:1 core:2 pu:1");
  ASSERT_TRUE(topo);
  auto where = place(*topo, {worker_request::kind::count, workers_per_node});
  ASSERT_TRUE(where);
  std::vector<node> ns(nodes);
  // Both links start together (each waits for the other to be up).
  std::vector<std::thread> starting;
  std::vector<std::optional<error>> start_errors(nodes);
  for (int k = 0; k < nodes; ++k) {
    starting.emplace_back([&, k] {
      cluster_options o{.self = names[k], .bind_endpoint = dir.ipc(names[k]), .server = "n0", .order = names};
      o.peers = {{names[1 - k], dir.ipc(names[1 - k]), ""}};
      auto l = cluster_link::start(o);
      if (!l) start_errors[k] = l.error();
      else ns[k].link = std::move(l).value();
    });
  }
  for (auto& t : starting) t.join();
  for (int k = 0; k < nodes; ++k) ASSERT_FALSE(start_errors[k]) << start_errors[k]->message;
  for (int k = 0; k < nodes; ++k) {
    auto& n = ns[k];
    n.be = std::move(nn::make_backend({.name = "cpu", .threads = 1})).value();
    n.master.emplace(std::move(nn::gpt::create(cfg, 1, T, *n.be)).value());
    n.master->init(seed);
    n.opt.emplace(*n.be, n.master->params());
    // Node k's worker w trains on rows of global worker 2k + w.
    text_slice rows = [k](std::int64_t step, int w, std::vector<int>& to, std::vector<int>& tg) {
      std::vector<int> all_tok, all_tgt;
      global_batch(step, all_tok, all_tgt);
      const auto off = static_cast<std::ptrdiff_t>(k * workers_per_node + w) * b * T;
      to.assign(all_tok.begin() + off, all_tok.begin() + off + b * T);
      tg.assign(all_tgt.begin() + off, all_tgt.begin() + off + b * T);
    };
    group_options o{.where = *where, .optimizer = opt_cfg};
    o.exchange = n.link->exchange();
    auto g = worker_group::start(o, n.master->params(), *n.opt, gpt_replicas(cfg, b, T, rows));
    ASSERT_TRUE(g) << g.error().message;
    n.group = std::move(g).value();
  }
  std::vector<float> l1;
  std::thread second([&] { l1 = ns[1].group->run(0, steps); });
  const auto l0 = ns[0].group->run(0, steps);
  second.join();
  for (int k = 0; k < nodes; ++k) EXPECT_FALSE(ns[k].link->failure()) << ns[k].link->failure()->message;
  ASSERT_EQ(l0.size(), static_cast<std::size_t>(steps));
  ASSERT_EQ(l1.size(), static_cast<std::size_t>(steps));
  for (int s = 0; s < steps; ++s) EXPECT_NEAR((l0[s] + l1[s]) / 2.0f, expected[s], 1e-5f) << "step " << s;
  EXPECT_LT(expected.back(), expected.front());
  EXPECT_EQ(0, std::memcmp(ns[0].master->params().base(), ns[1].master->params().base(), ns[0].master->params().bytes()));
  // One gradient (the whole parameter arena's floats) each way per step, nothing else.
  const std::uint64_t gradient_bytes = ns[0].master->params().bytes();
  const auto up = ns[1].link->stats("n0"), down = ns[0].link->stats("n1");
  EXPECT_EQ(up.messages_sent, static_cast<std::uint64_t>(steps));
  EXPECT_EQ(up.bytes_sent, steps * gradient_bytes);
  EXPECT_EQ(down.messages_sent, static_cast<std::uint64_t>(steps));
  EXPECT_EQ(down.bytes_sent, steps * gradient_bytes);
}

TEST(Cluster, ANodeMissingFromTheOrderIsAnErrorNamingIt) {
  auto l = cluster_link::start({.self = "n2", .bind_endpoint = "ipc:///tmp/unused", .server = "n0", .order = {"n0", "n1"}});
  ASSERT_FALSE(l);
  EXPECT_NE(l.error().message.find("node `n2` is not in the order"), std::string::npos) << l.error().message;
}

}  // namespace
}  // namespace banyan::cpu
