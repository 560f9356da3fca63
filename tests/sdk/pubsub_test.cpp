#include "test_schemas.capnp.h"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

namespace banyan {
namespace {

using testing::recorder;
using testing::test_options;

// Subscribes to `filter` and records "<path> got <topic> from <sender>".
class listener : public leaf {
 public:
  listener(std::shared_ptr<recorder> rec, std::string filter) : rec_(std::move(rec)), filter_(std::move(filter)) {}
  void on_start(context& ctx) override {
    auto ok = ctx.subscribe(filter_, [this, &ctx](const delivery& d) {
      rec_->add(ctx.path() + " got " + d.topic() + " from " + d.sender());
    });
    ASSERT_TRUE(ok.has_value()) << ok.error().what();
  }

 private:
  std::shared_ptr<recorder> rec_;
  std::string filter_;
};

// Once `expected` listeners have started (counted in the recorder), publishes `topic` within `where`,
// then publishes "done" to itself so the run ends after the deliveries were handled.
class talker : public leaf {
 public:
  talker(std::shared_ptr<recorder> rec, std::string topic, scope where)
      : rec_(std::move(rec)), topic_(std::move(topic)), where_(std::move(where)) {}
  void on_start(context& ctx) override {
    ASSERT_TRUE(ctx.subscribe("done", [&ctx](const delivery&) { ctx.quit(0); }).has_value());
    // Siblings start after us; post so that their on_start (and subscriptions) run first is not
    // guaranteed, so wait for the root's start signal instead.
    ASSERT_TRUE(ctx.subscribe("go",
                              [this, &ctx](const delivery&) {
                                auto ok = ctx.publish(topic_, std::string_view("payload"), where_);
                                ASSERT_TRUE(ok.has_value()) << ok.error().what();
                                ASSERT_TRUE(ctx.publish("done", std::string_view(""), scope::self()).has_value());
                              })
                    .has_value());
  }

 private:
  std::shared_ptr<recorder> rec_;
  std::string topic_;
  scope where_;
};

// The root composite: counts started leaves and says "go" once all `leaves` have started.
class starter : public leaf {
 public:
  starter(std::shared_ptr<std::atomic<int>> started, int leaves) : started_(std::move(started)), leaves_(leaves) {}
  void on_start(context& ctx) override {
    // The starter is the last child of the root, so every other leaf has already been spawned; it
    // asks each of them (request/reply) whether they are up, which orders their on_start before "go".
    go_when_ready(ctx);
  }

 private:
  void go_when_ready(context& ctx) {
    if (started_->load() >= leaves_) {
      ASSERT_TRUE(ctx.publish("go", std::string_view(""), scope::root()).has_value());
      return;
    }
    ctx.post([this, &ctx] { go_when_ready(ctx); });
  }
  std::shared_ptr<std::atomic<int>> started_;
  int leaves_;
};

template <class Base>
class counted : public Base {
 public:
  template <class... Args>
  counted(std::shared_ptr<std::atomic<int>> started, Args... args) : Base(args...), started_(std::move(started)) {}
  void on_start(context& ctx) override {
    Base::on_start(ctx);
    started_->fetch_add(1);
  }

 private:
  std::shared_ptr<std::atomic<int>> started_;
};

// /chip { alu { add0 (talker), add1 }, mem { bank0 }, starter }
struct chip {
  std::shared_ptr<recorder> rec = std::make_shared<recorder>();
  std::shared_ptr<std::atomic<int>> started = std::make_shared<std::atomic<int>>(0);
  app a{"chip"};
  chip(const std::string& topic, scope where, const std::string& filter) {
    auto& alu = a.root().add_composite("alu");
    alu.add_leaf<counted<talker>>("add0", started, rec, topic, where);
    alu.add_leaf<counted<listener>>("add1", started, rec, filter);
    a.root().add_composite("mem").add_leaf<counted<listener>>("bank0", started, rec, filter);
    a.root().add_leaf<starter>("starter", started, 3);
  }
};

TEST(PubSub, ScopedPublishReachesOnlySubscribersInsideTheScope) {
  chip c("net/carry", scope::parent(), "net/+");
  auto r = run(c.a, test_options());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(c.rec->events(), std::vector<std::string>{"/chip/alu/add1 got net/carry from /chip/alu/add0"});
}

TEST(PubSub, RootScopeReachesEveryMatchingSubscriberAndCountsSteinerEdges) {
  chip c("net/carry", scope::root(), "net/#");
  auto r = run(c.a, test_options());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(c.rec->count("/chip/alu/add1 got net/carry from /chip/alu/add0"), 1u);
  EXPECT_EQ(c.rec->count("/chip/mem/bank0 got net/carry from /chip/alu/add0"), 1u);
  const auto& tree = *r.traffic.tree;
  auto edge = [&](const char* path) { return r.traffic.edges[*tree.find(path)].messages; };
  // "go" came down from the starter once; "net/carry" went up once although two subscribers got it.
  EXPECT_EQ(edge("/chip/alu/add0"), 2u);
  EXPECT_EQ(edge("/chip/alu"), 2u);
  EXPECT_EQ(edge("/chip/starter"), 1u);
  EXPECT_EQ(edge("/chip/alu/add1"), 1u);
  EXPECT_EQ(edge("/chip/mem"), 1u);
  EXPECT_EQ(edge("/chip/mem/bank0"), 1u);
}

TEST(PubSub, FlatP2PSendsOneCopyPerSubscriberFromThePublisher) {
  chip c("net/carry", scope::root(), "net/#");
  auto r = run(c.a, test_options(routing_mode::flat_p2p));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(c.rec->events().size(), 2u);
  const auto& tree = *r.traffic.tree;
  EXPECT_EQ(r.traffic.edges[*tree.find("/chip/alu/add0")].messages, 3u);  // "go" + 2 copies
  EXPECT_EQ(r.traffic.edges[*tree.find("/chip/mem")].messages, 1u);
}

TEST(PubSub, NonMatchingLevelsAreNotDelivered) {
  chip c("net/carry", scope::root(), "net/ca");
  auto r = run(c.a, test_options());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(c.rec->events().empty());
  EXPECT_EQ(r.traffic.edges[*r.traffic.tree->find("/chip/alu/add0")].messages, 1u);  // only "go"
  EXPECT_EQ(r.traffic.edges[*r.traffic.tree->find("/chip/alu/add1")].messages, 0u);
}

// Publishes `n` numbered messages, then quits; the subscriber checks FIFO order and shared buffers.
class burst : public leaf {
 public:
  burst(std::shared_ptr<recorder> rec, int n) : rec_(std::move(rec)), n_(n) {}
  void on_start(context& ctx) override {
    ctx.post([this, &ctx] {
      // The sibling subscribers were spawned before us (earlier siblings) but may not have run
      // on_start yet; ask both with a request first: a reply proves their subscriptions exist.
      ping(ctx, 0);
    });
  }

 private:
  void ping(context& ctx, int i) {
    if (i == 2) {
      auto shared = payload::copy_of(std::string_view("same bytes for everyone"));
      for (int k = 0; k < n_; ++k) {
        auto p = payload::build<Sample>([k](Sample::Builder b) { b.setValue(static_cast<std::uint64_t>(k)); });
        ASSERT_TRUE(
            ctx.publish<Sample>(
                   "seq", [k](Sample::Builder b) { b.setValue(static_cast<std::uint64_t>(k)); }, scope::parent())
                .has_value());
      }
      ASSERT_TRUE(ctx.publish("shared", shared, scope::parent()).has_value());
      return;
    }
    std::string path = "/app/sub" + std::to_string(i);
    ctx.request(path, "ready", payload{}, std::chrono::seconds(10), [this, &ctx, i](result<payload> r) {
      ASSERT_TRUE(r.has_value()) << r.error().what();
      ping(ctx, i + 1);
    });
  }
  std::shared_ptr<recorder> rec_;
  int n_;
};

class ordered_sub : public leaf {
 public:
  ordered_sub(std::shared_ptr<recorder> rec, std::shared_ptr<std::vector<payload>> kept, int n)
      : rec_(std::move(rec)), kept_(std::move(kept)), n_(n) {}
  void on_start(context& ctx) override {
    ctx.serve("ready", [](const payload&) -> result<payload> { return payload{}; });
    ASSERT_TRUE(ctx.subscribe<Sample>("seq",
                                      [this, &ctx](Sample::Reader r, const delivery& d) {
                                        if (r.getValue() != next_)
                                          rec_->add(ctx.path() + " out of order: " + std::to_string(r.getValue()));
                                        if (d.sequence() != next_ + 1)
                                          rec_->add(ctx.path() + " bad sequence " + std::to_string(d.sequence()));
                                        ++next_;
                                      })
                    .has_value());
    ASSERT_TRUE(ctx.subscribe("shared",
                              [this, &ctx](const delivery& d) {
                                kept_->push_back(d.data());  // only touched after the run (read in the test thread) ...
                                if (next_ != static_cast<std::uint64_t>(n_))
                                  rec_->add(ctx.path() + " shared before all seq");
                                if (rec_->bump("shared") == 2) ctx.quit(0);
                              })
                    .has_value());
  }

 private:
  std::shared_ptr<recorder> rec_;
  std::shared_ptr<std::vector<payload>> kept_;
  int n_;
  std::uint64_t next_ = 0;
};

TEST(PubSub, FifoPerPublisherAndFanOutSharesOneBuffer) {
  auto rec = std::make_shared<recorder>();
  auto kept0 = std::make_shared<std::vector<payload>>();
  auto kept1 = std::make_shared<std::vector<payload>>();
  const int n = 2000;
  app a{"app"};
  a.root().add_leaf<ordered_sub>("sub0", rec, kept0, n);
  a.root().add_leaf<ordered_sub>("sub1", rec, kept1, n);
  a.root().add_leaf<burst>("pub", rec, n);
  auto r = run(a, test_options());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(rec->events().empty()) << rec->events().front();
  ASSERT_EQ(kept0->size(), 1u);
  ASSERT_EQ(kept1->size(), 1u);
  EXPECT_TRUE((*kept0)[0].same_buffer((*kept1)[0])) << "in-process fan-out copied the payload";
  // n + 1 publishes, and the 2 requests (`ready`) with their 2 replies.
  EXPECT_EQ(r.traffic.edges[*r.traffic.tree->find("/app/pub")].messages, static_cast<std::uint64_t>(n + 1 + 4));
}

// In-process flow control: a fast publisher and a slow subscriber. The publisher pauses while the
// subscriber's backlog is at run_state's limit (1,024 deliveries), so the backlog stays near it
// instead of holding the whole stream, and nothing is lost.
struct flow_state {
  std::atomic<std::uint64_t> published{0};
  std::atomic<std::uint64_t> received{0}, max_lag{0};
};

class fast_publisher : public leaf {
 public:
  fast_publisher(std::shared_ptr<flow_state> s, std::uint64_t n) : s_(std::move(s)), n_(n) {}
  // The subscriber is an earlier sibling, so its subscription exists (siblings start in order).
  void on_start(context& ctx) override {
    ctx.post([this, &ctx] { burst(ctx); });
  }

 private:
  void burst(context& ctx) {
    for (int k = 0; k < 100 && sent_ < n_; ++k, ++sent_) {
      s_->published.fetch_add(1);
      ASSERT_TRUE(ctx.publish("flow", std::string_view("x"), scope::parent()).has_value());
    }
    if (sent_ < n_) ctx.post([this, &ctx] { burst(ctx); });
  }
  std::shared_ptr<flow_state> s_;
  std::uint64_t n_, sent_ = 0;
};

class slow_subscriber : public leaf {
 public:
  slow_subscriber(std::shared_ptr<flow_state> s, std::uint64_t n) : s_(std::move(s)), n_(n) {}
  void on_start(context& ctx) override {
    ASSERT_TRUE(ctx.subscribe("flow",
                              [this, &ctx](const delivery&) {
                                const auto got = s_->received.fetch_add(1) + 1;
                                s_->max_lag = std::max(s_->max_lag.load(), s_->published.load() - got);
                                const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(25);
                                while (std::chrono::steady_clock::now() < until) {
                                }
                                if (got == n_) ctx.quit(0);
                              })
                    .has_value());
  }

 private:
  std::shared_ptr<flow_state> s_;
  std::uint64_t n_;
};

TEST(PubSub, ASlowSubscriberPausesAFastPublisherAndNothingIsLost) {
  auto s = std::make_shared<flow_state>();
  const std::uint64_t n = 20000;
  app a{"app"};
  a.root().add_leaf<slow_subscriber>("sub", s, n);
  a.root().add_leaf<fast_publisher>("pub", s, n);
  auto r = run(a, test_options());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(s->received.load(), n);
  // Without the pause the backlog grows to most of the 20,000 (the publisher is many times faster);
  // with it, at most the limit plus one burst (100) is ever waiting.
  EXPECT_LE(s->max_lag.load(), 1024u + 100u + 1u);
  EXPECT_GE(s->max_lag.load(), 512u) << "the subscriber never fell behind: the test shows nothing";
}

// Publishes bad topics and scopes and records the errors.
class bad_publisher : public leaf {
 public:
  explicit bad_publisher(std::shared_ptr<recorder> rec) : rec_(std::move(rec)) {}
  void on_start(context& ctx) override {
    for (const char* t : {"", "a//b", "a/#", "a/+", "#/a", "a\x01"}) {
      auto r = ctx.publish(t, std::string_view("x"));
      rec_->add(r.has_value() ? std::string("accepted topic ") + t : r.error().what());
    }
    auto r = ctx.publish("ok", std::string_view("x"), scope::at("/app/other"));
    rec_->add(r.has_value() ? "accepted sibling scope" : r.error().what());
    r = ctx.publish("ok", std::string_view("x"), scope::at("/app/nope"));
    rec_->add(r.has_value() ? "accepted unknown scope" : r.error().what());
    auto s = ctx.subscribe("a/#/b", [](const delivery&) {});
    rec_->add(s.has_value() ? "accepted filter" : s.error().what());
    ctx.quit(0);
  }

 private:
  std::shared_ptr<recorder> rec_;
};

TEST(PubSub, BadTopicsAndScopesAreErrorValues) {
  auto rec = std::make_shared<recorder>();
  app a{"app"};
  a.root().add_leaf<bad_publisher>("pub", rec);
  a.root().add_composite("other");
  auto r = run(a, test_options());
  EXPECT_EQ(r.exit_code, 0);
  auto events = rec->events();
  ASSERT_EQ(events.size(), 9u);
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(events[i].rfind("invalid topic: topic `", 0), 0u) << events[i];
  EXPECT_NE(events[6].find("not an ancestor of the publisher `/app/pub`"), std::string::npos) << events[6];
  EXPECT_NE(events[7].find("`/app/nope` names no component"), std::string::npos) << events[7];
  EXPECT_NE(events[8].find("`#` must be the last level"), std::string::npos) << events[8];
}

// Publishes garbage bytes on a topic with a typed subscriber: the subscriber gets an error value.
class typed_sub : public leaf {
 public:
  explicit typed_sub(std::shared_ptr<recorder> rec) : rec_(std::move(rec)) {}
  void on_start(context& ctx) override {
    auto ok = ctx.subscribe<Sample>(
        "typed", [this](Sample::Reader r, const delivery&) { rec_->add("value " + std::to_string(r.getValue())); },
        [this, &ctx](const error& e) {
          rec_->add(e.what());
          ctx.quit(0);
        });
    ASSERT_TRUE(ok.has_value());
    ctx.serve("ready", [](const payload&) -> result<payload> { return payload{}; });
  }

 private:
  std::shared_ptr<recorder> rec_;
};

class garbage_pub : public leaf {
 public:
  void on_start(context& ctx) override {
    ctx.request("/app/sub", "ready", payload{}, std::chrono::seconds(10), [&ctx](result<payload> r) {
      ASSERT_TRUE(r.has_value());
      ASSERT_TRUE(ctx.publish<Sample>("typed", [](Sample::Builder b) { b.setValue(7); }).has_value());
      ASSERT_TRUE(ctx.publish("typed", std::string_view("\x00\x00\x00\x00\xff\xff\xff\x0fjunkjunk", 16)).has_value());
    });
  }
};

TEST(PubSub, InvalidTypedPayloadIsAnErrorValueNotACrash) {
  auto rec = std::make_shared<recorder>();
  app a{"app"};
  a.root().add_leaf<typed_sub>("sub", rec);
  a.root().add_leaf<garbage_pub>("pub");
  auto r = run(a, test_options());
  EXPECT_EQ(r.exit_code, 0);
  auto events = rec->events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0], "value 7");
  EXPECT_EQ(events[1].rfind("invalid payload: topic `typed` from `/app/pub`", 0), 0u) << events[1];
}

// A thread of the component's own (a worker) hands results back through cross_thread_poster(): every
// posted function runs in the component, in the order that thread posted them; once the component
// has ended the handle says so and drops the function.
struct handoff_state {
  std::vector<int> seen;  // written only by functions running in the component
  context::poster keep;   // the handle, tried again after the run
  std::thread worker;
};

class handing_leaf : public leaf {
 public:
  explicit handing_leaf(std::shared_ptr<handoff_state> s) : s_(std::move(s)) {}
  void on_start(context& ctx) override {
    s_->keep = ctx.cross_thread_poster();
    s_->worker = std::thread([post = s_->keep, s = s_.get(), &ctx] {
      for (int i = 0; i < 1000; ++i) EXPECT_TRUE(post([s, i] { s->seen.push_back(i); }));
      EXPECT_TRUE(post([&ctx] { ctx.quit(0); }));
    });
  }

 private:
  std::shared_ptr<handoff_state> s_;
};

TEST(PubSub, AnotherThreadPostsToAComponentInOrderUntilItEnds) {
  auto s = std::make_shared<handoff_state>();
  app a{"app"};
  a.root().add_leaf<handing_leaf>("leaf", s);
  auto r = run(a, test_options());
  s->worker.join();
  EXPECT_EQ(r.exit_code, 0);
  ASSERT_EQ(s->seen.size(), 1000u);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(s->seen[i], i);
  bool ran = false;
  EXPECT_FALSE(s->keep([&ran] { ran = true; }));
  EXPECT_FALSE(ran);
}

// spec::own_thread(): a component whose handler blocks (here: until a sibling has run) keeps its own
// thread, so a run on one scheduler thread still makes progress, and every hook and handler of it
// runs on that one thread.
struct own_thread_state {
  std::promise<void> sibling_ran;
  std::thread::id started_on, handled_on;
  bool sibling_seen = false;
};

class blocking_leaf : public leaf {
 public:
  explicit blocking_leaf(std::shared_ptr<own_thread_state> s) : s_(std::move(s)) {}
  void on_start(context& ctx) override {
    s_->started_on = std::this_thread::get_id();
    ctx.post([this, &ctx] {
      s_->handled_on = std::this_thread::get_id();
      // Bounded: without a thread of its own this handler holds the only scheduler thread, the
      // sibling never starts, and the test fails here after 10 s instead of hanging.
      s_->sibling_seen = s_->sibling_ran.get_future().wait_for(std::chrono::seconds(10)) == std::future_status::ready;
      ctx.quit(0);
    });
  }

 private:
  std::shared_ptr<own_thread_state> s_;
};

class sibling_leaf : public leaf {
 public:
  explicit sibling_leaf(std::shared_ptr<own_thread_state> s) : s_(std::move(s)) {}
  void on_start(context& ctx) override {
    ctx.post([s = s_] { s->sibling_ran.set_value(); });
  }

 private:
  std::shared_ptr<own_thread_state> s_;
};

TEST(PubSub, AComponentOnItsOwnThreadMayBlockWithoutStallingTheOthers) {
  auto s = std::make_shared<own_thread_state>();
  app a{"app"};
  a.root().add_leaf<blocking_leaf>("blocker", s).own_thread();
  a.root().add_leaf<sibling_leaf>("sibling", s);
  auto o = test_options();
  o.threads = 1;
  auto r = run(a, o);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(s->sibling_seen);
  EXPECT_EQ(s->started_on, s->handled_on);
}

// A component on its own thread runs on_start as soon as it is spawned, maybe before its
// supervisor has registered it: what is published to it once it has subscribed must still reach
// it. The test hook holds the supervisor between the spawn and its registration for 300 ms, while
// the sibling answers the child's `ready` with `go`.
struct early_state {
  std::atomic<bool> got_go{false};
};

class early_child : public leaf {
 public:
  explicit early_child(std::shared_ptr<early_state> s) : s_(std::move(s)) {}
  void on_start(context& ctx) override {
    (void)ctx.subscribe("go", [this, &ctx](const delivery&) {
      s_->got_go = true;
      ctx.quit(0);
    });
    (void)ctx.publish("ready", std::string_view{}, scope::root());
  }

 private:
  std::shared_ptr<early_state> s_;
};

class answering_sibling : public leaf {
 public:
  void on_start(context& ctx) override {
    (void)ctx.subscribe("ready",
                        [&ctx](const delivery&) { (void)ctx.publish("go", std::string_view{}, scope::root()); });
  }
};

TEST(PubSub, APublishToAComponentThatStartedBeforeItsSupervisorRegisteredItArrives) {
  auto s = std::make_shared<early_state>();
  app a{"app"};
  a.root().add_leaf<answering_sibling>("sibling");
  a.root().add_composite("group").add_leaf<early_child>("early", s).own_thread();
  auto o = test_options();
  o.threads = 2;
  o.max_runtime = std::chrono::seconds(20);  // without the go, the run ends here with a failure
  ::setenv("BANYAN_TEST_DELAY_REGISTRATION_MS", "300", 1);
  auto r = run(a, o);
  ::unsetenv("BANYAN_TEST_DELAY_REGISTRATION_MS");
  EXPECT_TRUE(s->got_go) << "the go published to /app/group/early before its registration was lost";
  EXPECT_EQ(r.exit_code, 0) << r.error;
}

}  // namespace
}  // namespace banyan
