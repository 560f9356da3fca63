// The cluster level of the reduction tree over the runtime's node links (issue 14 item 4): one
// cluster_link per node gives its worker_group an `exchange` (group_options::exchange). Once per step
// every node but the server sends its node mean gradient (with its worker count) to the server node
// over its runtime::transport link: one gradient up; the server sums the nodes' means in `order`,
// weighted by worker counts, and sends the cluster mean back to each: one gradient down. So per step
// and per non-server node exactly one gradient crosses the link each way, and every node gets the
// same bits (the server's single sum).
//
// A resource: it owns the node's transport (its I/O thread). exchange() is called on the group's
// node-server thread; it blocks until the cluster mean is in. A peer that is lost or silent past
// `step_timeout` fails the exchange: the node then goes on with its own mean for that step (it
// cannot wait forever), and failure() names the peer and the step.
#pragma once

#include "banyan/cpu/worker_group.hpp"

#include <banyan/runtime/transport.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace banyan::cpu {

struct cluster_options {
  std::string self;                       // this node's name
  std::string bind_endpoint;              // its runtime endpoint (tcp://..., ipc://...)
  std::vector<runtime::peer_config> peers;  // every other node of the cluster
  std::string server;                     // the node that sums (may be self)
  std::vector<std::string> order;         // every node, in the server's summing order
  std::chrono::milliseconds up_timeout{10000};     // start(): how long to wait for every peer
  std::chrono::milliseconds step_timeout{60000};   // exchange(): how long to wait for one step's sums
};

class cluster_link {
 public:
  // Starts the transport and waits until every peer is up. Errors (errc::invalid_argument): the
  // server or self missing from `order`, a peer not in it; the transport's own errors.
  static result<std::unique_ptr<cluster_link>> start(const cluster_options& options);
  ~cluster_link();
  cluster_link(const cluster_link&) = delete;
  cluster_link& operator=(const cluster_link&) = delete;

  // For group_options::exchange. The link must outlive the group's runs.
  cluster_exchange exchange();
  // The first failed exchange, if any.
  std::optional<error> failure() const;
  // The runtime's counters of the link to `peer` (bytes_sent: payload bytes written once each), once
  // what is queued has been written (blocks until then).
  runtime::link_stats stats(const std::string& peer) const;

  struct impl;

 private:
  explicit cluster_link(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace banyan::cpu
