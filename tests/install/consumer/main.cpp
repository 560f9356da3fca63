// weather: the worked example of docs/install.md, built against the installed SDK by tests/install.
//
// The tree:    /weather              a custom root (weather_service) that asks each region for a summary
//                /north, /south      custom composites (region): collect their stations' readings and
//                                    answer the typed request `summary` (Query -> Summary)
//                  /a, /b            leaves (station): publish one Reading every 5 ms, `after` by `after`
//
// It shows typed payloads (weather.capnp), publish/subscribe with a scope, typed request/reply with
// errors as values, post/after, add_composite<T>, a custom root and an app option.
#include <banyan/sdk/sdk.hpp>

#include "weather.capnp.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;

struct weather_settings {
  int readings = 3;  // per station (--readings)
};
using settings_ptr = std::shared_ptr<const weather_settings>;

// Publishes `count` readings to its region (scope::parent(): the region's subtree), one per tick.
class station : public banyan::leaf {
 public:
  station(std::string name, double base, settings_ptr settings)
      : name_(std::move(name)), base_(base), settings_(std::move(settings)) {}
  void on_start(banyan::context& ctx) override { tick(ctx); }

 private:
  void tick(banyan::context& ctx) {
    const double celsius = base_ + 0.5 * sent_;
    auto fill = [&](Reading::Builder r) {
      r.setStation(name_);
      r.setCelsius(celsius);
    };
    if (auto ok = ctx.publish<Reading>("weather/" + name_, fill, banyan::scope::parent()); !ok) {
      ctx.log(ok.error().what());
    }
    if (++sent_ < settings_->readings) ctx.after(5ms, [this, &ctx] { tick(ctx); });  // a timer message to itself
  }

  std::string name_;
  double base_;
  settings_ptr settings_;
  int sent_ = 0;
};

// Collects its stations' readings and answers `summary` requests. Not enough readings yet is an
// error value the requester can act on, not an exception.
class region : public banyan::composite {
 public:
  void on_start(banyan::context& ctx) override {
    (void)ctx.subscribe<Reading>("weather/+", [this](Reading::Reader r, const banyan::delivery&) {
      ++readings_;
      sum_ += r.getCelsius();
    });
    ctx.serve<Query, Summary>("summary", [this](Query::Reader q, Summary::Builder s) -> banyan::result<void> {
      if (readings_ < q.getMinReadings()) {
        return banyan::error{banyan::sdk::errc::invalid_argument,
                             "only " + std::to_string(readings_) + " readings so far"};
      }
      s.setReadings(readings_);
      s.setMeanCelsius(sum_ / readings_);
      return {};
    });
  }

 private:
  std::uint32_t readings_ = 0;
  double sum_ = 0;
};

// The root: once its children have started, asks every region for its summary, retries a region that
// is not ready yet, prints the answers in order and ends the run.
class weather_service : public banyan::composite {
 public:
  weather_service(std::vector<std::string> regions, settings_ptr settings)
      : regions_(std::move(regions)), settings_(std::move(settings)) {}
  void on_children_started(banyan::context& ctx) override {
    ctx.post([this, &ctx] {  // runs as a message to this component, after this hook returns
      for (const auto& r : regions_) ask(ctx, r);
    });
  }

 private:
  void ask(banyan::context& ctx, const std::string& region) {
    const auto wanted = static_cast<std::uint32_t>(2 * settings_->readings);  // two stations per region
    auto query = banyan::payload::build<Query>([&](Query::Builder q) { q.setMinReadings(wanted); });
    ctx.request<Summary>("/weather/" + region, "summary", query, 2s,
                         [this, &ctx, region](banyan::result<Summary::Reader> reply) {
                           if (!reply) {  // not ready (or timed out): ask again shortly
                             ctx.after(10ms, [this, &ctx, region] { ask(ctx, region); });
                             return;
                           }
                           char line[128];
                           std::snprintf(line, sizeof line, "%s: %u readings, mean %.2f C", region.c_str(),
                                         reply->getReadings(), reply->getMeanCelsius());
                           answers_[region] = line;
                           if (answers_.size() == regions_.size()) finish(ctx);
                         });
  }
  void finish(banyan::context& ctx) {
    for (const auto& [region, line] : answers_) std::printf("%s\n", line.c_str());
    ctx.quit(0);
  }

  std::vector<std::string> regions_;
  settings_ptr settings_;
  std::map<std::string, std::string> answers_;
};

}  // namespace

int main(int argc, char** argv) {
  // Options are parsed by banyan::run, after the tree below is built: components that use an option
  // share `settings` and read it when they start (a value copied into add_leaf now would be the default).
  auto settings = std::make_shared<weather_settings>();
  const std::vector<std::string> regions{"north", "south"};
  banyan::app app{"weather", banyan::supervision{}, std::in_place_type<weather_service>, regions, settings};
  app.options().add("--readings", settings->readings, "Readings each station publishes").positive();

  double base = 10;
  for (const auto& name : regions) {
    auto& r = app.root().add_composite<region>(name, {banyan::restart_strategy::one_for_one, 3, 5s});
    r.add_leaf<station>("a", name + "-a", base, settings);
    r.add_leaf<station>("b", name + "-b", base + 1, settings);
    base += 10;
  }
  return banyan::run(app, argc, argv);  // parses argv (--readings, and banyan's own --report, ...)
}
