#include "workers.hpp"

#include "format.hpp"

namespace banyan::trainer {

result<worker_plan> plan_workers(const common_options& o, int batch) {
  if (o.workers.empty()) {
    if (o.share_params) return error{cpu::errc::invalid_argument, "--share-params: needs --workers"};
    return error{cpu::errc::invalid_argument, "--workers: not given"};
  }
  auto request = cpu::worker_request::parse(o.workers);
  if (!request) return std::move(request).error();
  if (o.backend != "cpu") {
    return error{cpu::errc::invalid_argument,
                 "--workers " + o.workers + ": per-core workers run on the cpu backend, not --backend " + o.backend};
  }
  auto topo = cpu::topology::discover();
  if (!topo) return std::move(topo).error();
  auto where = cpu::place(*topo, *request);
  if (!where) return std::move(where).error();
  const int n = where->size();
  if (batch % n != 0) {
    return error{cpu::errc::invalid_argument, "--batch " + std::to_string(batch) + ": must be a multiple of the " +
                                                  std::to_string(n) + " workers of --workers " + o.workers};
  }
  return worker_plan{std::move(topo).value(), std::move(where).value(), batch / n};
}

result<void> check_worker_leaves(const worker_hub* hub, const worker_plan& plan, const common_options& o,
                                 const std::string& trainer) {
  if (!hub) {
    return error{cpu::errc::invalid_argument, "--workers " + o.workers + ": `" + trainer +
                                                  "` has no worker leaves (build it with trainer::add_*_trainer)"};
  }
  if (hub->size() != plan.where.size()) {
    return error{cpu::errc::invalid_argument,
                 "--workers " + o.workers + ": " + std::to_string(plan.where.size()) + " workers on this node, but `" +
                     trainer + "` has " + std::to_string(hub->size()) +
                     " worker leaves (the tree was built on a machine with other cores: give --workers a count)"};
  }
  return {};
}

std::string describe(const worker_plan& plan, const common_options& o) {
  return format("topology: %s; %d workers (%s%s), batch %d each%s: %s", plan.topo.summary().c_str(), plan.where.size(),
                o.workers.c_str(), plan.where.oversubscribed ? ", more than the cores" : "", plan.per_worker_batch,
                o.share_params ? ", parameters shared per NUMA domain" : "", plan.where.describe().c_str());
}

std::string describe(const cpu::memory_report& m, bool shared) {
  auto mib = [](std::size_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); };
  return format(
      "memory: parameters %.2f MiB x %zu copies (master + %s), gradients %.2f MiB, activations %.2f MiB, "
      "optimizer %.2f MiB, total %.2f MiB",
      mib(m.param_bytes), m.parameter_copies, shared ? "one per further NUMA domain" : "one per worker",
      mib(m.gradient_bytes), mib(m.activation_bytes), mib(m.optimizer_bytes), mib(m.total()));
}

}  // namespace banyan::trainer
