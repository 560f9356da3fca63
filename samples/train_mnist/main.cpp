// train_mnist: trains an MLP classifier on Fashion-MNIST as a banyan app (/train_mnist/trainer is the
// leaf that does the work, banyan::trainer::mlp_trainer). `train_mnist --help` lists the options.
#include <banyan/sdk/sdk.hpp>
#include <banyan/trainer/mlp_trainer.hpp>

#include <memory>

int main(int argc, char** argv) {
  using banyan::trainer::mlp_options;
  auto opts = std::make_shared<mlp_options>();
  banyan::app app{"train_mnist"};
  auto& cli = app.cli();
  cli.description("Train an MLP on Fashion-MNIST (Debian's dataset-fashion-mnist); reports test accuracy per epoch.");
  cli.add_option("--data", opts->data_dir, "Directory with the gzip'd idx files")->capture_default_str();
  banyan::trainer::add_common_options(cli, opts->common);
  cli.add_option("--epochs", opts->epochs, "Passes over the training set")->capture_default_str()->check(CLI::PositiveNumber);
  cli.add_option("--batch", opts->batch, "Images per mini-batch")->capture_default_str()->check(CLI::PositiveNumber);
  cli.add_option("--hidden", opts->hidden, "Hidden layer widths")->capture_default_str()->delimiter(',');
  cli.add_option("--checkpoint", opts->common.checkpoint, "Save the trained model here")->capture_default_str();
  cli.add_option("--seed", opts->common.seed, "Seed for initialisation and shuffling")->capture_default_str();
  app.root().add_leaf<banyan::trainer::mlp_trainer>("trainer", std::shared_ptr<const mlp_options>(opts));
  return banyan::run(app, argc, argv);
}
