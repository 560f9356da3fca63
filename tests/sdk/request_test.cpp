#include "test_schemas.capnp.h"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <future>

namespace banyan {
namespace {

using testing::recorder;
using testing::test_options;

std::string text(const payload& p) { return std::string(reinterpret_cast<const char*>(p.bytes().data()), p.size()); }

// Serves "echo" (replies with the request reversed), "fail" (an error value) and "stall" (blocks until
// the test's gate opens, so a requester's timeout fires deterministically).
class server : public leaf {
 public:
  explicit server(std::shared_ptr<std::shared_future<void>> gate) : gate_(std::move(gate)) {}
  void on_start(context& ctx) override {
    ctx.serve("echo", [](const payload& p) -> result<payload> {
      std::string s = text(p);
      return payload::copy_of(std::string(s.rbegin(), s.rend()));
    });
    ctx.serve("fail", [](const payload&) -> result<payload> {
      return error{sdk::errc::invalid_argument, "no thanks"};
    });
    ctx.serve("stall", [this](const payload&) -> result<payload> {
      gate_->wait();
      return payload{};
    });
  }

 private:
  std::shared_ptr<std::shared_future<void>> gate_;
};

class client : public leaf {
 public:
  client(std::shared_ptr<recorder> rec, std::shared_ptr<std::promise<void>> open)
      : rec_(std::move(rec)), open_(std::move(open)) {}
  void on_start(context& ctx) override {
    using namespace std::chrono_literals;
    auto record = [this](const char* what) {
      return [this, what](result<payload> r) {
        rec_->add(std::string(what) + ": " + (r.has_value() ? "ok " + text(*r) : r.error().what()));
      };
    };
    ctx.request("/app/server", "echo", payload::copy_of(std::string_view("abc")), 10s, record("echo"));
    ctx.request("/app/server", "fail", payload{}, 10s, record("fail"));
    ctx.request("/app/server", "nope", payload{}, 10s, record("unknown method"));
    ctx.request("/app/ghost", "echo", payload{}, 10s, record("unknown path"));
    ctx.request("/app/server", "stall", payload{}, 50ms, [this, &ctx, record](result<payload> r) {
      record("stall")(std::move(r));
      open_->set_value();  // release the server only after our timeout fired
      ctx.quit(0);
    });
  }

 private:
  std::shared_ptr<recorder> rec_;
  std::shared_ptr<std::promise<void>> open_;
};

TEST(RequestReply, RepliesErrorsAndTimeoutsAreValues) {
  auto rec = std::make_shared<recorder>();
  auto open = std::make_shared<std::promise<void>>();
  auto gate = std::make_shared<std::shared_future<void>>(open->get_future().share());
  app a{"app"};
  a.root().add_leaf<server>("server", gate);
  a.root().add_leaf<client>("client", rec, open);
  auto r = run(a, test_options());
  EXPECT_EQ(r.exit_code, 0);
  auto events = rec->events();
  auto has = [&](const std::string& prefix) {
    return std::any_of(events.begin(), events.end(), [&](const std::string& e) { return e.rfind(prefix, 0) == 0; });
  };
  EXPECT_TRUE(has("echo: ok cba"));
  EXPECT_TRUE(has("fail: request failed: request `fail` to `/app/server`: invalid argument: no thanks"));
  EXPECT_TRUE(
      has("unknown method: request failed: request `nope` to `/app/server`: `/app/server` serves no method `nope`"));
  EXPECT_TRUE(has("unknown path: no such component: path `/app/ghost` names no component"));
  EXPECT_TRUE(has("stall: timeout: request `stall` to `/app/server`: no reply within 50 ms"));
  EXPECT_EQ(events.size(), 5u);
}

// Typed services (serve<Request, Reply>, request<Reply>) and the text helpers.
class typed_server : public leaf {
 public:
  void on_start(context& ctx) override {
    ctx.serve<Sample, Sample>("double", [](Sample::Reader q, Sample::Builder b) -> result<void> {
      if (q.getValue() == 0) return error{sdk::errc::invalid_argument, "zero"};
      b.setValue(q.getValue() * 2);
      b.setText(std::string(q.getText().cStr()) + "!");
      return {};
    });
    ctx.serve_text("upper", [](std::string_view in) -> result<std::string> {
      std::string out(in);
      for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      return out;
    });
  }
};

class typed_client : public leaf {
 public:
  explicit typed_client(std::shared_ptr<recorder> rec) : rec_(std::move(rec)) {}
  void on_start(context& ctx) override {
    using namespace std::chrono_literals;
    auto ask = [&](const char* what, payload body) {
      ctx.request<Sample>("/app/server", "double", body, 10s, [this, what, &ctx](result<Sample::Reader> r) {
        rec_->add(std::string(what) + ": " +
                  (r ? "ok " + std::to_string(r->getValue()) + " " + r->getText().cStr() : r.error().what()));
        if (++answers_ == 5) ctx.quit(0);
      });
    };
    ask("typed", payload::build<Sample>([](Sample::Builder b) {
          b.setValue(21);
          b.setText("hi");
        }));
    ask("handler error", payload::build<Sample>([](Sample::Builder b) { b.setValue(0); }));
    ask("invalid request", payload::copy_of(std::string_view("not capnp")));
    ctx.request<Sample>("/app/server", "upper", payload::copy_of(std::string_view("abc")), 10s,
                        [this, &ctx](result<Sample::Reader> r) {
                          rec_->add(std::string("invalid reply: ") + (r ? "ok" : r.error().what()));
                          if (++answers_ == 5) ctx.quit(0);
                        });
    ctx.request_text("/app/server", "upper", "abc", 10s, [this, &ctx](result<std::string> r) {
      rec_->add("text: " + (r ? "ok " + *r : r.error().what()));
      if (++answers_ == 5) ctx.quit(0);
    });
  }

 private:
  std::shared_ptr<recorder> rec_;
  int answers_ = 0;
};

TEST(RequestReply, TypedServicesValidateBothWaysAndKeepErrorsAsValues) {
  auto rec = std::make_shared<recorder>();
  app a{"app"};
  a.root().add_leaf<typed_server>("server");
  a.root().add_leaf<typed_client>("client", rec);
  auto r = run(a, test_options());
  EXPECT_EQ(r.exit_code, 0);
  auto events = rec->events();
  auto has = [&](const std::string& prefix) {
    return std::any_of(events.begin(), events.end(), [&](const std::string& e) { return e.rfind(prefix, 0) == 0; });
  };
  EXPECT_TRUE(has("typed: ok 42 hi!")) << ::testing::PrintToString(events);
  EXPECT_TRUE(has("handler error: request failed: request `double` to `/app/server`: invalid argument: zero"))
      << ::testing::PrintToString(events);
  EXPECT_TRUE(
      has("invalid request: request failed: request `double` to `/app/server`: invalid payload: request `double` to "
          "`/app/server`: payload of 9 bytes is not a valid message"))
      << ::testing::PrintToString(events);
  EXPECT_TRUE(has(
      "invalid reply: invalid payload: reply to `upper` from `/app/server`: payload of 3 bytes is not a valid message"))
      << ::testing::PrintToString(events);
  EXPECT_TRUE(has("text: ok ABC")) << ::testing::PrintToString(events);
  EXPECT_EQ(events.size(), 5u);
}

// Request/reply traffic is in the profile: each request and each reply counts
// once, with its payload bytes, on every tree edge of the path between requester and callee.
class asker : public leaf {
 public:
  void on_start(context& ctx) override {
    using namespace std::chrono_literals;
    ctx.request("/app/right/server", "echo", payload::copy_of(std::string_view("0123456789")), 10s,
                [this, &ctx](result<payload> r) {
                  if (!r || ++answers_ == 3) ctx.quit(r ? 0 : 1);
                });
    ctx.request("/app/right/server", "echo", payload::copy_of(std::string_view("0123456789")), 10s,
                [this, &ctx](result<payload> r) {
                  if (!r || ++answers_ == 3) ctx.quit(r ? 0 : 1);
                });
    ctx.request("/app/right/server", "echo", payload::copy_of(std::string_view("0123456789")), 10s,
                [this, &ctx](result<payload> r) {
                  if (!r || ++answers_ == 3) ctx.quit(r ? 0 : 1);
                });
  }

 private:
  int answers_ = 0;
};

TEST(RequestReply, RequestsAndRepliesAreCountedOnTheEdgesOfTheirPath) {
  auto gate = std::make_shared<std::shared_future<void>>();
  app a{"app"};
  a.root().add_composite("right").add_leaf<server>("server", gate);  // started before its client
  a.root().add_composite("left").add_leaf<asker>("client");
  a.root().add_composite("aside");
  auto r = run(a, test_options());
  ASSERT_EQ(r.exit_code, 0);
  const auto& tree = *r.traffic.tree;
  auto edge = [&](const char* path) { return r.traffic.edges[*tree.find(path)]; };
  // 3 requests of 10 bytes and 3 replies of 10 bytes cross each edge of /app/left/client ->
  // /app/right/server; nothing else.
  for (const char* path : {"/app/left/client", "/app/left", "/app/right", "/app/right/server"}) {
    EXPECT_EQ(edge(path).messages, 6u) << path;
    EXPECT_EQ(edge(path).bytes, 60u) << path;
  }
  EXPECT_EQ(edge("/app/aside").messages, 0u);
}

}  // namespace
}  // namespace banyan
