// factory: three production lines of four machines each, a quality service and a ledger.
//
//   /factory                         root, one_for_one
//     quality                         serves `inspect` (typed: Inspection -> Verdict)
//     ledger                          subscribes line/+/packed (a wildcard); its dynamic child
//       auditor                       is started once every line is done, asked, and removed
//     line1 (one_for_one)  line2 (one_for_all)  line3 (rest_for_one)
//       feeder -> cutter -> press -> packer     topics line/<n>/raw, cut, pressed (scope: the line)
//
// Each line makes --parts parts, one at a time: the feeder sends the next part when the last one
// was packed (line/<n>/packed, published to the whole factory), --pace later. Every
// press jams on part --jam-at once (it throws; it keeps that it has jammed as its state), so each
// line's supervisor restarts it under its own strategy: line1 restarts the press, line2 the whole
// line (the feeder keeps its place with keep_state), line3 the press and the packer. After each
// (re)start a line tells its feeder to send its current part again (line/<n>/go), so no part is
// lost. The packer asks the quality service for a grade with a typed request, and asks again
// when the request fails (the service's node was lost: a failover restarts it elsewhere).
//
// Lines starting `FACTORY ` are the result: the same, sorted, in one process and on any
// deployment (samples/factory/three_nodes.sh runs it on three nodes whose cuts separate every line
// from its machines and compares), and when a node other than the root's is killed mid-run under
// `banyan launch --state-dir` (tests/integration/samples_failover_test.cpp): the machines it ran
// fail over with the states they kept (the feeders' places, the presses' jams), and every part
// sent again is packed once.
#include <banyan/sdk/sdk.hpp>

#include "factory.capnp.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <string>

namespace {

struct config {
  int parts = 6;
  int jam_at = 3;
  std::chrono::milliseconds pace{0};  // between a part packed and the next sent
};

void say(const std::string& line) {
  std::printf("FACTORY %s\n", line.c_str());
  std::fflush(stdout);
}

std::string topic(int line, const char* what) { return "line/" + std::to_string(line) + "/" + what; }

// Sends the line's parts one at a time; its place (the next part) survives its restarts.
class feeder : public banyan::leaf {
 public:
  feeder(int line, config c) : line_(line), c_(c) {}
  void on_start(banyan::context& ctx) override {
    (void)ctx.subscribe(topic(line_, "go"), [this, &ctx](const banyan::delivery&) { send(ctx); });
    (void)ctx.subscribe<Part>(topic(line_, "packed"), [this, &ctx](Part::Reader p, const banyan::delivery&) {
      if (static_cast<int>(p.getSerial()) != next_) return;  // a part sent again, packed twice
      ++next_;
      ctx.checkpoint();
      if (c_.pace.count() == 0) return send(ctx);
      ctx.after(c_.pace, [this, &ctx, part = next_] {
        if (part == next_) send(ctx);  // not sent already by a `go`
      });
    });
  }
  std::optional<banyan::payload> snapshot(banyan::context&) override {
    return banyan::payload::copy_of(std::to_string(next_));
  }
  void restore(banyan::context&, const banyan::payload& state) override {
    next_ = std::stoi(std::string(reinterpret_cast<const char*>(state.bytes().data()), state.size()));
  }

 private:
  void send(banyan::context& ctx) {
    if (next_ > c_.parts) return;
    (void)ctx.publish<Part>(
        topic(line_, "raw"),
        [&](Part::Builder p) {
          p.setLine(static_cast<std::uint8_t>(line_));
          p.setSerial(static_cast<std::uint32_t>(next_));
        },
        banyan::scope::parent());
  }
  int line_;
  config c_;
  int next_ = 1;
};

// Cuts: gives the part its weight.
class cutter : public banyan::leaf {
 public:
  explicit cutter(int line) : line_(line) {}
  void on_start(banyan::context& ctx) override {
    (void)ctx.subscribe<Part>(topic(line_, "raw"), [this, &ctx](Part::Reader in, const banyan::delivery&) {
      const std::uint32_t serial = in.getSerial();
      (void)ctx.publish<Part>(
          topic(line_, "cut"),
          [&](Part::Builder p) {
            p.setLine(static_cast<std::uint8_t>(line_));
            p.setSerial(serial);
            p.setWeight(900 + (serial * 37 + static_cast<std::uint32_t>(line_) * 11) % 200);
          },
          banyan::scope::parent());
    });
  }

 private:
  int line_;
};

// The faulty machine: jams (throws) on part jam_at, once. That it has jammed is its kept state,
// checkpointed before it throws, so its next incarnation (here, or on another node after a
// failover) does not jam again.
class press : public banyan::leaf {
 public:
  press(int line, config c) : line_(line), c_(c) {}
  void on_start(banyan::context& ctx) override {
    (void)ctx.subscribe<Part>(topic(line_, "cut"), [this, &ctx](Part::Reader in, const banyan::delivery&) {
      if (static_cast<int>(in.getSerial()) == c_.jam_at && !jammed_) {
        jammed_ = true;
        ctx.checkpoint();
        throw std::runtime_error("jammed on part " + std::to_string(c_.jam_at));
      }
      const std::uint32_t serial = in.getSerial(), weight = in.getWeight();
      (void)ctx.publish<Part>(
          topic(line_, "pressed"),
          [&](Part::Builder p) {
            p.setLine(static_cast<std::uint8_t>(line_));
            p.setSerial(serial);
            p.setWeight(weight);
          },
          banyan::scope::parent());
    });
  }
  void on_failure(banyan::context& ctx, const std::string& reason) override { ctx.log("cleanup after: " + reason); }
  std::optional<banyan::payload> snapshot(banyan::context&) override {
    return banyan::payload::copy_of(std::string(jammed_ ? "jammed" : "fine"));
  }
  void restore(banyan::context&, const banyan::payload& state) override { jammed_ = state.size() == 6; }

 private:
  int line_;
  config c_;
  bool jammed_ = false;
};

// Packs: asks the quality service for a grade (a typed request), then reports the part packed.
class packer : public banyan::leaf {
 public:
  explicit packer(int line) : line_(line) {}
  void on_start(banyan::context& ctx) override {
    (void)ctx.subscribe<Part>(topic(line_, "pressed"), [this, &ctx](Part::Reader in, const banyan::delivery&) {
      inspect(ctx, in.getSerial(), in.getWeight(), 0);
    });
  }

 private:
  // Asks for the part's grade, and asks again a little later when the request fails: an
  // inspection changes nothing, so asking twice is harmless (at least once).
  void inspect(banyan::context& ctx, std::uint32_t serial, std::uint32_t weight, int attempt) {
    auto query = banyan::payload::build<Inspection>([&](Inspection::Builder q) {
      q.setLine(static_cast<std::uint8_t>(line_));
      q.setSerial(serial);
      q.setWeight(weight);
    });
    ctx.request<Verdict>("/factory/quality", "inspect", query, std::chrono::seconds(20),
                         [this, &ctx, serial, weight, attempt](banyan::result<Verdict::Reader> v) {
                           if (!v) {
                             ctx.log("no verdict for part " + std::to_string(serial) + ": " + v.error().what());
                             if (attempt + 1 < max_attempts)
                               ctx.after(std::chrono::milliseconds(250),
                                         [=, this, &ctx] { inspect(ctx, serial, weight, attempt + 1); });
                             return;
                           }
                           std::string grade = v->getGrade().cStr();
                           (void)ctx.publish<Part>(
                               topic(line_, "packed"),
                               [&](Part::Builder p) {
                                 p.setLine(static_cast<std::uint8_t>(line_));
                                 p.setSerial(serial);
                                 p.setWeight(weight);
                                 p.setGrade(grade);
                               },
                               banyan::scope::root());
                         });
  }
  static constexpr int max_attempts = 40;  // 10 s: a failover takes about one
  int line_;
};

// A line: supervises its machines and, after each (re)start of them, has the feeder send its
// current part again.
class line : public banyan::composite {
 public:
  explicit line(int number) : number_(number) {}
  void on_children_started(banyan::context& ctx) override {
    (void)ctx.publish(topic(number_, "go"), std::string_view{}, banyan::scope::self());
  }
  void on_child_failure(banyan::context& ctx, const std::string& child, const std::string& reason) override {
    say("FAILURE " + child + ": " + reason + " (" + ctx.path() + " restarts by its strategy)");
  }

 private:
  int number_;
};

class quality : public banyan::leaf {
 public:
  void on_start(banyan::context& ctx) override {
    ctx.serve<Inspection, Verdict>("inspect", [](Inspection::Reader q, Verdict::Builder v) -> banyan::result<void> {
      v.setGrade(q.getWeight() >= 1000 ? "A" : q.getWeight() >= 950 ? "B" : "C");
      return {};
    });
  }
};

// Audits the ledger's totals when asked (a dynamic child: it runs only while it is needed).
class auditor : public banyan::leaf {
 public:
  void on_start(banyan::context& ctx) override {
    ctx.serve_text("audit", [](std::string_view totals) -> banyan::result<std::string> {
      std::uint64_t sum = 0;
      for (char ch : totals) sum = sum * 31 + static_cast<unsigned char>(ch);
      return "checked " + std::to_string(totals.size()) + " bytes, checksum " + std::to_string(sum % 1000003);
    });
  }
};

// Collects every line's packed parts (a wildcard subscription); once all are in, starts its
// auditor, has it check the totals, removes it and ends the run.
class ledger : public banyan::composite {
 public:
  explicit ledger(config c) : c_(c) {}
  void on_start(banyan::context& ctx) override {
    (void)ctx.subscribe<Part>("line/+/packed", [this, &ctx](Part::Reader p, const banyan::delivery&) {
      if (!packed_[p.getLine()].emplace(p.getSerial(), std::string(p.getGrade().cStr())).second) return;
      if (done_ || !all_in()) return;
      done_ = true;
      for (const auto& [number, parts] : packed_) {
        std::string row = "line " + std::to_string(number) + ":";
        for (const auto& [serial, grade] : parts) row += " " + std::to_string(serial) + grade;
        say(row);
        totals_ += row + "\n";
      }
      auto started = ctx.start_child("auditor");
      if (!started) return say("auditor: " + started.error().what());
      (void)ctx.monitor("/factory/ledger/auditor", [&ctx](const std::string& path, const std::string& reason) {
        say("DOWN " + path + ": " + reason);
        if (reason == "stopped") ctx.quit(0);
      });
    });
  }
  void on_children_started(banyan::context& ctx) override {
    if (!done_) return;  // the auditor is not started yet
    ctx.request_text("/factory/ledger/auditor", "audit", totals_, std::chrono::seconds(20),
                     [&ctx](banyan::result<std::string> r) {
                       say("AUDIT " + (r ? *r : r.error().what()));
                       auto stopped = ctx.stop_child("auditor");
                       if (!stopped) say("auditor: " + stopped.error().what());
                     });
  }

 private:
  bool all_in() const {
    if (packed_.size() != 3) return false;
    for (const auto& [number, parts] : packed_)
      if (static_cast<int>(parts.size()) != c_.parts) return false;
    return true;
  }
  config c_;
  std::map<int, std::map<std::uint32_t, std::string>> packed_;
  bool done_ = false;
  std::string totals_;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  config c;
  banyan::app app{"factory", {banyan::restart_strategy::one_for_one, 3, 10s}};
  app.options().add("--parts", c.parts, "Parts each line makes").positive();
  app.options().add("--jam-at", c.jam_at, "The part each press jams on, once").positive();
  app.options().add("--pace", c.pace, "Time between a part packed and the next sent (e.g. 20ms)");
  if (auto code = app.options().parse(argc, argv)) return *code;

  // Services first: children start in order, so the quality service and the ledger are up before
  // any line sends its first part.
  app.root().add_leaf<quality>("quality");
  auto& books = app.root().add_composite<ledger>("ledger", {}, c);
  books.add_leaf<auditor>("auditor").dynamic();
  const banyan::restart_strategy strategies[] = {banyan::restart_strategy::one_for_one,
                                                 banyan::restart_strategy::one_for_all,
                                                 banyan::restart_strategy::rest_for_one};
  for (int n = 1; n <= 3; ++n) {
    auto& l = app.root().add_composite<line>("line" + std::to_string(n), {strategies[n - 1], 3, 10s}, n);
    l.add_leaf<feeder>("feeder", n, c).keep_state();
    l.add_leaf<cutter>("cutter", n);
    l.add_leaf<press>("press", n, c).keep_state();
    l.add_leaf<packer>("packer", n);
  }
  return banyan::run(app, argc, argv);
}
