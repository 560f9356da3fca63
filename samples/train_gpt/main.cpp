// train_gpt: trains a small character-level GPT on the fortunes corpus as a banyan app
// (/train_gpt/trainer is the leaf that does the work). `train_gpt --help` lists the options.
#include "gpt_trainer.hpp"

#include <banyan/sdk/sdk.hpp>

#include <memory>

int main(int argc, char** argv) {
  auto opts = std::make_shared<gpt_train_options>();
  banyan::app app{"train_gpt"};
  auto& cli = app.cli();
  cli.description("Train a character-level GPT on Debian's fortunes; shows progress, validation loss, "
                  "saves and resumes checkpoints, and prints generated text.");
  cli.add_option("--data", opts->data_dir, "Fortunes directory")->capture_default_str();
  cli.add_option("--backend", opts->backend, "Compute backend: cpu or cuda")->capture_default_str();
  cli.add_option("--nn-threads", opts->nn_threads, "CPU compute threads (0: all cores)")->capture_default_str();
  cli.add_option("--steps", opts->steps, "Total optimizer steps")->capture_default_str()->check(CLI::PositiveNumber);
  cli.add_option("--batch", opts->batch, "Sequences per batch")->capture_default_str()->check(CLI::PositiveNumber);
  cli.add_option("--seq", opts->seq_len, "Context length")->capture_default_str()->check(CLI::PositiveNumber);
  cli.add_option("--layers", opts->layers, "Transformer blocks")->capture_default_str();
  cli.add_option("--heads", opts->heads, "Attention heads")->capture_default_str();
  cli.add_option("--channels", opts->channels, "Embedding width")->capture_default_str();
  cli.add_option("--lr", opts->lr, "AdamW learning rate")->capture_default_str();
  cli.add_option("--weight-decay", opts->weight_decay, "AdamW weight decay")->capture_default_str();
  cli.add_option("--grad-clip", opts->grad_clip, "Global gradient-norm clip (0: off)")->capture_default_str();
  cli.add_option("--val-every", opts->val_every, "Validate every N steps (0: only at the end)")->capture_default_str();
  cli.add_option("--val-batches", opts->val_batches, "Batches per validation")->capture_default_str();
  cli.add_option("--checkpoint", opts->checkpoint, "Checkpoint file ('' disables saving)")->capture_default_str();
  cli.add_option("--checkpoint-every", opts->checkpoint_every, "Save every N steps (0: only at the end)")->capture_default_str();
  cli.add_flag("--resume", opts->resume, "Continue from --checkpoint when it exists");
  cli.add_option("--sample-chars", opts->sample_chars, "Characters of text to generate at the end")->capture_default_str();
  cli.add_option("--temperature", opts->temperature, "Sampling temperature")->capture_default_str()->check(CLI::PositiveNumber);
  cli.add_option("--seed", opts->seed, "Seed for initialisation, batches and sampling")->capture_default_str();
  cli.add_flag("--json", opts->json, "Print the summary as JSON on stdout");
  app.root().add_leaf<gpt_trainer>("trainer", std::shared_ptr<const gpt_train_options>(opts));
  return banyan::run(app, argc, argv);
}
