// train_gpt --pipeline (pipeline_mode.hpp).
#include "pipeline_mode.hpp"

#include <banyan/base/progress.hpp>
#include <banyan/nn/data.hpp>
#include <banyan/nn/rng.hpp>
#include <banyan/pipeline/csv.hpp>
#include <banyan/pipeline/dsl.hpp>
#include <banyan/pipeline/render.hpp>
#include <banyan/pipeline/trainer.hpp>
#include <banyan/trainer/progress.hpp>
#include <banyan/trainer/state.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <vector>

namespace train_gpt {

namespace pl = banyan::pipeline;

namespace {

banyan::error bad(const std::string& m) { return banyan::error{pl::errc::invalid, m}; }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

banyan::result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return bad("--schedule `" + path + "`: cannot read the file");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A shipped program by name, a .pipe program or a torch .csv table, for P ranks and M microbatches.
banyan::result<pl::table> load_schedule(const pipeline_args& a, int m) {
  const std::string& name = a.schedule;
  pl::table t;
  if (ends_with(name, ".csv")) {
    auto text = read_file(name);
    if (!text) return text.error();
    auto read = pl::read_csv(*text, name);  // errors: "<file>:<line>:<col>: ..."
    if (!read) return bad("--schedule " + read.error().message);
    t = *read;
  } else {
    std::string text;
    if (ends_with(name, ".pipe")) {
      auto file = read_file(name);
      if (!file) return file.error();
      text = *file;
    } else if (const auto* b = pl::find_builtin(name)) {
      text = b->text;
    } else {
      std::string names;
      for (const auto& b : pl::builtin_programs()) names += " " + b.name;
      return bad("--schedule `" + name + "`: not a .pipe program, a .csv table or a shipped program (shipped:" + names +
                 ")");
    }
    auto prog = pl::parse_program(text, name);
    if (!prog) return bad("--schedule " + prog.error().message);
    auto compiled = pl::compile(*prog, {a.pipeline, m, a.interleave});
    if (!compiled) return bad("--schedule " + compiled.error().message);
    t = *compiled;
  }
  if (t.num_ranks() != a.pipeline || t.microbatches != m) {
    return bad("--schedule `" + name + "`: a table for " + std::to_string(t.num_ranks()) + " ranks and " +
               std::to_string(t.microbatches) + " microbatches, not --pipeline " + std::to_string(a.pipeline) +
               " --microbatches " + std::to_string(m));
  }
  return t;
}

// The trainer's block cuts from the search's layer counts (layer 0 the embedding, 1..L the blocks,
// L+1 the head): a boundary before layer k is the cut before block k-1. Every stage needs a block.
banyan::result<std::vector<int>> cuts_of(const std::vector<int>& layers, int stages, int blocks) {
  std::string given;
  for (int n : layers) given += (given.empty() ? "" : ",") + std::to_string(n);
  const std::string what = "--layers-per-stage " + given + ": ";
  if (static_cast<int>(layers.size()) != stages) {
    return bad(what + std::to_string(layers.size()) + " stages, the schedule has " + std::to_string(stages));
  }
  int sum = 0;
  for (int n : layers) {
    if (n < 1) return bad(what + "every stage needs at least one layer");
    sum += n;
  }
  if (sum != blocks + 2) {
    return bad(what + "sums to " + std::to_string(sum) + " layers; the model has " + std::to_string(blocks + 2) +
               " (the embedding, " + std::to_string(blocks) + " blocks, the head)");
  }
  std::vector<int> cuts;
  int at = 0;
  for (int st = 0; st + 1 < stages; ++st) {
    at += layers[st];
    cuts.push_back(at - 1);
  }
  for (int st = 0; st < stages; ++st) {
    const int first = st == 0 ? 0 : cuts[st - 1], last = st + 1 == stages ? blocks : cuts[st];
    if (last <= first) {
      return bad(what + "stage " + std::to_string(st) +
                 " holds no transformer block (the trainer cuts at block "
                 "boundaries: the embedding stays with the first block, the head with the last)");
    }
  }
  return cuts;
}

std::string mib(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

// What the hooks share. The corpus and the batcher are read-only (the leaves of stages 0 and S-1
// call the batch source on their threads); the rest is touched on the composite's thread only.
struct run_state {
  banyan::trainer::gpt_options gpt;
  pipeline_args args;
  int microbatches = 0;
  std::string schedule_name;
  pl::table schedule;
  std::vector<int> cuts;        // the trainer's: stage s holds blocks [cuts[s-1], cuts[s])
  std::int64_t first_step = 0;  // > 0: resumed from the checkpoint after this many steps
  banyan::nn::char_corpus corpus;
  std::optional<banyan::nn::text_batcher> train;
  std::size_t parameters = 0;
  std::optional<banyan::progress> bar;
  std::chrono::steady_clock::time_point start, last;
  nlohmann::json steps = nlohmann::json::array();
  std::vector<float> losses;
  std::vector<int> peak_slots;  // per stage, the most over the run
  std::vector<std::uint64_t> activation_bytes;
  double bubble_sum = 0;
  pl::sim_result last_timeline;
};

void on_step(run_state& s, const pl::step_report& r) {
  const auto now = std::chrono::steady_clock::now();
  const double secs = std::chrono::duration<double>(now - s.last).count();
  s.last = now;
  const double tokens = static_cast<double>(s.gpt.batch) * s.gpt.seq_len;
  const double rate = secs > 0 ? tokens / secs : 0.0;
  s.losses.push_back(r.loss);
  s.bubble_sum += r.bubble;
  const int S = static_cast<int>(r.peak_slots.size());
  s.peak_slots.resize(S, 0);
  s.activation_bytes.resize(S, 0);
  std::string stages;
  for (int st = 0; st < S; ++st) {
    s.peak_slots[st] = std::max(s.peak_slots[st], r.peak_slots[st]);
    s.activation_bytes[st] = std::max(s.activation_bytes[st], r.activation_bytes[st]);
    stages += " s" + std::to_string(st) + " " + std::to_string(r.peak_slots[st]) + "x=" + mib(r.activation_bytes[st]);
  }
  s.steps.push_back({{"step", r.step + 1},
                     {"loss", r.loss},
                     {"grad_norm", r.grad_norm},
                     {"tokens_per_s", rate},
                     {"bubble", r.bubble},
                     {"span_ms", r.timeline.makespan},
                     {"peak_slots", r.peak_slots},
                     {"activation_bytes", r.activation_bytes}});
  s.last_timeline = r.timeline;
  char line[160];
  std::snprintf(line, sizeof line, "step %lld/%d: loss %.4f, %.0f tokens/s, bubble %.1f%%, peak activations:",
                static_cast<long long>(r.step + 1), s.gpt.steps, r.loss, rate, 100 * r.bubble);
  s.bar->event(line + stages);
  char detail[64];
  std::snprintf(detail, sizeof detail, "loss %.4f", r.loss);
  s.bar->update(static_cast<std::uint64_t>(r.step + 1), detail);
}

// Writes the last step's timeline; false (and an error line) when the file cannot be written.
bool write_trace(const run_state& s) {
  const std::string& path = s.args.trace;
  const bool svg = ends_with(path, ".svg");
  const std::string text =
      svg ? pl::svg_gantt(s.last_timeline, "train_gpt " + s.schedule_name + " p=" + std::to_string(s.args.pipeline) +
                                               " m=" + std::to_string(s.microbatches) + ", last step (ms)")
          : pl::chrome_trace(s.last_timeline);
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) {
    std::fprintf(stderr, "error: --trace `%s`: cannot write the file\n", path.c_str());
    return false;
  }
  return true;
}

void on_done(run_state& s) {
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - s.start).count();
  const double tokens = static_cast<double>(s.gpt.steps - s.first_step) * s.gpt.batch * s.gpt.seq_len;
  const double rate = secs > 0 ? tokens / secs : 0.0;
  const float loss = s.losses.empty() ? 0.0f : s.losses.back();
  const double bubble = s.losses.empty() ? 0.0 : s.bubble_sum / static_cast<double>(s.losses.size());
  char summary[96];
  std::snprintf(summary, sizeof summary, "loss %.4f, mean bubble %.1f%%", loss, 100 * bubble);
  s.bar->finish(summary);
  if (!s.args.trace.empty() && !write_trace(s)) std::fflush(stderr);
  if (s.gpt.common.json) {
    nlohmann::json stages = nlohmann::json::array();
    for (int st = 0; st < static_cast<int>(s.peak_slots.size()); ++st) {
      const int first = st == 0 ? 0 : s.cuts[st - 1];
      const int last = st + 1 == static_cast<int>(s.peak_slots.size()) ? s.gpt.layers : s.cuts[st];
      stages.push_back({{"stage", st},
                        {"rank", s.schedule.stage_rank[st]},
                        {"blocks", last - first},
                        {"peak_slots", s.peak_slots[st]},
                        {"activation_bytes", s.activation_bytes[st]}});
    }
    nlohmann::json j{{"steps", s.gpt.steps},
                     {"train_loss", loss},
                     {"losses", s.losses},
                     {"first_step", s.first_step + 1},
                     {"checkpoint", s.gpt.common.checkpoint},
                     {"seconds", secs},
                     {"tokens_per_s", rate},
                     {"parameters", s.parameters},
                     {"backend", s.gpt.common.backend},
                     {"vocab_size", s.corpus.vocab.size()},
                     {"pipeline",
                      {{"ranks", s.args.pipeline},
                       {"schedule", s.schedule_name},
                       {"stages", s.schedule.stages},
                       {"microbatches", s.microbatches},
                       {"microbatch_rows", s.gpt.batch / s.microbatches},
                       {"mean_bubble", bubble},
                       {"trace", s.args.trace},
                       {"stages_peak", stages},
                       {"per_step", s.steps}}}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf(
        "train_gpt: %lld steps pipelined (%s, p=%d, m=%d) in %.1fs (%.0f tokens/s), train loss %.4f, mean "
        "bubble %.1f%%; no validation or sample in pipeline mode\n",
        static_cast<long long>(s.gpt.steps - s.first_step), s.schedule_name.c_str(), s.args.pipeline, s.microbatches,
        secs, rate, loss, 100 * bubble);
  }
  std::fflush(stdout);
}

}  // namespace

banyan::result<void> add_pipeline_trainer(banyan::app& app, const banyan::trainer::gpt_options& gpt,
                                          const pipeline_args& args) {
  auto s = std::make_shared<run_state>();
  s->gpt = gpt;
  s->args = args;
  const auto& o = gpt;
  if (args.pipeline < 1) return bad("--pipeline " + std::to_string(args.pipeline) + ": must be positive");
  if (args.interleave < 1) return bad("--interleave " + std::to_string(args.interleave) + ": must be positive");
  if (!o.common.workers.empty() || o.common.share_params || o.data_parallel > 1 || o.elastic.virtual_workers != 0 ||
      !o.device_memory.empty()) {
    return bad(
        "--pipeline: not with --workers, --share-params, --data-parallel, --elastic, --virtual-workers or "
        "--device-memory");
  }
  if (!o.common.checkpoint.empty()) {
    if (auto ok = banyan::trainer::check_checkpoint_path(o.common.checkpoint); !ok) return bad(ok.error().message);
  }
  const int m = args.microbatches > 0 ? args.microbatches : 2 * args.pipeline;
  if (args.microbatches < 0) return bad("--microbatches " + std::to_string(args.microbatches) + ": must be positive");
  if (o.batch % m != 0) {
    return bad("--batch " + std::to_string(o.batch) + ": must be a multiple of --microbatches " + std::to_string(m) +
               " (the global batch is split in equal microbatches)");
  }
  if (!args.trace.empty() && !ends_with(args.trace, ".json") && !ends_with(args.trace, ".svg")) {
    return bad("--trace `" + args.trace + "`: give a .json (Chrome trace) or .svg (Gantt chart) file");
  }
  if (!args.trace.empty() && !std::ofstream(args.trace, std::ios::app)) {
    return bad("--trace `" + args.trace + "`: cannot write the file");  // before training, not after
  }
  s->microbatches = m;
  auto t = load_schedule(args, m);
  if (!t) return t.error();
  s->schedule = *t;
  s->schedule_name = args.schedule;

  auto corpus = banyan::nn::load_fortunes(o.data_dir);
  if (!corpus) return corpus.error();
  s->corpus = std::move(corpus).value();
  const std::size_t n = s->corpus.ids.size(), split = n * 9 / 10;
  if (split <= static_cast<std::size_t>(o.seq_len) + 1) {
    return bad("corpus `" + o.data_dir + "`: " + std::to_string(n) + " characters, too few for --seq " +
               std::to_string(o.seq_len));
  }
  // The whole-model trainer's batcher: batch rows, the first 90% of the text.
  s->train.emplace(s->corpus.ids, 0, split, o.batch, o.seq_len);

  pl::trainer_options opt;
  opt.model = {.vocab_size = static_cast<int>(s->corpus.vocab.size()),
               .max_seq_len = o.seq_len,
               .num_layers = o.layers,
               .num_heads = o.heads,
               .channels = o.channels};
  opt.batch = o.batch / m;
  opt.seq_len = o.seq_len;
  opt.schedule = *t;
  opt.steps = o.steps;
  opt.seed = o.common.seed;
  opt.optimizer = o.common.optimizer(o.grad_clip);
  opt.device = o.common.backend_config();
  opt.record_timeline = true;
  if (!args.layers_per_stage.empty()) {
    auto cuts = cuts_of(args.layers_per_stage, t->stages, o.layers);
    if (!cuts) return cuts.error();
    opt.cuts = *cuts;
  } else {
    auto cuts = pl::even_cuts(o.layers, t->stages);
    if (!cuts) return bad("--pipeline " + std::to_string(args.pipeline) + ": " + cuts.error().message);
    opt.cuts = *cuts;
  }
  s->cuts = opt.cuts;
  opt.checkpoints.path = o.common.checkpoint;
  opt.checkpoints.every = o.checkpoint_every;
  opt.checkpoints.synchronous = o.common.checkpoint_sync;
  if (o.resume || o.require_resume) {
    const std::string flag = o.require_resume ? "--require-resume" : "--resume";
    if (o.common.checkpoint.empty()) return bad(flag + ": no --checkpoint to resume from");
    if (pl::has_checkpoint(o.common.checkpoint)) {
      auto manifest = pl::read_manifest(o.common.checkpoint);
      if (!manifest) return bad(flag + ": " + manifest.error().message);
      if (auto ok = pl::check_resumable(*manifest, o.common.checkpoint, opt); !ok)
        return bad(flag + ": " + ok.error().message);
      opt.checkpoints.resume_step = manifest->step;
    } else if (o.require_resume) {
      return bad(flag + ": checkpoint folder `" + o.common.checkpoint + "` holds no checkpoint");
    } else {
      std::fprintf(
          stderr,
          "warning: %s: checkpoint folder `%s` holds no checkpoint; training from scratch (--require-resume makes "
          "this an error)\n",
          flag.c_str(), o.common.checkpoint.c_str());
    }
  }
  s->first_step = opt.checkpoints.resume_step;
  {
    const int C = opt.model.channels, L = opt.model.num_layers, V = opt.model.vocab_size;
    s->parameters = static_cast<std::size_t>(V) * C + static_cast<std::size_t>(opt.model.max_seq_len) * C +
                    static_cast<std::size_t>(L) * (12 * C * C + 13 * C) + 2 * C;
  }

  pl::trainer_hooks hooks;
  hooks.data = [s](std::int64_t step, int i, int* tokens, int* targets) {
    // The whole model's batch for (seed, step) (gpt_trainer.cpp), rows [i*b, (i+1)*b).
    banyan::nn::rng r(s->gpt.common.seed * 1000003ull + static_cast<std::uint64_t>(step));
    std::vector<int> in, tgt;
    s->train->next(r, in, tgt);
    const std::size_t rows = static_cast<std::size_t>(s->gpt.batch / s->microbatches) * s->gpt.seq_len;
    std::copy_n(in.begin() + static_cast<long>(i * rows), rows, tokens);
    std::copy_n(tgt.begin() + static_cast<long>(i * rows), rows, targets);
  };
  hooks.on_step = [s](const pl::step_report& r) { on_step(*s, r); };
  hooks.on_done = [s] { on_done(*s); };
  hooks.on_checkpoint = [s](std::int64_t step, const std::string& folder) {
    s->bar->event("checkpoint in `" + folder + "` after step " + std::to_string(step));
  };
  if (auto added = pl::add_trainer(app.root(), "trainer", opt, hooks); !added) return added.error();
  s->bar.emplace("train_gpt", static_cast<std::uint64_t>(o.steps), banyan::trainer::progress_style(o.common.json));
  if (s->first_step > 0) {
    s->bar->update(static_cast<std::uint64_t>(s->first_step), "resumed");
    s->bar->event("resumed from `" + o.common.checkpoint + "` after step " + std::to_string(s->first_step));
  }
  s->start = s->last = std::chrono::steady_clock::now();
  if (!o.common.json) {
    std::fprintf(stderr, "pipeline: %d ranks, %d stages, schedule %s, %d microbatches of %d rows, %zu parameters\n",
                 args.pipeline, t->stages, args.schedule.c_str(), m, o.batch / m, s->parameters);
  }
  return {};
}

}  // namespace train_gpt
