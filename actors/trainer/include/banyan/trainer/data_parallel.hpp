// Data parallelism across nodes on sdk components: the cluster level of the
// per-core workers' reduction tree, as components of the app's tree.
//
//   /train_gpt/trainer          gradient_server (a composite): the cluster-level server
//   /train_gpt/trainer/n0       a node trainer (gpt_trainer, rank 0): its node's per-core workers
//   /train_gpt/trainer/n1       rank 1, ...
//
// Once per step, when a node's workers have summed the last layer, the node trainer publishes the
// node's mean gradient and worker count on `grad/up` to its parent (one gradient up); the server
// sums the K nodes' means in rank order weighted by their worker counts (cpu::weighted_mean; the
// losses likewise) and publishes the cluster mean on `grad/down` to its subtree (one gradient down to each node
// trainer). Every node applies the same bits, so the replicas stay identical. A deployment may put
// the node trainers on different nodes: the gradients then cross the runtime's links as broker
// messages, and the profile counts them on the edges server -> node trainer like any other traffic.
//
// Wire format of both topics (native byte order; every node of a deployment runs on one kind of
// machine): a 32-byte header {u32 magic 'BGRD', u32 rank, u32 workers, f32 loss, i64 step, u64 n}
// followed by n floats: a node's mean gradient and loss going up, the cluster's coming down. A message of any other
// shape is a clear error naming topic and sender.
#pragma once

#include <banyan/cpu/worker_group.hpp>
#include <banyan/sdk/component.hpp>
#include <banyan/sdk/context.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace banyan::trainer {

inline constexpr const char* gradient_up_topic = "grad/up";
inline constexpr const char* gradient_down_topic = "grad/down";
inline constexpr std::size_t gradient_header_bytes = 32;

struct gradient_message {
  std::uint32_t rank = 0;
  std::uint32_t workers = 0;
  float loss = 0.0f;
  std::int64_t step = 0;
  const float* values = nullptr;  // into the payload: valid while it lives
  std::size_t n = 0;
};
payload encode_gradient(std::uint32_t rank, std::uint32_t workers, float loss, std::int64_t step, const float* values,
                        std::size_t n);
// Errors (errc::invalid_argument) name `what` and say what is wrong with the bytes.
result<gradient_message> decode_gradient(const payload& p, const std::string& what);

// The cluster-level gradient server: the composite above `nodes` node trainers.
class gradient_server : public composite {
 public:
  explicit gradient_server(int nodes) : nodes_(nodes) {}
  void on_start(context& ctx) override;

 private:
  void received(context& ctx, const delivery& d);
  int nodes_;
  std::int64_t step_ = -1;                  // the step being collected
  std::vector<std::optional<payload>> in_;  // per rank, this step
  int arrived_ = 0;
  std::size_t n_ = 0;
};

// A node trainer's side: hands the node's mean to the server and waits for the cluster mean, for
// cpu::group_options::exchange. Made in the node trainer's on_start (it subscribes to grad/down);
// exchange() runs on a worker thread and reaches the component through cross_thread_poster().
class node_exchange {
 public:
  node_exchange(context& ctx, std::uint32_t rank, std::chrono::milliseconds timeout);
  cpu::cluster_exchange function();
  // Unblocks a waiting exchange for good (the component is ending); it returns with the node's mean.
  void cancel();
  // The first failed exchange (timeout, a malformed reply, the component gone), if any. Every
  // exchange after it returns at once with the node's mean, sending nothing.
  std::optional<error> failure() const;

 private:
  void exchange(float* g, std::size_t n, int workers, std::int64_t step, float& loss);
  void received(const delivery& d);
  void fail(error e);

  context& ctx_;  // on the component's thread only (the posted function); the worker thread posts
  context::poster post_;
  std::string server_;  // the parent's path, for errors
  std::uint32_t rank_;
  std::chrono::milliseconds timeout_;
  mutable std::mutex m_;
  std::condition_variable cv_;
  float* want_ = nullptr;  // the waiting exchange's buffer and loss
  float* want_loss_ = nullptr;
  std::size_t want_n_ = 0;
  std::int64_t want_step_ = -1;
  bool done_ = false, cancelled_ = false;
  std::optional<error> failure_;
};

}  // namespace banyan::trainer
