// What every trainer leaf takes besides its model and data: where the compute runs, the optimizer,
// the checkpoint folder, the seed and the output mode, and the command-line flags that set them, so the
// trainers spell them the same way.
//
// Values: copy them into a leaf (as a shared_ptr<const ...>) after the command line is parsed.
#pragma once

#include <banyan/nn/adamw.hpp>
#include <banyan/nn/backend.hpp>

#include <banyan/sdk/options.hpp>

#include <cstdint>
#include <string>

namespace banyan::trainer {

struct common_options {
  std::string backend = "cpu";  // nn::make_backend's name: "cpu" or "cuda"
  int nn_threads = 0;           // cpu compute threads; 0 keeps the library defaults (all cores)
  float lr = 1e-3f;             // AdamW
  float weight_decay = 0.0f;
  std::string checkpoint;  // folder the state is saved to (nn::checkpoint_store); empty: never saved
  // true: each checkpoint is durable (written and fsynced) before training goes on; false: training
  // goes on once it is in the store's host buffer, and the run waits for it at the end.
  bool checkpoint_sync = false;
  std::uint64_t seed = 1;  // initialisation and data order; runs with equal seeds are equal
  bool json = false;       // summary as JSON on stdout; progress keeps only its final line
  // Data-parallel per-core workers (actors/cpu): "" trains one instance; "per-core",
  // "per-pu" or a count N trains one single-threaded replica per worker, each on its slice of the
  // (global) batch, which must divide evenly.
  std::string workers;
  bool share_params = false;  // with workers: one parameter copy per NUMA domain, not per worker

  nn::backend_options backend_config() const { return {.name = backend, .threads = nn_threads}; }
  // AdamW with these options; grad_clip <= 0 disables clipping.
  nn::adamw_config optimizer(float grad_clip) const {
    return {.lr = lr, .weight_decay = weight_decay, .grad_clip = grad_clip};
  }
};

// Adds --backend, --nn-threads, --lr, --weight-decay, --workers, --share-params, --checkpoint-sync and --json to
// `cli` (an app's options()), writing into `o`, which must outlive the parse. The checkpoint folder and the seed
// mean something model-specific (what is saved, what is seeded), so each app adds those flags with its own help
// text.
void add_common_options(banyan::options& cli, common_options& o);

}  // namespace banyan::trainer
