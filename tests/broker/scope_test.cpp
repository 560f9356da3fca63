#include "banyan/broker/scope.hpp"

#include <gtest/gtest.h>

namespace banyan {
namespace {

struct small_tree {
  component_tree tree{"chip"};
  vertex_id alu = *tree.add(0, "alu");
  vertex_id add0 = *tree.add(alu, "add0");
  vertex_id mem = *tree.add(0, "mem");
  small_tree() { tree.freeze(); }
};

TEST(Scope, ResolvesSelfParentRootAndAncestorPaths) {
  small_tree t;
  EXPECT_EQ(*scope::self().resolve(t.tree, t.add0), t.add0);
  EXPECT_EQ(*scope::parent().resolve(t.tree, t.add0), t.alu);
  EXPECT_EQ(*scope::up(2).resolve(t.tree, t.add0), 0u);
  EXPECT_EQ(*scope::root().resolve(t.tree, t.add0), 0u);
  EXPECT_EQ(*scope::at("/chip/alu").resolve(t.tree, t.add0), t.alu);
  EXPECT_EQ(*scope::at("/chip/alu/add0").resolve(t.tree, t.add0), t.add0);
}

TEST(Scope, NonAncestorIsAnErrorNamingBoth) {
  small_tree t;
  auto r = scope::at("/chip/mem").resolve(t.tree, t.add0);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, broker::errc::invalid_scope);
  EXPECT_NE(r.error().message.find("/chip/mem"), std::string::npos);
  EXPECT_NE(r.error().message.find("/chip/alu/add0"), std::string::npos);
}

TEST(Scope, UnknownPathIsAnError) {
  small_tree t;
  auto r = scope::at("/chip/nope").resolve(t.tree, t.add0);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("names no component"), std::string::npos);
}

TEST(Scope, TooManyLevelsUpIsAnError) {
  small_tree t;
  auto r = scope::up(3).resolve(t.tree, t.add0);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, broker::errc::invalid_scope);
}

// The error counts the publisher's ancestors in proper English: "only 1 ancestor", "only 2
// ancestors", never "only 1 ancestors".
TEST(Scope, TooManyLevelsUpNamesTheAncestorsInTheRightNumber) {
  small_tree t;
  auto one = scope::up(2).resolve(t.tree, t.mem);
  ASSERT_FALSE(one.has_value());
  EXPECT_NE(one.error().message.find("`/chip/mem`: the publisher has only 1 ancestor"), std::string::npos)
      << one.error().message;
  EXPECT_EQ(one.error().message.find("ancestors"), std::string::npos) << one.error().message;
  auto two = scope::up(3).resolve(t.tree, t.add0);
  ASSERT_FALSE(two.has_value());
  EXPECT_NE(two.error().message.find("the publisher has only 2 ancestors"), std::string::npos) << two.error().message;
}

TEST(ComponentTree, PathsLookupAndAncestry) {
  small_tree t;
  EXPECT_EQ(t.tree.path(t.add0), "/chip/alu/add0");
  EXPECT_EQ(*t.tree.find("/chip/mem"), t.mem);
  EXPECT_FALSE(t.tree.find("/chip/al").has_value());
  EXPECT_TRUE(t.tree.contains(t.alu, t.add0));
  EXPECT_FALSE(t.tree.contains(t.add0, t.alu));
  EXPECT_FALSE(t.tree.contains(t.mem, t.add0));
  EXPECT_EQ(t.tree.lca(t.add0, t.mem), 0u);
  EXPECT_FALSE(t.tree.add(t.alu, "add0").has_value());
  EXPECT_FALSE(t.tree.add(t.alu, "a/b").has_value());
}

}  // namespace
}  // namespace banyan
