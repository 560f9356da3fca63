// broker_bench: local publish→deliver throughput and fan-out latency of banyan's hierarchical broker,
// against raw CAF sends of the same payloads to the same number of subscriber actors, in one run.
//
// Shape (fan-out f, depth d): the publisher sits d levels below the root on one branch; the f
// subscribers sit d levels below the root on another branch, so every message climbs d edges and
// descends d edges. Raw CAF: one actor sends each payload straight to f actors.
//
// Throughput: the publisher sends N messages back to back; rate = N·f deliveries / time until the
// last delivery. Latency: closed loop, one message at a time; latency = publish → last subscriber got
// it (the subscriber completing the fan-out acknowledges, which starts the next message).
#include <banyan/sdk/sdk.hpp>

#include <benchmark/benchmark.h>
#include <caf/all.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <future>
#include <map>
#include <thread>

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(banyan::payload)

namespace {

using clock_type = std::chrono::steady_clock;
constexpr std::size_t payload_bytes = 64;
constexpr std::size_t target_deliveries = 400'000;
constexpr int latency_rounds = 2'000;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now().time_since_epoch()).count();
}

banyan::payload make_payload(std::int64_t stamp) {
  std::array<std::byte, payload_bytes> bytes{};
  std::memcpy(bytes.data(), &stamp, sizeof stamp);
  return banyan::payload::copy_of(bytes);
}

std::int64_t stamp_of(const banyan::payload& p) {
  std::int64_t stamp;
  std::memcpy(&stamp, p.bytes().data(), sizeof stamp);
  return stamp;
}

// Shared between the benchmark body and the actors of one run.
struct shared_run {
  int fanout = 1;
  std::size_t messages = 0;  // throughput mode: messages to publish; latency mode: 0
  std::atomic<std::size_t> delivered{0};
  std::atomic<std::int64_t> start_ns{0}, end_ns{0};
  std::vector<double> latencies_us;  // written by the completing subscriber only (one at a time)
  std::atomic<int> round_count{0};
};

struct result_row {
  double rate = 0;
  double p50_us = 0, p99_us = 0;
};
std::map<std::string, std::vector<result_row>> results;  // key: "banyan f=10 d=4" / "caf f=10 d=4"

void percentiles(std::vector<double> v, result_row& row) {
  if (v.empty()) return;
  std::sort(v.begin(), v.end());
  row.p50_us = v[v.size() / 2];
  row.p99_us = v[std::min(v.size() - 1, v.size() * 99 / 100)];
}

// ---------------------------------------------------------------- banyan ----------------------

class sub_leaf : public banyan::leaf {
 public:
  explicit sub_leaf(std::shared_ptr<shared_run> run) : run_(std::move(run)) {}
  void on_start(banyan::context& ctx) override {
    (void)ctx.subscribe("bench/data", [this, &ctx](const banyan::delivery& d) {
      auto n = run_->delivered.fetch_add(1, std::memory_order_acq_rel) + 1;
      if (run_->messages) {
        if (n == run_->messages * static_cast<std::size_t>(run_->fanout)) {
          run_->end_ns = now_ns();
          ctx.quit(0);
        }
      } else if (n % static_cast<std::size_t>(run_->fanout) == 0) {
        run_->latencies_us.push_back(static_cast<double>(now_ns() - stamp_of(d.data())) / 1e3);
        (void)ctx.publish("bench/ack", std::string_view{}, banyan::scope::root());
      }
    });
  }

 private:
  std::shared_ptr<shared_run> run_;
};

class pub_leaf : public banyan::leaf {
 public:
  explicit pub_leaf(std::shared_ptr<shared_run> run) : run_(std::move(run)) {}
  void on_start(banyan::context& ctx) override {
    if (run_->messages) {
      ctx.post([this, &ctx] {
        run_->start_ns = now_ns();
        for (std::size_t i = 0; i < run_->messages; ++i)
          (void)ctx.publish("bench/data", make_payload(0), banyan::scope::root());
      });
      return;
    }
    (void)ctx.subscribe("bench/ack", [this, &ctx](const banyan::delivery&) { next(ctx); });
    ctx.post([this, &ctx] { next(ctx); });
  }

 private:
  void next(banyan::context& ctx) {
    if (run_->round_count++ == latency_rounds) return ctx.quit(0);
    (void)ctx.publish("bench/data", make_payload(now_ns()), banyan::scope::root());
  }
  std::shared_ptr<shared_run> run_;
};

void run_banyan(const std::shared_ptr<shared_run>& shared, int depth) {
  banyan::app app{"bench"};
  // Subscribers first: children start in order, so they have subscribed before the publisher starts.
  banyan::spec* sub_side = &app.root();
  for (int i = 1; i < depth; ++i) sub_side = &sub_side->add_composite("s" + std::to_string(i));
  for (int i = 0; i < shared->fanout; ++i) sub_side->add_leaf<sub_leaf>("sub" + std::to_string(i), shared);
  banyan::spec* pub_side = &app.root();
  for (int i = 1; i < depth; ++i) pub_side = &pub_side->add_composite("p" + std::to_string(i));
  pub_side->add_leaf<pub_leaf>("pub", shared);
  banyan::run_options options;
  options.max_runtime = std::chrono::seconds(120);
  banyan::run(app, options);
}

// ---------------------------------------------------------------- raw CAF ---------------------

using data_atom = caf::atom_constant<caf::atom("data")>;
using ack_atom = caf::atom_constant<caf::atom("ack")>;
using go_atom = caf::atom_constant<caf::atom("go")>;

void run_caf(const std::shared_ptr<shared_run>& shared) {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", static_cast<std::size_t>(std::max(1u, std::thread::hardware_concurrency())));
  caf::actor_system system{cfg};
  std::promise<void> done;
  auto finished = done.get_future();
  auto done_ptr = &done;
  caf::actor publisher;
  std::vector<caf::actor> subs;
  auto pub_handle = std::make_shared<caf::actor>();
  for (int i = 0; i < shared->fanout; ++i) {
    subs.push_back(system.spawn([shared, done_ptr, pub_handle](caf::event_based_actor* self) -> caf::behavior {
      return {[=](data_atom, const banyan::payload& p) {
        auto n = shared->delivered.fetch_add(1, std::memory_order_acq_rel) + 1;
        if (shared->messages) {
          if (n == shared->messages * static_cast<std::size_t>(shared->fanout)) {
            shared->end_ns = now_ns();
            done_ptr->set_value();
          }
        } else if (n % static_cast<std::size_t>(shared->fanout) == 0) {
          shared->latencies_us.push_back(static_cast<double>(now_ns() - stamp_of(p)) / 1e3);
          self->send(*pub_handle, ack_atom::value);
        }
      }};
    }));
  }
  publisher = system.spawn([shared, subs, done_ptr](caf::event_based_actor* self) -> caf::behavior {
    auto next = [=] {
      if (shared->round_count++ == latency_rounds) return done_ptr->set_value();
      auto p = make_payload(now_ns());
      for (const auto& s : subs) self->send(s, data_atom::value, p);
    };
    return {
        [=](go_atom) {
          if (!shared->messages) return next();
          shared->start_ns = now_ns();
          for (std::size_t i = 0; i < shared->messages; ++i) {
            auto p = make_payload(0);
            for (const auto& s : subs) self->send(s, data_atom::value, p);
          }
        },
        [=](ack_atom) { next(); },
    };
  });
  *pub_handle = publisher;
  caf::anon_send(publisher, go_atom::value);
  finished.wait();
  *pub_handle = caf::actor{};
  caf::anon_send_exit(publisher, caf::exit_reason::user_shutdown);
  for (auto& s : subs) caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
}

// ---------------------------------------------------------------- cases -----------------------

void bench_case(benchmark::State& state, bool banyan_side, int fanout, int depth) {
  for (auto _ : state) {
    result_row row;
    auto tp = std::make_shared<shared_run>();
    tp->fanout = fanout;
    tp->messages = target_deliveries / static_cast<std::size_t>(fanout);
    banyan_side ? run_banyan(tp, depth) : run_caf(tp);
    double secs = static_cast<double>(tp->end_ns - tp->start_ns) * 1e-9;
    row.rate = static_cast<double>(tp->messages * static_cast<std::size_t>(fanout)) / secs;
    state.SetIterationTime(secs);

    auto lat = std::make_shared<shared_run>();
    lat->fanout = fanout;
    banyan_side ? run_banyan(lat, depth) : run_caf(lat);
    percentiles(lat->latencies_us, row);

    state.counters["deliveries/s"] = row.rate;
    state.counters["p50_us"] = row.p50_us;
    state.counters["p99_us"] = row.p99_us;
    char key[64];
    std::snprintf(key, sizeof key, "f=%d d=%d", fanout, depth);
    results[std::string(banyan_side ? "banyan " : "caf ") + key].push_back(row);
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  for (int fanout : {1, 10, 100}) {
    for (int depth : {1, 4, 8}) {
      for (bool ours : {false, true}) {
        std::string name = std::string(ours ? "banyan" : "raw_caf") + "/fanout:" + std::to_string(fanout) +
                           "/depth:" + std::to_string(depth);
        benchmark::RegisterBenchmark(name.c_str(), bench_case, ours, fanout, depth)
            ->UseManualTime()
            ->Iterations(1)
            ->Repetitions(3)
            ->Unit(benchmark::kMillisecond);
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  std::printf(
      "\n| fan-out | depth | banyan deliveries/s | raw CAF deliveries/s | ratio | banyan p50/p99 µs | raw CAF p50/p99 "
      "µs |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|\n");
  for (int fanout : {1, 10, 100}) {
    for (int depth : {1, 4, 8}) {
      char key[64];
      std::snprintf(key, sizeof key, "f=%d d=%d", fanout, depth);
      auto& ours = results[std::string("banyan ") + key];
      auto& anchor = results[std::string("caf ") + key];
      if (ours.empty() || anchor.empty()) continue;
      auto pick = [](const std::vector<result_row>& rows, auto field) {
        std::vector<double> v;
        for (const auto& r : rows) v.push_back(r.*field);
        return median(v);
      };
      double a = pick(ours, &result_row::rate), b = pick(anchor, &result_row::rate);
      std::printf("| %d | %d | %.0f | %.0f | %.2f | %.1f / %.1f | %.1f / %.1f |\n", fanout, depth, a, b, a / b,
                  pick(ours, &result_row::p50_us), pick(ours, &result_row::p99_us), pick(anchor, &result_row::p50_us),
                  pick(anchor, &result_row::p99_us));
    }
  }
  return 0;
}
