// The control channel an app serves when BANYAN_CONTROL names an endpoint (what `banyan launch` gives
// each node; docs/runtime.md, "Live profile"), asked from outside as the launch asks: a DEALER,
// requests `ID KIND ARGS...`, replies that start with the request's id.
#include "banyan/sdk/sdk.hpp"

#include <gtest/gtest.h>
#include <zmq.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;

std::atomic<bool> stop_now{false};

// Runs until the test says stop (it looks every 10 ms), so the channel can be asked meanwhile.
struct idler : banyan::leaf {
  void on_start(banyan::context& ctx) override { look(ctx); }
  void look(banyan::context& ctx) {
    if (stop_now.load()) return ctx.quit(0);
    ctx.after(10ms, [this, &ctx] { look(ctx); });
  }
};

struct dealer {
  void* context = zmq_ctx_new();
  void* socket = zmq_socket(context, ZMQ_DEALER);
  explicit dealer(const std::string& endpoint) {
    const int linger = 0, wait_ms = 20000;
    zmq_setsockopt(socket, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(socket, ZMQ_RCVTIMEO, &wait_ms, sizeof wait_ms);  // bounds every receive
    zmq_connect(socket, endpoint.c_str());
  }
  ~dealer() {
    zmq_close(socket);
    zmq_ctx_term(context);
  }
  void send(const std::vector<std::string>& frames) {
    for (std::size_t i = 0; i < frames.size(); ++i)
      zmq_send(socket, frames[i].data(), frames[i].size(), i + 1 < frames.size() ? ZMQ_SNDMORE : 0);
  }
  std::vector<std::string> receive() {
    std::vector<std::string> out;
    int more = 1;
    while (more) {
      zmq_msg_t m;
      zmq_msg_init(&m);
      if (zmq_msg_recv(&m, socket, 0) < 0) {
        zmq_msg_close(&m);
        return out;
      }
      out.emplace_back(static_cast<const char*>(zmq_msg_data(&m)), zmq_msg_size(&m));
      more = zmq_msg_more(&m);
      zmq_msg_close(&m);
    }
    return out;
  }
};

TEST(ControlChannel, AnswersProfileRequestsAndRefusesWhatItCannotServe) {
  const std::string endpoint = "ipc:///tmp/banyan-control-test-" + std::to_string(::getpid()) + ".ctl";
  ::setenv("BANYAN_CONTROL", endpoint.c_str(), 1);
  stop_now = false;
  banyan::app app{"ctl"};
  app.root().add_leaf<idler>("w");
  banyan::run_options options;
  options.max_runtime = 60s;  // a bound: the test stops it long before
  banyan::run_result result;
  std::thread runner([&] { result = banyan::run(app, options); });

  dealer d(endpoint);  // what is sent before the app binds waits in ZeroMQ's queue
  d.send({"1", "profile"});
  auto profile = d.receive();
  ASSERT_EQ(profile.size(), 3u);
  EXPECT_EQ(profile[0], "1");
  EXPECT_NE(profile[1].find("\"path\": \"/ctl/w\""), std::string::npos) << profile[1];
  EXPECT_EQ(profile[2], "{}");  // one process: no links

  d.send({"2", "move", "/ctl/w", "n1"});
  auto move = d.receive();
  ASSERT_EQ(move.size(), 2u);
  EXPECT_EQ(move[0], "2");
  EXPECT_NE(move[1].find("this process is not a node of a deployment"), std::string::npos) << move[1];

  d.send({"3", "reboot", "now"});
  auto unknown = d.receive();
  ASSERT_EQ(unknown.size(), 2u);
  EXPECT_EQ(unknown[0], "3");
  EXPECT_NE(unknown[1].find("unknown request `reboot` with 1 argument(s)"), std::string::npos) << unknown[1];

  d.send({"4"});  // no kind: not a request, no answer; the next one is still served
  d.send({"5", "profile"});
  auto again = d.receive();
  ASSERT_FALSE(again.empty());
  EXPECT_EQ(again[0], "5");

  stop_now = true;
  runner.join();
  ::unsetenv("BANYAN_CONTROL");
  EXPECT_EQ(result.exit_code, 0) << result.error;
}

}  // namespace
