// The states a node keeps durable for failover (run_options::state_dir, docs/runtime.md "Failover").
// Private to the SDK.
//
// Every state a component keeps (keep_state(): ctx.checkpoint(), and the snapshot taken when its
// supervisor stops it in good health) is also committed, as the blob named by the component's path,
// to the store `<state_dir>/<node>` (banyan::store): the commit copies the bytes into the store's
// host buffer and returns, and the store's writer makes them durable in order. A failover reads the
// lost node's folder (store::blob_reader: read only; nothing writes it any more) for the components
// it restarts on this node. The folder must be the same for every node (a shared file system;
// local nodes share it).
//
// Thread-safety: every member may be called from any thread.
#pragma once

#include "banyan/base/result.hpp"
#include "banyan/sdk/payload.hpp"

#include <banyan/store/store.hpp>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace banyan::detail {

class durable_states {
 public:
  // Opens `<state_dir>/<node>` (created when missing). Errors name the folder.
  static result<std::unique_ptr<durable_states>> open(const std::string& state_dir, const std::string& node);

  // Commits `state` as `path`'s latest. A failed store is logged once (the states stay in memory).
  void put(const std::string& path, const payload& state);

  // The latest durable state of each of `paths` that node `node` wrote, by path (a path without
  // one is absent). Errors name the folder or file (a damaged file); a missing folder is no error.
  static result<std::map<std::string, std::vector<std::byte>>> read(const std::string& state_dir,
                                                                    const std::string& node,
                                                                    const std::vector<std::string>& paths);
  static std::string folder(const std::string& state_dir, const std::string& node);

 private:
  explicit durable_states(std::unique_ptr<store::blob_store> s) : store_(std::move(s)) {}
  std::unique_ptr<store::blob_store> store_;
  std::atomic<bool> said_failure_{false};
};

}  // namespace banyan::detail
