// mesh_app: the app the multi-node integration tests run, single-process or as several nodes.
//
// /mesh { zone0 { pub, sub, slow { sub } }, zone1 { ... }, zone2 { ... }, checker }
// When the root says `ctl/go`, each pub publishes --messages messages (paced with --pace-ms) on `data/<zone>` to the
// whole mesh and every tenth one on `local/<zone>` to its own zone. Every sub checks that each publisher's sequence
// numbers arrive in increasing order, counts what it got, and when it has everything says so on `done/...`; the checker
// ends the run when every sub is done (exit 0) or when one reports a fault (exit 1). On stop each sub prints `DIGEST
// <path> <count> <hash>`, an order-independent hash of what it got, so runs on different deployments can be compared.
// With --requests the checker also makes four requests (a reply, an unknown method, a service error, a timeout) and
// prints `REQUEST <n> <outcome>`; pubs serve `echo` and `fail`, subs serve `stall` and `stall-long`.
#include <banyan/sdk/sdk.hpp>

#include <cstdio>
#include <filesystem>
#include <map>
#include <thread>

namespace {

constexpr int zones = 3;

struct config {
  std::uint64_t messages = 1000;
  std::size_t payload_bytes = 16;
  std::uint64_t slow_us = 0;  // extra work per message in the `slow` subs
  std::uint64_t pace_ms = 0;  // 0: publish as fast as possible; else 100 messages per this many ms
  bool requests = false;
  bool request_lost = false;  // the checker asks zone2's sub for `stall-long` (60 s), to be cut short
  std::string hold_until;     // when everything arrived, end the run only once this file exists
};

void spin_for(std::chrono::microseconds d) {
  auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
  }
}

std::string text_of(const banyan::payload& p) {
  return std::string(reinterpret_cast<const char*>(p.bytes().data()), p.bytes().size());
}

std::uint64_t mix(std::uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return h;
}

std::uint64_t hash_text(const std::string& s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

class publisher : public banyan::leaf {
 public:
  publisher(config c, int zone) : c_(c), zone_(zone) {}
  void on_start(banyan::context& ctx) override {
    (void)ctx.subscribe("ctl/go", [this, &ctx](const banyan::delivery&) { burst(ctx); });
    ctx.serve("echo", [&ctx](const banyan::payload& p) -> banyan::result<banyan::payload> {
      return banyan::payload::copy_of(text_of(p) + " from " + ctx.path());
    });
    ctx.serve("fail", [](const banyan::payload&) -> banyan::result<banyan::payload> {
      return banyan::error{banyan::sdk::errc::invalid_argument, "refused"};
    });
  }

 private:
  void burst(banyan::context& ctx) {
    // Publish in slices so the actor stays responsive.
    if (sent_ == 0 && c_.pace_ms) ctx.log("publishing, paced");
    const int slice = c_.pace_ms ? 100 : 1000;
    for (int k = 0; k < slice && sent_ < c_.messages; ++k, ++sent_) {
      std::string body(c_.payload_bytes, static_cast<char>('a' + sent_ % 26));
      auto r = ctx.publish("data/z" + std::to_string(zone_), std::string_view(body), banyan::scope::root());
      if (!r && failed_++ == 0) ctx.log(r.error().what());  // the first; the total at the end
      if (sent_ % 10 == 0)
        (void)ctx.publish("local/z" + std::to_string(zone_), std::string_view(body), banyan::scope::up(1));
    }
    if (sent_ < c_.messages && c_.pace_ms)
      ctx.after(std::chrono::milliseconds(c_.pace_ms), [this, &ctx] { burst(ctx); });
    else if (sent_ < c_.messages) ctx.post([this, &ctx] { burst(ctx); });
  }
  // Every message is delivered once or reported: refused by publish() (failed_) or handed back by a
  // node that was lost with it pending (undelivered_).
  void on_undelivered(banyan::context& ctx, const std::string& node, std::uint64_t count, const std::string&) override {
    undelivered_ += count;
    ctx.log("told: " + std::to_string(count) + " messages for node `" + node + "` will not be delivered");
  }
  void on_stop(banyan::context& ctx) override {
    if (failed_ || undelivered_) {
      std::printf("UNDELIVERED %s refused %llu handed back %llu\n", ctx.path().c_str(),
                  static_cast<unsigned long long>(failed_), static_cast<unsigned long long>(undelivered_));
      std::fflush(stdout);
    }
  }
  config c_;
  int zone_;
  std::uint64_t sent_ = 0, failed_ = 0, undelivered_ = 0;
};

class subscriber : public banyan::leaf {
 public:
  subscriber(config c, int zone, bool slow) : c_(c), zone_(zone), slow_(slow) {}
  void on_start(banyan::context& ctx) override {
    // Every data message of every zone, and the local ones of our own zone.
    expected_ = zones * c_.messages + (c_.messages + 9) / 10;
    auto handle = [this, &ctx](const banyan::delivery& d) {
      auto& last = last_seq_[d.sender()];
      if (d.sequence() <= last) {
        (void)ctx.publish(
            "fault/" + std::to_string(zone_),
            "order: " + d.sender() + " " + std::to_string(d.sequence()) + " after " + std::to_string(last),
            banyan::scope::root());
      }
      last = d.sequence();
      digest_ += mix(hash_text(d.sender()) ^ mix(d.sequence()) ^ hash_text(d.topic()));
      if (slow_ && c_.slow_us) spin_for(std::chrono::microseconds(c_.slow_us));
      if (++count_ == expected_) (void)ctx.publish("done" + ctx.path(), std::string_view{}, banyan::scope::root());
    };
    (void)ctx.subscribe("data/+", handle);
    (void)ctx.subscribe("local/z" + std::to_string(zone_), handle);
    ctx.serve("stall", [](const banyan::payload&) -> banyan::result<banyan::payload> {
      spin_for(std::chrono::milliseconds(300));
      return banyan::payload{};
    });
    ctx.serve("stall-long", [](const banyan::payload&) -> banyan::result<banyan::payload> {
      spin_for(std::chrono::seconds(60));
      return banyan::payload{};
    });
  }
  void on_stop(banyan::context& ctx) override {
    std::printf("DIGEST %s %llu %016llx\n", ctx.path().c_str(), static_cast<unsigned long long>(count_),
                static_cast<unsigned long long>(digest_));
    std::fflush(stdout);
  }

 private:
  config c_;
  int zone_;
  bool slow_;
  std::uint64_t expected_ = 0, count_ = 0, digest_ = 0;
  std::map<std::string, std::uint64_t> last_seq_;
};

// The root says "go" once its children have started (in a multi-node run the publish is held until
// every node is ready, so every subscription everywhere is in place first).
class mesh : public banyan::composite {
  void on_children_started(banyan::context& ctx) override {
    if (!started_) (void)ctx.publish("ctl/go", std::string_view{}, banyan::scope::root());
    started_ = true;
  }
  bool started_ = false;
};

class checker : public banyan::leaf {
 public:
  checker(int subs, const config& c)
      : subs_(subs), requests_(c.requests ? 4 : 0), request_lost_(c.request_lost), hold_until_(c.hold_until) {}
  void on_start(banyan::context& ctx) override {
    (void)ctx.subscribe("done/#", [this, &ctx](const banyan::delivery&) {
      if (++done_ == subs_) ctx.log("every subscriber got everything");
      maybe_quit(ctx);
    });
    (void)ctx.subscribe("ctl/go", [this, &ctx](const banyan::delivery&) {
      using namespace std::chrono_literals;
      if (requests_) {
        ask(ctx, 1, "/mesh/zone1/pub", "echo", "hello", 10s);
        ask(ctx, 2, "/mesh/zone2/pub", "nope", "", 10s);
        ask(ctx, 3, "/mesh/zone2/pub", "fail", "", 10s);
        ask(ctx, 4, "/mesh/zone1/slow/sub", "stall", "", 100ms);
      }
      if (request_lost_) ask(ctx, 5, "/mesh/zone2/sub", "stall-long", "", 90s);
    });
    (void)ctx.subscribe("fault/+", [&ctx](const banyan::delivery& d) {
      ctx.log("fault: " + std::string(reinterpret_cast<const char*>(d.bytes().data()), d.bytes().size()));
      ctx.quit(1);
    });
  }

 private:
  void ask(banyan::context& ctx, int n, const std::string& path, const std::string& method, const std::string& body,
           std::chrono::milliseconds timeout) {
    ctx.request(path, method, banyan::payload::copy_of(body), timeout,
                [this, &ctx, n](banyan::result<banyan::payload> r) {
                  std::printf("REQUEST %d %s\n", n, r ? ("ok " + text_of(*r)).c_str() : r.error().what().c_str());
                  std::fflush(stdout);
                  ++answered_;
                  maybe_quit(ctx);
                });
  }
  void maybe_quit(banyan::context& ctx) {
    if (done_ != subs_ || answered_ != requests_) return;
    if (hold_until_.empty() || std::filesystem::exists(hold_until_)) return ctx.quit(0);
    // Held: the traffic is over and its counters stay as they are until the test says so.
    ctx.after(std::chrono::milliseconds(50), [this, &ctx] { maybe_quit(ctx); });
  }
  int subs_, requests_;
  bool request_lost_;
  std::string hold_until_;
  int done_ = 0, answered_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  config c;
  banyan::app app{"mesh", banyan::supervision{}, std::in_place_type<mesh>};
  auto& options = app.options();
  options.add("--messages", c.messages, "Messages per publisher");
  options.add("--payload", c.payload_bytes, "Payload bytes");
  options.add("--slow-us", c.slow_us, "Extra microseconds per message in the slow subscribers");
  options.add("--pace-ms", c.pace_ms, "Publish 100 messages per this many milliseconds (0: as fast as possible)");
  options.add("--requests", c.requests, "The checker also makes four requests to other components");
  options.add("--request-lost", c.request_lost, "The checker asks zone2's sub for a 60 s stall");
  options.add("--hold-until", c.hold_until, "When everything arrived, end the run only once this file exists");
  // The options shape the tree, so they are read before it is built (run() parses again).
  if (auto exit_code = options.parse(argc, argv)) return *exit_code;
  app.root().add_leaf<checker>("checker", zones * 2, c);
  for (int z = 0; z < zones; ++z) {
    auto& zone = app.root().add_composite("zone" + std::to_string(z));
    zone.add_leaf<subscriber>("sub", c, z, false);
    zone.add_composite("slow").add_leaf<subscriber>("sub", c, z, true);
    zone.add_leaf<publisher>("pub", c, z);
  }
  return banyan::run(app, argc, argv);
}
