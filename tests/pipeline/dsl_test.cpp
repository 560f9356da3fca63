#include <banyan/pipeline/csv.hpp>
#include <banyan/pipeline/dsl.hpp>
#include <banyan/pipeline/validate.hpp>

#include <gtest/gtest.h>

#include <cstdio>

#include <random>

namespace bp = banyan::pipeline;

namespace {
bp::table compile_ok(const std::string& text, bp::shape s) {
  auto prog = bp::parse_program(text, "test.pipe");
  EXPECT_TRUE(prog) << prog.error().message;
  if (!prog) return {};
  auto t = bp::compile(*prog, s);
  EXPECT_TRUE(t) << t.error().message;
  return t ? *t : bp::table{};
}
std::string error_of(const std::string& text) {
  auto prog = bp::parse_program(text, "bad.pipe");
  return prog ? std::string("no error") : prog.error().message;
}
}  // namespace

TEST(Dsl, OneFOneBCompilesToTheTextbookOrder) {
  auto t = compile_ok("name \"1f1b\"\nrank all: F^(p-1-r) (F B)* B*\n", {3, 4, 1});
  EXPECT_EQ(bp::write_csv(t),
            "0F0,0F1,0F2,0B0,0F3,0B1,0B2,0B3\n"
            "1F0,1F1,1B0,1F2,1B1,1F3,1B2,1B3\n"
            "2F0,2B0,2F1,2B1,2F2,2B2,2F3,2B3\n");
  EXPECT_FALSE(bp::validate(t));
}

TEST(Dsl, GroupsAndChunksFollowMegatronOrder) {
  // v=2, p=2, groups of p: chunk 0 mb 0,1, chunk 1 mb 0,1, chunk 0 mb 2,3, ...
  auto t = compile_ok("chunks v\ngroup p\nrank all: F* B*\n", {2, 4, 2});
  EXPECT_EQ(t.stage_rank, (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(bp::write_csv(t).substr(0, 24), "0F0,0F1,2F0,2F1,0F2,0F3,");
  EXPECT_FALSE(bp::validate(t));
}

TEST(Dsl, VShapePlacementPutsFirstAndLastStageOnRankZero) {
  auto t = compile_ok("chunks 2\nplace vshape\nrank all: (F[0] F[1])* (B[1] B[0])*\n", {3, 2, 1});
  EXPECT_EQ(t.stage_rank, (std::vector<int>{0, 1, 2, 2, 1, 0}));
}

TEST(Dsl, RankSpecificLinesOverrideAll) {
  auto t = compile_ok("rank all: F* B*\nrank p-1: (F B)*\n", {2, 2, 1});
  EXPECT_EQ(bp::write_csv(t), "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n");
}

TEST(Dsl, IndentedLineContinuesTheSequence) {
  auto t = compile_ok("rank all: F^(p-1-r)\n    (F B)*\n    B*\n", {2, 3, 1});
  EXPECT_EQ(bp::write_csv(t), "0F0,0F1,0B0,0F2,0B1,0B2\n1F0,1B0,1F1,1B1,1F2,1B2\n");
}

TEST(Dsl, SplitBackwardDefersWeightGradients) {
  auto t = compile_ok("rank all: (F I)* W*\n", {1, 2, 1});
  EXPECT_EQ(bp::write_csv(t), "0F0,0I0,0F1,0I1,0W0,0W1\n");
}

TEST(Dsl, ParseErrorsGiveLineColumnAndExpectation) {
  EXPECT_EQ(error_of("rank all: F^(p-1 B*\n"), "bad.pipe:1:18: expected `)`, found `B`");
  EXPECT_EQ(error_of("name \"x\"\nrank all F*\n"), "bad.pipe:2:10: expected `:`, found `F`");
  EXPECT_EQ(error_of("rank all: X\n"), "bad.pipe:1:11: expected F, B, I, W or `(`, found `X`");
  EXPECT_EQ(error_of("place diagonal\nrank all: F* B*\n"),
            "bad.pipe:1:7: expected `loop` or `vshape`, found `diagonal`");
  EXPECT_EQ(error_of("name \"x\n"), "bad.pipe:1:6: unterminated string; expected `\"`");
  EXPECT_EQ(error_of("name \"x\"\n"), "bad.pipe: no `rank` line; a program needs at least `rank all: ...`");
  EXPECT_EQ(bp::parse_program("rank all: X\n", "bad.pipe").error().code, bp::errc::parse);
}

TEST(Dsl, CompileErrorsNameTheLine) {
  auto prog = bp::parse_program("rank all: F*\n", "half.pipe");
  ASSERT_TRUE(prog);
  auto t = bp::compile(*prog, {2, 4, 1});
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("half.pipe:1: rank 0"), std::string::npos) << t.error().message;
  auto unknown = bp::parse_program("rank all: F^q (F B)* B*\n", "u.pipe");
  ASSERT_TRUE(unknown);
  auto u = bp::compile(*unknown, {2, 4, 1});
  ASSERT_FALSE(u);
  EXPECT_NE(u.error().message.find("u.pipe:1:13: unknown name `q`"), std::string::npos) << u.error().message;
  EXPECT_EQ(u.error().code, bp::errc::invalid);
  auto chunk = bp::parse_program("rank all: F[2]* B*\n", "c.pipe");
  auto c = bp::compile(*chunk, {2, 4, 1});
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("chunk 2 out of range"), std::string::npos) << c.error().message;
}

TEST(Dsl, EveryBuiltinCompilesToAValidTableAcrossShapes) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  ASSERT_GE(bp::builtin_programs().size(), 8u);
  for (int trial = 0; trial < 40; ++trial) {
    const int p = std::uniform_int_distribution<int>(1, 8)(rng);
    const int m = std::uniform_int_distribution<int>(1, 24)(rng);
    const int v = std::uniform_int_distribution<int>(1, 3)(rng);
    for (const auto& b : bp::builtin_programs()) {
      SCOPED_TRACE(b.name + " p=" + std::to_string(p) + " m=" + std::to_string(m) + " v=" + std::to_string(v));
      auto prog = bp::parse_program(b.text, b.name);
      ASSERT_TRUE(prog) << prog.error().message;
      auto t = bp::compile(*prog, {p, m, v});
      // Refusals: a `require`, or interleaved 1F1B's deadlocking partial groups (tested below).
      const bool may_refuse = !prog->requires_.empty() || b.name == "interleaved-1f1b";
      if (!t && may_refuse && t.error().message.find("does not support") != std::string::npos) continue;
      ASSERT_TRUE(t) << t.error().message;
      auto violation = bp::validate(*t);
      EXPECT_FALSE(violation) << violation->message;
      // The table survives the CSV form and the explicit program form.
      auto back = bp::read_csv(bp::write_csv(*t));
      ASSERT_TRUE(back) << back.error().message;
      EXPECT_EQ(bp::write_csv(*back), bp::write_csv(*t));
      auto vc = bp::chunks_of(*prog, {p, m, v});
      auto text = bp::explicit_program(*t, p, *vc, prog->place, b.name + "-explicit");
      ASSERT_TRUE(text) << text.error().message;
      EXPECT_EQ(compile_ok(*text, {p, m, v}), *t) << *text;
    }
  }
}

TEST(Dsl, RequireRejectsShapesAProgramCannotRun) {
  auto prog = bp::parse_program("require m % 2 == 0\nrank all: F* B*\n", "even.pipe");
  ASSERT_TRUE(prog);
  auto bad = bp::compile(*prog, {2, 3, 1});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("does not support p=2 m=3 v=1"), std::string::npos) << bad.error().message;
  EXPECT_EQ(bad.error().code, bp::errc::unsupported);
  EXPECT_TRUE(bp::compile(*prog, {2, 4, 1}));
}

// Interleaved 1F1B refuses exactly the shapes whose table deadlocks (Megatron's `m % p == 0` refused
// many that run): every shape either compiles to a table the validator accepts or is refused with the
// validator's reason; some partial-group shapes run now.
TEST(Dsl, InterleavedRefusesExactlyTheShapesThatDeadlock) {
  const auto* b = bp::find_builtin("interleaved-1f1b");
  ASSERT_NE(b, nullptr);
  auto prog = bp::parse_program(b->text, "interleaved-1f1b");
  ASSERT_TRUE(prog);
  int partial_ok = 0, refused = 0;
  for (int p = 1; p <= 6; ++p)
    for (int m = 1; m <= 12; ++m)
      for (int v : {2, 3}) {
        auto t = bp::compile(*prog, {p, m, v});
        if (t) {
          EXPECT_FALSE(bp::validate(*t)) << "p=" << p << " m=" << m << " v=" << v;
          partial_ok += m % p != 0;
        } else {
          ++refused;
          EXPECT_EQ(t.error().code, bp::errc::unsupported) << t.error().message;
          EXPECT_NE(t.error().message.find("deadlock"), std::string::npos) << t.error().message;
        }
      }
  EXPECT_GT(partial_ok, 0);
  std::printf("interleaved-1f1b, p 1..6, m 1..12, v 2..3: %d shapes with a partial group run, %d refused\n", partial_ok,
              refused);
}

// An item that cannot run where it stands is an error, not skipped (skipping it would compile
// `B F* B*` to GPipe). A plain item must run; the error names it, its place and why.
TEST(Dsl, AnItemThatCannotRunIsAnErrorNamingIt) {
  auto compile_error = [](const std::string& text, bp::shape s) {
    auto prog = bp::parse_program(text, "bad.pipe");
    EXPECT_TRUE(prog) << prog.error().message;
    auto t = bp::compile(*prog, s);
    EXPECT_FALSE(t) << bp::write_csv(*t);
    return t ? std::string("no error") : t.error().message;
  };
  EXPECT_EQ(compile_error("rank all: B F* B*\n", {2, 4, 1}),
            "bad.pipe:1:11: rank 0 (p=2 m=4 v=1): `B` (item 1) cannot run here: its forward (chunk 0, microbatch 0) is "
            "not issued "
            "yet on this rank; only `X*`, `X^n` and `X?` may run zero times");
  // Inside a plain group, the op that failed is named too.
  EXPECT_EQ(compile_error("rank all: F (F W) F* B*\n", {1, 4, 1}),
            "bad.pipe:1:13: rank 0 (p=1 m=4 v=1): `(F W)` (item 2) cannot run here: `W` at 1:16: no weight gradient is "
            "pending "
            "(every `I` has had its `W`); only `X*`, `X^n` and `X?` may run zero times");
  EXPECT_NE(compile_error("chunks 2\nrank all: F[1]* F[1] F* B*\n", {2, 2, 1})
                .find("`F[1]` (item 2) cannot run here: every forward of chunk 1 is issued"),
            std::string::npos);
  // Repeats may run zero times: `F?`, `B^n` and `W*` here find nothing to take.
  auto t = compile_ok("rank all: F* F? B^(p-1-r) B* W*\n", {2, 2, 1});
  EXPECT_EQ(bp::write_csv(t), "0F0,0F1,0B0,0B1\n1F0,1F1,1B0,1B1\n");
}

// `[desc]` takes microbatches from the highest down: looped BFS as the literature (and torch's
// ScheduleLoopedBFS) defines it, backwards chunk by chunk from the last, microbatch m-1 first.
TEST(Dsl, DescendingMicrobatchOrder) {
  auto t = compile_ok("rank all: F* B[desc]*\n", {2, 3, 1});
  EXPECT_EQ(bp::write_csv(t), "0F0,0F1,0F2,0B2,0B1,0B0\n1F0,1F1,1F2,1B2,1B1,1B0\n");
  const auto* bfs = bp::find_builtin("looped-bfs");
  ASSERT_NE(bfs, nullptr);
  auto prog = bp::parse_program(bfs->text, "looped-bfs");
  ASSERT_TRUE(prog) << prog.error().message;
  auto looped = bp::compile(*prog, {2, 3, 2});
  ASSERT_TRUE(looped) << looped.error().message;
  EXPECT_EQ(bp::write_csv(*looped),
            "0F0,0F1,0F2,2F0,2F1,2F2,2B2,2B1,2B0,0B2,0B1,0B0\n"
            "1F0,1F1,1F2,3F0,3F1,3F2,3B2,3B1,3B0,1B2,1B1,1B0\n");
  EXPECT_FALSE(bp::validate(*looped));
  // A chunk and a direction; a backward waits for its own forward, whichever end it takes from.
  auto mixed = compile_ok("chunks 2\nplace vshape\nrank all: F[0, desc]* F[1]* I[1, desc]* I[0, asc]* W*\n", {1, 2, 1});
  EXPECT_EQ(bp::write_csv(mixed), "0F1,0F0,1F0,1F1,1I1,1I0,0I0,0I1,1W1,1W0,0W0,0W1\n");
  auto waits = bp::parse_program("rank all: F B[desc] F* B*\n", "w.pipe");
  ASSERT_TRUE(waits);
  auto w = bp::compile(*waits, {1, 2, 1});
  ASSERT_FALSE(w);
  EXPECT_NE(w.error().message.find(
                "`B[desc]` (item 2) cannot run here: its forward (chunk 0, microbatch 1) is not issued yet"),
            std::string::npos)
      << w.error().message;
  // The explicit form writes the direction back.
  auto text = bp::explicit_program(*looped, 2, 2, bp::placement::loop, "bfs");
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_NE(text->find("rank 0: F[0]^3 F[1]^3 B[1, desc]^3 B[0, desc]^3"), std::string::npos) << *text;
  EXPECT_EQ(compile_ok(*text, {2, 3, 2}), *looped);
  EXPECT_EQ(error_of("rank all: F* I* W[desc]*\n"),
            "bad.pipe:1:19: `W` takes the order of the `I`s; `desc` applies to F, B and I");
  EXPECT_EQ(error_of("rank all: F[0, down]* B*\n"), "bad.pipe:1:16: expected `desc` or `asc`, found `down`");
  EXPECT_EQ(error_of("let desc = 1\nrank all: F* B*\n"), "bad.pipe:1:1: `desc` is reserved; pick another name");
}

TEST(Dsl, EveryBuiltinCompilesAndValidatesOnTheUsualShapes) {
  for (const auto& b : bp::builtin_programs()) {
    auto prog = bp::parse_program(b.text, b.name);
    ASSERT_TRUE(prog) << b.name << ": " << prog.error().message;
    for (int p : {2, 4})
      for (int m : {4, 8})
        for (int v : {1, 2}) {
          SCOPED_TRACE(b.name + " p=" + std::to_string(p) + " m=" + std::to_string(m) + " v=" + std::to_string(v));
          auto t = bp::compile(*prog, {p, m, v});
          ASSERT_TRUE(t) << t.error().message;
          auto violation = bp::validate(*t);
          EXPECT_FALSE(violation) << violation->message;
        }
  }
}

TEST(Dsl, ExpressionsUseFloorDivisionAndComparisons) {
  auto t = compile_ok(
      "require (0 - 3) / 2 == -2 && (0 - 3) % 2 == 1 && min(3, 1, 2) <= max(0, 1) && 2 > 1 && 1 != 2 && (0 || 1)\nrank "
      "all: F* B*\n",
      {1, 1, 1});
  EXPECT_EQ(t.num_ranks(), 1);
}

// Nesting deeper than 100 levels is a parse error at the place it goes too deep, never a stack
// overflow: groups in a rank line, parentheses and unary minus in a `let`, parentheses in a count, and
// an operator chain (`1+1+...`, as deep a tree as it is long, with no parenthesis at all).
TEST(Dsl, DeepNestingIsAParseErrorNotACrash) {
  const int n = 20000;
  const std::string deep =
      " nested deeper than 100 levels (each group, parenthesis, unary `-` and chained operator is one); simplify the "
      "program";
  EXPECT_EQ(error_of("rank all: " + std::string(n, '(') + "F" + std::string(n, ')') + "* B*\n"),
            "bad.pipe:1:111:" + deep);
  EXPECT_EQ(error_of("let x = " + std::string(n, '-') + "1\nrank all: F* B*\n"), "bad.pipe:1:108:" + deep);
  EXPECT_EQ(error_of("let x = " + std::string(n, '(') + "1" + std::string(n, ')') + "\nrank all: F* B*\n"),
            "bad.pipe:1:109:" + deep);
  EXPECT_EQ(error_of("rank all: F^" + std::string(n, '(') + "1" + std::string(n, ')') + " F* B*\n"),
            "bad.pipe:1:113:" + deep);
  std::string chain = "1";
  for (int i = 0; i < 5 * n; ++i) chain += "+1";
  const std::string chained = error_of("require " + chain + "\nrank all: F* B*\n");
  EXPECT_EQ(chained.rfind("bad.pipe:1:", 0), 0u) << chained;
  EXPECT_NE(chained.find(deep), std::string::npos) << chained;
  EXPECT_EQ(
      bp::parse_program("rank all: " + std::string(n, '(') + "F" + std::string(n, ')') + "\n", "bad.pipe").error().code,
      bp::errc::parse);
}

// Up to the limit, nesting parses, compiles and evaluates (the compiler and eval() recurse as deep).
TEST(Dsl, NestingUpToTheLimitCompiles) {
  const int groups = 99;  // the rank line's sequence is the first level
  auto t = compile_ok("rank all: " + std::string(groups, '(') + "F" + std::string(groups, ')') + "* B*\n", {2, 4, 1});
  EXPECT_EQ(bp::write_csv(t), "0F0,0F1,0F2,0F3,0B0,0B1,0B2,0B3\n1F0,1F1,1F2,1F3,1B0,1B1,1B2,1B3\n");
  std::string chain = "0";
  for (int i = 0; i < 99; ++i) chain += "+1";
  const std::string negations(98, '-');  // an even count: 3
  // a = 99 and b = 3: three warm-up forwards.
  auto u =
      compile_ok("let a = " + chain + "\nlet b = " + negations + "3\nrank all: F^(a - 99 + b) (F B)* B*\n", {1, 5, 1});
  EXPECT_EQ(bp::write_csv(u), "0F0,0F1,0F2,0F3,0B0,0F4,0B1,0B2,0B3,0B4\n");
}

// `group` below 1 and `%` by a negative divisor are errors naming the place, not silently clamped
// or given a negative remainder.
TEST(Dsl, GroupBelowOneAndNegativeModuloAreErrors) {
  auto compile_error = [](const std::string& text, bp::shape s) {
    auto prog = bp::parse_program(text, "e.pipe");
    EXPECT_TRUE(prog) << prog.error().message;
    if (!prog) return std::string();
    auto t = bp::compile(*prog, s);
    return t ? std::string("no error") : t.error().message;
  };
  EXPECT_EQ(
      compile_error("group 0\nrank all: F* B*\n", {2, 4, 1}),
      "e.pipe:1:7: `group` evaluates to 0 for p=2 m=4 v=1; expected 1 or more (a group larger than m is all of m)");
  EXPECT_NE(compile_error("group p - 3\nrank all: F* B*\n", {2, 4, 1}).find("`group` evaluates to -1"),
            std::string::npos);
  EXPECT_EQ(compile_error("group m + 5\nrank all: F* B*\n", {2, 4, 1}), "no error");
  EXPECT_EQ(compile_error("let k = r % (0 - 2)\nrank all: F^k F* B*\n", {2, 4, 1}),
            "e.pipe:1:11: `%` by a negative divisor (-2); `%` takes a positive one");
  EXPECT_EQ(compile_error("let k = (r - 1) % p\nrank all: F^k F* B*\n", {2, 4, 1}), "no error");
}
