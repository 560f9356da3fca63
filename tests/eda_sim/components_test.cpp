// The component version (every instance a composite, every leaf an actor, groups as topics) gives
// outputs identical to the engine's, in every routing mode and both grains; with --grain leaf hier
// never uses more edge messages than flat-p2p, with --grain node one process sends no group message.
// Across nodes (banyan launch, 3 loopback nodes), both grains pass the check against Icarus and the
// node grain never sends more across the node links than the leaf grain.
#ifdef EDA_SIM_HAVE_SDK
#include "helpers.hpp"

#include <banyan/base/process.hpp>
#include <banyan/eda_sim/cluster.hpp>
#include <banyan/eda_sim/components.hpp>

#include <nlohmann/json.hpp>

#include <fstream>
#include <optional>
#include <span>

namespace banyan::eda {
namespace {

using testing::build;
using testing::design_files;

struct outcome {
  std::uint64_t signature;
  std::vector<std::uint8_t> samples;
  std::uint64_t edge_messages = 0;
};

outcome run_components(const design& d, const std::shared_ptr<const stimulus>& stim, std::uint64_t cycles,
                       unsigned lanes, routing_mode mode, grain how, engine_kind engine = engine_kind::interp,
                       const std::string& cache = "") {
  auto cr = std::make_shared<component_run>();
  cr->engine = engine;
  cr->compile.cache_dir = cache;
  cr->d = std::make_shared<const design>(d);
  cr->stim = stim;
  cr->cycles = cycles;
  cr->lanes = lanes;
  cr->trace_lanes = lanes;
  cr->how = how;
  auto app = make_app(cr);
  banyan::run_options o;
  o.mode = mode;
  o.threads = 2;
  auto r = banyan::run(*app, o);
  EXPECT_EQ(r.exit_code, 0) << r.error;
  EXPECT_EQ(cr->cycles_done, cycles);
  outcome out{cr->signature, cr->samples.samples};
  for (const auto& e : r.traffic.edges) out.edge_messages += e.messages;
  return out;
}

class Components : public ::testing::TestWithParam<const char*> {};

TEST_P(Components, OutputsAreIdenticalToTheEngineInHierAndFlatModes) {
  const std::string top = GetParam();
  const std::uint64_t seed = 7;
  SCOPED_TRACE("design " + top + ", seed " + std::to_string(seed));
  auto d = build(design_files(top), top);
  ASSERT_TRUE(d) << d.error().message;
  auto s = random_stimulus(*d, {seed});
  ASSERT_TRUE(s);
  std::shared_ptr<const stimulus> stim(std::move(*s));
  simulator sim(*d);
  sim_options ro;
  ro.cycles = 150;
  ro.lanes = 8;
  ro.trace_lanes = 8;
  auto engine = simulate(sim, *stim, ro);
  auto hier = run_components(*d, stim, ro.cycles, ro.lanes, routing_mode::hier, grain::leaf);
  auto flat = run_components(*d, stim, ro.cycles, ro.lanes, routing_mode::flat_p2p, grain::leaf);
  auto node = run_components(*d, stim, ro.cycles, ro.lanes, routing_mode::hier, grain::node);
  EXPECT_EQ(hier.signature, engine.signature);
  EXPECT_EQ(hier.samples, engine.samples.samples);
  EXPECT_EQ(flat.signature, engine.signature);
  EXPECT_EQ(node.signature, engine.signature);
  EXPECT_EQ(node.samples, engine.samples.samples);
  EXPECT_LE(hier.edge_messages, flat.edge_messages);
  EXPECT_GT(hier.edge_messages, 0u);
  EXPECT_LT(node.edge_messages, hier.edge_messages / 10);  // only the start message
}

// The compiled engine inside the components: each leaf's program (leaf grain, one object for all of
// them) or the process's merged program (node grain, here the whole design) natively, same outputs.
TEST(Components, TheCompiledEngineGivesTheSameOutputsInBothGrains) {
  testing::temp_dir tmp;
  auto d = build(design_files("cpu"), "cpu");
  ASSERT_TRUE(d) << d.error().message;
  auto s = random_stimulus(*d, {9});
  ASSERT_TRUE(s);
  std::shared_ptr<const stimulus> stim(std::move(*s));
  simulator sim(*d, schedule::flat, 8);
  sim_options ro;
  ro.cycles = 150;
  ro.lanes = 8;
  ro.trace_lanes = 8;
  auto engine = simulate(sim, *stim, ro);
  for (grain how : {grain::leaf, grain::node}) {
    SCOPED_TRACE(how == grain::leaf ? "--grain leaf, seed 9" : "--grain node, seed 9");
    auto r = run_components(*d, stim, ro.cycles, ro.lanes, routing_mode::hier, how, engine_kind::compiled,
                            tmp.path("cache"));
    EXPECT_EQ(r.signature, engine.signature);
    EXPECT_EQ(r.samples, engine.samples.samples);
  }
  std::size_t objects = 0;
  for (const auto& e : std::filesystem::directory_iterator(tmp.path("cache"))) objects += e.path().extension() == ".so";
  EXPECT_EQ(objects, 2u) << "one object for every leaf, one for the whole design";
}

// Merging a subset of the leaves keeps exactly the groups that cross the subset's border, and a
// merged leaf of every leaf runs the design as the engine does.
TEST(MergeLeaves, KeepsTheBorderGroupsAndRunsLikeTheEngine) {
  auto d = build(design_files("cpu"), "cpu");
  ASSERT_TRUE(d) << d.error().message;
  std::vector<int> half;
  for (int l = 0; l < static_cast<int>(d->leaves.size()); l += 2) half.push_back(l);
  const merged_leaf m = merge_leaves(*d, half);
  for (std::size_t g = 0; g < d->groups.size(); ++g) {
    const group& gr = d->groups[g];
    auto in = [&](int l) { return std::find(half.begin(), half.end(), l) != half.end(); };
    bool reader_in = false, reader_out = false;
    for (int r : gr.readers) (in(r) ? reader_in : reader_out) = true;
    const auto has = [&](const std::vector<int>& v) { return std::find(v.begin(), v.end(), int(g)) != v.end(); };
    EXPECT_EQ(has(m.spec.in_groups), !in(gr.driver) && reader_in) << gr.topic;
    EXPECT_EQ(has(m.spec.out_groups), in(gr.driver) && reader_out) << gr.topic;
  }
  std::vector<int> all;
  for (int l = 0; l < static_cast<int>(d->leaves.size()); ++l) all.push_back(l);
  const merged_leaf whole = merge_leaves(*d, all);
  EXPECT_TRUE(whole.spec.in_groups.empty());
  EXPECT_TRUE(whole.spec.out_groups.empty());
  std::size_t ops = 0;
  for (const auto& l : d->leaves) ops += l.program.size();
  EXPECT_EQ(whole.spec.program.size(), ops);

  const std::uint64_t seed = 11;
  SCOPED_TRACE("seed " + std::to_string(seed));
  auto s = random_stimulus(*d, {seed});
  ASSERT_TRUE(s);
  simulator sim(*d);
  leaf_engine eng(whole.spec);
  std::vector<std::uint32_t> input_slots;
  for (const auto& p : d->inputs)
    for (auto slot : p.slots) input_slots.push_back(whole.at(d->io_leaf(), slot));
  const int inputs = eng.add_trigger(input_slots);
  std::vector<lanes> in(input_bits(*d)), want;
  for (std::uint64_t c = 0; c < 200; ++c) {
    (*s)->fill(c, in);
    sim.set_inputs(in);
    sim.settle();
    sim.outputs(want);
    for (std::size_t k = 0; k < in.size(); ++k) eng.slot(input_slots[k]) = in[k];
    eng.mark(inputs);
    eng.evaluate();
    std::size_t k = 0;
    for (const auto& p : d->outputs)
      for (auto slot : p.slots) ASSERT_EQ(eng.slot(whole.at(d->io_leaf(), slot)), want[k++]) << "cycle " << c;
    sim.clock_edge();
    eng.clock_edge();
  }
}

// What a moving gate leaf carries (leaf_engine::save_state): an engine loaded from it goes on
// exactly like the one it was saved from, even saved between a mark and its evaluation (ops
// pending); a state of another leaf, or one cut short, is refused and changes nothing.
TEST(LeafEngineState, ALoadedEngineGoesOnLikeTheSavedOne) {
  auto d = build(design_files("cpu"), "cpu");
  ASSERT_TRUE(d) << d.error().message;
  std::vector<int> all;
  for (int l = 0; l < static_cast<int>(d->leaves.size()); ++l) all.push_back(l);
  const merged_leaf whole = merge_leaves(*d, all);
  const std::uint64_t seed = 12;
  SCOPED_TRACE("seed " + std::to_string(seed));
  auto s = random_stimulus(*d, {seed});
  ASSERT_TRUE(s);
  std::vector<std::uint32_t> input_slots;
  for (const auto& p : d->inputs)
    for (auto slot : p.slots) input_slots.push_back(whole.at(d->io_leaf(), slot));
  leaf_engine a(whole.spec);
  const int inputs = a.add_trigger(input_slots);
  std::vector<lanes> in(input_bits(*d));
  auto drive = [&](leaf_engine& e) {
    for (std::size_t k = 0; k < in.size(); ++k) e.slot(input_slots[k]) = in[k];
    e.mark(inputs);
  };
  std::optional<leaf_engine> b;
  for (std::uint64_t c = 0; c < 300; ++c) {
    (*s)->fill(c, in);
    drive(a);
    if (c == 150) {  // saved with this cycle's inputs marked, not yet evaluated
      std::vector<std::byte> saved;
      a.save_state(saved);
      EXPECT_EQ(saved.size(), a.state_bytes());
      b.emplace(whole.spec);
      ASSERT_EQ(b->add_trigger(input_slots), inputs);
      ASSERT_FALSE(b->load_state(std::span<const std::byte>(saved).first(saved.size() - 1)));
      ASSERT_TRUE(b->load_state(saved));
    } else if (b) {
      drive(*b);
    }
    a.evaluate();
    a.clock_edge();
    if (!b) continue;
    b->evaluate();
    b->clock_edge();
    for (std::uint32_t slot = 0; slot < whole.spec.slots; ++slot)
      ASSERT_EQ(a.slot(slot), b->slot(slot)) << "slot " << slot << ", cycle " << c;
  }
  ASSERT_TRUE(b);
  // Another leaf's state does not fit this one.
  const merged_leaf one = merge_leaves(*d, {0});
  leaf_engine other(one.spec);
  std::vector<std::byte> theirs;
  other.save_state(theirs);
  const lanes before = b->slot(input_slots[0]);
  EXPECT_FALSE(b->load_state(theirs));
  EXPECT_EQ(b->slot(input_slots[0]), before);
}

#ifdef BANYAN_CLI
// Three loopback nodes: the cpu's top cells and io on n0, its register file on n1, its ALU on n2, so
// groups cross nodes in both directions within a cycle. Every node evaluates with the compiled
// engine: one object of every leaf shared by the three (leaf grain), or its merged program (node).
TEST(ComponentsAcrossNodes, BothGrainsPassTheCheckAndTheNodeGrainSendsNoMore) {
  testing::temp_dir tmp;
  std::string yaml = "version: 1\nnodes:\n";
  for (const char* n : {"n0", "n1", "n2"})  // ipc endpoints in the test's folder: no port clashes
    yaml += std::string("  - {name: ") + n + ", endpoint: \"ipc://" + tmp.path(n) + "\", capacity: {cpu: \"100%\"}}\n";
  yaml += "assignments:\n  /cpu: n0\n  /cpu/regs: n1\n  /cpu/alu: n2\n  /cpu/dec: n2\n";
  const auto deployment = tmp.file("cpu.yaml", yaml);
  std::uint64_t cross[2] = {0, 0};
  const char* grains[2] = {"leaf", "node"};
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(std::string("--grain ") + grains[i] + ", seed 3");
    const auto profile = tmp.path(std::string(grains[i]) + ".json");
    auto r =
        run_process({BANYAN_CLI,       "launch",  deployment,     "--run-for", "120s",         "--profile",
                     profile,          "--",      EDA_SIM_BINARY, "--top",     "cpu",          design_files("cpu")[0],
                     "--cycles",       "600",     "--seed",       "3",         "--components", "--grain",
                     grains[i],        "--check", "--json",       "--engine",  "compiled",     "--cache-dir",
                     tmp.path("cache")},
                    {.out = output_mode::capture, .err = output_mode::capture}, std::chrono::seconds(180));
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_EQ(r->status.shell_code(), 0) << r->err;
    EXPECT_NE(r->out.find("\"passed\": true"), std::string::npos) << r->out;
    EXPECT_NE(r->out.find("\"identical_to_engine\": true"), std::string::npos) << r->out;
    auto p = nlohmann::json::parse(std::ifstream(profile));
    for (const auto& l : p["links"]) cross[i] += l["messages"].get<std::uint64_t>();
  }
  EXPECT_GT(cross[1], 600u);  // groups cross nodes every cycle
  EXPECT_LE(cross[1], cross[0]);
}

// With --grain node a process's leaves are merged into one engine, so a leaf cannot move live: its
// arrival ends the run (exit 1) saying so, rather than leaving a fresh leaf waiting for a start
// that never comes. (--grain leaf moves live: EdaReconfigure.*, tests/CMakeLists.txt.)
TEST(ComponentsAcrossNodes, ALeafMovedLiveWithGrainNodeEndsTheRunSayingWhy) {
  testing::temp_dir tmp;
  auto deployment = [&](const char* name, const char* alu) {
    std::string yaml = "version: 1\nnodes:\n";
    for (const char* n : {"n0", "n1", "n2"})
      yaml +=
          std::string("  - {name: ") + n + ", endpoint: \"ipc://" + tmp.path(n) + "\", capacity: {cpu: \"100%\"}}\n";
    return tmp.file(name,
                    yaml + "assignments:\n  /cpu: n0\n  /cpu/regs: n1\n  /cpu/alu: " + alu + "\n  /cpu/dec: n2\n");
  };
  const auto d1 = deployment("d1.yaml", "n2"), d2 = deployment("d2.yaml", "n1");
  auto launch = process::spawn({BANYAN_CLI, "launch", d1, "--run-for", "120s", "--", EDA_SIM_BINARY, "--top", "cpu",
                                design_files("cpu")[0], "--cycles", "2000000", "--components", "--grain", "node"},
                               {.out = output_mode::capture, .err = output_mode::merge, .own_process_group = true});
  ASSERT_TRUE(launch) << launch.error().what();
  std::string log;
  // Every node has started: asked of the launch (`banyan status`), not read from its log.
  auto started = run_process({BANYAN_CLI, "status", "--from", d1, "--wait-started", "120s"},
                             {.out = output_mode::capture, .err = output_mode::capture}, std::chrono::seconds(150));
  for (auto& l : launch->take_lines()) log += l + "\n";
  ASSERT_TRUE(started) << started.error().message;
  ASSERT_EQ(started->status.code, 0) << started->out << started->err << log;
  auto r = run_process({BANYAN_CLI, "reconfigure", d2, "--from", d1},
                       {.out = output_mode::capture, .err = output_mode::capture}, std::chrono::seconds(120));
  ASSERT_TRUE(r) << r.error().message;
  auto st = launch->wait(std::chrono::seconds(120));
  for (auto& l : launch->take_lines()) log += l + "\n";
  ASSERT_TRUE(st) << log;
  EXPECT_EQ(st->code, 1) << log;
  EXPECT_NE(log.find("leaf /cpu/alu/cells was moved live or failed over, which --grain node does not support"),
            std::string::npos)
      << log;
}
#endif

INSTANTIATE_TEST_SUITE_P(All, Components,
                         ::testing::Values("adders", "multiplier", "lfsr_counter", "alu_regfile", "fifo", "cpu"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace banyan::eda
#endif
