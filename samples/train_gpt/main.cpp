// train_gpt: trains a small character-level GPT on the fortunes corpus as a banyan app
// (/train_gpt/trainer is the leaf that does the work, banyan::trainer::gpt_trainer).
// `train_gpt --help` lists the options.
#include <banyan/sdk/sdk.hpp>
#include <banyan/trainer/gpt_trainer.hpp>

#include <memory>

int main(int argc, char** argv) {
  using banyan::trainer::gpt_options;
  auto opts = std::make_shared<gpt_options>();
  opts->common.checkpoint = "train_gpt.ckpt";
  banyan::app app{"train_gpt"};
  auto& cli = app.cli();
  cli.description("Train a character-level GPT on Debian's fortunes; shows progress, validation loss, "
                  "saves and resumes checkpoints, and prints generated text.");
  cli.add_option("--data", opts->data_dir, "Fortunes directory")->capture_default_str();
  banyan::trainer::add_common_options(cli, opts->common);
  cli.add_option("--steps", opts->steps, "Total optimizer steps")->capture_default_str()->check(CLI::PositiveNumber);
  cli.add_option("--batch", opts->batch, "Sequences per batch")->capture_default_str()->check(CLI::PositiveNumber);
  cli.add_option("--seq", opts->seq_len, "Context length")->capture_default_str()->check(CLI::PositiveNumber);
  cli.add_option("--layers", opts->layers, "Transformer blocks")->capture_default_str();
  cli.add_option("--heads", opts->heads, "Attention heads")->capture_default_str();
  cli.add_option("--channels", opts->channels, "Embedding width")->capture_default_str();
  cli.add_option("--grad-clip", opts->grad_clip, "Global gradient-norm clip (0: off)")->capture_default_str();
  cli.add_option("--val-every", opts->val_every, "Validate every N steps (0: only at the end)")->capture_default_str();
  cli.add_option("--val-batches", opts->val_batches, "Batches per validation")->capture_default_str();
  cli.add_option("--checkpoint", opts->common.checkpoint, "Checkpoint file ('' disables saving)")->capture_default_str();
  cli.add_option("--checkpoint-every", opts->checkpoint_every, "Save every N steps (0: only at the end)")->capture_default_str();
  cli.add_flag("--resume", opts->resume, "Continue from --checkpoint when it exists");
  cli.add_option("--sample-chars", opts->sample_chars, "Characters of text to generate at the end")->capture_default_str();
  cli.add_option("--temperature", opts->temperature, "Sampling temperature")->capture_default_str()->check(CLI::PositiveNumber);
  cli.add_option("--seed", opts->common.seed, "Seed for initialisation, batches and sampling")->capture_default_str();
  app.root().add_leaf<banyan::trainer::gpt_trainer>("trainer", std::shared_ptr<const gpt_options>(opts));
  return banyan::run(app, argc, argv);
}
