#include "banyan/cpu/cluster.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>

namespace banyan::cpu {

namespace {
// Envelope kinds of this protocol (the transport gives them no meaning).
constexpr std::uint16_t gradient_up = 0x4701;    // node -> server: id = step, code = workers, payload = mean
constexpr std::uint16_t gradient_down = 0x4702;  // server -> node: id = step, payload = cluster mean
}  // namespace

struct cluster_link::impl {
  cluster_options options;
  std::unique_ptr<runtime::transport> transport;
  mutable std::mutex mu;
  std::condition_variable cv;
  // Received and not yet used: per step, per sending node.
  std::map<std::int64_t, std::map<std::string, runtime::envelope>> received;
  std::optional<error> failed;

  void on_envelope(const std::string& peer, runtime::envelope&& e) {
    std::lock_guard lock(mu);
    received[static_cast<std::int64_t>(e.id)][peer] = std::move(e);
    cv.notify_all();
  }

  void fail(error e) {
    std::lock_guard lock(mu);
    if (!failed) failed = std::move(e);
  }

  // Waits until `want` envelopes of `step` are in (or the timeout); takes them.
  std::optional<std::map<std::string, runtime::envelope>> take(std::int64_t step, std::size_t want) {
    std::unique_lock lock(mu);
    const bool ok = cv.wait_for(lock, options.step_timeout, [&] {
      auto it = received.find(step);
      return it != received.end() && it->second.size() >= want;
    });
    if (!ok) return std::nullopt;
    auto out = std::move(received[step]);
    received.erase(step);
    return out;
  }

  static runtime::envelope gradient(std::uint16_t kind, std::int64_t step, int workers, const float* g, std::size_t n) {
    // The wire needs bytes of its own: the buffer is overwritten with the cluster mean right after.
    std::vector<std::byte> bytes(n * sizeof(float));
    std::memcpy(bytes.data(), g, bytes.size());
    runtime::envelope e;
    e.kind = kind;
    e.id = static_cast<std::uint64_t>(step);
    e.code = workers;
    e.payload = runtime::shared_bytes(std::move(bytes));
    return e;
  }

  void exchange(float* g, std::size_t n, int workers, std::int64_t step) {
    const auto where = "cluster exchange at step " + std::to_string(step) + ": ";
    if (options.server != options.self) {
      if (auto s = transport->send(options.server, gradient(gradient_up, step, workers, g, n)); !s) {
        return fail(error{errc::worker, where + "sending to `" + options.server + "`: " + s.error().message});
      }
      auto got = take(step, 1);
      if (!got) return fail(error{errc::worker, where + "no mean from `" + options.server + "` in time"});
      const auto& e = got->begin()->second;
      if (e.kind != gradient_down || e.payload.size() != n * sizeof(float)) {
        return fail(error{errc::worker, where + "`" + options.server + "` sent " + std::to_string(e.payload.size()) +
                                            " bytes, expected " + std::to_string(n * sizeof(float))});
      }
      std::memcpy(g, e.payload.data(), n * sizeof(float));
      return;
    }
    auto got = take(step, options.order.size() - 1);
    if (!got) return fail(error{errc::worker, where + "not every node's gradient arrived in time"});
    // The nodes' means, in `order`, weighted by their worker counts: the mean over all workers.
    std::vector<const float*> in;
    std::vector<float> weight;
    int total = 0;
    for (const auto& node : options.order) {
      if (node == options.self) {
        in.push_back(g);
        weight.push_back(static_cast<float>(workers));
        total += workers;
        continue;
      }
      const auto& e = (*got)[node];
      if (e.kind != gradient_up || e.payload.size() != n * sizeof(float) || e.code <= 0) {
        return fail(error{errc::worker, where + "`" + node + "` sent a malformed gradient (" +
                                            std::to_string(e.payload.size()) + " bytes)"});
      }
      in.push_back(reinterpret_cast<const float*>(e.payload.data()));
      weight.push_back(static_cast<float>(e.code));
      total += e.code;
    }
    std::vector<float> mean(n);
    const float inv = 1.0f / static_cast<float>(total);
    for (std::size_t i = 0; i < n; ++i) {
      float s = 0.0f;
      for (std::size_t k = 0; k < in.size(); ++k) s += in[k][i] * weight[k];
      mean[i] = s * inv;
    }
    for (const auto& node : options.order) {
      if (node == options.self) continue;
      if (auto s = transport->send(node, gradient(gradient_down, step, total, mean.data(), n)); !s) {
        fail(error{errc::worker, where + "sending to `" + node + "`: " + s.error().message});
      }
    }
    std::memcpy(g, mean.data(), n * sizeof(float));
  }
};

cluster_link::cluster_link(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

cluster_link::~cluster_link() {
  if (impl_->transport) impl_->transport->stop();
}

result<std::unique_ptr<cluster_link>> cluster_link::start(const cluster_options& options) {
  auto in_order = [&](const std::string& n) { return std::find(options.order.begin(), options.order.end(), n) != options.order.end(); };
  if (!in_order(options.self)) return error{errc::invalid_argument, "cluster: node `" + options.self + "` is not in the order"};
  if (!in_order(options.server)) return error{errc::invalid_argument, "cluster: server `" + options.server + "` is not in the order"};
  for (const auto& p : options.peers) {
    if (!in_order(p.name)) return error{errc::invalid_argument, "cluster: peer `" + p.name + "` is not in the order"};
  }
  if (options.peers.size() + 1 != options.order.size()) {
    return error{errc::invalid_argument, "cluster: " + std::to_string(options.order.size()) + " nodes in the order but " +
                                             std::to_string(options.peers.size()) + " peers besides `" + options.self + "`"};
  }
  auto p = std::make_unique<impl>();
  p->options = options;
  impl* raw = p.get();
  runtime::callbacks cbs;
  cbs.on_envelope = [raw](const std::string& peer, runtime::envelope&& e) { raw->on_envelope(peer, std::move(e)); };
  runtime::transport_options t{.self = options.self, .bind_endpoint = options.bind_endpoint, .peers = options.peers};
  auto tr = runtime::transport::start(std::move(t), std::move(cbs));
  if (!tr) return std::move(tr).error();
  p->transport = std::move(tr).value();
  if (auto up = p->transport->wait_until_all_up(options.up_timeout); !up) return up.error();
  return std::unique_ptr<cluster_link>(new cluster_link(std::move(p)));
}

cluster_exchange cluster_link::exchange() {
  impl* p = impl_.get();
  return [p](float* g, std::size_t n, int workers, std::int64_t step) { p->exchange(g, n, workers, step); };
}

std::optional<error> cluster_link::failure() const {
  std::lock_guard lock(impl_->mu);
  return impl_->failed;
}

runtime::link_stats cluster_link::stats(const std::string& peer) const {
  impl_->transport->flush();  // the last step's envelopes may still be queued for the socket
  return impl_->transport->stats(peer);
}

}  // namespace banyan::cpu
