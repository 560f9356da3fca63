#include "control_channel.hpp"

#include "node.hpp"

#include "banyan/base/log.hpp"
#include "banyan/sdk/error.hpp"

#include <nlohmann/json.hpp>
#include <sys/eventfd.h>
#include <unistd.h>
#include <zmq.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace banyan::detail {

namespace {

using frames = std::vector<std::string>;

void send_all(void* socket, const frames& parts) {
  for (std::size_t i = 0; i < parts.size(); ++i)
    zmq_send(socket, parts[i].data(), parts[i].size(), i + 1 < parts.size() ? ZMQ_SNDMORE : 0);
}

frames receive_all(void* socket) {
  frames out;
  int more = 1;
  while (more) {
    zmq_msg_t m;
    zmq_msg_init(&m);
    if (zmq_msg_recv(&m, socket, 0) < 0) {
      zmq_msg_close(&m);
      break;
    }
    out.emplace_back(static_cast<const char*>(zmq_msg_data(&m)), zmq_msg_size(&m));
    more = zmq_msg_more(&m);
    zmq_msg_close(&m);
  }
  return out;
}

// Replies made on other threads (a move's outcome, on the gateway's), queued for the channel's
// thread, which alone touches the socket. Shared with every pending answer, so one that comes after
// the channel is gone finds this and is dropped.
struct outbox {
  std::mutex mutex;
  std::deque<frames> replies;  // each: the requester's routing id, then the reply
  int wake = -1;               // an eventfd the channel's thread polls beside its socket
  bool closed = false;

  void post(frames reply) {
    std::lock_guard lock(mutex);
    if (closed) return;
    replies.push_back(std::move(reply));
    const std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake, &one, sizeof one);
  }
};

}  // namespace

struct control_channel::impl {
  void* context = nullptr;
  void* router = nullptr;
  std::shared_ptr<outbox> out = std::make_shared<outbox>();
  std::atomic<bool> stopping{false};
  profile_fn profile;
  node_runtime* node = nullptr;
  std::string endpoint;
  std::thread thread;

  ~impl() {
    {
      std::lock_guard lock(out->mutex);
      out->closed = true;
    }
    if (router) zmq_close(router);
    if (context) zmq_ctx_term(context);
    if (out->wake >= 0) ::close(out->wake);
  }

  void serve(frames request) {
    // ROUTING-ID ID KIND ARGS...
    if (request.size() < 3) return;  // not a request of ours: nothing to answer to
    frames reply{request[0], request[1]};
    const std::string& kind = request[2];
    if (kind == "profile" && request.size() == 3) {
      auto [profile_text, health_text] = profile();
      reply.push_back(std::move(profile_text));
      reply.push_back(std::move(health_text));
      return send_all(router, reply);
    }
    if (kind == "started" && request.size() == 3) {
      // Answered once every node has been ready (at once in one process), through the outbox.
      auto answer = [out = out, reply]() mutable {
        reply.push_back(R"({"started":true})");
        out->post(std::move(reply));
      };
      if (node) node->when_started(std::move(answer));
      else answer();
      return;
    }
    if (kind == "where" && request.size() == 3 && node) {
      reply.push_back(node->assignment_json());
      return send_all(router, reply);
    }
    const bool changes = kind == "move" || kind == "sleep" || kind == "wake";
    const bool keep_ok = kind != "sleep" || request.size() < 5 ||
                         (!request[4].empty() && request[4].size() < 16 &&
                          request[4].find_first_not_of("0123456789") == std::string::npos);
    if (changes && node && keep_ok && (request.size() == 5 || (kind != "move" && request.size() == 4))) {
      // Answered when the change is over, from the gateway's thread: through the outbox.
      const auto which = kind == "move"    ? node_runtime::change::move
                         : kind == "sleep" ? node_runtime::change::sleep
                                           : node_runtime::change::wake;
      node->request_change(which, request[3], request.size() == 5 ? request[4] : std::string(),
                           [out = out, reply](std::string answer) mutable {
                             reply.push_back(std::move(answer));
                             out->post(std::move(reply));
                           });
      return;
    }
    const std::string why =
        !keep_ok ? "sleep: the keep-alive `" + log::escape(request[4], 64) + "` is not a whole number of milliseconds"
        : (changes || kind == "where") && !node ? "this process is not a node of a deployment"
                                                : "unknown request `" + log::escape(kind, 64) + "` with " +
                                                      std::to_string(request.size() - 3) + " argument(s)";
    reply.push_back(nlohmann::json{{"error", why}}.dump());
    send_all(router, reply);
  }

  void loop() {
    zmq_pollitem_t items[2] = {{router, 0, ZMQ_POLLIN, 0}, {nullptr, out->wake, ZMQ_POLLIN, 0}};
    while (!stopping.load()) {
      if (zmq_poll(items, 2, -1) < 0) {
        if (errno == EINTR) continue;
        log::error("control", "polling " + endpoint + ": " + zmq_strerror(errno));
        return;
      }
      if (items[1].revents & ZMQ_POLLIN) {
        std::uint64_t n;
        [[maybe_unused]] auto r = ::read(out->wake, &n, sizeof n);
        std::deque<frames> ready;
        {
          std::lock_guard lock(out->mutex);
          ready.swap(out->replies);
        }
        for (const auto& reply : ready) send_all(router, reply);
      }
      if (items[0].revents & ZMQ_POLLIN) serve(receive_all(router));
    }
  }
};

control_channel::control_channel(std::unique_ptr<impl> i) : impl_(std::move(i)) {}

control_channel::~control_channel() {
  impl_->stopping.store(true);
  const std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(impl_->out->wake, &one, sizeof one);
  if (impl_->thread.joinable()) impl_->thread.join();
}

result<std::unique_ptr<control_channel>> control_channel::open(const std::string& endpoint, profile_fn profile,
                                                               node_runtime* node) {
  auto i = std::make_unique<impl>();
  i->endpoint = endpoint;
  i->profile = std::move(profile);
  i->node = node;
  i->out->wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (i->out->wake < 0)
    return error{sdk::errc::io, "control channel " + endpoint + ": eventfd: " + std::strerror(errno)};
  i->context = zmq_ctx_new();
  i->router = zmq_socket(i->context, ZMQ_ROUTER);
  const int linger = 0;
  zmq_setsockopt(i->router, ZMQ_LINGER, &linger, sizeof linger);
  if (zmq_bind(i->router, endpoint.c_str()) != 0)
    return error{sdk::errc::io, "control channel: cannot bind " + endpoint + ": " + zmq_strerror(errno)};
  auto* raw = i.get();
  i->thread = std::thread([raw] { raw->loop(); });
  return std::unique_ptr<control_channel>(new control_channel(std::move(i)));
}

std::string control_endpoint_from_environment() {
  const char* e = std::getenv("BANYAN_CONTROL");
  return e ? e : "";
}

}  // namespace banyan::detail
