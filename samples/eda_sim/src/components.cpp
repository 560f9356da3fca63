#include <banyan/eda_sim/components.hpp>

#include <chrono>
#include <cstring>
#include <deque>
#include <functional>

namespace banyan::eda {
namespace {

constexpr std::size_t header = sizeof(std::uint64_t);

class gate_component final : public banyan::leaf {
 public:
  gate_component(std::shared_ptr<component_run> run, int leaf) : run_(std::move(run)), leaf_(leaf) {}

  void on_start(banyan::context& ctx) override {
    const design& d = *run_->d;
    const auto& spec = d.leaves[leaf_];
    eng_ = std::make_unique<leaf_engine>(spec);
    io_ = leaf_ == d.io_leaf();
    // Inputs: one subscription per group; its queue holds messages of later cycles.
    for (int g : spec.in_groups) {
      const auto& gr = d.groups[g];
      const std::size_t r = std::lower_bound(gr.readers.begin(), gr.readers.end(), leaf_) - gr.readers.begin();
      const int k = static_cast<int>(ins_.size());
      ins_.push_back({g, &gr.reader_slots[r], eng_->add_trigger(gr.reader_slots[r]), {}});
      (void)ctx.subscribe(gr.topic, [this, k, &ctx](const banyan::delivery& m) {
        ins_[k].queue.push_back(m.data());
        progress(ctx);
      });
    }
    // Outputs: the input groups each one depends on (backward cone through the program).
    std::vector<int> producer(spec.slots, -1);
    for (std::size_t i = 0; i < spec.program.size(); ++i) producer[spec.program[i].y] = static_cast<int>(i);
    for (int g : spec.out_groups) {
      const auto& gr = d.groups[g];
      std::vector<char> seen(spec.slots, 0);
      std::vector<std::uint32_t> stack(gr.driver_slots.begin(), gr.driver_slots.end());
      while (!stack.empty()) {
        const auto s = stack.back();
        stack.pop_back();
        if (seen[s]) continue;
        seen[s] = 1;
        if (producer[s] >= 0) {
          for_each_input(spec, spec.program[producer[s]], [&](std::uint32_t in) { stack.push_back(in); });
        }
      }
      out_group o{g, {}, std::vector<lanes>(gr.driver_slots.size(), lanes::x()), levels_up(d, gr.scope)};
      for (std::size_t k = 0; k < ins_.size(); ++k)
        for (auto s : *ins_[k].slots)
          if (seen[s]) {
            o.deps.push_back(static_cast<int>(k));
            break;
          }
      outs_.push_back(std::move(o));
    }
    received_.assign(ins_.size(), 0);
    sent_.assign(outs_.size(), 0);
    (void)ctx.subscribe("ctl/go", [this, &ctx](const banyan::delivery&) {
      started_ = std::chrono::steady_clock::now();
      running_ = true;
      progress(ctx);
    });
  }

 private:
  struct in_group {
    int group;
    const std::vector<std::uint32_t>* slots;
    int trigger;
    std::deque<banyan::payload> queue;
  };
  struct out_group {
    int group;
    std::vector<int> deps;   // in_ indices
    std::vector<lanes> last;
    std::uint32_t up;        // scope: levels above this leaf
  };

  std::uint32_t levels_up(const design& d, int scope_inst) const {
    std::uint32_t n = 1;  // leaf -> its instance
    for (int i = d.leaves[leaf_].instance; i != scope_inst; i = d.instances[i].parent) ++n;
    return n;
  }

  void start_cycle() {
    if (!io_) return;
    const design& d = *run_->d;
    in_bits_.resize(input_bits(d));
    run_->stim->fill(cycle_, in_bits_);
    const std::uint64_t mask = run_->lanes >= 64 ? ~0ull : (1ull << run_->lanes) - 1;
    std::size_t k = 0;
    for (const auto& p : d.inputs)
      for (auto s : p.slots) {
        lanes v = in_bits_[k++];
        v.hi &= mask;
        v.lo |= ~mask;
        eng_->slot(s) = v;
      }
  }

  void end_cycle(banyan::context& ctx) {
    if (!io_) {
      eng_->clock_edge();
      return;
    }
    const design& d = *run_->d;
    const std::uint64_t mask = run_->lanes >= 64 ? ~0ull : (1ull << run_->lanes) - 1;
    auto& t = run_->samples;
    for (const auto& p : d.outputs)
      for (auto s : p.slots) {
        const lanes v = eng_->slot(s);
        run_->signature = (run_->signature ^ (v.hi & mask)) * 0x100000001b3ull;
        run_->signature = (run_->signature ^ (v.unknown() & mask)) * 0x100000001b3ull;
      }
    if (t.lanes) {
      for (unsigned l = 0; l < t.lanes; ++l)
        for (const auto& p : d.outputs)
          for (auto s : p.slots) t.samples.push_back(static_cast<std::uint8_t>(eng_->slot(s).get(l)));
    }
    run_->cycles_done = cycle_ + 1;
    if (cycle_ + 1 == run_->cycles) {
      run_->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
      ctx.quit(0);
    }
  }

  void send(banyan::context& ctx, out_group& o) {
    const auto& gr = run_->d->groups[o.group];
    bool changed = false;
    for (std::size_t i = 0; i < gr.driver_slots.size(); ++i) {
      const lanes v = eng_->slot(gr.driver_slots[i]);
      if (!(v == o.last[i])) o.last[i] = v, changed = true;
    }
    buf_.resize(header + (changed ? o.last.size() * sizeof(lanes) : 0));
    std::memcpy(buf_.data(), &cycle_, header);
    if (changed) std::memcpy(buf_.data() + header, o.last.data(), o.last.size() * sizeof(lanes));
    auto r = ctx.publish(gr.topic, banyan::payload::copy_of(std::span<const std::byte>(buf_)), banyan::scope::up(o.up));
    if (!r) throw std::runtime_error("publish " + gr.topic + ": " + r.error().what());
  }

  void apply(in_group& in) {
    const banyan::payload p = std::move(in.queue.front());
    in.queue.pop_front();
    const auto bytes = p.bytes();
    std::uint64_t c = 0;
    std::memcpy(&c, bytes.data(), header);
    if (c != cycle_) throw std::logic_error("group message for cycle " + std::to_string(c) + " arrived in cycle " +
                                            std::to_string(cycle_));
    if (bytes.size() == header) return;  // unchanged
    const auto& slots = *in.slots;
    const auto* v = reinterpret_cast<const lanes*>(bytes.data() + header);
    for (std::size_t i = 0; i < slots.size(); ++i) std::memcpy(&eng_->slot(slots[i]), v + i, sizeof(lanes));
    eng_->mark(in.trigger);
  }

  void progress(banyan::context& ctx) {
    if (!running_) return;
    while (cycle_ < run_->cycles) {
      if (!cycle_started_) {
        start_cycle();
        cycle_started_ = true;
      }
      bool any = false;
      for (std::size_t k = 0; k < ins_.size(); ++k)
        if (!received_[k] && !ins_[k].queue.empty()) {
          apply(ins_[k]);
          received_[k] = 1;
          ++n_received_;
          any = true;
        }
      eng_->evaluate();
      for (std::size_t j = 0; j < outs_.size(); ++j) {
        if (sent_[j]) continue;
        bool ready = true;
        for (int k : outs_[j].deps) ready = ready && received_[k];
        if (!ready) continue;
        send(ctx, outs_[j]);
        sent_[j] = 1;
        ++n_sent_;
      }
      if (n_received_ == ins_.size() && n_sent_ == outs_.size()) {
        end_cycle(ctx);
        ++cycle_;
        std::fill(received_.begin(), received_.end(), 0);
        std::fill(sent_.begin(), sent_.end(), 0);
        n_received_ = n_sent_ = 0;
        cycle_started_ = false;
        continue;
      }
      if (!any) return;
    }
  }

  std::shared_ptr<component_run> run_;
  int leaf_;
  bool io_ = false, running_ = false, cycle_started_ = false;
  std::unique_ptr<leaf_engine> eng_;
  std::vector<in_group> ins_;
  std::vector<out_group> outs_;
  std::vector<char> received_, sent_;
  std::size_t n_received_ = 0, n_sent_ = 0;
  std::uint64_t cycle_ = 0;
  std::vector<lanes> in_bits_;
  std::vector<std::byte> buf_;
  std::chrono::steady_clock::time_point started_;
};

// The root composite starts the simulation once the whole tree is up, so no leaf publishes before
// every subscriber exists.
class sim_root final : public banyan::composite {
 public:
  void on_children_started(banyan::context& ctx) override {
    (void)ctx.publish("ctl/go", std::string_view{}, banyan::scope::root());
  }
};

std::string last_level(const std::string& path) { return path.substr(path.rfind('/') + 1); }

void add_instance(banyan::spec& parent, const design& d, int inst, const std::shared_ptr<component_run>& run) {
  const auto& in = d.instances[inst];
  if (in.leaf >= 0) parent.add_leaf<gate_component>(last_level(d.leaves[in.leaf].path), run, in.leaf);
  for (int ch : in.children) add_instance(parent.add_composite(last_level(d.instances[ch].path)), d, ch, run);
}

}  // namespace

static void build_app(banyan::app& app, const std::shared_ptr<component_run>& run) {
  const design& d = *run->d;
  run->samples.bits = 0;
  for (const auto& p : d.outputs) run->samples.bits += p.slots.size();
  run->samples.lanes = run->trace_lanes;
  add_instance(app.root(), d, 0, run);
  app.root().add_leaf<gate_component>(last_level(d.leaves[d.io_leaf()].path), run, d.io_leaf());
}

std::unique_ptr<banyan::app> make_app(const std::shared_ptr<component_run>& run) {
  auto app = std::make_unique<banyan::app>(run->d->instances[0].path.substr(1), banyan::supervision{},
                                           std::in_place_type<sim_root>);
  build_app(*app, run);
  return app;
}

}  // namespace banyan::eda
