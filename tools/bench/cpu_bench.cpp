// cpu_bench: per-core workers (banyan::cpu::worker_group, one single-threaded replica per core, the
// NUMA-aware reduction overlapping backward) against one instance on as many OpenMP threads, on the
// same cores with the same global batch (docs/benchmarks.md). GPT and MLP, a sweep of global batches.
// Each configuration is measured in alternating rounds (single, workers with overlap, workers that
// aggregate only after the whole backward) and each side's median ms/step is reported, so the ratio
// is taken in one run on one machine. "hidden" is the time per step the overlap saves: the
// after-backward median minus the overlapped one. "per-round" is the median over rounds of single/workers
// (each round's two sides ran back to back), steadier than the ratio of medians on a shared machine.
//
// Output: a table on stdout (or JSON with --json), one progress line per measurement on stderr.
#include <banyan/cpu/replicas.hpp>
#include <banyan/cpu/topology.hpp>
#include <banyan/cpu/worker_group.hpp>
#include <banyan/nn/adamw.hpp>
#include <banyan/nn/gpt.hpp>
#include <banyan/nn/mlp.hpp>
#include <banyan/nn/rng.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace {

using json = nlohmann::json;
using clock_type = std::chrono::steady_clock;

struct options {
  std::vector<std::string> models{"gpt", "mlp"};
  std::vector<int> gpt_batches{8, 16, 32};
  std::vector<int> mlp_batches{64, 256, 1024};
  std::string workers = "per-core";
  int steps = 10, warmup = 2, rounds = 3;
  // GPT: nn_bench's default model (vocab 128, context 64, 4 layers, 4 heads, 128 channels).
  int vocab = 128, seq = 64, layers = 4, heads = 4, channels = 128;
  std::vector<int> hidden{256, 128};
  float gpt_clip = 1.0f;  // the trainer's default: the update waits for the whole sum
  bool json = false;
  std::string results;  // also write the JSON here
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

// One model's global batch at a step, and worker w's rows of it.
struct data_source {
  std::function<void(std::int64_t step, int B, std::vector<int>& tok, std::vector<int>& tgt)> text;
  std::function<void(std::int64_t step, int B, std::vector<float>& x, std::vector<int>& y)> images;
};

// The single instance: `threads` OpenMP threads on the calling thread, batch B.
struct single_side {
  std::unique_ptr<banyan::nn::backend> be;
  std::optional<banyan::nn::gpt> gpt;
  std::optional<banyan::nn::mlp> mlp;
  std::optional<banyan::nn::adamw> opt;
  banyan::nn::adamw_config cfg;
  int B = 0, T = 0;
  const options* o = nullptr;
  std::vector<int> tok, tgt;
  std::vector<float> x;

  void step(std::int64_t s) {
    banyan::nn::rng r(1234 + static_cast<std::uint64_t>(s));
    if (gpt) {
      tok.resize(static_cast<std::size_t>(B) * T);
      tgt.resize(tok.size());
      for (auto& t : tok) t = static_cast<int>(r.below(o->vocab));
      for (auto& t : tgt) t = static_cast<int>(r.below(o->vocab));
      gpt->forward(tok.data(), tgt.data(), B, T);
      gpt->zero_grad();
      gpt->backward();
      opt->step(gpt->params().base(), gpt->grads().base(), cfg);
    } else {
      x.resize(static_cast<std::size_t>(B) * 784);
      tgt.resize(B);
      for (auto& v : x) v = r.uniform();
      for (auto& t : tgt) t = static_cast<int>(r.below(10));
      mlp->forward(x.data(), tgt.data(), B);
      mlp->zero_grad();
      mlp->backward();
      opt->step(mlp->params().base(), mlp->grads().base(), cfg);
    }
  }
};

int run(const options& o) {
  auto topo = banyan::cpu::topology::discover();
  if (!topo) {
    std::fprintf(stderr, "cpu_bench: %s\n", topo.error().message.c_str());
    return 1;
  }
  auto request = banyan::cpu::worker_request::parse(o.workers);
  if (!request) {
    std::fprintf(stderr, "cpu_bench: %s\n", request.error().message.c_str());
    return 2;
  }
  auto where = banyan::cpu::place(*topo, *request);
  if (!where) {
    std::fprintf(stderr, "cpu_bench: %s\n", where.error().message.c_str());
    return 2;
  }
  const int N = where->size();
  std::fprintf(stderr, "cpu_bench: topology %s; %d workers: %s\n", topo->summary().c_str(), N,
               where->describe().c_str());
  json results = json::array();
  for (const auto& model : o.models) {
    const bool is_gpt = model == "gpt";
    const auto& batches = is_gpt ? o.gpt_batches : o.mlp_batches;
    for (int B : batches) {
      if (B % N != 0) {
        std::fprintf(stderr, "cpu_bench: %s batch %d skipped: not a multiple of %d workers\n", model.c_str(), B, N);
        continue;
      }
      const int b = B / N;
      const banyan::nn::gpt_config gcfg{.vocab_size = o.vocab,
                                        .max_seq_len = o.seq,
                                        .num_layers = o.layers,
                                        .num_heads = o.heads,
                                        .channels = o.channels};
      const banyan::nn::mlp_config mcfg{.inputs = 784, .hidden = o.hidden, .classes = 10};
      const banyan::nn::adamw_config cfg{.lr = 1e-4f, .grad_clip = is_gpt ? o.gpt_clip : 0.0f};
      // Single instance on N threads.
      single_side one;
      one.o = &o;
      one.cfg = cfg;
      one.B = B;
      one.T = o.seq;
      one.be = std::move(banyan::nn::make_backend({.name = "cpu", .threads = N})).value();
      if (is_gpt) {
        one.gpt.emplace(std::move(banyan::nn::gpt::create(gcfg, B, o.seq, *one.be)).value());
        one.gpt->init(1);
        one.opt.emplace(*one.be, one.gpt->params());
      } else {
        one.mlp.emplace(std::move(banyan::nn::mlp::create(mcfg, B, *one.be)).value());
        one.mlp->init(1);
        one.opt.emplace(*one.be, one.mlp->params());
      }
      // Workers, overlapped and not: each with its own master and optimizer.
      struct group_side {
        std::optional<banyan::nn::gpt> gpt;
        std::optional<banyan::nn::mlp> mlp;
        std::optional<banyan::nn::adamw> opt;
        std::unique_ptr<banyan::cpu::worker_group> group;
      };
      const int seq = o.seq, vocab = o.vocab;
      auto text = [b, seq, vocab](std::int64_t s, int w, std::vector<int>& tok, std::vector<int>& tgt) {
        banyan::nn::rng r(1234 + static_cast<std::uint64_t>(s) * 7919 + static_cast<std::uint64_t>(w));
        tok.resize(static_cast<std::size_t>(b) * seq);
        tgt.resize(tok.size());
        for (auto& t : tok) t = static_cast<int>(r.below(vocab));
        for (auto& t : tgt) t = static_cast<int>(r.below(vocab));
      };
      auto images = [b](std::int64_t s, int w, std::vector<float>& x, std::vector<int>& y) {
        banyan::nn::rng r(1234 + static_cast<std::uint64_t>(s) * 7919 + static_cast<std::uint64_t>(w));
        x.resize(static_cast<std::size_t>(b) * 784);
        y.resize(b);
        for (auto& v : x) v = r.uniform();
        for (auto& t : y) t = static_cast<int>(r.below(10));
      };
      group_side sides[2];
      for (int k = 0; k < 2; ++k) {
        auto& g = sides[k];
        banyan::nn::arena* master = nullptr;
        if (is_gpt) {
          g.gpt.emplace(std::move(banyan::nn::gpt::create(gcfg, 1, o.seq, *one.be)).value());
          g.gpt->init(1);
          master = &g.gpt->params();
        } else {
          g.mlp.emplace(std::move(banyan::nn::mlp::create(mcfg, 1, *one.be)).value());
          g.mlp->init(1);
          master = &g.mlp->params();
        }
        g.opt.emplace(*one.be, *master);
        auto factory =
            is_gpt ? banyan::cpu::gpt_replicas(gcfg, b, o.seq, text) : banyan::cpu::mlp_replicas(mcfg, b, images);
        auto started = banyan::cpu::worker_group::start(
            {.where = *where, .topo = *topo, .optimizer = cfg, .overlap = k == 0}, *master, *g.opt, factory);
        if (!started) {
          std::fprintf(stderr, "cpu_bench: %s\n", started.error().message.c_str());
          return 1;
        }
        g.group = std::move(started).value();
      }
      std::vector<double> t_one, t_overlap, t_after;
      std::int64_t s_one = 0, s_group[2] = {0, 0};
      for (int round = 0; round < o.rounds; ++round) {
        for (int w = 0; w < o.warmup; ++w) one.step(s_one++);
        auto t0 = clock_type::now();
        for (int s = 0; s < o.steps; ++s) one.step(s_one++);
        t_one.push_back(ms_since(t0) / o.steps);
        for (int k = 0; k < 2; ++k) {
          auto& g = *sides[k].group;
          if (o.warmup > 0) g.run(s_group[k], o.warmup);
          s_group[k] += o.warmup;
          t0 = clock_type::now();
          g.run(s_group[k], o.steps);
          s_group[k] += o.steps;
          (k == 0 ? t_overlap : t_after).push_back(ms_since(t0) / o.steps);
        }
        std::fprintf(
            stderr,
            "cpu_bench: %s batch %d round %d/%d: single %.2f ms/step, workers %.2f (overlap) %.2f (after backward)\n",
            model.c_str(), B, round + 1, o.rounds, t_one.back(), t_overlap.back(), t_after.back());
      }
      const double m1 = median(t_one), mo = median(t_overlap), ma = median(t_after);
      // Per round, single over workers: the two ran back to back, so load that drifts between rounds
      // cancels more than in the ratio of the medians.
      std::vector<double> per_round;
      for (std::size_t i = 0; i < t_one.size(); ++i) per_round.push_back(t_one[i] / t_overlap[i]);
      const auto& st = sides[0].group->stats();
      const double group_steps = static_cast<double>(s_group[0]);
      results.push_back(json{{"model", model},
                             {"batch", B},
                             {"workers", N},
                             {"per_worker_batch", b},
                             {"single_ms", m1},
                             {"workers_ms", mo},
                             {"workers_after_backward_ms", ma},
                             {"single_samples_per_s", B * 1000.0 / m1},
                             {"workers_samples_per_s", B * 1000.0 / mo},
                             {"speedup", m1 / mo},
                             {"speedup_round_median", median(per_round)},
                             {"hidden_ms", ma - mo},
                             {"wait_ms_per_step", st.wait_ms / N / group_steps},
                             {"aggregate_ms_per_step", st.aggregate_ms / N / group_steps},
                             {"rounds_single_ms", t_one},
                             {"rounds_workers_ms", t_overlap},
                             {"rounds_after_ms", t_after}});
    }
  }
  const json all{{"topology", topo->summary()},
                 {"workers", o.workers},
                 {"steps", o.steps},
                 {"rounds", o.rounds},
                 {"results", results}};
  if (!o.results.empty()) {
    std::FILE* f = std::fopen(o.results.c_str(), "w");
    if (f == nullptr) {
      std::fprintf(stderr, "cpu_bench: --results `%s`: cannot be written\n", o.results.c_str());
      return 1;
    }
    std::fprintf(f, "%s\n", all.dump(2).c_str());
    std::fclose(f);
  }
  if (o.json) {
    std::printf("%s\n", all.dump(2).c_str());
    return 0;
  }
  std::printf("topology: %s; workers %s (%d)\n", topo->summary().c_str(), o.workers.c_str(), N);
  std::printf("%-5s %6s %10s %12s %12s %8s %9s %10s %10s\n", "model", "batch", "single/s", "workers/s", "after-bw/s",
              "ratio", "per-round", "hidden ms", "agg ms");
  for (const auto& r : results) {
    std::printf("%-5s %6d %10.1f %12.1f %12.1f %7.2fx %8.2fx %10.2f %10.2f\n", r["model"].get<std::string>().c_str(),
                r["batch"].get<int>(), r["single_samples_per_s"].get<double>(),
                r["workers_samples_per_s"].get<double>(),
                r["batch"].get<int>() * 1000.0 / r["workers_after_backward_ms"].get<double>(),
                r["speedup"].get<double>(), r["speedup_round_median"].get<double>(), r["hidden_ms"].get<double>(),
                r["aggregate_ms_per_step"].get<double>());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  CLI::App cli{
      "cpu_bench: per-core workers (one single-threaded replica per core, fixed-order NUMA-aware gradient "
      "reduction overlapping backward) vs one instance on as many OpenMP threads, same cores, same global "
      "batch; GPT and MLP, a batch sweep; alternating rounds, medians"};
  cli.add_option("--models", o.models, "gpt, mlp or both, a comma list")
      ->delimiter(',')
      ->check(CLI::IsMember({"gpt", "mlp"}))
      ->capture_default_str();
  cli.add_option("--gpt-batches", o.gpt_batches, "global GPT batches (sequences), a comma list")
      ->delimiter(',')
      ->check(CLI::Range(1, 1 << 16))
      ->capture_default_str();
  cli.add_option("--mlp-batches", o.mlp_batches, "global MLP batches (images), a comma list")
      ->delimiter(',')
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  cli.add_option("--workers", o.workers, "per-core, per-pu or a count; the single instance gets as many threads")
      ->capture_default_str();
  cli.add_option("--steps", o.steps, "timed steps per side per round")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cli.add_option("--warmup", o.warmup, "untimed steps before each measurement")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  cli.add_option("--rounds", o.rounds, "alternating rounds; each side's median is reported")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cli.add_option("--seq", o.seq, "GPT context length")->capture_default_str()->check(CLI::Range(1, 1 << 16));
  cli.add_option("--layers", o.layers, "GPT blocks")->capture_default_str()->check(CLI::Range(1, 1024));
  cli.add_option("--channels", o.channels, "GPT width (a multiple of 4 heads)")
      ->capture_default_str()
      ->check(CLI::Range(4, 1 << 16));
  cli.add_option("--gpt-clip", o.gpt_clip, "GPT global-norm clip (0: off, layer-by-layer updates)")
      ->capture_default_str();
  cli.add_flag("--json", o.json, "print results as JSON");
  cli.add_option("--results", o.results, "also write the JSON results to FILE");
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli.exit(e) == 0 ? 0 : 2;  // --help exits 0, a bad value 2 (docs/cli.md)
  }
  if (o.channels % o.heads != 0) {
    std::fprintf(stderr, "cpu_bench: --channels %d: must be a multiple of %d heads\n", o.channels, o.heads);
    return 2;
  }
  return run(o);
}
