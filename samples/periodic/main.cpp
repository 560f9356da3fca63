// periodic: report workflows on a rhythm, with time compressed so that a period is seconds: the
// sample a periodic plan runs on (docs/periodic.md, "The plan runs"; tools/bench/periodic_sample.py).
//
//   /reports            the clock: releases each workflow's instances and times them
//     sim               serves `run`: a gate-level simulation of a 64-bit LFSR circuit, --sim-ms long
//     eval              serves `run`: scores a model (dot products over its weights), --eval-ms long
//     render            serves `render`: writes the report of an instance
//
// Two workflows, as samples/periodic/workload.yaml declares them: `regression` (every 12 s from
// 1 s: sim, then render; deadline 400 ms) and `evaluation` (every 4 s from 0.5 s: eval, then render;
// deadline 250 ms). Each start of a subtree costs time (--sim-load, ...): a cold one misses. Each instance's time runs
// from its release to render's reply. The subtrees keep their state (cycles simulated, evaluations, reports written)
// across sleeps and wakes: render's count at the end equals the instances rendered, or the run says so.
//
// Lines starting `PERIODIC ` are the result: per workflow the instances, how many met their
// deadline and the slowest, and each subtree's state.
#include <banyan/sdk/sdk.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

struct config {
  std::chrono::milliseconds duration{36000};  // instances released before this
  std::chrono::milliseconds sim{150}, eval{60}, render{10};
  // What each start costs (elaborating the design, loading the weights, the templates): paid at the
  // run's start and at every wake, which is what a periodic plan weighs.
  std::chrono::milliseconds sim_load{400}, eval_load{250}, render_load{80};
};

void spin(std::chrono::milliseconds d) {
  const auto until = clock_type::now() + d;
  while (clock_type::now() < until) {
  }
}

void say(const std::string& line) {
  std::printf("PERIODIC %s\n", line.c_str());
  std::fflush(stdout);
}

std::string text_of(const banyan::payload& p) { return {reinterpret_cast<const char*>(p.bytes().data()), p.size()}; }

// A subtree's one leaf: each start costs `load` (elaborating the design, loading the weights),
// then it serves `method`, doing its work() for each request. Its state, the requests it served
// and what its work keeps, survives sleeps (snapshot/restore) and restarts. It answers the clock's
// `ctl/ping` (its start) at once.
class service : public banyan::leaf {
 public:
  service(std::string method, std::chrono::milliseconds load) : method_(std::move(method)), load_(load) {}
  void on_start(banyan::context& ctx) override {
    spin(load_);
    (void)ctx.subscribe("ctl/ping",
                        [&ctx](const banyan::delivery&) { (void)ctx.publish("ctl/pong", std::string_view()); });
    ctx.serve_text(method_, [this](std::string_view what) -> banyan::result<std::string> {
      ++count_;
      return work(what);
    });
  }
  std::optional<banyan::payload> snapshot(banyan::context&) override {
    return banyan::payload::copy_of(std::to_string(count_) + " " + std::to_string(extra_));
  }
  void restore(banyan::context&, const banyan::payload& state) override {
    std::sscanf(text_of(state).c_str(), "%llu %llu", &count_, &extra_);
  }

 protected:
  virtual std::string work(std::string_view what) = 0;
  unsigned long long count_ = 0, extra_ = 0;

 private:
  std::string method_;
  std::chrono::milliseconds load_;
};

// Steps a 64-bit Fibonacci LFSR (taps 64, 63, 61, 60) gate by gate for --sim-ms; keeps its state.
class sim : public service {
 public:
  explicit sim(config c) : service("run", c.sim_load), c_(c) {}

 private:
  std::string work(std::string_view) override {
    const auto until = clock_type::now() + c_.sim;
    std::uint64_t state = 0xACE1ACE1ACE1ACE1ull ^ extra_;
    std::uint64_t cycles = 0;
    while (clock_type::now() < until) {
      for (int i = 0; i < 1024; ++i) {
        const std::uint64_t bit = ((state >> 0) ^ (state >> 1) ^ (state >> 3) ^ (state >> 4)) & 1u;
        state = (state >> 1) | (bit << 63);
      }
      cycles += 1024;
    }
    extra_ = state;
    return std::to_string(cycles);
  }
  config c_;
};

// Scores a model (dot products over its weights) for --eval-ms.
class eval : public service {
 public:
  explicit eval(config c) : service("run", c.eval_load), c_(c) {}

 private:
  std::string work(std::string_view) override {
    const auto until = clock_type::now() + c_.eval;
    std::vector<float> w(4096, 0.5f), x(4096, 0.25f);
    double score = 0;
    while (clock_type::now() < until)
      for (std::size_t i = 0; i < w.size(); ++i) score += w[i] * x[i];
    return std::to_string(score > 0 ? 1 : 0);
  }
  config c_;
};

// Writes the report of an instance: `report N: WORKFLOW`, N counting every report it wrote.
class render : public service {
 public:
  explicit render(config c) : service("render", c.render_load), c_(c) {}

 private:
  std::string work(std::string_view what) override {
    spin(c_.render);
    return "report " + std::to_string(count_) + ": " + std::string(what);
  }
  config c_;
};

struct workflow {
  const char* name;
  const char* first;  // the subtree asked first; render follows
  std::chrono::milliseconds period, phase, deadline;
  int instances = 0, met = 0, failed = 0;
  double slowest_ms = 0;
};

// The clock: releases every instance of every workflow on time and times it.
class reports : public banyan::composite {
 public:
  // The options are read after the app is made: the root reads them through a pointer.
  explicit reports(const config* c) : c_(*c) {}
  void on_children_started(banyan::context& ctx) override {
    if (scheduled_) return;  // a child's restart: the timetable runs on
    scheduled_ = true;
    // The timetable starts when every subtree has answered: on several nodes, once the deployment
    // has started (what is sent waits for it), the moment `banyan launch --plan` starts its plan's
    // clock. A publish, not a request: the profile's reply times stay those of the workflows.
    (void)ctx.subscribe("ctl/pong", [this, &ctx](const banyan::delivery& d) {
      if (answered_.insert(d.sender()).second && answered_.size() == 3) schedule(ctx);
    });
    (void)ctx.publish("ctl/ping", std::string_view());
  }

 private:
  void schedule(banyan::context& ctx) {
    started_ = clock_type::now();
    for (auto& w : flows_) {
      for (auto at = w.phase; at < c_.duration; at += w.period) {
        ++pending_;
        ctx.after(at, [this, &ctx, &w, at] { release(ctx, w, started_ + at); });
      }
    }
  }

  void release(banyan::context& ctx, workflow& w, clock_type::time_point due) {
    const std::string first = std::string("/reports/") + w.first;
    ctx.request_text(first, "run", w.name, 10s, [this, &ctx, &w, due](banyan::result<std::string> r) {
      if (!r) return finish(ctx, w, due, r.error().what());
      ctx.request_text("/reports/render", "render", w.name, 10s, [this, &ctx, &w, due](banyan::result<std::string> r2) {
        finish(ctx, w, due, r2 ? std::string() : std::string(r2.error().what()));
      });
    });
  }

  void finish(banyan::context& ctx, workflow& w, clock_type::time_point due, const std::string& error) {
    const double ms = std::chrono::duration<double, std::milli>(clock_type::now() - due).count();
    ++w.instances;
    if (!error.empty()) {
      ++w.failed;
      ctx.log(std::string(w.name) + ": " + error);
    } else if (ms <= static_cast<double>(w.deadline.count())) {
      ++w.met;
    }
    if (ms > w.slowest_ms) w.slowest_ms = ms;
    char line[160];
    std::snprintf(line, sizeof line, "instance %s released %.3f s took %.1f ms%s", w.name,
                  std::chrono::duration<double>(due - started_).count(), ms, error.empty() ? "" : " (failed)");
    say(line);
    if (--pending_ > 0) return;
    for (const auto& f : flows_) {
      char line[200];
      std::snprintf(line, sizeof line, "workflow %s instances %d met %d failed %d slowest_ms %.1f", f.name, f.instances,
                    f.met, f.failed, f.slowest_ms);
      say(line);
    }
    // Render's count slept and woke with it: it equals the instances rendered.
    int rendered = 0;
    for (const auto& f : flows_) rendered += f.instances - f.failed;
    ctx.request_text("/reports/render", "render", "end", 10s, [&ctx, rendered](banyan::result<std::string> r) {
      if (!r) {
        ctx.log(std::string("final render: ") + r.error().what());
        return ctx.quit(1);
      }
      const std::string& text = *r;
      const int count = std::atoi(text.c_str() + std::strlen("report "));
      say("render kept its count: " + std::string(count == rendered + 1 ? "yes" : "NO") + " (" +
          std::to_string(count - 1) + " reports for " + std::to_string(rendered) + " instances)");
      ctx.quit(count == rendered + 1 ? 0 : 1);
    });
  }

  config c_;
  clock_type::time_point started_;
  int pending_ = 0;
  bool scheduled_ = false;
  std::set<std::string> answered_;  // the subtrees that said pong
  workflow flows_[2] = {{"regression", "sim", 12000ms, 1000ms, 400ms}, {"evaluation", "eval", 4000ms, 500ms, 250ms}};
};

}  // namespace

int main(int argc, char** argv) {
  config c;
  banyan::app app{"reports", {banyan::restart_strategy::one_for_one, 3, 10s}, std::in_place_type<reports>, &c};
  app.options().add("--duration", c.duration, "Release instances for this long (e.g. 36s)");
  app.options().add("--sim-ms", c.sim, "Time sim spends on each run (e.g. 150ms)");
  app.options().add("--eval-ms", c.eval, "Time eval spends on each run");
  app.options().add("--render-ms", c.render, "Time render spends on each report");
  app.options().add("--sim-load", c.sim_load, "Time each start of sim takes (elaborating the design)");
  app.options().add("--eval-load", c.eval_load, "Time each start of eval takes (loading the weights)");
  app.options().add("--render-load", c.render_load, "Time each start of render takes");
  if (auto code = app.options().parse(argc, argv)) return *code;
  app.root().add_leaf<sim>("sim", c);
  app.root().add_leaf<eval>("eval", c);
  app.root().add_leaf<render>("render", c);
  return banyan::run(app, argc, argv);
}
