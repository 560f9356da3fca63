// train_gpt --profile-costs (profile_mode.hpp).
#include "profile_mode.hpp"

#include <banyan/base/progress.hpp>
#include <banyan/nn/data.hpp>
#include <banyan/pipeline/cost.hpp>
#include <banyan/pipeline/measure.hpp>
#include <banyan/pipeline/trainer.hpp>
#include <banyan/trainer/progress.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>

namespace train_gpt {

namespace pl = banyan::pipeline;

int run_profile(const banyan::trainer::gpt_options& o, const profile_args& a) {
  auto arg_error = [](const std::string& m) {
    std::fprintf(stderr, "train_gpt: error: %s\n", m.c_str());
    return 2;
  };
  if (!o.common.workers.empty() || o.data_parallel > 1 || o.elastic.virtual_workers != 0 || !o.device_memory.empty()) {
    return arg_error("--profile-costs: not with --workers, --data-parallel, --elastic or --device-memory");
  }
  if (a.steps < 1) return arg_error("--profile-steps " + std::to_string(a.steps) + ": must be positive");
  if (a.source != "stage" && a.source != "engine") {
    return arg_error("--profile-source `" + a.source + "`: must be stage or engine");
  }
  if (a.microbatches < 0) return arg_error("--microbatches " + std::to_string(a.microbatches) + ": must be positive");
  const int m = a.microbatches > 0 ? a.microbatches : a.pipeline > 0 ? 2 * a.pipeline : 1;
  if (o.batch % m != 0) {
    return arg_error("--batch " + std::to_string(o.batch) + ": must be a multiple of --microbatches " +
                     std::to_string(m) + " (profiling runs one microbatch of batch/M rows)");
  }
  // Opened (and truncated) now, so a path that cannot be written fails before minutes of timing.
  std::ofstream file(a.file, std::ios::trunc);
  if (!file) return arg_error("--profile-costs `" + a.file + "`: cannot write the file");
  auto corpus = banyan::nn::load_fortunes(o.data_dir);
  if (!corpus) return arg_error(corpus.error().message);

  pl::measure_options mo;
  mo.model = {.vocab_size = static_cast<int>(corpus->vocab.size()),
              .max_seq_len = o.seq_len,
              .num_layers = o.layers,
              .num_heads = o.heads,
              .channels = o.channels};
  mo.rows = o.batch / m;
  mo.seq_len = o.seq_len;
  mo.steps = a.steps;
  // 1F1B holds P microbatches on the first stage; without --pipeline, 2.
  mo.in_flight = a.pipeline > 0 ? a.pipeline : 2;
  mo.seed = o.common.seed;
  mo.source = a.source == "engine" ? pl::timing_source::engine : pl::timing_source::stage;
  mo.device = o.common.backend_config();
  if (mo.device.threads == 0) mo.device.threads = 1;  // one pipeline stage per core
  if (auto v = mo.model.validate(); !v) return arg_error(v.error().message);

  // --profile-stages: the trainer's block cuts (trainer.hpp even_cuts, or the search's layer counts,
  // whose first and last stages also hold the embedding and the head).
  std::vector<banyan::nn::stage_slice> slices;
  if (a.stages) {
    if (a.pipeline < 1) return arg_error("--profile-stages: needs --pipeline P");
    const int S = a.pipeline * std::max(1, a.interleave);
    std::vector<int> cuts;
    if (a.layers_per_stage.empty()) {
      auto even = pl::even_cuts(o.layers, S);
      if (!even) return arg_error("--profile-stages: " + even.error().message);
      cuts = *even;
    } else {
      if (static_cast<int>(a.layers_per_stage.size()) != S) {
        return arg_error("--layers-per-stage: " + std::to_string(a.layers_per_stage.size()) + " stages, not " +
                         std::to_string(S));
      }
      int at = 0;
      for (int st = 0; st + 1 < S; ++st) cuts.push_back((at += a.layers_per_stage[st]) - 1);
    }
    auto cut = banyan::nn::cut_stages(o.layers, cuts);
    if (!cut) return arg_error("--profile-stages: " + cut.error().message);
    slices = *cut;
  }

  auto style = banyan::trainer::progress_style(o.common.json);
  style.unit = "passes";
  banyan::progress bar("profile", 0, style);
  auto tick = [&](int done, int) { bar.update(static_cast<std::uint64_t>(done)); };
  auto measured = a.stages ? pl::measure_stage_costs(mo, slices, tick) : pl::measure_costs(mo, tick);
  bar.clear();
  if (!measured) {
    std::fprintf(stderr, "train_gpt: error: --profile-costs: %s\n", measured.error().message.c_str());
    return 1;
  }
  const pl::costs& c = measured->c;
  const std::string text = pl::write_costs(c, measured->names);
  file << text;
  file.close();
  if (!file) {
    std::fprintf(stderr, "train_gpt: error: --profile-costs `%s`: writing the file failed\n", a.file.c_str());
    return 1;
  }

  double f = 0, b = 0, i = 0, w = 0;
  for (const auto& u : c.units) f += u.t_f, b += u.t_b, i += u.t_i, w += u.t_w;
  if (o.common.json) {
    nlohmann::json j = {{"file", a.file},
                        {"microbatches", m},
                        {"microbatch_rows", mo.rows},
                        {"seq", mo.seq_len},
                        {"threads", mo.device.threads},
                        {"backend", mo.device.name},
                        {"steps", mo.steps},
                        {"in_flight", mo.in_flight},
                        {"source", a.source},
                        {"warmup", mo.warmup},
                        {"microbatch_ms", {{"forward", f}, {"backward", b}}},
                        {"costs", nlohmann::json::parse(text)}};
    if (!a.stages) {
      j["input_fraction"] = {{"embedding", measured->input_fraction_embedding},
                             {"block", measured->input_fraction_block},
                             {"head", measured->input_fraction_head}};
    }
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf(
      "per-layer costs of one microbatch (%d rows x %d tokens, %s, %d thread%s), timed on the %s, median of "
      "%d steps of %d microbatches in flight, ms:\n",
      mo.rows, mo.seq_len, mo.device.name.c_str(), mo.device.threads, mo.device.threads == 1 ? "" : "s",
      a.source == "engine" ? "whole model's layers" : "stage code, one layer at a time", mo.steps, mo.in_flight);
  std::printf("  %-10s %9s %9s %9s %12s %12s\n", a.stages ? "stage" : "layer", "t_f", "t_i", "t_w", "mem bytes",
              "comm bytes");
  for (std::size_t k = 0; k < c.units.size(); ++k) {
    const auto& u = c.units[k];
    std::printf("  %-10s %9.3f %9.3f %9.3f %12.0f %12.0f\n", measured->names[k].c_str(), u.t_f, u.t_i, u.t_w, u.mem,
                u.comm_bytes);
  }
  std::printf("  %-10s %9.3f %9.3f %9.3f   (t_b %.3f", "total", f, i, w, b);
  if (!a.stages) {
    std::printf("; I/(I+W): embedding %.2f, block %.2f, head %.2f", measured->input_fraction_embedding,
                measured->input_fraction_block, measured->input_fraction_head);
  }
  std::printf(")\n");
  if (a.stages) std::printf("wrote %s: %zu stages\n", a.file.c_str(), c.units.size());
  else std::printf("wrote %s: %zu layers (embedding, %d blocks, head)\n", a.file.c_str(), c.units.size(), o.layers);
  return 0;
}

}  // namespace train_gpt
