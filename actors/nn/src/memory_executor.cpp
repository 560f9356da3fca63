#include "banyan/nn/memory_executor.hpp"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cstring>
#include <string>

namespace banyan::nn {

namespace {

std::size_t aligned(std::size_t bytes, std::size_t a) { return (std::max<std::size_t>(bytes, 1) + a - 1) / a * a; }

}  // namespace

memory_executor::memory_executor(backend& be, memory_graph g, memory_options o)
    : be_(&be), g_(std::move(g)), o_(std::move(o)) {
  copies_ = o_.make_copies ? o_.make_copies() : be.make_copy_engine();
  act_.assign(g_.tensors.size(), nullptr);
  grad_.assign(g_.tensors.size(), nullptr);
  ticket_.assign(g_.tensors.size(), 0);
  in_flight_.assign(g_.tensors.size(), false);
  // Bandwidth each way through the engine itself, best of three.
  const std::size_t n = std::min<std::size_t>(o_.budget, 16u << 20);
  if (n > 0) {
    buffer probe(be, n);
    void* host = be.allocate_host(n);
    d2h_ = h2d_ = 0.0;
    for (int round = 0; round < 3; ++round) {
      for (bool to_host : {true, false}) {
        be.synchronize();
        const auto start = std::chrono::steady_clock::now();
        copies_->wait(to_host ? copies_->to_host(host, probe.get(), n) : copies_->to_device(probe.get(), host, n));
        be.synchronize();
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        double& best = to_host ? d2h_ : h2d_;
        best = std::max(best, static_cast<double>(n) / std::max(ms, 1e-6));
      }
    }
    // The fixed cost: small copies each way, the median of 16.
    std::vector<double> small;
    for (int round = 0; round < 16; ++round) {
      const std::size_t k = std::min<std::size_t>(n, 4096);
      be.synchronize();
      const auto start = std::chrono::steady_clock::now();
      copies_->wait((round % 2) != 0 ? copies_->to_host(host, probe.get(), k)
                                     : copies_->to_device(probe.get(), host, k));
      be.synchronize();
      small.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(small.begin(), small.end());
    latency_ = small[small.size() / 2];
    be.release_host(host);
  } else {
    d2h_ = h2d_ = 1e6;
  }
}

memory_executor::~memory_executor() {
  settle();
  copies_.reset();
  if (host_ != nullptr) be_->release_host(host_);
  if (o_.host_budget && host_bytes_ > 0) o_.host_budget->give(host_bytes_);
}

result<void> memory_executor::take_host(std::size_t bytes) {
  store::memory_budget* shared = o_.host_budget.get();
  if (shared == nullptr || bytes == 0) return {};
  auto amount = [](std::uint64_t b) { return format_bytes(b) + " (" + std::to_string(b) + " bytes)"; };
  const std::uint64_t want = host_bytes_ + bytes;
  if (want > shared->capacity()) {
    return error{errc::invalid_argument, "memory_executor: the host pool needs " + amount(want) +
                                             ", more than the shared host budget's whole capacity of " +
                                             amount(shared->capacity())};
  }
  if (shared->take(bytes, o_.host_budget_wait)) return {};
  return error{errc::timeout, "memory_executor: the host pool's " + amount(bytes) +
                                  " did not come free in the shared host budget within " +
                                  std::to_string(o_.host_budget_wait.count()) +
                                  " ms: the checkpoint write buffer did not flush in time (capacity " +
                                  amount(shared->capacity()) + ", held by write buffers " + amount(shared->held()) +
                                  ", taken " + amount(shared->taken()) + ")"};
}

result<void> memory_executor::set_plan(memory_plan p) {
  assert(p.peak_bytes <= o_.budget && "memory_executor: the plan exceeds the budget");
  // Taken before anything changes, so a failure leaves the old plan and pools in place. A host pool
  // that grows takes only the difference: the old pool's bytes are already taken, and are reused.
  if (p.host_bytes > host_bytes_) {
    if (auto taken = take_host(p.host_bytes - host_bytes_); !taken) return taken;
  }
  settle();
  plan_ = std::move(p);
  // The pool holds what the plan places, never more than the budget (a 200 MiB budget whose plan
  // needs 50 MiB takes 50 MiB); it grows if a later plan needs more.
  if (plan_.peak_bytes > pool_.bytes()) pool_ = buffer(*be_, plan_.peak_bytes);
  if (plan_.host_bytes > host_bytes_) {
    if (host_ != nullptr) be_->release_host(host_);
    host_ = be_->allocate_host(plan_.host_bytes);
    host_bytes_ = plan_.host_bytes;
  }
  return {};
}

float* memory_executor::act(int t) const {
  assert(act_[t] != nullptr && "memory_executor: activation not resident");
  return act_[t];
}

float* memory_executor::grad(int t) const {
  assert(grad_[t] != nullptr && "memory_executor: activation gradient not resident");
  return grad_[t];
}

void memory_executor::settle() {
  if (copies_) copies_->drain();
  std::fill(act_.begin(), act_.end(), nullptr);
  std::fill(grad_.begin(), grad_.end(), nullptr);
  std::fill(in_flight_.begin(), in_flight_.end(), false);
  live_ = 0;
  forward_done_ = false;
}

void memory_executor::place(float*& slot, int t, std::size_t offset, bool zero) {
  const std::size_t size = aligned(g_.tensors[t].bytes, o_.planner.alignment);
  assert(offset + size <= pool_.bytes() && pool_.bytes() <= o_.budget);
  slot = reinterpret_cast<float*>(static_cast<char*>(pool_.get()) + offset);
  live_ += size;
  stats_.peak_bytes = std::max(stats_.peak_bytes, live_);
  stats_.peak_offset = std::max(stats_.peak_offset, offset + size);
  if (zero) {
    be_->zero(slot, g_.tensors[t].bytes);
  } else if (o_.poison && be_->name() == "cpu") {
    std::memset(slot, 0xff, g_.tensors[t].bytes);  // 0xffffffff is a NaN
  }
}

void memory_executor::release(float*& slot, int t) {
  assert(slot != nullptr);
  slot = nullptr;
  live_ -= aligned(g_.tensors[t].bytes, o_.planner.alignment);
}

void memory_executor::run_forward(const std::function<void(int)>& forward, int skip_op) {
  settle();
  run(0, plan_.backward_begin, forward, {}, {}, skip_op);
  forward_done_ = skip_op < 0;
}

void memory_executor::run_backward(const std::function<void(int)>& again, const std::function<void(int)>& backward) {
  assert(forward_done_ && "memory_executor: run_backward needs a full run_forward first");
  stats_.held_for_backward = std::max(stats_.held_for_backward, live_);
  run(plan_.backward_begin, plan_.program.size(), {}, again, backward, -1);
  forward_done_ = false;
}

void memory_executor::run(std::size_t begin, std::size_t end, const std::function<void(int)>& forward,
                          const std::function<void(int)>& again, const std::function<void(int)>& backward,
                          int skip_op) {
  const bool inference = skip_op >= 0;
  auto read_by_skipped = [&](int t) {
    if (!inference) return false;
    const auto& in = g_.ops[skip_op].inputs;
    return g_.tensors[t].producer == skip_op || std::find(in.begin(), in.end(), t) != in.end();
  };
  char* host = static_cast<char*>(host_);
  using k = memory_instr::kind;
  for (std::size_t pc = begin; pc < end; ++pc) {
    const memory_instr& in = plan_.program[pc];
    const int t = in.id;
    switch (in.what) {
      case k::alloc:
        if (!(inference && g_.tensors[t].producer == skip_op)) place(act_[t], t, in.offset, false);
        break;
      case k::alloc_grad: place(grad_[t], t, in.offset, true); break;
      case k::free:
        if (act_[t] != nullptr && !read_by_skipped(t)) release(act_[t], t);
        break;
      case k::free_grad: release(grad_[t], t); break;
      case k::forward:
        if (t != skip_op) forward(t);
        break;
      case k::recompute:
        ++stats_.recomputes;
        again(t);
        break;
      case k::backward: backward(t); break;
      case k::offload:
        if (inference) break;
        ticket_[t] = copies_->to_host(host + plan_.host_offset[t], act_[t], g_.tensors[t].bytes);
        in_flight_[t] = true;
        ++stats_.offloads;
        break;
      case k::prefetch:
        place(act_[t], t, in.offset, false);
        ticket_[t] = copies_->to_device(act_[t], host + plan_.host_offset[t], g_.tensors[t].bytes);
        in_flight_[t] = true;
        ++stats_.prefetches;
        break;
      case k::offload_wait:
      case k::prefetch_wait:
        if (!in_flight_[t]) break;  // an inference pass offloads nothing
        if (copies_->wait(ticket_[t])) ++stats_.late_copies;
        in_flight_[t] = false;
        break;
    }
  }
}

}  // namespace banyan::nn
