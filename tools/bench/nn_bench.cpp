// nn_bench: banyan's GPT training step against PyTorch's on the CPU (same config, batch and thread
// count, measured in the same run), the achieved GFLOP/s of the layer GEMMs against OpenBLAS sgemm
// alone at the same shapes, and peak RSS. Results and the command: docs/benchmarks.md (nn section).
#include "banyan/base/process.hpp"
#include "banyan/nn/adamw.hpp"
#include "banyan/nn/gpt.hpp"
#include "banyan/nn/kernels.hpp"
#include "banyan/nn/rng.hpp"

#include <CLI/CLI.hpp>
#include <cblas.h>
#include <nlohmann/json.hpp>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace nn = banyan::nn;
using clock_type = std::chrono::steady_clock;

namespace {

struct options {
  int vocab = 128, ctx = 64, layers = 4, heads = 4, channels = 128, batch = 8, seq = 64;
  int threads = 2, steps = 20, warmup = 3;
  bool json = false, skip_torch = false;
};

double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

// Runs f repeatedly for at least min_s seconds; returns seconds per call.
template <class F>
double time_per_call(F&& f, double min_s = 0.2) {
  f();
  int reps = 0;
  const auto start = clock_type::now();
  do {
    f();
    ++reps;
  } while (seconds_since(start) < min_s);
  return seconds_since(start) / reps;
}

long peak_rss_kb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  CLI::App cli{"nn_bench: banyan GPT training step vs PyTorch (CPU, same threads), layer GEMMs vs sgemm, peak RSS"};
  cli.add_option("--vocab", o.vocab)->capture_default_str();
  cli.add_option("--ctx", o.ctx, "max sequence length")->capture_default_str();
  cli.add_option("--layers", o.layers)->capture_default_str();
  cli.add_option("--heads", o.heads)->capture_default_str();
  cli.add_option("--channels", o.channels)->capture_default_str();
  cli.add_option("--batch", o.batch)->capture_default_str();
  cli.add_option("--seq", o.seq)->capture_default_str();
  cli.add_option("--threads", o.threads, "compute threads for both")->capture_default_str();
  cli.add_option("--steps", o.steps, "timed steps")->capture_default_str();
  cli.add_option("--warmup", o.warmup)->capture_default_str();
  cli.add_flag("--json", o.json, "print results as JSON");
  cli.add_flag("--skip-torch", o.skip_torch, "do not run the PyTorch side");
  CLI11_PARSE(cli, argc, argv);

  auto be = nn::make_backend({.name = "cpu", .threads = o.threads});
  if (!be) {
    std::fprintf(stderr, "nn_bench: %s\n", be.error().message.c_str());
    return 1;
  }
  const nn::gpt_config cfg{o.vocab, o.ctx, o.layers, o.heads, o.channels};
  auto model = nn::gpt::create(cfg, o.batch, o.seq, **be);
  if (!model) {
    std::fprintf(stderr, "nn_bench: %s\n", model.error().message.c_str());
    return 2;
  }
  model->init(1);
  nn::adamw opt(**be, model->params());
  nn::rng r(7);
  std::vector<int> tok(o.batch * o.seq), tgt(tok.size());
  for (auto& x : tok) x = static_cast<int>(r.below(o.vocab));
  for (auto& x : tgt) x = static_cast<int>(r.below(o.vocab));
  auto step = [&] {
    model->forward(tok.data(), tgt.data(), o.batch, o.seq);
    model->zero_grad();
    model->backward();
    opt.step(model->params().base(), model->grads().base(), {.lr = 1e-4f});
  };
  std::fprintf(stderr, "nn_bench: banyan GPT step (%zu params, B=%d T=%d, %d threads)...\n", model->num_params(), o.batch, o.seq, o.threads);
  for (int i = 0; i < o.warmup; ++i) step();
  auto start = clock_type::now();
  for (int i = 0; i < o.steps; ++i) step();
  const double ours_ms = seconds_since(start) * 1000.0 / o.steps;
  const long ours_rss = peak_rss_kb();
  model->set_profiling(true);
  step();
  const auto layers = model->layers();

  double torch_ms = -1.0;
  long torch_rss = -1;
  if (!o.skip_torch) {
    std::fprintf(stderr, "nn_bench: PyTorch GPT step...\n");
    std::vector<std::string> cmd{"/usr/bin/python3", std::string(BANYAN_SOURCE_DIR) + "/tools/bench/nn_bench.py"};
    for (int v : {o.vocab, o.ctx, o.layers, o.heads, o.channels, o.batch, o.seq, o.threads, o.steps, o.warmup})
      cmd.push_back(std::to_string(v));
    auto p = banyan::run_process(cmd, {.out = banyan::output_mode::capture});  // its stderr stays ours
    const std::string out = p ? p->out : p.error().message;
    try {
      auto j = nlohmann::json::parse(out);
      torch_ms = j.at("ms_per_step").get<double>();
      torch_rss = j.at("peak_rss_kb").get<long>();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "nn_bench: PyTorch side failed (%s): output `%s`\n", e.what(), out.c_str());
      return 1;
    }
  }

  // GEMMs of one layer at the model's shapes: our matmul (bias included) vs sgemm alone.
  std::fprintf(stderr, "nn_bench: layer GEMMs...\n");
  const int N = o.batch * o.seq, C = o.channels;
  struct shape { const char* name; int in, out; };
  const shape shapes[] = {{"qkv", C, 3 * C}, {"attn proj", C, C}, {"fc", C, 4 * C}, {"fc proj", 4 * C, C}, {"lm_head", C, o.vocab}};
  nlohmann::json gemms = nlohmann::json::array();
  for (const auto& s : shapes) {
    std::vector<float> x(static_cast<std::size_t>(N) * s.in), w(static_cast<std::size_t>(s.out) * s.in), b(s.out),
        y(static_cast<std::size_t>(N) * s.out), dx(x.size()), dw(w.size()), db(b.size());
    for (auto& v : x) v = r.normal();
    for (auto& v : w) v = 0.02f * r.normal();
    const double flops = 2.0 * N * s.in * s.out;
    const double f_ours = time_per_call([&] { nn::cpu::matmul_forward(y.data(), x.data(), w.data(), b.data(), N, s.in, s.out); });
    // The anchor is OpenBLAS as a user would call it: its own threads, the same count.
    openblas_set_num_threads(o.threads);
    const double f_blas = time_per_call([&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, s.out, s.in, 1.0f, x.data(), s.in, w.data(), s.in, 0.0f, y.data(), s.out);
    });
    openblas_set_num_threads(1);
    const double b_ours = time_per_call([&] {
      nn::cpu::matmul_backward(dx.data(), dw.data(), db.data(), y.data(), x.data(), w.data(), N, s.in, s.out);
    });
    openblas_set_num_threads(o.threads);
    const double b_blas = time_per_call([&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, s.in, s.out, 1.0f, y.data(), s.out, w.data(), s.in, 1.0f, dx.data(), s.in);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, s.out, s.in, N, 1.0f, y.data(), s.out, x.data(), s.in, 1.0f, dw.data(), s.in);
    });
    openblas_set_num_threads(1);
    gemms.push_back({{"layer", s.name}, {"M", N}, {"K", s.in}, {"N", s.out},
                     {"forward_gflops", flops / f_ours * 1e-9}, {"forward_sgemm_gflops", flops / f_blas * 1e-9},
                     {"backward_gflops", 2 * flops / b_ours * 1e-9}, {"backward_sgemm_gflops", 2 * flops / b_blas * 1e-9}});
  }

  nlohmann::json j{{"config", {{"vocab", o.vocab}, {"ctx", o.ctx}, {"layers", o.layers}, {"heads", o.heads},
                               {"channels", o.channels}, {"batch", o.batch}, {"seq", o.seq}, {"threads", o.threads},
                               {"params", model->num_params()}}},
                   {"banyan_ms_per_step", ours_ms}, {"torch_ms_per_step", torch_ms},
                   {"ratio_banyan_over_torch", torch_ms > 0 ? ours_ms / torch_ms : 0.0},
                   {"banyan_peak_rss_kb", ours_rss}, {"torch_peak_rss_kb", torch_rss}, {"gemms", gemms}};
  nlohmann::json lj = nlohmann::json::array();
  for (const auto& l : layers) {
    lj.push_back({{"name", l.name}, {"forward_ms", l.forward_ms}, {"backward_ms", l.backward_ms},
                  {"param_bytes", l.param_bytes}, {"activation_bytes", l.activation_bytes}});
  }
  j["layers"] = lj;
  if (o.json) {
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("GPT step (%zu params, B=%d, T=%d, %d threads): banyan %.2f ms, PyTorch %.2f ms, ratio %.3f\n",
              model->num_params(), o.batch, o.seq, o.threads, ours_ms, torch_ms, torch_ms > 0 ? ours_ms / torch_ms : 0.0);
  std::printf("peak RSS: banyan %.1f MiB, PyTorch %.1f MiB\n", ours_rss / 1024.0, torch_rss / 1024.0);
  std::printf("%-10s %6s %5s %5s  %9s %9s %6s  %9s %9s %6s\n", "GEMM", "M", "K", "N", "fwd GF/s", "sgemm", "ratio", "bwd GF/s", "sgemm", "ratio");
  for (const auto& g : gemms) {
    std::printf("%-10s %6d %5d %5d  %9.1f %9.1f %6.3f  %9.1f %9.1f %6.3f\n", g["layer"].get<std::string>().c_str(), g["M"].get<int>(),
                g["K"].get<int>(), g["N"].get<int>(), g["forward_gflops"].get<double>(), g["forward_sgemm_gflops"].get<double>(),
                g["forward_gflops"].get<double>() / g["forward_sgemm_gflops"].get<double>(), g["backward_gflops"].get<double>(),
                g["backward_sgemm_gflops"].get<double>(), g["backward_gflops"].get<double>() / g["backward_sgemm_gflops"].get<double>());
  }
  std::printf("per-layer times of one profiled step (ms, forward/backward):\n");
  for (const auto& l : layers) {
    if (l.forward_ms + l.backward_ms > 0.05 * ours_ms / 10) std::printf("  %-14s %7.3f %7.3f\n", l.name.c_str(), l.forward_ms, l.backward_ms);
  }
  return 0;
}
