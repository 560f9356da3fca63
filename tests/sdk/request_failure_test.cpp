// A request whose callee fails (an exception escapes its handler): the requester's error carries the
// callee's own message, as a supervisor's reason does, never CAF's rendering of it
// (`system_error(runtime_error, ("..."))`).
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace banyan {
namespace {

using testing::recorder;
using testing::test_options;

class thrower : public leaf {
 public:
  void on_start(context& ctx) override {
    ctx.serve("boom", [](const payload&) -> result<payload> { throw std::runtime_error("disk on fire"); });
  }
};

class asker : public leaf {
 public:
  explicit asker(std::shared_ptr<recorder> rec) : rec_(std::move(rec)) {}
  void on_start(context& ctx) override {
    using namespace std::chrono_literals;
    ctx.request("/app/thrower", "boom", payload{}, 10s, [this, &ctx](result<payload> r) {
      rec_->add(r.has_value() ? std::string("ok") : std::string(r.error().what()));
      ctx.quit(0);
    });
  }

 private:
  std::shared_ptr<recorder> rec_;
};

TEST(RequestReply, ACalleeThatThrowsGivesTheRequesterItsMessageNotCafs) {
  auto rec = std::make_shared<recorder>();
  app a{"app"};
  a.root().add_leaf<thrower>("thrower");
  a.root().add_leaf<asker>("asker", rec);
  auto r = run(a, test_options());
  EXPECT_EQ(r.exit_code, 0);
  auto events = rec->events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0], "request failed: request `boom` to `/app/thrower`: disk on fire");
  EXPECT_EQ(events[0].find("system_error"), std::string::npos);
}

}  // namespace
}  // namespace banyan
