// hello: a house of rooms. Each room's thermometer publishes readings scoped to its room, and alerts
// scoped to the whole house. Run it with --report to see which tree edges carried what, and with
// --mode flat-p2p to compare against flat publish-subscribe.
#include <banyan/sdk/sdk.hpp>

#include "reading.capnp.h"

#include <cstdio>
#include <string>

namespace {

constexpr int readings_per_room = 50;
constexpr double alert_above = 24.0;

// Publishes readings within its room (scope: parent) and alerts to the whole house (scope: root).
class thermometer : public banyan::leaf {
 public:
  thermometer(std::string room, double base) : room_(std::move(room)), base_(base) {}
  void on_start(banyan::context& ctx) override {
    for (int i = 0; i < readings_per_room; ++i) {
      double celsius = base_ + 3.0 * ((i * 37) % 11) / 10.0;
      auto fill = [&](Reading::Builder r) {
        r.setRoom(room_);
        r.setCelsius(celsius);
        r.setIndex(static_cast<std::uint32_t>(i));
      };
      (void)ctx.publish<Reading>("temp/" + room_, fill, banyan::scope::parent());
      if (celsius > alert_above) (void)ctx.publish<Reading>("alert/" + room_, fill, banyan::scope::root());
    }
    (void)ctx.publish("done/" + room_, std::string_view{}, banyan::scope::root());
  }

 private:
  std::string room_;
  double base_;
};

// Shows the latest reading of its room.
class panel : public banyan::leaf {
 public:
  void on_start(banyan::context& ctx) override {
    (void)ctx.subscribe<Reading>("temp/+", [this](Reading::Reader r, const banyan::delivery&) {
      ++count_;
      sum_ += r.getCelsius();
    });
  }
  void on_stop(banyan::context& ctx) override {
    char line[128];
    std::snprintf(line, sizeof line, "%d readings, mean %.2f C", count_, count_ ? sum_ / count_ : 0.0);
    ctx.log(line);
  }

 private:
  int count_ = 0;
  double sum_ = 0;
};

// Collects alerts from every room; ends the run when all rooms are done.
class dashboard : public banyan::leaf {
 public:
  explicit dashboard(int rooms) : rooms_(rooms) {}
  void on_start(banyan::context& ctx) override {
    (void)ctx.subscribe<Reading>("alert/#", [this](Reading::Reader r, const banyan::delivery& d) {
      ++alerts_;
      if (alerts_ <= 3)
        std::printf("  alert from %s: %s at %.1f C\n", d.sender().c_str(), r.getRoom().cStr(), r.getCelsius());
    });
    (void)ctx.subscribe("done/+", [this, &ctx](const banyan::delivery&) {
      if (++done_ == rooms_) {
        std::printf("  dashboard: %d alerts from %d rooms\n", alerts_, rooms_);
        ctx.quit(0);
      }
    });
  }

 private:
  int rooms_;
  int alerts_ = 0;
  int done_ = 0;
};

// Rings on every alert; shares the hall with the dashboard, so an alert crosses the house→hall edge
// once under hierarchical routing and twice under flat-p2p.
class siren : public banyan::leaf {
 public:
  void on_start(banyan::context& ctx) override {
    (void)ctx.subscribe("alert/#", [this](const banyan::delivery&) { ++rings_; });
  }
  void on_stop(banyan::context& ctx) override { ctx.log("rang " + std::to_string(rings_) + " times"); }

 private:
  int rings_ = 0;
};

// The house prints its tree when it starts.
class house : public banyan::composite {
  void on_start(banyan::context& ctx) override {
    std::printf("component tree:\n");
    print(ctx.tree(), 0, 1);
    std::printf("running...\n");
  }
  static void print(const banyan::component_tree& tree, banyan::vertex_id v, int indent) {
    std::printf("%*s%s\n", indent * 2, "", tree.path(v).c_str());
    for (auto c : tree.children(v)) print(tree, c, indent + 1);
  }
};

}  // namespace

int main(int argc, char** argv) {
  banyan::app app{"house", banyan::supervision{}, std::in_place_type<house>};
  const char* rooms[] = {"kitchen", "bedroom", "attic"};
  auto& hall = app.root().add_composite("hall");
  hall.add_leaf<siren>("siren");
  hall.add_leaf<dashboard>("dashboard", 3);
  double base = 21.0;
  for (const char* room : rooms) {
    auto& r = app.root().add_composite(room);
    r.add_leaf<panel>("panel");
    r.add_leaf<thermometer>("thermo", std::string(room), base);
    base += 1.5;
  }
  return banyan::run(app, argc, argv);
}
