// Per-core workers: N workers with batch b each equal one instance with batch N*b
// (gradients within 1e-5, 20 steps of losses within 1e-5), and runs are bit-identical. Four workers
// on a synthetic 2-domain machine exercise both levels of the reduction tree on any host (they are not
// bound, so a 2-core machine runs them).
#include "banyan/cpu/worker_group.hpp"
#include "banyan/cpu/replicas.hpp"

#include <banyan/nn/adamw.hpp>
#include <banyan/nn/gpt.hpp>
#include <banyan/nn/mlp.hpp>
#include <banyan/nn/rng.hpp>

#include <cblas.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <optional>

#include <cmath>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

namespace banyan::cpu {
namespace {

constexpr std::uint64_t seed = 20261201;
const nn::gpt_config gcfg{.vocab_size = 13, .max_seq_len = 8, .num_layers = 2, .num_heads = 2, .channels = 16};
constexpr int T = 8, b = 2;

// The global batch of `step` (rows 0..B-1), from the seed and the step only.
void global_text(std::int64_t step, int B, std::vector<int>& tok, std::vector<int>& tgt) {
  nn::rng r(seed * 31 + static_cast<std::uint64_t>(step));
  tok.resize(static_cast<std::size_t>(B) * T);
  tgt.resize(tok.size());
  for (auto& t : tok) t = static_cast<int>(r.below(gcfg.vocab_size));
  // A learnable rule (next = 3*token + 1 mod V), so losses fall.
  for (std::size_t i = 0; i < tok.size(); ++i) tgt[i] = (3 * tok[i] + 1) % gcfg.vocab_size;
}

text_slice text_rows(int workers) {
  return [workers](std::int64_t step, int w, std::vector<int>& tok, std::vector<int>& tgt) {
    std::vector<int> all_tok, all_tgt;
    global_text(step, workers * b, all_tok, all_tgt);
    const auto off = static_cast<std::ptrdiff_t>(w) * b * T;
    tok.assign(all_tok.begin() + off, all_tok.begin() + off + b * T);
    tgt.assign(all_tgt.begin() + off, all_tgt.begin() + off + b * T);
  };
}

placement two_domains(int workers) {
  auto t = topology::synthetic("pack:1 numa:2 core:2 pu:1");
  EXPECT_TRUE(t);
  auto p = place(*t, {worker_request::kind::count, workers});
  EXPECT_TRUE(p);
  return *p;
}

// One instance with the whole global batch, stepped `steps` times: losses and last gradients.
struct single_run {
  std::vector<float> losses, grads, params;
};
single_run run_single(int workers, int steps, const nn::adamw_config& cfg) {
  auto be = nn::make_backend({.name = "cpu", .threads = 1});
  auto m = nn::gpt::create(gcfg, workers * b, T, **be);
  m->init(seed);
  nn::adamw opt(**be, m->params());
  single_run out;
  std::vector<int> tok, tgt;
  for (int s = 0; s < steps; ++s) {
    global_text(s, workers * b, tok, tgt);
    out.losses.push_back(m->forward(tok.data(), tgt.data(), workers * b, T));
    m->zero_grad();
    m->backward();
    out.grads = m->grads().to_host(**be);
    opt.step(m->params().base(), m->grads().base(), cfg);
  }
  out.params = m->params().to_host(**be);
  return out;
}

struct group_run {
  std::vector<float> losses, grads, params;
  std::vector<int> threads;
  memory_report memory;
};
group_run run_group(int workers, int steps, const nn::adamw_config& cfg, bool share = false, bool overlap = true,
                    int chunk = 0, int master_threads = 1) {
  auto be = nn::make_backend({.name = "cpu", .threads = master_threads});
  auto master = nn::gpt::create(gcfg, 1, T, **be);
  master->init(seed);
  nn::adamw opt(**be, master->params());
  group_options o{.where = two_domains(workers), .optimizer = cfg, .share_params = share, .overlap = overlap};
  auto g = worker_group::start(o, master->params(), opt, gpt_replicas(gcfg, b, T, text_rows(workers)));
  EXPECT_TRUE(g) << g.error().message;
  group_run out;
  if (!g) return out;
  for (int done = 0; done < steps;) {
    const int n = chunk > 0 ? std::min(chunk, steps - done) : steps;
    auto l = (*g)->run(done, n);
    out.losses.insert(out.losses.end(), l.begin(), l.end());
    done += n;
  }
  out.grads = (*g)->last_gradients();
  out.params = master->params().to_host(**be);
  out.threads = (*g)->worker_threads();
  out.memory = (*g)->memory();
  EXPECT_EQ(opt.steps(), steps);
  return out;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float m = 0.0f;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

TEST(WorkerGroup, FourWorkersGradientEqualsOneInstanceWithTheWholeBatch) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  const nn::adamw_config cfg{.lr = 1e-3f, .grad_clip = 0.0f};
  const auto one = run_single(4, 1, cfg);
  const auto four = run_group(4, 1, cfg);
  ASSERT_EQ(four.losses.size(), 1u);
  EXPECT_NEAR(four.losses[0], one.losses[0], 1e-5f);
  EXPECT_LT(max_abs_diff(four.grads, one.grads), 1e-5f);
  // Not trivially equal: the gradient is not all zeros.
  float norm = 0.0f;
  for (float g : one.grads) norm += g * g;
  EXPECT_GT(norm, 1e-3f);
}

TEST(WorkerGroup, TwentyStepsOfLossesMatchOneInstanceWithClipping) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  const nn::adamw_config cfg{.lr = 1e-3f, .grad_clip = 1.0f};
  const auto one = run_single(4, 20, cfg);
  const auto four = run_group(4, 20, cfg, false, true, 7);  // three runs: 7 + 7 + 6 steps
  ASSERT_EQ(four.losses.size(), 20u);
  for (int s = 0; s < 20; ++s) EXPECT_NEAR(four.losses[s], one.losses[s], 1e-5f) << "step " << s;
  EXPECT_LT(one.losses[19], one.losses[0]);  // it trains
  EXPECT_LT(max_abs_diff(four.params, one.params), 1e-4f);
}

TEST(WorkerGroup, TwentyStepsWithoutClippingUpdateLayerByLayer) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  const nn::adamw_config cfg{.lr = 1e-3f, .grad_clip = 0.0f};
  const auto one = run_single(3, 20, cfg);
  const auto three = run_group(3, 20, cfg);  // domains {0,1} and {2}: a single-worker domain passes through
  for (int s = 0; s < 20; ++s) EXPECT_NEAR(three.losses[s], one.losses[s], 1e-5f) << "step " << s;
}

TEST(WorkerGroup, OneDomainOfTwoWorkersMatchesOneInstance) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  const nn::adamw_config cfg{.lr = 1e-3f, .grad_clip = 0.0f};
  const auto one = run_single(2, 20, cfg);
  const auto two = run_group(2, 20, cfg);  // both on numa0: the domain server is the node's sum
  EXPECT_LT(max_abs_diff(two.grads, one.grads), 1e-5f);
  for (int s = 0; s < 20; ++s) EXPECT_NEAR(two.losses[s], one.losses[s], 1e-5f) << "step " << s;
}

TEST(WorkerGroup, RepeatedRunsAreBitIdentical) {
  const nn::adamw_config cfg{.lr = 1e-3f, .grad_clip = 0.0f};
  const auto a = run_group(4, 6, cfg);
  const auto c = run_group(4, 6, cfg);
  ASSERT_EQ(a.params.size(), c.params.size());
  EXPECT_EQ(0, std::memcmp(a.losses.data(), c.losses.data(), a.losses.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(a.params.data(), c.params.data(), a.params.size() * sizeof(float)));
}

TEST(WorkerGroup, SharedParametersAndNoOverlapGiveTheSameBits) {
  const nn::adamw_config cfg{.lr = 1e-3f, .grad_clip = 0.0f};
  const auto replicas = run_group(4, 5, cfg);
  const auto shared = run_group(4, 5, cfg, true);
  const auto after = run_group(4, 5, cfg, false, false);
  EXPECT_EQ(0, std::memcmp(replicas.params.data(), shared.params.data(), replicas.params.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(replicas.params.data(), after.params.data(), replicas.params.size() * sizeof(float)));
  // Memory: master + 4 replicas, against master + one copy for the second domain.
  EXPECT_EQ(replicas.memory.parameter_copies, 5u);
  EXPECT_EQ(shared.memory.parameter_copies, 2u);
  EXPECT_LT(shared.memory.total(), replicas.memory.total());
}

// The whole-step update (taken when clipping) is done in 16,384-float chunks by whichever workers are
// waiting; with a clip that never bites it must give the bits of the per-layer updates. The model has
// about 60,000 parameters, so several chunks.
TEST(WorkerGroup, WholeStepUpdateInSharedChunksGivesThePerLayerBits) {
  const nn::gpt_config big{.vocab_size = 13, .max_seq_len = 8, .num_layers = 2, .num_heads = 2, .channels = 48};
  auto train = [&](float clip) {
    auto be = nn::make_backend({.name = "cpu", .threads = 1});
    auto master = nn::gpt::create(big, 1, T, **be);
    master->init(seed);
    EXPECT_GT(master->params().numel(), 3u * 16384u);
    nn::adamw opt(**be, master->params());
    auto g = worker_group::start({.where = two_domains(4), .optimizer = {.lr = 1e-3f, .grad_clip = clip}},
                                 master->params(), opt, gpt_replicas(big, b, T, text_rows(4)));
    EXPECT_TRUE(g);
    (*g)->run(0, 4);
    EXPECT_EQ(opt.steps(), 4);
    return master->params().to_host(**be);
  };
  const auto per_layer = train(0.0f);
  const auto whole = train(1e9f);
  ASSERT_EQ(per_layer.size(), whole.size());
  EXPECT_EQ(0, std::memcmp(per_layer.data(), whole.data(), per_layer.size() * sizeof(float)));
}

TEST(WorkerGroup, WorkersRunSingleThreadedKernelsWhateverTheProcessSetting) {
  // The master's backend asks for 2 OpenMP threads on this thread.
  const auto g = run_group(2, 1, {.lr = 1e-3f, .grad_clip = 0.0f}, false, true, 0, 2);
  EXPECT_EQ(g.threads, (std::vector<int>{1, 1}));
  EXPECT_EQ(openblas_get_num_threads(), 1);  // process-wide: the cpu backend keeps OpenBLAS at one
  EXPECT_EQ(omp_get_max_threads(), 2);       // the driving thread keeps its own
  omp_set_num_threads(1);
}

TEST(WorkerGroup, MlpWorkersMatchOneInstance) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  const nn::mlp_config mcfg{.inputs = 12, .hidden = {16, 8}, .classes = 5};
  const int W = 4, mb = 3, B = W * mb;
  auto batch = [&](std::int64_t step, std::vector<float>& x, std::vector<int>& y) {
    nn::rng r(seed + static_cast<std::uint64_t>(step));
    x.resize(static_cast<std::size_t>(B) * mcfg.inputs);
    y.resize(B);
    for (auto& v : x) v = r.uniform();
    for (auto& v : y) v = static_cast<int>(r.below(mcfg.classes));
  };
  const nn::adamw_config cfg{.lr = 1e-2f, .grad_clip = 1.0f};
  auto be = nn::make_backend({.name = "cpu", .threads = 1});
  auto one = nn::mlp::create(mcfg, B, **be);
  one->init(seed);
  nn::adamw opt1(**be, one->params());
  std::vector<float> x;
  std::vector<int> y;
  std::vector<float> l1;
  for (int s = 0; s < 20; ++s) {
    batch(s, x, y);
    l1.push_back(one->forward(x.data(), y.data(), B));
    one->zero_grad();
    one->backward();
    opt1.step(one->params().base(), one->grads().base(), cfg);
  }
  auto master = nn::mlp::create(mcfg, 1, **be);
  master->init(seed);
  nn::adamw opt(**be, master->params());
  auto slice = [&](std::int64_t step, int w, std::vector<float>& xs, std::vector<int>& ys) {
    std::vector<float> ax;
    std::vector<int> ay;
    batch(step, ax, ay);
    xs.assign(ax.begin() + static_cast<std::ptrdiff_t>(w) * mb * mcfg.inputs,
              ax.begin() + static_cast<std::ptrdiff_t>(w + 1) * mb * mcfg.inputs);
    ys.assign(ay.begin() + w * mb, ay.begin() + (w + 1) * mb);
  };
  auto g = worker_group::start({.where = two_domains(W), .optimizer = cfg}, master->params(), opt,
                               mlp_replicas(mcfg, mb, slice));
  ASSERT_TRUE(g) << g.error().message;
  const auto l4 = (*g)->run(0, 20);
  for (int s = 0; s < 20; ++s) EXPECT_NEAR(l4[s], l1[s], 1e-5f) << "step " << s;
  EXPECT_LT(l1[19], l1[0]);
}

TEST(WorkerGroup, ReplicaErrorsComeBackFromStart) {
  auto be = nn::make_backend({.name = "cpu", .threads = 1});
  auto master = nn::gpt::create(gcfg, 1, T, **be);
  nn::adamw opt(**be, master->params());
  nn::gpt_config bad = gcfg;
  bad.num_heads = 3;  // 16 channels do not split into 3 heads
  auto g = worker_group::start({.where = two_domains(2)}, master->params(), opt, gpt_replicas(bad, b, T, text_rows(2)));
  ASSERT_FALSE(g);
  EXPECT_NE(g.error().message.find("heads"), std::string::npos) << g.error().message;
}

// Nodes of a cluster stood in for by groups in one process: exchange() waits for every node's mean,
// combines them in node order weighted by worker counts (weighted_mean, as the trainer's gradient
// server does), the losses likewise, and hands the same bits back to each; it counts the floats that
// go up and come down.
struct in_memory_cluster {
  explicit in_memory_cluster(int n)
      : nodes(n),
        bufs(static_cast<std::size_t>(n)),
        counts(static_cast<std::size_t>(n)),
        node_losses(static_cast<std::size_t>(n)) {}
  void exchange(int node, float* g, std::size_t n, int workers, float& loss) {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return leaving == 0; });
    bufs[static_cast<std::size_t>(node)] = g;
    counts[static_cast<std::size_t>(node)] = workers;
    node_losses[static_cast<std::size_t>(node)] = loss;
    floats_up += n;
    const auto gen = generation;
    if (++arrived == nodes) {
      result.assign(n, 0.0f);
      weighted_mean(std::vector<const float*>(bufs.begin(), bufs.end()), counts, n, result.data());
      double s = 0.0;
      int total = 0;
      for (int k = 0; k < nodes; ++k) {
        s += static_cast<double>(node_losses[static_cast<std::size_t>(k)]) * counts[static_cast<std::size_t>(k)];
        total += counts[static_cast<std::size_t>(k)];
      }
      cluster_loss = static_cast<float>(s / total);
      arrived = 0;
      leaving = nodes;
      ++generation;
      cv.notify_all();
    } else {
      cv.wait(lock, [&] { return generation != gen; });
    }
    std::memcpy(g, result.data(), n * sizeof(float));
    loss = cluster_loss;
    floats_down += n;
    ++exchanges;
    if (--leaving == 0) cv.notify_all();
  }
  std::mutex mu;
  std::condition_variable cv;
  int nodes, arrived = 0, leaving = 0;
  std::uint64_t generation = 0;
  std::vector<float*> bufs;
  std::vector<int> counts;
  std::vector<float> node_losses;
  std::vector<float> result;
  float cluster_loss = 0.0f;
  std::size_t floats_up = 0, floats_down = 0, exchanges = 0;
};

// Two nodes of two workers each (global workers 0,1 and 2,3), 20 steps.
std::vector<float> run_two_nodes(const nn::adamw_config& cfg, int steps, in_memory_cluster& cluster,
                                 std::size_t& numel) {
  auto be = nn::make_backend({.name = "cpu", .threads = 1});
  std::vector<std::optional<nn::gpt>> masters;
  std::vector<std::optional<nn::adamw>> opts;
  std::vector<std::unique_ptr<worker_group>> groups;
  for (int k = 0; k < 2; ++k) {
    masters.emplace_back(std::move(nn::gpt::create(gcfg, 1, T, **be)).value());
    masters.back()->init(seed);
    opts.emplace_back(std::in_place, **be, masters.back()->params());
  }
  numel = masters[0]->params().numel();
  for (int k = 0; k < 2; ++k) {
    auto rows = text_rows(4);
    text_slice mine = [rows, k](std::int64_t step, int w, std::vector<int>& tok, std::vector<int>& tgt) {
      rows(step, 2 * k + w, tok, tgt);
    };
    group_options o{.where = two_domains(2), .optimizer = cfg};
    o.exchange = [&cluster, k](float* g, std::size_t n, int workers, std::int64_t, float& loss) {
      cluster.exchange(k, g, n, workers, loss);
    };
    auto g = worker_group::start(o, masters[k]->params(), *opts[k], gpt_replicas(gcfg, b, T, mine));
    EXPECT_TRUE(g);
    if (!g) return {};
    groups.push_back(std::move(g).value());
  }
  std::vector<float> losses1;
  std::thread node1([&] { losses1 = groups[1]->run(0, steps); });
  const auto losses0 = groups[0]->run(0, steps);
  node1.join();
  // Every node holds the same parameters and reports the same losses: the cluster's, over both
  // nodes' workers.
  EXPECT_EQ(0, std::memcmp(masters[0]->params().base(), masters[1]->params().base(), masters[0]->params().bytes()));
  EXPECT_EQ(losses0, losses1);
  return losses0;
}

TEST(WorkerGroup, TwoNodesExchangingOneGradientPerStepMatchOneInstance) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  const nn::adamw_config cfg{.lr = 1e-3f, .grad_clip = 0.0f};
  const auto one = run_single(4, 20, cfg);
  in_memory_cluster cluster(2);
  std::size_t numel = 0;
  const auto two = run_two_nodes(cfg, 20, cluster, numel);
  ASSERT_EQ(two.size(), 20u);
  for (int s = 0; s < 20; ++s) EXPECT_NEAR(two[s], one.losses[s], 1e-5f) << "step " << s;
  // One gradient up and one down per node per step.
  EXPECT_EQ(cluster.exchanges, 2u * 20u);
  EXPECT_EQ(cluster.floats_up, 2u * 20u * numel);
  EXPECT_EQ(cluster.floats_down, 2u * 20u * numel);
  in_memory_cluster again(2);
  const auto repeat = run_two_nodes(cfg, 20, again, numel);
  EXPECT_EQ(0, std::memcmp(two.data(), repeat.data(), two.size() * sizeof(float)));
}

TEST(WorkerGroup, BoundWorkersOnThisMachineTrain) {
  auto t = topology::discover();
  ASSERT_TRUE(t);
  auto p = place(*t, {worker_request::kind::per_core, 0});
  ASSERT_TRUE(p);
  auto be = nn::make_backend({.name = "cpu", .threads = 1});
  auto master = nn::gpt::create(gcfg, 1, T, **be);
  master->init(seed);
  nn::adamw opt(**be, master->params());
  const int W = p->size();
  auto g = worker_group::start({.where = *p, .topo = *t, .optimizer = {.lr = 1e-2f}}, master->params(), opt,
                               gpt_replicas(gcfg, b, T, text_rows(W)));
  ASSERT_TRUE(g) << g.error().message;
  const auto l = (*g)->run(0, 10);
  ASSERT_EQ(l.size(), 10u);
  EXPECT_LT(l[9], l[0]);
}

}  // namespace
}  // namespace banyan::cpu
