// memory_bench: memory-managed GPT training against keeping every activation, in one run
// on one machine. Per policy (sqrt(n) recompute, swap, greedy, knapsack) and budget it trains the
// same GPT with a device-memory budget and measures the pool's peak (live bytes, measured by the
// executor) and the step time, in rounds alternating with the model without a budget (its two
// activation arenas), and reports the ratio of each side's fastest round (other processes on a shared
// machine only ever add time; the medians are in the JSON too). Then:
//   - activation memory saved at <= --max-slowdown per policy (vs the manager's keep-all plan and vs
//     the two arenas of the model without a budget);
//   - the largest batch each policy fits into the budget keep-all needs at --batch (the ratio of
//     batches), with one step run at that batch to check the measured peak;
//   - knapsack's step time against sqrt(n) recompute at recompute's own peak;
//   - the anchor, PyTorch on the same GPT and batch (memory_bench.py): no checkpointing and
//     torch.utils.checkpoint per block, their saved-activation bytes and step times.
// Results and the commands: docs/benchmarks.md ("Memory-managed training").
#include "banyan/nn/adamw.hpp"
#include "banyan/nn/gpt.hpp"
#include "banyan/nn/rng.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nn = banyan::nn;
using json = nlohmann::json;

namespace {

struct options {
  int vocab = 256, layers = 4, heads = 4, channels = 64, seq = 128, batch = 8, threads = 0;
  int steps = 3, rounds = 3, max_batch_factor = 32;
  std::vector<double> fractions{0.8, 0.6, 0.5, 0.4, 0.3, 0.2, 0.15};
  double max_slowdown = 1.10;
  std::string backend = "cpu";
  bool json = false, skip_torch = false;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}
double fastest(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end()); }

// One model with its optimizer and a fixed batch.
struct trainee {
  std::unique_ptr<nn::gpt> model;
  std::unique_ptr<nn::adamw> opt;
  std::vector<int> tok, tgt;
  int B = 0, T = 0;

  static std::optional<trainee> make(nn::backend& be, const nn::gpt_config& cfg, int B, int T,
                                     std::optional<nn::memory_options> mem, std::string* why = nullptr) {
    auto m = nn::gpt::create(cfg, B, T, be, std::move(mem));
    if (!m) {
      if (why != nullptr) *why = m.error().message;
      return std::nullopt;
    }
    trainee t;
    t.model = std::make_unique<nn::gpt>(std::move(m).value());
    t.model->init(1);
    t.opt = std::make_unique<nn::adamw>(be, t.model->params());
    nn::rng r(42);
    t.B = B;
    t.T = T;
    for (int i = 0; i < B * T; ++i) {
      t.tok.push_back(static_cast<int>(r.below(cfg.vocab_size)));
      t.tgt.push_back(static_cast<int>(r.below(cfg.vocab_size)));
    }
    return t;
  }
  // ms per step over `n` steps.
  double run(int n) {
    const auto start = std::chrono::steady_clock::now();
    for (int s = 0; s < n; ++s) {
      model->forward(tok.data(), tgt.data(), B, T);
      model->zero_grad();
      model->backward();
      opt->step(model->params().base(), model->grads().base(), {.lr = 1e-4f});
    }
    model->device().synchronize();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / n;
  }
};

struct measured {
  std::string policy;
  std::size_t budget = 0, peak = 0, host = 0;
  double ms = 0.0, base_ms = 0.0, ratio = 0.0, predicted_ratio = 0.0;
  std::uint64_t late = 0;
  double median_ms = 0.0, median_base_ms = 0.0;
  std::size_t held = 0;
};

}  // namespace

int main(int argc, char** argv) {
  options o;
  CLI::App app{
      "memory_bench: memory-managed GPT training per policy and budget against keep-all, and the largest "
      "batch each policy fits into keep-all's budget; PyTorch (no checkpointing, torch.utils.checkpoint) as "
      "the anchor"};
  app.add_option("--vocab", o.vocab, "Vocabulary size")->check(CLI::PositiveNumber);
  app.add_option("--layers", o.layers, "Transformer blocks")->check(CLI::PositiveNumber);
  app.add_option("--heads", o.heads, "Attention heads")->check(CLI::PositiveNumber);
  app.add_option("--channels", o.channels, "Embedding width")->check(CLI::PositiveNumber);
  app.add_option("--seq", o.seq, "Sequence length (and context)")->check(CLI::PositiveNumber);
  app.add_option("--batch", o.batch, "Batch of the keep-all baseline")->check(CLI::PositiveNumber);
  app.add_option("--threads", o.threads, "CPU compute threads (0: all cores)")->check(CLI::NonNegativeNumber);
  app.add_option("--steps", o.steps, "Steps per timed round")->check(CLI::PositiveNumber);
  app.add_option("--rounds", o.rounds, "Alternating rounds (medians)")->check(CLI::PositiveNumber);
  app.add_option("--fractions", o.fractions,
                 "Budgets for greedy and knapsack, as fractions of keep-all's peak (a comma list)")
      ->delimiter(',');
  app.add_option("--max-slowdown", o.max_slowdown, "Step-time ratio allowed for 'memory saved'")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-batch-factor", o.max_batch_factor, "Largest batch searched, in multiples of --batch")
      ->check(CLI::PositiveNumber);
  app.add_option("--backend", o.backend, "cpu or cuda");
  app.add_flag("--json", o.json, "Print the results as JSON on stdout");
  app.add_flag("--skip-torch", o.skip_torch, "Do not run the PyTorch anchor");
  CLI11_PARSE(app, argc, argv);

  auto be_made = nn::make_backend({.name = o.backend, .threads = o.threads});
  if (!be_made) {
    std::fprintf(stderr, "memory_bench: %s\n", be_made.error().message.c_str());
    return 2;
  }
  nn::backend& be = **be_made;
  const nn::gpt_config cfg{.vocab_size = o.vocab,
                           .max_seq_len = o.seq,
                           .num_layers = o.layers,
                           .num_heads = o.heads,
                           .channels = o.channels};
  if (auto v = cfg.validate(); !v) {
    std::fprintf(stderr, "memory_bench: %s\n", v.error().message.c_str());
    return 2;
  }
  auto base = trainee::make(be, cfg, o.batch, o.seq, std::nullopt);
  const nn::memory_graph g = base->model->memory_layout();
  const std::size_t arenas = 2 * base->model->activations().bytes();
  nn::memory_costs unit;
  unit.forward_ms.assign(g.ops.size(), 1.0);
  unit.backward_ms.assign(g.ops.size(), 2.0);
  const std::size_t keep_peak =
      nn::compile_plan(g, unit, std::vector<nn::memory_decision>(g.ops.size(), nn::memory_decision::keep)).peak_bytes;
  const std::size_t least = nn::minimum_memory(g, unit);
  std::fprintf(stderr, "memory_bench: GPT L=%d C=%d T=%d B=%d V=%d on %s; two arenas %s, keep-all plan %s, least %s\n",
               o.layers, o.channels, o.seq, o.batch, o.vocab, be.name().c_str(), nn::format_bytes(arenas).c_str(),
               nn::format_bytes(keep_peak).c_str(), nn::format_bytes(least).c_str());
  base->run(1);  // warm-up

  // Per policy and budget: alternating rounds with the baseline.
  std::vector<measured> runs;
  auto measure = [&](nn::memory_policy policy, std::size_t budget) -> std::optional<measured> {
    std::string why;
    auto t = trainee::make(be, cfg, o.batch, o.seq, nn::memory_options{.budget = budget, .policy = policy}, &why);
    if (!t) {
      std::fprintf(stderr, "  %-9s %10s: %s\n", nn::to_string(policy), nn::format_bytes(budget).c_str(), why.c_str());
      return std::nullopt;
    }
    t->run(2);  // the first step measures the layers and plans again
    t->model->memory()->reset_stats();
    std::vector<double> mine, theirs;
    for (int r = 0; r < o.rounds; ++r) {
      theirs.push_back(base->run(o.steps));
      mine.push_back(t->run(o.steps));
    }
    const auto& plan = t->model->memory()->plan();
    // The fastest round of each: on a shared machine other processes only ever add time, so the
    // minimum is the closest to the unloaded step (the medians are in the JSON too).
    measured m{nn::to_string(policy),
               budget,
               t->model->memory()->stats().peak_bytes,
               plan.host_bytes,
               fastest(mine),
               fastest(theirs),
               0.0,
               plan.compute_ms > 0 ? plan.predicted_ms / plan.compute_ms : 0.0,
               t->model->memory()->stats().late_copies,
               median(mine),
               median(theirs)};
    m.ratio = m.ms / m.base_ms;
    m.held = t->model->memory()->stats().held_for_backward;
    std::fprintf(stderr,
                 "  %-9s %10s: peak %10s (%.0f%% of keep-all), held for the backward %10s, %.2f ms/step vs %.2f "
                 "(x%.3f, predicted x%.3f)\n",
                 m.policy.c_str(), nn::format_bytes(budget).c_str(), nn::format_bytes(m.peak).c_str(),
                 100.0 * static_cast<double>(m.peak) / static_cast<double>(keep_peak), nn::format_bytes(m.held).c_str(),
                 m.ms, m.base_ms, m.ratio, m.predicted_ratio);
    runs.push_back(m);
    return m;
  };
  measure(nn::memory_policy::keep, keep_peak);
  auto recompute = measure(nn::memory_policy::recompute, keep_peak);
  measure(nn::memory_policy::swap, keep_peak);
  for (double f : o.fractions) {
    const auto budget = std::max(least, static_cast<std::size_t>(f * static_cast<double>(keep_peak)));
    measure(nn::memory_policy::greedy, budget);
    measure(nn::memory_policy::knapsack, budget);
  }

  // Memory saved at <= max_slowdown, per policy.
  json saved = json::object();
  for (const char* p : {"recompute", "swap", "greedy", "knapsack"}) {
    const measured* best = nullptr;
    for (const auto& m : runs) {
      if (m.policy == p && m.ratio <= o.max_slowdown && (best == nullptr || m.peak < best->peak)) best = &m;
    }
    if (best == nullptr) {
      saved[p] = nullptr;
      continue;
    }
    saved[p] = {{"peak_bytes", best->peak},
                {"ratio", best->ratio},
                {"saved_vs_keep", 1.0 - static_cast<double>(best->peak) / static_cast<double>(keep_peak)},
                {"saved_vs_arenas", 1.0 - static_cast<double>(best->peak) / static_cast<double>(arenas)}};
  }

  // Largest batch in keep-all's budget, per policy.
  json batches = json::object();
  double keep_ms_per_sample = 0.0;
  for (auto policy :
       {nn::memory_policy::keep, nn::memory_policy::recompute, nn::memory_policy::swap, nn::memory_policy::knapsack}) {
    auto fits = [&](int b) {
      auto m = nn::gpt::create(cfg, b, o.seq, be, nn::memory_options{.budget = keep_peak, .policy = policy});
      return static_cast<bool>(m);
    };
    int lo = o.batch, hi = o.batch;
    if (!fits(lo)) {
      batches[nn::to_string(policy)] = nullptr;
      continue;
    }
    while (hi < o.batch * o.max_batch_factor && fits(std::min(hi * 2, o.batch * o.max_batch_factor))) {
      lo = hi = std::min(hi * 2, o.batch * o.max_batch_factor);
    }
    int top = std::min(hi * 2, o.batch * o.max_batch_factor);
    if (top > hi) {  // the largest b in [hi, top) that fits
      int a = hi, z = top;
      while (z - a > 1) {
        const int mid = (a + z) / 2;
        (fits(mid) ? a : z) = mid;
      }
      lo = a;
    }
    // One step at that batch: the measured peak stays within the budget.
    auto t = trainee::make(be, cfg, lo, o.seq, nn::memory_options{.budget = keep_peak, .policy = policy});
    t->run(1);
    t->model->memory()->reset_stats();
    const double ms = t->run(1);
    const double per_sample = ms / lo;
    if (policy == nn::memory_policy::keep) keep_ms_per_sample = per_sample;
    batches[nn::to_string(policy)] = {{"batch", lo},
                                      {"vs_keep", static_cast<double>(lo) / o.batch},
                                      {"peak_bytes", t->model->memory()->stats().peak_bytes},
                                      {"ms_per_sample", per_sample},
                                      {"host_bytes", t->model->memory()->plan().host_bytes}};
    std::fprintf(stderr, "  largest batch in %s, %-9s: %d (x%.2f of keep-all), peak %s, %.2f ms/sample\n",
                 nn::format_bytes(keep_peak).c_str(), nn::to_string(policy), lo, static_cast<double>(lo) / o.batch,
                 nn::format_bytes(t->model->memory()->stats().peak_bytes).c_str(), per_sample);
  }
  (void)keep_ms_per_sample;

  // Knapsack at recompute's own peak. Each ratio is to the baseline of its own rounds, so the two
  // compare even if the machine's load changed between them.
  json same_memory = nullptr;
  if (recompute) {
    if (auto k = measure(nn::memory_policy::knapsack, recompute->peak)) {
      same_memory = {{"budget", recompute->peak},
                     {"recompute_ratio", recompute->ratio},
                     {"knapsack_ratio", k->ratio},
                     {"knapsack_peak_bytes", k->peak},
                     {"knapsack_vs_recompute", k->ratio / recompute->ratio}};
    }
  }

  // The anchor: PyTorch on the same GPT and batch.
  json torch = nullptr;
  if (!o.skip_torch) {
    // OpenBLAS's own threads stay off (nn_bench.cpp: Debian's torch otherwise starts a pool per
    // core beside OpenMP's, which slows it several times on a shared machine).
    const std::string cmd = std::string("OPENBLAS_NUM_THREADS=1 /usr/bin/python3 ") + BANYAN_SOURCE_DIR +
                            "/tools/bench/memory_bench.py " + std::to_string(o.vocab) + " " + std::to_string(o.layers) +
                            " " + std::to_string(o.heads) + " " + std::to_string(o.channels) + " " +
                            std::to_string(o.seq) + " " + std::to_string(o.batch) + " " + std::to_string(o.threads) +
                            " " + std::to_string(o.steps * o.rounds) + " " + o.backend;
    std::string out;
    if (FILE* p = popen(cmd.c_str(), "r")) {
      char buf[4096];
      while (fgets(buf, sizeof buf, p) != nullptr) out += buf;
      if (pclose(p) == 0) torch = json::parse(out, nullptr, false);
    }
    if (torch.is_null() || torch.is_discarded()) {
      std::fprintf(stderr, "memory_bench: the PyTorch anchor failed: %s\n", cmd.c_str());
      torch = nullptr;
    } else {
      std::fprintf(
          stderr,
          "  PyTorch: no checkpointing %.2f ms/step, %s saved; checkpoint per block %.2f ms/step (x%.3f), %s saved\n",
          torch["plain"]["ms"].get<double>(),
          nn::format_bytes(torch["plain"]["saved_bytes"].get<std::size_t>()).c_str(),
          torch["checkpoint"]["ms"].get<double>(),
          torch["checkpoint"]["ms"].get<double>() / torch["plain"]["ms"].get<double>(),
          nn::format_bytes(torch["checkpoint"]["saved_bytes"].get<std::size_t>()).c_str());
    }
  }

  json runs_json = json::array();
  for (const auto& m : runs) {
    runs_json.push_back({{"policy", m.policy},
                         {"budget", m.budget},
                         {"peak_bytes", m.peak},
                         {"host_bytes", m.host},
                         {"held_for_backward_bytes", m.held},
                         {"ms", m.ms},
                         {"baseline_ms", m.base_ms},
                         {"ratio", m.ratio},
                         {"median_ms", m.median_ms},
                         {"median_baseline_ms", m.median_base_ms},
                         {"predicted_ratio", m.predicted_ratio},
                         {"late_copies", m.late}});
  }
  const json result{{"config",
                     {{"vocab", o.vocab},
                      {"layers", o.layers},
                      {"heads", o.heads},
                      {"channels", o.channels},
                      {"seq", o.seq},
                      {"batch", o.batch},
                      {"backend", be.name()}}},
                    {"arenas_bytes", arenas},
                    {"keep_peak_bytes", keep_peak},
                    {"least_bytes", least},
                    {"runs", runs_json},
                    {"saved_at_max_slowdown", saved},
                    {"max_slowdown", o.max_slowdown},
                    {"largest_batch", batches},
                    {"knapsack_at_recompute_memory", same_memory},
                    {"torch", torch}};
  if (o.json) {
    std::printf("%s\n", result.dump(2).c_str());
    return 0;
  }
  std::printf("memory saved at <= x%.2f step time (vs keep-all plan %s; vs two arenas %s):\n", o.max_slowdown,
              nn::format_bytes(keep_peak).c_str(), nn::format_bytes(arenas).c_str());
  for (auto& [p, v] : saved.items()) {
    if (v.is_null()) {
      std::printf("  %-9s none within the slowdown\n", p.c_str());
      continue;
    }
    std::printf("  %-9s %5.1f%% (%5.1f%% vs arenas) at x%.3f\n", p.c_str(), 100 * v["saved_vs_keep"].get<double>(),
                100 * v["saved_vs_arenas"].get<double>(), v["ratio"].get<double>());
  }
  std::printf("largest batch in keep-all's budget (%s):\n", nn::format_bytes(keep_peak).c_str());
  for (auto& [p, v] : batches.items()) {
    if (!v.is_null())
      std::printf("  %-9s %4d  (x%.2f)\n", p.c_str(), v["batch"].get<int>(), v["vs_keep"].get<double>());
  }
  if (!same_memory.is_null()) {
    std::printf("knapsack vs sqrt(n) recompute at %s: x%.3f step time (x%.3f and x%.3f of keep-all)\n",
                nn::format_bytes(same_memory["budget"].get<std::size_t>()).c_str(),
                same_memory["knapsack_vs_recompute"].get<double>(), same_memory["knapsack_ratio"].get<double>(),
                same_memory["recompute_ratio"].get<double>());
  }
  if (!torch.is_null()) {
    const double plain = torch["plain"]["ms"].get<double>(), ck = torch["checkpoint"]["ms"].get<double>();
    const double ps = torch["plain"]["saved_bytes"].get<double>(),
                 cs = torch["checkpoint"]["saved_bytes"].get<double>();
    std::printf(
        "PyTorch, same GPT and batch: torch.utils.checkpoint per block saves %.1f%% of the saved activations "
        "at x%.3f step time; banyan at %.2f ms/step is x%.3f of PyTorch without checkpointing\n",
        100.0 * (1.0 - cs / ps), ck / plain, runs.front().base_ms, runs.front().base_ms / plain);
  }
  return 0;
}
