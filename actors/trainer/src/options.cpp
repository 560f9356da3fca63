#include "banyan/trainer/options.hpp"

namespace banyan::trainer {

void add_common_options(CLI::App& cli, common_options& o) {
  cli.add_option("--backend", o.backend, "Compute backend: cpu or cuda")->capture_default_str();
  cli.add_option("--nn-threads", o.nn_threads, "CPU compute threads (0: all cores)")->capture_default_str();
  cli.add_option("--lr", o.lr, "AdamW learning rate")->capture_default_str();
  cli.add_option("--weight-decay", o.weight_decay, "AdamW weight decay")->capture_default_str();
  cli.add_flag("--json", o.json, "Print the summary as JSON on stdout");
}

}  // namespace banyan::trainer
