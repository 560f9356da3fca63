#include "banyan/trainer/data_parallel.hpp"

#include <banyan/cpu/error.hpp>

#include <cstring>
#include <memory>
#include <stdexcept>

namespace banyan::trainer {

namespace {

constexpr std::uint32_t magic = 0x44524742;  // "BGRD" read as little-endian bytes

struct header {
  std::uint32_t magic, rank, workers;
  float loss;
  std::int64_t step;
  std::uint64_t n;
};
static_assert(sizeof(header) == gradient_header_bytes);

}  // namespace

payload encode_gradient(std::uint32_t rank, std::uint32_t workers, float loss, std::int64_t step, const float* values,
                        std::size_t n) {
  // One buffer, one copy of the values: the payload shares it (view_of), in this process and on the wire.
  auto bytes = std::make_shared<std::vector<std::byte>>(gradient_header_bytes + n * sizeof(float));
  const header h{magic, rank, workers, loss, step, n};
  std::memcpy(bytes->data(), &h, sizeof h);
  if (n) std::memcpy(bytes->data() + sizeof h, values, n * sizeof(float));
  return payload::view_of(bytes, bytes->data(), bytes->size());
}

result<gradient_message> decode_gradient(const payload& p, const std::string& what) {
  auto b = p.bytes();
  auto bad = [&](const std::string& why) { return error{cpu::errc::invalid_argument, what + ": " + why}; };
  if (b.size() < gradient_header_bytes) {
    return bad(std::to_string(b.size()) + " bytes, shorter than the " + std::to_string(gradient_header_bytes) +
               "-byte gradient header");
  }
  header h;
  std::memcpy(&h, b.data(), sizeof h);
  if (h.magic != magic) return bad("not a gradient message (no `BGRD` header)");
  if (h.n > (b.size() - sizeof h) / sizeof(float) || sizeof h + h.n * sizeof(float) != b.size()) {
    return bad("header says " + std::to_string(h.n) + " floats, but " + std::to_string(b.size() - sizeof h) +
               " bytes follow it");
  }
  if (h.workers == 0) return bad("a worker count of 0");
  return gradient_message{h.rank,
                          h.workers,
                          h.loss,
                          h.step,
                          reinterpret_cast<const float*>(b.data() + sizeof h),
                          static_cast<std::size_t>(h.n)};
}

// --- the server ---------------------------------------------------------------------------------

void gradient_server::on_start(context& ctx) {
  in_.assign(static_cast<std::size_t>(nodes_), std::nullopt);
  auto ok = ctx.subscribe(gradient_up_topic, [this, &ctx](const delivery& d) { received(ctx, d); });
  if (!ok) throw std::runtime_error(ok.error().what());
}

void gradient_server::received(context& ctx, const delivery& d) {
  const std::string what = "`" + d.topic() + "` from `" + d.sender() + "`";
  auto g = decode_gradient(d.data(), what);
  if (!g) throw std::runtime_error(g.error().what());  // a failure: this server's supervisor hears of it
  if (g->rank >= static_cast<std::uint32_t>(nodes_)) {
    throw std::runtime_error(what + ": rank " + std::to_string(g->rank) + ", but there are " + std::to_string(nodes_) +
                             " node trainers");
  }
  if (arrived_ == 0) {
    step_ = g->step;
    n_ = g->n;
  } else if (g->step != step_ || g->n != n_ || in_[g->rank]) {
    throw std::runtime_error(what + ": step " + std::to_string(g->step) + " (" + std::to_string(g->n) +
                             " floats) while collecting step " + std::to_string(step_) + " (" + std::to_string(n_) +
                             " floats)" + (in_[g->rank] ? ", a second time from this rank" : ""));
  }
  in_[g->rank] = d.data();
  if (++arrived_ < nodes_) return;
  // Every node's mean is in: sum in rank order (never arrival order), weighted by worker counts.
  std::vector<const float*> means;
  std::vector<int> workers;
  double loss = 0.0;
  int total = 0;
  for (const auto& p : in_) {
    auto m = decode_gradient(*p, what);
    means.push_back(m->values);
    workers.push_back(static_cast<int>(m->workers));
    loss += static_cast<double>(m->loss) * m->workers;
    total += static_cast<int>(m->workers);
  }
  std::vector<float> mean(n_);
  cpu::weighted_mean(means, workers, n_, mean.data());
  in_.assign(in_.size(), std::nullopt);
  arrived_ = 0;
  auto sent = ctx.publish(
      gradient_down_topic,
      encode_gradient(0, static_cast<std::uint32_t>(total), static_cast<float>(loss / total), step_, mean.data(), n_),
      scope::self());
  if (!sent)
    throw std::runtime_error("publishing the cluster mean of step " + std::to_string(step_) + ": " +
                             sent.error().what());
}

// --- a node trainer's side ------------------------------------------------------------------------

node_exchange::node_exchange(context& ctx, std::uint32_t rank, std::chrono::milliseconds timeout)
    : ctx_(ctx),
      post_(ctx.cross_thread_poster()),
      server_(ctx.tree().path(ctx.tree().parent(ctx.id()))),
      rank_(rank),
      timeout_(timeout) {
  auto ok = ctx.subscribe(gradient_down_topic, [this](const delivery& d) { received(d); });
  if (!ok) throw std::runtime_error(ok.error().what());
}

cpu::cluster_exchange node_exchange::function() {
  return [this](float* g, std::size_t n, int workers, std::int64_t step, float& loss) {
    exchange(g, n, workers, step, loss);
  };
}

void node_exchange::exchange(float* g, std::size_t n, int workers, std::int64_t step, float& loss) {
  {
    std::lock_guard lock(m_);
    // After a failure (a timeout) the server may still be collecting an earlier step: this node
    // sends nothing more, and the trainer reports the failure when the run ends.
    if (cancelled_ || failure_) return;
    want_ = g;
    want_loss_ = &loss;
    want_n_ = n;
    want_step_ = step;
    done_ = false;
  }
  // Encoded here, on the worker thread; the component only publishes it.
  auto up = encode_gradient(rank_, static_cast<std::uint32_t>(workers), loss, step, g, n);
  const bool posted = post_([this, up = std::move(up), step] {
    auto sent = ctx_.publish(gradient_up_topic, up, scope::parent());
    if (!sent)
      fail(error{cpu::errc::worker,
                 "step " + std::to_string(step) + ": sending the node's gradient: " + sent.error().what()});
  });
  std::unique_lock lock(m_);
  if (!posted) {
    failure_ =
        failure_.value_or(error{cpu::errc::worker, "step " + std::to_string(step) + ": the node trainer has ended"});
  } else if (!cv_.wait_for(lock, timeout_, [&] { return done_ || cancelled_ || failure_; })) {
    failure_ = error{cpu::errc::worker, "step " + std::to_string(step) + ": no cluster mean gradient from `" + server_ +
                                            "` within " + std::to_string(timeout_.count()) + " ms"};
  }
  want_ = nullptr;
  want_loss_ = nullptr;
}

void node_exchange::received(const delivery& d) {
  auto g = decode_gradient(d.data(), "`" + d.topic() + "` from `" + d.sender() + "`");
  std::lock_guard lock(m_);
  if (!g) {
    failure_ = failure_.value_or(g.error());
  } else if (!want_ || g->step != want_step_ || g->n != want_n_) {
    failure_ = failure_.value_or(error{
        cpu::errc::worker,
        "`" + d.topic() + "` from `" + d.sender() + "`: step " + std::to_string(g->step) + " (" + std::to_string(g->n) +
            " floats) while " +
            (want_ ? "waiting for step " + std::to_string(want_step_) + " (" + std::to_string(want_n_) + " floats)"
                   : std::string("no step was waiting"))});
  } else {
    std::memcpy(want_, g->values, g->n * sizeof(float));
    *want_loss_ = g->loss;
    done_ = true;
  }
  cv_.notify_all();
}

void node_exchange::fail(error e) {
  std::lock_guard lock(m_);
  failure_ = failure_.value_or(std::move(e));
  cv_.notify_all();
}

void node_exchange::cancel() {
  std::lock_guard lock(m_);
  cancelled_ = true;
  cv_.notify_all();
}

std::optional<error> node_exchange::failure() const {
  std::lock_guard lock(m_);
  return failure_;
}

}  // namespace banyan::trainer
