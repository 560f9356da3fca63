// train_mnist: trains an MLP classifier on Fashion-MNIST as a banyan app (/train_mnist/trainer does the
// work, banyan::trainer::mlp_trainer; with --workers its children are the per-core workers,
// numa<d>/w<i>). `train_mnist --help` lists the options.
#include <banyan/sdk/sdk.hpp>
#include <banyan/trainer/mlp_trainer.hpp>

#include <memory>

int main(int argc, char** argv) {
  using banyan::trainer::mlp_options;
  auto opts = std::make_shared<mlp_options>();
  banyan::app app{"train_mnist"};
  auto& cli = app.options();
  cli.description("Train an MLP on Fashion-MNIST (Debian's dataset-fashion-mnist); reports test accuracy per epoch.");
  cli.add("--data", opts->data_dir, "Directory with the gzip'd idx files");
  banyan::trainer::add_common_options(cli, opts->common);
  cli.add("--epochs", opts->epochs, "Passes over the training set").positive();
  cli.add("--batch", opts->batch, "Images per mini-batch").positive();
  cli.add("--hidden", opts->hidden, "Hidden layer widths");
  cli.add("--checkpoint", opts->common.checkpoint, "Save the trained model here");
  cli.add("--seed", opts->common.seed, "Seed for initialisation and shuffling");
  // The tree's shape depends on --workers: parse before building it (banyan::run parses again).
  if (auto exit_code = cli.parse(argc, argv)) return *exit_code;
  banyan::trainer::add_mlp_trainer(app.root(), "trainer", opts);
  return banyan::run(app, argc, argv);
}
