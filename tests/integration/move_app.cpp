// move_app: the app the live-move tests run (docs/runtime.md, "Moving subtrees live"), as one process
// or as several nodes whose subtrees `banyan reconfigure` moves while it runs.
//
// /mv { p0, p1, p2, s { sub, pub, srv }, u { sub, pub }, q, r }
// When the root says `ctl/go`, each publisher (p0..p2, s/pub, u/pub) publishes --messages messages `k = 1..N` on its
// own topic as fast as flow control lets it, in slices of 64 (a posted step each). Every subscriber (s/sub: data, u;
// u/sub: data, s; q: all five) checks, per publisher, that k arrives exactly once and in order (k == last + 1) and
// keeps an order-dependent digest per publisher; once it has all N of each it prints `DIGEST <path> <count> <digest>
// <faults>` (the digests of its publishers xored: the same for every deployment and any number of moves) and says
// `done`. /mv ends the run when all three are done. r requests `count` from s/srv, one request at a time; srv answers
// how many it has served, so r sees 1, 2, 3, ... exactly when every request was answered once and srv's count moved
// with it; r prints `REQUESTS answered <n> failed <n> out-of-order <n>` when it stops. A subscriber prints `RESTORED
// <path> <count>` when it starts from a moved state and `STOPPED <path> <count> <faults>` when it stops (also when the
// run is stopped before it has everything). Every component that moves keeps its state in snapshot/restore; a
// publisher's restore re-arms its loop (posted work does not move, as it does not survive a restart).
#include <banyan/sdk/sdk.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>

namespace {

struct config {
  std::uint64_t messages = 20000;
  std::uint64_t ballast = 0;  // bytes each subscriber adds to its state (a move's figure: pause vs state size)
  std::uint64_t busy_ms = 0;  // p0's first handler computes this long (a move's pause waits on it)
};

struct pub_message {
  std::uint32_t publisher;
  std::uint64_t k;
};

template <class T>
banyan::payload bytes_of(const T& value) {
  return banyan::payload::copy_of(std::string_view(reinterpret_cast<const char*>(&value), sizeof value));
}

template <class T>
bool read(const banyan::payload& p, T& out) {
  if (p.size() != sizeof out) return false;
  std::memcpy(&out, p.bytes().data(), sizeof out);
  return true;
}

class publisher : public banyan::leaf {
 public:
  publisher(config c, std::uint32_t id, std::string topic) : c_(c), id_(id), topic_(std::move(topic)) {}
  void on_start(banyan::context& ctx) override {
    if (k_ > 0) return ctx.post([this, &ctx] { step(ctx); });  // restored: go on
    (void)ctx.subscribe("ctl/go", [this, &ctx](const banyan::delivery&) {
      if (k_ == 0) step(ctx);
    });
  }
  void step(banyan::context& ctx) {
    if (k_ == 0 && id_ == 0 && c_.busy_ms > 0) {  // a long computation, as far as the SDK can tell
      std::printf("BUSY for %llu ms\n", static_cast<unsigned long long>(c_.busy_ms));
      std::fflush(stdout);
      std::this_thread::sleep_for(std::chrono::milliseconds(c_.busy_ms));
      ctx.log("busy done");
    }
    for (int i = 0; i < 64 && k_ < c_.messages; ++i) {
      ++k_;
      // A lost node fails every later publish to it: the first few say so.
      if (auto r = ctx.publish(topic_, bytes_of(pub_message{id_, k_})); !r && ++failed_ <= 3) ctx.log(r.error().what());
    }
    if (k_ < c_.messages) ctx.post([this, &ctx] { step(ctx); });
    else ctx.log("published all " + std::to_string(k_));
  }
  std::optional<banyan::payload> snapshot(banyan::context&) override { return bytes_of(k_); }
  void restore(banyan::context&, const banyan::payload& state) override { (void)read(state, k_); }

 private:
  config c_;
  std::uint32_t id_;
  std::string topic_;
  std::uint64_t k_ = 0;
  std::uint64_t failed_ = 0;
};

class subscriber : public banyan::leaf {
 public:
  subscriber(config c, std::vector<std::string> filters, std::size_t publishers)
      : c_(c), filters_(std::move(filters)), publishers_(publishers) {}
  void on_start(banyan::context& ctx) override {
    for (const auto& f : filters_)
      (void)ctx.subscribe(f, [this, &ctx](const banyan::delivery& d) { on_message(ctx, d); });
  }
  void on_message(banyan::context& ctx, const banyan::delivery& d) {
    pub_message m{};
    if (!read(d.data(), m)) {
      ++state_.faults;
      return;
    }
    auto& s = state_.per[m.publisher];
    if (m.k != s.last + 1 && ++state_.faults <= 5) {  // a gap (lost) or a repeat (duplicated) or out of order
      ctx.log("fault: publisher " + std::to_string(m.publisher) + " sent " + std::to_string(m.k) + " after " +
              std::to_string(s.last) + " (sequence " + std::to_string(d.sequence()) + ")");
    }
    s.last = m.k;
    ++s.count;
    s.digest = (s.digest ^ (m.k * 0x9e3779b97f4a7c15ULL + m.publisher)) * 1099511628211ULL;
    if (done_ || state_.per.size() < publishers_) return;
    for (const auto& [id, p] : state_.per)
      if (p.count < c_.messages) return;
    done_ = true;
    std::uint64_t digest = 0, count = 0;
    for (const auto& [id, p] : state_.per) {
      digest ^= p.digest;
      count += p.count;
    }
    std::printf("DIGEST %s %llu %016llx %llu\n", ctx.path().c_str(), static_cast<unsigned long long>(count),
                static_cast<unsigned long long>(digest), static_cast<unsigned long long>(state_.faults));
    std::fflush(stdout);
    (void)ctx.publish("done/" + std::to_string(state_.faults), "x", banyan::scope::root());
  }
  std::optional<banyan::payload> snapshot(banyan::context&) override {
    std::string out;
    auto put = [&](const auto& v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); };
    put(c_.ballast);
    out.append(c_.ballast, '\0');
    put(state_.faults);
    put(static_cast<std::uint8_t>(done_));
    for (const auto& [id, p] : state_.per) {
      put(id);
      put(p);
    }
    return banyan::payload::copy_of(out);
  }
  void restore(banyan::context& ctx, const banyan::payload& state) override {
    const char* b = reinterpret_cast<const char*>(state.bytes().data());
    std::size_t at = 0, n = state.size();
    auto get = [&](auto& v) {
      if (n - at < sizeof v) return false;
      std::memcpy(&v, b + at, sizeof v);
      at += sizeof v;
      return true;
    };
    std::uint8_t done = 0;
    std::uint64_t ballast = 0;
    if (!get(ballast) || n - at < ballast) return;
    at += ballast;
    if (!get(state_.faults) || !get(done)) return;
    done_ = done != 0;
    std::uint32_t id;
    per_publisher p;
    while (get(id) && get(p)) state_.per[id] = p;
    std::uint64_t count = 0;
    for (const auto& [i, q] : state_.per) count += q.count;
    std::printf("RESTORED %s %llu\n", ctx.path().c_str(), static_cast<unsigned long long>(count));
    std::fflush(stdout);
  }
  // Where it got to, however the run ends (a test that stops the run reads it).
  void on_stop(banyan::context& ctx) override {
    std::uint64_t count = 0;
    for (const auto& [i, q] : state_.per) count += q.count;
    std::printf("STOPPED %s %llu %llu\n", ctx.path().c_str(), static_cast<unsigned long long>(count),
                static_cast<unsigned long long>(state_.faults));
    std::fflush(stdout);
  }

 private:
  struct per_publisher {
    std::uint64_t last = 0, count = 0, digest = 1469598103934665603ULL;
  };
  struct {
    std::map<std::uint32_t, per_publisher> per;
    std::uint64_t faults = 0;
  } state_;
  config c_;
  std::vector<std::string> filters_;
  std::size_t publishers_;
  bool done_ = false;
};

class server : public banyan::leaf {
 public:
  void on_start(banyan::context& ctx) override {
    ctx.serve("count",
              [this](const banyan::payload&) -> banyan::result<banyan::payload> { return bytes_of(++served_); });
  }
  std::optional<banyan::payload> snapshot(banyan::context&) override { return bytes_of(served_); }
  void restore(banyan::context&, const banyan::payload& state) override { (void)read(state, served_); }

 private:
  std::uint64_t served_ = 0;
};

class requester : public banyan::leaf {
 public:
  void on_start(banyan::context& ctx) override { ask(ctx); }
  void ask(banyan::context& ctx) {
    if (stopping_) return;
    ctx.request("/mv/s/srv", "count", banyan::payload::copy_of("?"), std::chrono::seconds(20),
                [this, &ctx](banyan::result<banyan::payload> r) {
                  std::uint64_t n = 0;
                  if (!r || !read(*r, n)) {
                    ++failed_;
                    if (!r) ctx.log("request failed: " + r.error().message);
                  } else {
                    ++answered_;
                    if (n != answered_) ++out_of_order_;
                  }
                  ask(ctx);
                });
  }
  void on_stop(banyan::context&) override {
    stopping_ = true;
    std::printf("REQUESTS answered %llu failed %llu out-of-order %llu\n", static_cast<unsigned long long>(answered_),
                static_cast<unsigned long long>(failed_), static_cast<unsigned long long>(out_of_order_));
    std::fflush(stdout);
  }

 private:
  std::uint64_t answered_ = 0, failed_ = 0, out_of_order_ = 0;
  bool stopping_ = false;
};

class root : public banyan::composite {
 public:
  // Every subscriber has subscribed (on every node: a publish waits until every node is ready).
  void on_children_started(banyan::context& ctx) override { (void)ctx.publish("ctl/go", "go", banyan::scope::root()); }
  void on_start(banyan::context& ctx) override {
    (void)ctx.subscribe("done/+", [this, &ctx](const banyan::delivery& d) {
      if (d.topic() != "done/0") faults_ = true;
      if (++done_ == 3) {
        ctx.log(faults_ ? "a subscriber saw faults" : "every subscriber got everything exactly once, in order");
        ctx.quit(faults_ ? 1 : 0);
      }
    });
  }

 private:
  int done_ = 0;
  bool faults_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  config c;
  banyan::app app{"mv", {}, std::in_place_type<root>};
  app.options().add("--messages", c.messages, "Messages per publisher").positive();
  app.options().add("--ballast", c.ballast, "Bytes each subscriber adds to its state (moved with it)");
  app.options().add("--busy-ms", c.busy_ms, "p0's first handler computes this long before it publishes");
  for (std::uint32_t i = 0; i < 3; ++i)
    app.root().add_leaf<publisher>("p" + std::to_string(i), c, i, "data/p" + std::to_string(i));
  auto& s = app.root().add_composite("s");
  s.add_leaf<subscriber>("sub", c, std::vector<std::string>{"data/#", "u/#"}, std::size_t{4});
  s.add_leaf<publisher>("pub", c, std::uint32_t{3}, std::string("s/pub"));
  s.add_leaf<server>("srv");
  auto& u = app.root().add_composite("u");
  u.add_leaf<subscriber>("sub", c, std::vector<std::string>{"data/#", "s/#"}, std::size_t{4});
  u.add_leaf<publisher>("pub", c, std::uint32_t{4}, std::string("u/pub"));
  app.root().add_leaf<subscriber>("q", c, std::vector<std::string>{"data/#", "s/#", "u/#"}, std::size_t{5});
  app.root().add_leaf<requester>("r");
  return banyan::run(app, argc, argv);
}
