// store_bench: the time a training loop is blocked per checkpoint, banyan::store's commit against a
// synchronous write + fsync + rename + folder fsync of the same bytes, in one run; the durability
// latency after commit; and the step-time overhead of checkpointing every step
// (docs/benchmarks.md, "Store").
//
// A "step" is --step-ms of spinning (the host thread of a training step); a checkpoint is three
// blobs: weights (1/3 of --mb), optimizer state (2/3) and a small manifest. The store copies the
// blobs in (the span overload), as a trainer that keeps training on its tensors must.
#include "banyan/base/progress.hpp"
#include "banyan/store/store.hpp"

#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;
using banyan::store::blob_store;
using banyan::store::transaction;

struct options {
  double mb = 96;
  int checkpoints = 8;
  int step_ms = 50;
  int every = 20;
  int every_step_steps = 40;
  double every_step_mb = 8;
  std::string dir = "store-bench-data";
  bool json = false;
  std::string trace;  // --budget-trace: CSV and SVG of the buffer while a host pool takes budget
};

double ms_since(clock_type::time_point t) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t).count();
}

void spin(int ms) {
  const auto end = clock_type::now() + std::chrono::milliseconds(ms);
  volatile std::uint64_t x = 0;
  while (clock_type::now() < end) x = x + 1;
}

struct blobs {
  std::vector<std::byte> weights, optimizer;
  std::string manifest;
  explicit blobs(double mb) {
    const auto total = static_cast<std::size_t>(mb * (1 << 20));
    weights.resize(total / 3);
    optimizer.resize(total - total / 3);
    std::uint64_t v = 88172645463325252ull;
    for (auto* b : {&weights, &optimizer})
      for (auto& x : *b) {
        v ^= v << 13, v ^= v >> 7, v ^= v << 17;
        x = static_cast<std::byte>(v);
      }
    manifest = R"({"step": 0, "blobs": ["weights", "optimizer"]})";
  }
  std::uint64_t bytes() const { return weights.size() + optimizer.size() + manifest.size(); }
};

bool write_file(const std::string& path, const void* data, std::size_t n) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w <= 0) {
      ::close(fd);
      return false;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  const bool ok = ::fdatasync(fd) == 0;
  return ::close(fd) == 0 && ok;
}

// Today's synchronous checkpoint: each blob written, fsynced and renamed into place, then the folder
// fsynced.
bool sync_checkpoint(const std::string& dir, const blobs& b) {
  const std::pair<const char*, std::pair<const void*, std::size_t>> files[] = {
      {"weights", {b.weights.data(), b.weights.size()}},
      {"optimizer", {b.optimizer.data(), b.optimizer.size()}},
      {"manifest", {b.manifest.data(), b.manifest.size()}}};
  for (const auto& [name, data] : files) {
    const std::string final_path = dir + "/" + name, tmp = final_path + ".tmp";
    if (!write_file(tmp, data.first, data.second) || ::rename(tmp.c_str(), final_path.c_str()) != 0) return false;
  }
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const bool ok = fd >= 0 && ::fsync(fd) == 0;
  if (fd >= 0) ::close(fd);
  return ok;
}

transaction checkpoint_of(blob_store& store, const blobs& b) {
  transaction t = store.begin();
  t.put("weights", std::span<const std::byte>(b.weights));
  t.put("optimizer", std::span<const std::byte>(b.optimizer));
  t.put("manifest", std::string_view(b.manifest));
  return t;
}

struct summary {
  double median = 0, mean = 0, max = 0;
};
summary summarize(std::vector<double> v) {
  summary s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.median = v[v.size() / 2];
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  s.max = v.back();
  return s;
}
nlohmann::json to_json(const summary& s) { return {{"median_ms", s.median}, {"mean_ms", s.mean}, {"max_ms", s.max}}; }

// The buffer's limit and contents over time while a host pool takes budget in 64 MiB steps up to
// 448 of 512 MiB and gives it back, with a 32 MiB checkpoint every 100 ms (a little more than the
// disk writes, so the buffer fills to its limit). Writes <trace>.csv and <trace>.svg.
int budget_trace(const options& o) {
  constexpr double mib = 1 << 20;
  auto budget = std::make_shared<banyan::store::memory_budget>(512ull << 20);
  banyan::store::options so;
  so.floor_bytes = 32ull << 20;
  so.ceiling_bytes = 512ull << 20;
  so.budget = budget;
  auto opened = blob_store::open(o.dir + "/trace", so);
  if (!opened) {
    std::fprintf(stderr, "store_bench: %s\n", opened.error().what().c_str());
    return 1;
  }
  auto& store = **opened;
  const blobs data(32);
  struct sample {
    double t_ms, limit, buffered, taken;
  };
  std::vector<sample> samples;
  std::mutex m;
  std::atomic<bool> done{false};
  const auto start = clock_type::now();
  std::thread sampler([&] {
    while (!done) {
      const auto st = store.stats();
      {
        std::lock_guard lock(m);
        samples.push_back({ms_since(start), static_cast<double>(st.buffer_limit) / mib,
                           static_cast<double>(st.bytes_buffered) / mib, static_cast<double>(budget->taken()) / mib});
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a sampling period, not a wait
    }
  });
  std::thread pool([&] {
    const std::uint64_t step = 64ull << 20;
    std::this_thread::sleep_for(std::chrono::seconds(1));
    for (int i = 0; i < 7; ++i) {
      if (!budget->take(step, std::chrono::seconds(30))) std::fprintf(stderr, "store_bench: take timed out\n");
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
    for (int i = 0; i < 7; ++i) {
      budget->give(step);
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  });
  while (ms_since(start) < 9000) {
    spin(100);
    if (auto id = store.commit(checkpoint_of(store, data)); !id) {
      std::fprintf(stderr, "store_bench: %s\n", id.error().what().c_str());
      break;
    }
  }
  pool.join();
  done = true;
  sampler.join();
  const auto st = store.stats();

  std::FILE* csv = std::fopen((o.trace + ".csv").c_str(), "w");
  std::FILE* svg = std::fopen((o.trace + ".svg").c_str(), "w");
  if (csv == nullptr || svg == nullptr) {
    std::fprintf(stderr, "store_bench: cannot write %s.csv / .svg\n", o.trace.c_str());
    return 1;
  }
  std::fprintf(csv, "t_ms,buffer_limit_mib,bytes_buffered_mib,pool_taken_mib\n");
  for (const auto& s : samples) std::fprintf(csv, "%.0f,%.1f,%.1f,%.1f\n", s.t_ms, s.limit, s.buffered, s.taken);
  std::fclose(csv);
  // A plain line chart: x = seconds (0..9), y = MiB (0..512).
  const double w = 720, h = 300, left = 50, top = 20, x_max = 9000, y_max = 512;
  auto x = [&](double t) { return left + t / x_max * w; };
  auto y = [&](double v) { return top + h - v / y_max * h; };
  std::fprintf(svg,
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
               "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
               w + left + 160, h + top + 40);
  for (int v = 0; v <= 512; v += 128)
    std::fprintf(svg,
                 "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"%.0f\" y=\"%.1f\" "
                 "text-anchor=\"end\">%d</text>\n",
                 left, y(v), left + w, y(v), left - 5, y(v) + 4, v);
  for (int t = 0; t <= 9; ++t)
    std::fprintf(svg, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%d s</text>\n", x(t * 1000.0), top + h + 16,
                 t);
  std::fprintf(svg, "<text x=\"10\" y=\"%.0f\" transform=\"rotate(-90 10 %.0f)\">MiB</text>\n", top + h / 2,
               top + h / 2);
  const struct {
    const char* name;
    const char* color;
    double sample::*field;
  } series[] = {{"buffer limit", "#1f77b4", &sample::limit},
                {"bytes buffered", "#2ca02c", &sample::buffered},
                {"host pool's budget", "#d62728", &sample::taken}};
  int row = 0;
  for (const auto& se : series) {
    std::fprintf(svg, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", se.color);
    for (const auto& s : samples) std::fprintf(svg, "%.1f,%.1f ", x(s.t_ms), y(s.*(se.field)));
    std::fprintf(svg, "\"/>\n<text x=\"%.0f\" y=\"%.0f\" fill=\"%s\">%s</text>\n", left + w + 10, top + 20 + 18.0 * row,
                 se.color, se.name);
    ++row;
  }
  std::fprintf(svg, "</svg>\n");
  std::fclose(svg);
  std::printf("budget trace: %zu samples -> %s.csv, %s.svg; commits %llu, waited %llu (%.0f ms in all), durable %llu\n",
              samples.size(), o.trace.c_str(), o.trace.c_str(), static_cast<unsigned long long>(st.last_committed),
              static_cast<unsigned long long>(st.commit_waits), static_cast<double>(st.commit_wait_ns) / 1e6,
              static_cast<unsigned long long>(st.durable));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  CLI::App app{
      "store_bench: training stall per checkpoint, banyan::store's commit vs a synchronous write + fsync of "
      "the same bytes, durability latency, and the overhead of checkpointing every step"};
  app.add_option("--mb", o.mb, "Checkpoint size in MiB (weights 1/3, optimizer 2/3)")->check(CLI::PositiveNumber);
  app.add_option("--checkpoints", o.checkpoints, "Checkpoints per mode")->check(CLI::PositiveNumber);
  app.add_option("--step-ms", o.step_ms, "Host time of one training step (spinning)")->check(CLI::PositiveNumber);
  app.add_option("--every", o.every, "Steps between checkpoints")->check(CLI::PositiveNumber);
  app.add_option("--every-step-steps", o.every_step_steps, "Steps of the checkpoint-every-step run")
      ->check(CLI::PositiveNumber);
  app.add_option("--every-step-mb", o.every_step_mb, "Checkpoint size of the checkpoint-every-step run")
      ->check(CLI::PositiveNumber);
  app.add_option("--dir", o.dir, "Scratch folder (on the disk to measure; emptied first and at the end)");
  app.add_flag("--json", o.json, "Print the results as JSON on stdout");
  app.add_option("--budget-trace", o.trace,
                 "Instead: trace the buffer while a host pool takes and gives back budget; writes <path>.csv and "
                 "<path>.svg");
  CLI11_PARSE(app, argc, argv);

  std::error_code ec;
  std::filesystem::remove_all(o.dir, ec);
  std::filesystem::create_directories(o.dir + "/sync", ec);
  if (ec) {
    std::fprintf(stderr, "store_bench: cannot create `%s`: %s\n", o.dir.c_str(), ec.message().c_str());
    return 2;
  }
  if (!o.trace.empty()) {
    const int rc = budget_trace(o);
    std::filesystem::remove_all(o.dir, ec);
    return rc;
  }
  const blobs data(o.mb);
  banyan::progress_options po{.unit = "checkpoints"};
  if (o.json) po.show = banyan::progress_options::display::final_only;

  // 1. Synchronous: the step loop waits for every byte to be on disk.
  std::vector<double> sync_stall;
  {
    banyan::progress bar("sync write+fsync", static_cast<std::uint64_t>(o.checkpoints), po);
    for (int i = 0; i < o.checkpoints; ++i) {
      for (int s = 0; s < o.every; ++s) spin(o.step_ms);
      const auto t0 = clock_type::now();
      if (!sync_checkpoint(o.dir + "/sync", data)) {
        std::fprintf(stderr, "store_bench: synchronous checkpoint into `%s/sync` failed\n", o.dir.c_str());
        return 1;
      }
      sync_stall.push_back(ms_since(t0));
      bar.update(static_cast<std::uint64_t>(i + 1));
    }
    bar.finish();
  }

  // 2. The store: the step loop waits for the copy into the host buffer only.
  std::vector<double> store_stall, durable_after;
  banyan::store::store_stats stats;
  {
    auto opened = blob_store::open(o.dir + "/store");
    if (!opened) {
      std::fprintf(stderr, "store_bench: %s\n", opened.error().what().c_str());
      return 1;
    }
    auto& store = **opened;
    std::mutex m;
    std::vector<std::thread> waiters;
    banyan::progress bar("store commit", static_cast<std::uint64_t>(o.checkpoints), po);
    for (int i = 0; i < o.checkpoints; ++i) {
      for (int s = 0; s < o.every; ++s) spin(o.step_ms);
      const auto t0 = clock_type::now();
      auto id = store.commit(checkpoint_of(store, data));
      const auto committed = clock_type::now();
      store_stall.push_back(std::chrono::duration<double, std::milli>(committed - t0).count());
      if (!id) {
        std::fprintf(stderr, "store_bench: %s\n", id.error().what().c_str());
        return 1;
      }
      waiters.emplace_back([&, id = *id, committed] {
        if (store.wait_durable(id, std::chrono::minutes(5))) {
          std::lock_guard lock(m);
          durable_after.push_back(ms_since(committed));
        }
      });
      bar.update(static_cast<std::uint64_t>(i + 1));
    }
    for (auto& w : waiters) w.join();
    bar.finish();
    stats = store.stats();
  }

  // 3. Checkpoint every step vs none: the step time with the store's commit in it.
  const blobs small(o.every_step_mb);
  double plain_ms = 0, every_ms = 0;
  banyan::store::store_stats every_stats;
  {
    auto opened = blob_store::open(o.dir + "/every-step");
    if (!opened) {
      std::fprintf(stderr, "store_bench: %s\n", opened.error().what().c_str());
      return 1;
    }
    auto& store = **opened;
    auto t0 = clock_type::now();
    for (int s = 0; s < o.every_step_steps; ++s) spin(o.step_ms);
    plain_ms = ms_since(t0) / o.every_step_steps;
    banyan::progress bar("every step", static_cast<std::uint64_t>(o.every_step_steps), po);
    t0 = clock_type::now();
    for (int s = 0; s < o.every_step_steps; ++s) {
      spin(o.step_ms);
      if (auto id = store.commit(checkpoint_of(store, small)); !id) {
        std::fprintf(stderr, "store_bench: %s\n", id.error().what().c_str());
        return 1;
      }
      bar.update(static_cast<std::uint64_t>(s + 1));
    }
    every_ms = ms_since(t0) / o.every_step_steps;
    bar.finish();
    if (auto f = store.flush(std::chrono::minutes(5)); !f)
      std::fprintf(stderr, "store_bench: %s\n", f.error().what().c_str());
    every_stats = store.stats();
  }
  std::filesystem::remove_all(o.dir, ec);

  const auto sync_s = summarize(sync_stall), store_s = summarize(store_stall), durable_s = summarize(durable_after);
  const double ratio = store_s.median / sync_s.median;
  if (o.json) {
    nlohmann::json j{{"checkpoint_bytes", data.bytes()},
                     {"checkpoints", o.checkpoints},
                     {"step_ms", o.step_ms},
                     {"every", o.every},
                     {"sync_stall", to_json(sync_s)},
                     {"store_stall", to_json(store_s)},
                     {"store_first_stall_ms", store_stall.front()},
                     {"stall_ratio", ratio},
                     {"stall_reduction", 1 - ratio},
                     {"durable_after_commit", to_json(durable_s)},
                     {"commit_waits", stats.commit_waits},
                     {"commit_wait_ms", static_cast<double>(stats.commit_wait_ns) / 1e6},
                     {"every_step",
                      {{"checkpoint_bytes", small.bytes()},
                       {"plain_step_ms", plain_ms},
                       {"checkpointed_step_ms", every_ms},
                       {"overhead", every_ms / plain_ms - 1},
                       {"commit_waits", every_stats.commit_waits},
                       {"bytes_written", every_stats.bytes_written}}}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("checkpoint: %.1f MiB (3 blobs), every %d steps of %d ms, %d checkpoints per mode\n",
              static_cast<double>(data.bytes()) / (1 << 20), o.every, o.step_ms, o.checkpoints);
  std::printf("| mode | stall median ms | mean ms | max ms |\n|---|---:|---:|---:|\n");
  std::printf("| sync write+fsync+rename | %.1f | %.1f | %.1f |\n", sync_s.median, sync_s.mean, sync_s.max);
  std::printf("| store commit (copy in) | %.1f | %.1f | %.1f |\n", store_s.median, store_s.mean, store_s.max);
  std::printf("store: first commit (buffers not yet recycled) %.1f ms; spare buffers kept %.1f MiB\n",
              store_stall.front(), static_cast<double>(stats.bytes_pooled) / (1 << 20));
  std::printf("stall ratio store/sync: %.3f (%.1f%% less stall); commits that waited for room: %llu\n", ratio,
              100 * (1 - ratio), static_cast<unsigned long long>(stats.commit_waits));
  std::printf("durable after commit: median %.1f ms, max %.1f ms\n", durable_s.median, durable_s.max);
  std::printf(
      "checkpoint every step (%.1f MiB): step %.1f ms vs %.1f ms without: %+.1f%% (commits that waited: %llu)\n",
      static_cast<double>(small.bytes()) / (1 << 20), every_ms, plain_ms, 100 * (every_ms / plain_ms - 1),
      static_cast<unsigned long long>(every_stats.commit_waits));
  return 0;
}
