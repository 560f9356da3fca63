// nn_bench: banyan's GPT training step against PyTorch's on the CPU, each side in its best threading
// configuration on this machine, at one thread and at all cores. Also the achieved GFLOP/s of the
// layer GEMMs against OpenBLAS sgemm alone at the same shapes, per-layer times, and peak RSS with and
// without the CUDA backend loaded. Results and the commands: docs/benchmarks.md (nn section).
//
// Fair baseline: a threading layer's settings change a step's time by up to 3x on a shared machine
// (Debian's torch keeps OpenBLAS's own pthreads whatever torch.set_num_threads says, next to OpenMP's
// spinning workers). So for each thread count the bench first tries every configuration below on
// both sides, each in a fresh child process (the variables are read once, at library load), twice
// in interleaved order, keeps each side's fastest on average over the two passes (a configuration that
// is fast only when the cores happen to be free is not the best one on a shared machine), and prints
// them all:
//   PyTorch: torch.set_num_threads(T), OPENBLAS_NUM_THREADS 1 or T, OMP_WAIT_POLICY unset or PASSIVE
//   banyan:  threads T (OpenBLAS single-threaded inside OpenMP), OMP_WAIT_POLICY unset or PASSIVE
// OPENBLAS_NUM_THREADS is never left unset: OpenBLAS would then start a thread per core whatever
// set_num_threads says, and "1 thread" would use every core for PyTorch's GEMMs.
// Then it measures the chosen configurations in alternating rounds (banyan, PyTorch, banyan, ...) and
// reports each side's median over the rounds: the ratio is taken in one run on the same machine,
// under the same load.
//
// `--child` is internal: one banyan measurement in this process, one JSON line on stdout.
#include "banyan/base/process.hpp"
#include "banyan/nn/adamw.hpp"
#include "banyan/nn/gpt.hpp"
#include "banyan/nn/kernels.hpp"
#include "banyan/nn/rng.hpp"

#include <CLI/CLI.hpp>
#include <cblas.h>
#include <nlohmann/json.hpp>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace nn = banyan::nn;
using clock_type = std::chrono::steady_clock;
using json = nlohmann::json;

namespace {

struct options {
  int vocab = 128, ctx = 64, layers = 4, heads = 4, channels = 128, batch = 8, seq = 64;
  std::vector<int> threads;  // thread counts to measure; default 1 and all cores
  int rounds = 5, steps = 10, warmup = 3, search_steps = 3;
  bool json = false, skip_torch = false, skip_gemms = false;
  // --child only
  bool child = false, profile = false, load_cuda = false, gemms = false;
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

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string one, five, fifteen;
  f >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

json gemm_table(const options& o, int threads);

// The child: banyan's step in this process, with the environment the parent chose (or, with
// --gemms, the layer GEMMs against sgemm).
int run_child(const options& o) {
  if (o.gemms) {
    std::printf("%s\n", gemm_table(o, o.threads.at(0)).dump().c_str());
    return 0;
  }
  auto be = nn::make_backend({.name = "cpu", .threads = o.threads.at(0)});
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
  std::vector<int> tok(static_cast<std::size_t>(o.batch) * o.seq), tgt(tok.size());
  for (auto& x : tok) x = static_cast<int>(r.below(o.vocab));
  for (auto& x : tgt) x = static_cast<int>(r.below(o.vocab));
  auto step = [&] {
    model->forward(tok.data(), tgt.data(), o.batch, o.seq);
    model->zero_grad();
    model->backward();
    opt.step(model->params().base(), model->grads().base(), {.lr = 1e-4f});
  };
  for (int i = 0; i < o.warmup; ++i) step();
  const auto start = clock_type::now();
  for (int i = 0; i < o.steps; ++i) step();
  json j{{"ms_per_step", seconds_since(start) * 1000.0 / o.steps}, {"params", model->num_params()}};
  if (o.profile) {
    model->set_profiling(true);
    step();
    json layers = json::array();
    for (const auto& l : model->layers()) {
      layers.push_back({{"name", l.name},
                        {"forward_ms", l.forward_ms},
                        {"backward_ms", l.backward_ms},
                        {"param_bytes", l.param_bytes},
                        {"activation_bytes", l.activation_bytes}});
    }
    j["layers"] = layers;
  }
  j["peak_rss_kb"] = peak_rss_kb();
  if (o.load_cuda) {
    auto gpu = nn::make_backend({.name = "cuda"});  // loads the plugin; fails without a GPU
    j["cuda"] = gpu ? std::string("loaded, GPU present") : gpu.error().message;
    j["peak_rss_kb_with_cuda"] = peak_rss_kb();
  }
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

// One threading configuration of one side.
struct config {
  std::string side;  // "banyan", "pytorch"
  int threads = 1;
  std::vector<std::pair<std::string, std::string>> env;  // set in the child; absent: inherited unset
  std::vector<double> search_ms;                         // the short runs of the search
  std::vector<double> round_ms;                          // the measurement rounds (chosen configs only)
  json last;                                             // the child's last JSON line

  std::string describe() const {
    std::string s =
        side == "pytorch" ? "set_num_threads(" + std::to_string(threads) + ")" : "threads " + std::to_string(threads);
    for (const char* var : {"OPENBLAS_NUM_THREADS", "OMP_WAIT_POLICY"}) {
      if (side == "banyan" && std::string(var) == "OPENBLAS_NUM_THREADS") continue;  // always 1 (the backend sets it)
      auto it = std::find_if(env.begin(), env.end(), [&](const auto& kv) { return kv.first == var; });
      s += std::string(" ") + var + "=" + (it == env.end() ? "(unset)" : it->second);
    }
    return s;
  }
};

// The variables the candidates set; the parent unsets them in its own environment first, so
// "(unset)" means unset whatever the caller's shell holds.
const char* const controlled_vars[] = {"OPENBLAS_NUM_THREADS", "OMP_WAIT_POLICY", "OMP_NUM_THREADS", "GOMP_SPINCOUNT",
                                       "MKL_NUM_THREADS"};

std::vector<config> candidates(int threads) {
  std::vector<config> out;
  for (const char* wait : {"", "PASSIVE"}) {
    config b{.side = "banyan", .threads = threads};
    if (*wait) b.env.emplace_back("OMP_WAIT_POLICY", wait);
    out.push_back(b);
    std::vector<std::string> blas_threads{"1"};
    if (threads > 1) blas_threads.push_back(std::to_string(threads));
    for (const auto& blas : blas_threads) {
      config t{.side = "pytorch", .threads = threads};
      t.env.emplace_back("OPENBLAS_NUM_THREADS", blas);
      if (*wait) t.env.emplace_back("OMP_WAIT_POLICY", wait);
      out.push_back(t);
    }
  }
  return out;
}

// Runs one child measuring `steps` steps of c; returns its JSON line.
banyan::result<json> measure(const options& o, const std::string& self, config& c, int steps, bool profile) {
  std::vector<std::string> argv;
  auto model_args = [&](std::vector<std::string>& a) {
    for (int v : {o.vocab, o.ctx, o.layers, o.heads, o.channels, o.batch, o.seq}) a.push_back(std::to_string(v));
  };
  if (c.side == "banyan") {
    argv = {self,        "--child",
            "--threads", std::to_string(c.threads),
            "--steps",   std::to_string(steps),
            "--warmup",  std::to_string(o.warmup)};
    const char* names[] = {"--vocab", "--ctx", "--layers", "--heads", "--channels", "--batch", "--seq"};
    std::vector<std::string> values;
    model_args(values);
    for (std::size_t i = 0; i < values.size(); ++i) {
      argv.push_back(names[i]);
      argv.push_back(values[i]);
    }
    if (profile) argv.push_back("--profile");
    if (profile) argv.push_back("--load-cuda");
  } else {
    argv = {"/usr/bin/python3", std::string(BANYAN_SOURCE_DIR) + "/tools/bench/nn_bench.py"};
    model_args(argv);
    for (int v : {c.threads, steps, o.warmup}) argv.push_back(std::to_string(v));
  }
  const banyan::spawn_options so{
      .env = c.env, .out = banyan::output_mode::capture, .err = banyan::output_mode::capture};
  auto run = banyan::run_process(argv, so);
  if (!run) return run.error();
  if (!run->status.success()) {
    return banyan::error{nn::errc::io, c.side + " child (" + c.describe() + ") failed with exit code " +
                                           std::to_string(run->status.shell_code()) + ": " + run->err};
  }
  try {
    json j = json::parse(run->out);
    c.last = j;
    return j;
  } catch (const std::exception& e) {
    return banyan::error{nn::errc::corrupt, c.side + " child printed `" + run->out + "`: " + e.what()};
  }
}

json gemm_table(const options& o, int threads) {
  nn::rng r(11);
  openblas_set_num_threads(1);
  const int N = o.batch * o.seq, C = o.channels;
  struct shape {
    const char* name;
    int in, out;
  };
  const shape shapes[] = {
      {"qkv", C, 3 * C}, {"attn proj", C, C}, {"fc", C, 4 * C}, {"fc proj", 4 * C, C}, {"lm_head", C, o.vocab}};
  auto be = nn::make_backend({.name = "cpu", .threads = threads});  // sets the OpenMP threads
  json gemms = json::array();
  for (const auto& s : shapes) {
    std::vector<float> x(static_cast<std::size_t>(N) * s.in), w(static_cast<std::size_t>(s.out) * s.in), b(s.out),
        y(static_cast<std::size_t>(N) * s.out), dx(x.size()), dw(w.size()), db(b.size());
    for (auto& v : x) v = r.normal();
    for (auto& v : w) v = 0.02f * r.normal();
    const double flops = 2.0 * N * s.in * s.out;
    const double f_ours =
        time_per_call([&] { nn::cpu::matmul_forward(y.data(), x.data(), w.data(), b.data(), N, s.in, s.out); });
    const double b_ours = time_per_call([&] {
      nn::cpu::matmul_backward(dx.data(), dw.data(), db.data(), y.data(), x.data(), w.data(), N, s.in, s.out);
    });
    // The anchor is OpenBLAS as a user would call it: its own threads, the same count.
    openblas_set_num_threads(threads);
    const double f_blas = time_per_call([&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, s.out, s.in, 1.0f, x.data(), s.in, w.data(), s.in, 0.0f,
                  y.data(), s.out);
    });
    const double b_blas = time_per_call([&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, s.in, s.out, 1.0f, y.data(), s.out, w.data(), s.in,
                  1.0f, dx.data(), s.in);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, s.out, s.in, N, 1.0f, y.data(), s.out, x.data(), s.in, 1.0f,
                  dw.data(), s.in);
    });
    openblas_set_num_threads(1);
    gemms.push_back({{"layer", s.name},
                     {"M", N},
                     {"K", s.in},
                     {"N", s.out},
                     {"forward_gflops", flops / f_ours * 1e-9},
                     {"forward_sgemm_gflops", flops / f_blas * 1e-9},
                     {"backward_gflops", 2 * flops / b_ours * 1e-9},
                     {"backward_sgemm_gflops", 2 * flops / b_blas * 1e-9}});
  }
  return gemms;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  CLI::App cli{
      "nn_bench: banyan GPT training step vs PyTorch on the CPU, each side in its best threading configuration "
      "(searched and printed), at 1 thread and at all cores, in alternating rounds; per-layer times; layer GEMMs "
      "vs sgemm; peak RSS with and without the CUDA backend"};
  cli.add_option("--vocab", o.vocab)->capture_default_str()->check(CLI::Range(1, 1 << 20));
  cli.add_option("--ctx", o.ctx, "max sequence length")->capture_default_str()->check(CLI::Range(1, 1 << 16));
  cli.add_option("--layers", o.layers)->capture_default_str()->check(CLI::Range(1, 1024));
  cli.add_option("--heads", o.heads)->capture_default_str()->check(CLI::Range(1, 1024));
  cli.add_option("--channels", o.channels)->capture_default_str()->check(CLI::Range(1, 1 << 16));
  cli.add_option("--batch", o.batch)->capture_default_str()->check(CLI::Range(1, 1 << 16));
  cli.add_option("--seq", o.seq)->capture_default_str()->check(CLI::Range(1, 1 << 16));
  cli.add_option("--threads", o.threads, "thread counts to measure, a comma list (default: 1 and all cores)")
      ->delimiter(',')
      ->check(CLI::Range(1, 4096));
  cli.add_option("--rounds", o.rounds, "alternating measurement rounds; each side's median is reported")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cli.add_option("--steps", o.steps, "timed steps per side per round")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cli.add_option("--warmup", o.warmup, "untimed steps before each measurement")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  cli.add_option("--search-steps", o.search_steps, "timed steps per configuration tried (0: no search, the defaults)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  cli.add_flag("--json", o.json, "print results as JSON");
  cli.add_flag("--skip-torch", o.skip_torch, "do not run the PyTorch side");
  cli.add_flag("--skip-gemms", o.skip_gemms, "do not time the layer GEMMs against sgemm");
  cli.add_flag("--child", o.child)->group("");
  cli.add_flag("--profile", o.profile)->group("");
  cli.add_flag("--load-cuda", o.load_cuda)->group("");
  cli.add_flag("--gemms", o.gemms)->group("");
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help exits 0; every parse error (a value out of range: `--steps 0`) exits 2 (docs/cli.md).
    return cli.exit(e) == 0 ? 0 : 2;
  }
  if (o.channels % o.heads != 0 || o.seq > o.ctx) {
    std::fprintf(stderr, "nn_bench: --channels must be a multiple of --heads and --seq at most --ctx\n");
    return 2;
  }
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (o.threads.empty()) o.threads = cores > 1 ? std::vector<int>{1, cores} : std::vector<int>{1};
  if (o.child) return run_child(o);

  char self_buf[4096];
  const ssize_t n = readlink("/proc/self/exe", self_buf, sizeof self_buf - 1);
  const std::string self = n > 0 ? std::string(self_buf, static_cast<std::size_t>(n)) : std::string(argv[0]);
  const std::string load_start = load_average();
  for (const char* var : controlled_vars) unsetenv(var);
  auto fail = [](const banyan::error& e) {
    std::fprintf(stderr, "nn_bench: %s\n", e.message.c_str());
    return 1;
  };

  // Search: every candidate, twice, in interleaved order; each side keeps its fastest.
  struct per_threads {
    int threads;
    std::vector<config> tried;
    int best_banyan = -1, best_torch = -1;
  };
  std::vector<per_threads> runs;
  for (int t : o.threads) {
    per_threads p{.threads = t, .tried = candidates(t)};
    if (o.skip_torch) std::erase_if(p.tried, [](const config& c) { return c.side == "pytorch"; });
    if (o.search_steps == 0) {
      std::erase_if(p.tried, [](const config& c) { return !c.env.empty(); });
    }
    runs.push_back(std::move(p));
  }
  if (o.search_steps > 0) {
    for (int pass = 0; pass < 2; ++pass) {
      for (auto& p : runs) {
        for (std::size_t k = 0; k < p.tried.size(); ++k) {
          config& c = p.tried[pass == 0 ? k : p.tried.size() - 1 - k];
          std::fprintf(stderr, "\rnn_bench: search pass %d/2, %d threads: %-8s %-70s", pass + 1, p.threads,
                       c.side.c_str(), c.describe().c_str());
          auto j = measure(o, self, c, o.search_steps, false);
          if (!j) return fail(j.error());
          c.search_ms.push_back((*j)["ms_per_step"].get<double>());
        }
      }
    }
    std::fprintf(stderr, "\n");
  }
  for (auto& p : runs) {
    // The fastest of a side (mean of its two passes); without a search, its first (default) config.
    auto best = [&](const std::string& side) {
      int b = -1;
      double b_ms = 0.0;
      for (std::size_t k = 0; k < p.tried.size(); ++k) {
        const auto& c = p.tried[k];
        if (c.side != side) continue;
        double ms = 0.0;
        for (double x : c.search_ms) ms += x / static_cast<double>(c.search_ms.size());
        if (b < 0 || ms < b_ms) {
          b = static_cast<int>(k);
          b_ms = ms;
        }
      }
      return b;
    };
    p.best_banyan = best("banyan");
    p.best_torch = best("pytorch");
  }

  // Alternating rounds of the chosen configurations: banyan then PyTorch, for each thread count.
  for (int round = 0; round < o.rounds; ++round) {
    for (auto& p : runs) {
      for (int idx : {p.best_banyan, p.best_torch}) {
        if (idx < 0) continue;
        config& c = p.tried[idx];
        std::fprintf(stderr, "\rnn_bench: round %d/%d, %d threads: %-8s", round + 1, o.rounds, p.threads,
                     c.side.c_str());
        auto j = measure(o, self, c, o.steps, c.side == "banyan" && round == o.rounds - 1);
        if (!j) return fail(j.error());
        c.round_ms.push_back((*j)["ms_per_step"].get<double>());
      }
    }
  }
  std::fprintf(stderr, "\n");
  json gemms = json::array();
  if (!o.skip_gemms) {
    // In a child with banyan's chosen configuration at the most threads (the wait policy matters).
    const config& b = runs.back().tried[runs.back().best_banyan];
    std::fprintf(stderr, "nn_bench: layer GEMMs at %d threads (%s)...\n", b.threads, b.describe().c_str());
    std::vector<std::string> args{self,
                                  "--child",
                                  "--gemms",
                                  "--threads",
                                  std::to_string(b.threads),
                                  "--batch",
                                  std::to_string(o.batch),
                                  "--seq",
                                  std::to_string(o.seq),
                                  "--ctx",
                                  std::to_string(o.ctx),
                                  "--channels",
                                  std::to_string(o.channels),
                                  "--heads",
                                  std::to_string(o.heads),
                                  "--vocab",
                                  std::to_string(o.vocab)};
    auto run = banyan::run_process(args, {.env = b.env, .out = banyan::output_mode::capture});
    if (!run) return fail(run.error());
    try {
      gemms = json::parse(run->out);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "nn_bench: the GEMM child printed `%s`: %s\n", run->out.c_str(), e.what());
      return 1;
    }
  }
  const std::string load_end = load_average();

  // Report.
  json results = json::array();
  for (const auto& p : runs) {
    json tried = json::array();
    for (std::size_t k = 0; k < p.tried.size(); ++k) {
      const auto& c = p.tried[k];
      tried.push_back({{"side", c.side},
                       {"config", c.describe()},
                       {"search_ms", c.search_ms},
                       {"chosen", static_cast<int>(k) == p.best_banyan || static_cast<int>(k) == p.best_torch}});
    }
    const config& b = p.tried[p.best_banyan];
    json r{{"threads", p.threads},
           {"tried", tried},
           {"banyan_config", b.describe()},
           {"banyan_rounds_ms", b.round_ms},
           {"banyan_ms", median(b.round_ms)},
           {"banyan_peak_rss_kb", b.last.value("peak_rss_kb", 0L)},
           {"banyan_peak_rss_kb_with_cuda", b.last.value("peak_rss_kb_with_cuda", 0L)},
           {"cuda", b.last.value("cuda", std::string())},
           {"layers", b.last.value("layers", json::array())}};
    if (p.best_torch >= 0) {
      const config& t = p.tried[p.best_torch];
      r["torch_config"] = t.describe();
      r["torch_rounds_ms"] = t.round_ms;
      r["torch_ms"] = median(t.round_ms);
      r["torch_peak_rss_kb"] = t.last.value("peak_rss_kb", 0L);
      r["ratio_banyan_over_torch"] = median(b.round_ms) / median(t.round_ms);
    }
    results.push_back(r);
  }
  const auto params = runs.front().tried[runs.front().best_banyan].last.value("params", 0UL);
  json j{{"config",
          {{"vocab", o.vocab},
           {"ctx", o.ctx},
           {"layers", o.layers},
           {"heads", o.heads},
           {"channels", o.channels},
           {"batch", o.batch},
           {"seq", o.seq},
           {"params", params},
           {"cores", cores},
           {"rounds", o.rounds},
           {"steps", o.steps},
           {"warmup", o.warmup},
           {"search_steps", o.search_steps}}},
         {"load_average_start", load_start},
         {"load_average_end", load_end},
         {"results", results},
         {"gemms", gemms}};
  if (o.json) {
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("GPT: vocab %d, context %d, %d layers x %d channels, %d heads = %zu parameters; B=%d, T=%d; %d cores\n",
              o.vocab, o.ctx, o.layers, o.channels, o.heads, static_cast<std::size_t>(params), o.batch, o.seq, cores);
  std::printf("load average (1, 5, 15 min): %s at start, %s at end\n", load_start.c_str(), load_end.c_str());
  if (o.search_steps > 0) {
    std::printf("configurations tried (ms/step of %d steps, two passes; * = chosen):\n", o.search_steps);
    for (const auto& p : runs) {
      for (std::size_t k = 0; k < p.tried.size(); ++k) {
        const auto& c = p.tried[k];
        const bool chosen = static_cast<int>(k) == p.best_banyan || static_cast<int>(k) == p.best_torch;
        std::printf("  %-8s %-72s %9.2f %9.2f %s\n", c.side.c_str(), c.describe().c_str(), c.search_ms.at(0),
                    c.search_ms.at(1), chosen ? "*" : "");
      }
    }
  }
  std::printf("step time, median of %d alternating rounds of %d steps (min-max):\n", o.rounds, o.steps);
  std::printf("  %-7s %-26s %-26s %s\n", "threads", "banyan ms", "PyTorch ms", "banyan / PyTorch");
  for (const auto& r : results) {
    auto cell = [](const json& rounds, double med) {
      const auto v = rounds.get<std::vector<double>>();
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.2f (%.2f-%.2f)", med, *std::min_element(v.begin(), v.end()),
                    *std::max_element(v.begin(), v.end()));
      return std::string(buf);
    };
    const std::string torch = r.contains("torch_ms") ? cell(r["torch_rounds_ms"], r["torch_ms"].get<double>()) : "-";
    std::printf("  %-7d %-26s %-26s %s\n", r["threads"].get<int>(),
                cell(r["banyan_rounds_ms"], r["banyan_ms"].get<double>()).c_str(), torch.c_str(),
                r.contains("ratio_banyan_over_torch")
                    ? std::to_string(r["ratio_banyan_over_torch"].get<double>()).substr(0, 5).c_str()
                    : "-");
  }
  for (const auto& r : results) {
    std::printf("  %d threads: banyan %s; PyTorch %s\n", r["threads"].get<int>(),
                r["banyan_config"].get<std::string>().c_str(), r.value("torch_config", std::string("-")).c_str());
  }
  const auto& last = results.back();
  std::printf("peak RSS: banyan %.1f MiB, %.1f MiB after asking for the CUDA backend (%s); PyTorch %.1f MiB\n",
              last["banyan_peak_rss_kb"].get<long>() / 1024.0,
              last["banyan_peak_rss_kb_with_cuda"].get<long>() / 1024.0, last["cuda"].get<std::string>().c_str(),
              last.value("torch_peak_rss_kb", 0L) / 1024.0);
  std::printf("per-layer times of one profiled step (ms, forward + backward, summed over the blocks):\n");
  std::printf("  %-12s", "layer");
  for (const auto& r : results) std::printf("  %9s", (std::to_string(r["threads"].get<int>()) + " thr").c_str());
  std::printf("\n");
  std::vector<std::string> kinds;
  auto kind_of = [](const std::string& name) {
    return name.find('.') != std::string::npos ? name.substr(name.find('.') + 1) : name;
  };
  for (const auto& l : last["layers"]) {
    const std::string k = kind_of(l["name"].get<std::string>());
    if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(k);
  }
  for (const auto& k : kinds) {
    std::printf("  %-12s", k.c_str());
    for (const auto& r : results) {
      double ms = 0.0;
      for (const auto& l : r["layers"]) {
        if (kind_of(l["name"].get<std::string>()) == k)
          ms += l["forward_ms"].get<double>() + l["backward_ms"].get<double>();
      }
      std::printf("  %9.2f", ms);
    }
    std::printf("\n");
  }
  if (!gemms.empty()) {
    std::printf(
        "layer GEMMs at %d threads, GFLOP/s (ours: split over OpenMP, OpenBLAS 1 thread; sgemm: OpenBLAS's own "
        "threads):\n",
        runs.back().threads);
    std::printf("%-10s %6s %5s %5s  %9s %9s %6s  %9s %9s %6s\n", "GEMM", "M", "K", "N", "fwd GF/s", "sgemm", "ratio",
                "bwd GF/s", "sgemm", "ratio");
    for (const auto& g : gemms) {
      std::printf("%-10s %6d %5d %5d  %9.1f %9.1f %6.3f  %9.1f %9.1f %6.3f\n", g["layer"].get<std::string>().c_str(),
                  g["M"].get<int>(), g["K"].get<int>(), g["N"].get<int>(), g["forward_gflops"].get<double>(),
                  g["forward_sgemm_gflops"].get<double>(),
                  g["forward_gflops"].get<double>() / g["forward_sgemm_gflops"].get<double>(),
                  g["backward_gflops"].get<double>(), g["backward_sgemm_gflops"].get<double>(),
                  g["backward_gflops"].get<double>() / g["backward_sgemm_gflops"].get<double>());
    }
  }
  return 0;
}
