// startfail_app: a component that fails while the cluster is still starting, on three nodes.
//
// /sf (one_for_one) { sink, sensor }. `sensor` publishes `reading` "I:K" for K = 1..--readings,
// one per posted task from on_start (so the first ones are made while its gate still holds them);
// its first incarnation throws on reading --fail-at. `sink` subscribes to `reading` and monitors
// /sf/sensor from on_start, prints `GOT I:K` for each reading and `DOWN <reason>`, and ends the run
// once it has every reading of the second incarnation and the first one's DOWN. The root prints
// `FAILURE <child> <reason>`. Incarnations are counted in the sensor's process: its restarts run on
// its node, and a restarted process starts counting again (so its first incarnation fails too).
#include <banyan/sdk/sdk.hpp>

#include <cstdio>
#include <set>
#include <string>

namespace {

struct config {
  int readings = 5;
  int fail_at = 3;
  bool stay = false;  // the sink never ends the run (a test ends it)
};

void say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

int incarnations = 0;  // of the sensor, in its process

class sensor : public banyan::leaf {
 public:
  explicit sensor(config c) : c_(c) {}
  void on_start(banyan::context& ctx) override {
    incarnation_ = ++incarnations;
    ctx.post([this, &ctx] { next(ctx); });
  }

 private:
  void next(banyan::context& ctx) {
    ++k_;
    if (incarnation_ == 1 && k_ == c_.fail_at) throw std::runtime_error("reading " + std::to_string(k_) + " failed");
    (void)ctx.publish("reading", std::to_string(incarnation_) + ":" + std::to_string(k_), banyan::scope::root());
    if (k_ < c_.readings) ctx.post([this, &ctx] { next(ctx); });
  }
  config c_;
  int incarnation_ = 0, k_ = 0;
};

class sink : public banyan::leaf {
 public:
  explicit sink(config c) : c_(c) {}
  void on_start(banyan::context& ctx) override {
    (void)ctx.subscribe("reading", [this, &ctx](const banyan::delivery& d) {
      const auto bytes = d.data().bytes();
      const std::string text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
      say("GOT " + text);
      if (text.rfind("2:", 0) == 0) ++second_;
      maybe_end(ctx);
    });
    (void)ctx.monitor("/sf/sensor", [this, &ctx](const std::string&, const std::string& reason) {
      say("DOWN " + reason);
      down_ = true;
      maybe_end(ctx);
    });
  }

 private:
  void maybe_end(banyan::context& ctx) {
    if (down_ && second_ == c_.readings && !c_.stay) ctx.quit(0);
  }
  config c_;
  int second_ = 0;
  bool down_ = false;
};

class root : public banyan::composite {
 public:
  void on_child_failure(banyan::context&, const std::string& child, const std::string& reason) override {
    say("FAILURE " + child + " " + reason);
  }
};

}  // namespace

int main(int argc, char** argv) {
  config c;
  banyan::app app{"sf", banyan::supervision{}, std::in_place_type<root>};
  app.options().add("--readings", c.readings, "Readings per incarnation of the sensor");
  app.options().add("--fail-at", c.fail_at, "The first incarnation throws on this reading");
  app.options().add("--stay", c.stay, "The sink does not end the run");
  if (auto exit_code = app.options().parse(argc, argv)) return *exit_code;
  app.root().add_leaf<sink>("sink", c);  // first: in one process it subscribes before the first reading
  app.root().add_leaf<sensor>("sensor", c);
  return banyan::run(app, argc, argv);
}
