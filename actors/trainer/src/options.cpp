#include "banyan/trainer/options.hpp"

namespace banyan::trainer {

void add_common_options(banyan::options& cli, common_options& o) {
  cli.add("--backend", o.backend, "Compute backend: cpu or cuda");
  cli.add("--nn-threads", o.nn_threads, "CPU compute threads (0: all cores)");
  cli.add("--lr", o.lr, "AdamW learning rate").positive();
  cli.add("--weight-decay", o.weight_decay, "AdamW weight decay");
  cli.add("--workers", o.workers,
          "Per-core data-parallel workers: per-core, per-pu or a count (the batch is split among them); "
          "unset: one instance on --nn-threads threads");
  cli.add("--share-params", o.share_params, "With --workers: one read-only parameter copy per NUMA domain");
  cli.add("--checkpoint-sync", o.checkpoint_sync,
          "Wait until each checkpoint is on disk (fsynced) before training goes on; default: training goes on once "
          "it is in the host write buffer, and the run waits for it at the end");
  cli.add("--json", o.json, "Print the summary as JSON on stdout");
}

}  // namespace banyan::trainer
