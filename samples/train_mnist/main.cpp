// train_mnist: trains an MLP classifier on Fashion-MNIST as a banyan app (/train_mnist/trainer is the
// leaf that does the work). `train_mnist --help` lists the options.
#include "mlp_trainer.hpp"

#include <banyan/sdk/sdk.hpp>

#include <memory>

int main(int argc, char** argv) {
  auto opts = std::make_shared<mnist_train_options>();
  banyan::app app{"train_mnist"};
  auto& cli = app.cli();
  cli.description("Train an MLP on Fashion-MNIST (Debian's dataset-fashion-mnist); reports test accuracy per epoch.");
  cli.add_option("--data", opts->data_dir, "Directory with the gzip'd idx files")->capture_default_str();
  cli.add_option("--backend", opts->backend, "Compute backend: cpu or cuda")->capture_default_str();
  cli.add_option("--nn-threads", opts->nn_threads, "CPU compute threads (0: all cores)")->capture_default_str();
  cli.add_option("--epochs", opts->epochs, "Passes over the training set")->capture_default_str()->check(CLI::PositiveNumber);
  cli.add_option("--batch", opts->batch, "Images per mini-batch")->capture_default_str()->check(CLI::PositiveNumber);
  cli.add_option("--hidden", opts->hidden, "Hidden layer widths")->capture_default_str()->delimiter(',');
  cli.add_option("--lr", opts->lr, "AdamW learning rate")->capture_default_str();
  cli.add_option("--weight-decay", opts->weight_decay, "AdamW weight decay")->capture_default_str();
  cli.add_option("--checkpoint", opts->checkpoint, "Save the trained model here")->capture_default_str();
  cli.add_option("--seed", opts->seed, "Seed for initialisation and shuffling")->capture_default_str();
  cli.add_flag("--json", opts->json, "Print the summary as JSON on stdout");
  app.root().add_leaf<mlp_trainer>("trainer", std::shared_ptr<const mnist_train_options>(opts));
  return banyan::run(app, argc, argv);
}
