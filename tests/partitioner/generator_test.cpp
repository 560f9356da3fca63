#include "banyan/partitioner/generator.hpp"
#include "banyan/partitioner/io.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace banyan::partitioner {
namespace {

TEST(Generator, ExactSizeValidTreeAndDeterministic) {
  for (std::size_t n : {1u, 2u, 10u, 1000u, 20000u}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    generator_options o{.components = n, .seed = 42};
    const tree a = generate_tree(o), b = generate_tree(o);
    ASSERT_EQ(a.size(), n);
    EXPECT_TRUE(validate(a));
    EXPECT_EQ(a.parent, b.parent);
    EXPECT_EQ(a.cpu, b.cpu);
    EXPECT_EQ(a.weight, b.weight);
    o.seed = 43;
    if (n > 10) {
      EXPECT_NE(generate_tree(o).weight, a.weight);
    }
  }
}

TEST(Generator, LocalityControlsLongRangeTraffic) {
  // Traffic on the edges just under the root is the long-range share: more of it when locality
  // is low, and always a minority of all edge traffic.
  auto top_share = [](double locality) {
    generator_options o{.components = 20000, .seed = 5, .locality = locality};
    const tree t = generate_tree(o);
    double total = 0, top = 0;
    for (std::size_t v = 1; v < t.size(); ++v) {
      total += t.weight[v];
      if (t.parent[v] == 0) top += t.weight[v];
    }
    return top / total;
  };
  const double local = top_share(0.95), spread = top_share(0.5);
  EXPECT_GT(spread, 2 * local);
  EXPECT_LT(spread, 0.5);
}

TEST(Generator, ClusterFitsTheTree) {
  generator_options o{.components = 50, .seed = 9, .memory = true, .nodes = 16, .rack_size = 4};
  const tree t = generate_tree(o);
  const cluster c = generate_cluster(t, o);
  ASSERT_EQ(c.size(), 16u);
  EXPECT_EQ(c.cost(0, 1), 1);
  EXPECT_EQ(c.cost(0, 5), 4);
  auto p = make_problem(t, c);
  EXPECT_TRUE(p) << p.error().message;
}

TEST(Generator, ProfileRoundTrip) {
  generator_options o{.components = 500, .seed = 3, .memory = true};
  const tree t = generate_tree(o);
  std::ostringstream out;
  write_profile(out, t);
  auto back = parse_profile(out.str(), "gen.json");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->parent, t.parent);
  EXPECT_EQ(back->path, t.path);
  for (std::size_t v = 0; v < t.size(); ++v) {
    EXPECT_NEAR(back->cpu[v], t.cpu[v], 1e-12);
    EXPECT_EQ(back->weight[v], t.weight[v]);
    EXPECT_EQ(back->memory[v], t.memory[v]);
  }
}

}  // namespace
}  // namespace banyan::partitioner
