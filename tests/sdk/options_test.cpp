// An app's command-line options (banyan/sdk/options.hpp) and banyan's own, as docs/cli.md spells
// them: values, lists, durations, defaults, errors (exit 2), --help (exit 0), deprecated spellings.
#include "test_support.hpp"

#include "banyan/base/log.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace banyan {
namespace {

using namespace std::chrono_literals;

// argv as main() gets it.
class args {
 public:
  args(std::initializer_list<std::string> a) : text_(a) {
    text_.insert(text_.begin(), "app");
    for (auto& t : text_) ptrs_.push_back(t.data());
  }
  int argc() const { return static_cast<int>(ptrs_.size()); }
  char** argv() { return ptrs_.data(); }

 private:
  std::vector<std::string> text_;
  std::vector<char*> ptrs_;
};

struct config {
  int count = 3;
  std::uint64_t big = 1;
  double rate = 0.5;
  std::string name = "x";
  bool verbose = false;
  std::chrono::milliseconds pause{250};
  std::vector<int> sizes{16, 64};
};

void add_all(options& o, config& c) {
  o.add("--count", c.count, "How many").positive();
  o.add("--big", c.big, "A large number");
  o.add("--rate", c.rate, "A fraction");
  o.add("--name", c.name, "A name");
  o.add("--verbose", c.verbose, "Say more");
  o.add("--pause", c.pause, "Wait between two");
  o.add("--sizes", c.sizes, "Payload sizes").positive();
}

TEST(Options, EveryValueTypeParses) {
  app a{"app"};
  config c;
  add_all(a.options(), c);
  args in{
      "--count", "7",       "--big", "18446744073709551615", "--rate", "1.25", "--name", "n1", "--verbose", "--pause",
      "1.5s",    "--sizes", "1,2,4"};
  EXPECT_FALSE(a.options().parse(in.argc(), in.argv()).has_value());
  EXPECT_EQ(c.count, 7);
  EXPECT_EQ(c.big, 18446744073709551615ull);
  EXPECT_EQ(c.rate, 1.25);
  EXPECT_EQ(c.name, "n1");
  EXPECT_TRUE(c.verbose);
  EXPECT_EQ(c.pause, 1500ms);
  EXPECT_EQ(c.sizes, (std::vector<int>{1, 2, 4}));
}

TEST(Options, DefaultsStayWhenNotGivenAndParsingTwiceGivesTheSameValues) {
  app a{"app"};
  config c;
  add_all(a.options(), c);
  args in{"--sizes", "8", "--pause", "2"};
  EXPECT_FALSE(a.options().parse(in.argc(), in.argv()).has_value());
  EXPECT_FALSE(a.options().parse(in.argc(), in.argv()).has_value());  // what banyan::run does after an early parse
  EXPECT_EQ(c.count, 3);
  EXPECT_EQ(c.name, "x");
  EXPECT_EQ(c.pause, 2s);  // a bare number is seconds
  EXPECT_EQ(c.sizes, (std::vector<int>{8}));
}

TEST(Options, BadValuesAndUnknownOptionsAreExitCode2) {
  for (auto bad : {std::vector<std::string>{"--count", "x"},
                   {"--count", "0"},
                   {"--count", "99999999999"},
                   {"--rate", "fast"},
                   {"--pause", "-1s"},
                   {"--pause", "5 parsecs"},
                   {"--sizes", "1,0"},
                   {"--sizes", "1,a"},
                   {"--nope"},
                   {"--count"},
                   {"--mode", "flat"},
                   {"--node", "n1"},
                   {"--deployment", "d.yaml"},
                   {"--heartbeat-timeout", "0"},
                   {"--run-for", "soon"}}) {
    app a{"app"};
    config c;
    add_all(a.options(), c);
    std::vector<std::string> text{"app"};
    text.insert(text.end(), bad.begin(), bad.end());
    std::vector<char*> argv;
    for (auto& t : text) argv.push_back(t.data());
    auto exit_code = a.options().parse(static_cast<int>(argv.size()), argv.data());
    ASSERT_TRUE(exit_code.has_value()) << bad[0];
    EXPECT_EQ(*exit_code, 2) << bad[0];
  }
}

TEST(Options, HelpListsTheAppsOptionsAndBanyansAndExitsZero) {
  app a{"app"};
  config c;
  add_all(a.options(), c);
  args in{"--help"};
  ::testing::internal::CaptureStdout();
  auto exit_code = a.options().parse(in.argc(), in.argv());
  const std::string help = ::testing::internal::GetCapturedStdout();
  ASSERT_TRUE(exit_code.has_value());
  EXPECT_EQ(*exit_code, 0);
  for (auto text : {"--count INT=3", "--pause DURATION=250ms", "--sizes INT,...=16,64", "--verbose", "--mode",
                    "--run-for DURATION", "--heartbeat-timeout DURATION=1s", "--deployment"})
    EXPECT_NE(help.find(text), std::string::npos) << text << "\n" << help;
  EXPECT_EQ(help.find("--heartbeat-timeout-ms"), std::string::npos) << "deprecated spellings stay out of --help";
}

// A run that never quits by itself: --run-for ends it (exit 0), in any spelling of a duration.
TEST(Options, RunForTakesADuration) {
  for (auto spelling : {"50ms", "0.05"}) {
    app a{"app"};
    args in{"--run-for", spelling, "--threads", "2"};
    auto begin = std::chrono::steady_clock::now();
    EXPECT_EQ(run(a, in.argc(), in.argv()), 0) << spelling;
    EXPECT_LT(std::chrono::steady_clock::now() - begin, 30s) << spelling;
  }
}

TEST(Options, TheOldHeartbeatSpellingWorksAndWarnsOnce) {
  log::capture logged;
  app a{"app"};
  args in{"--heartbeat-timeout-ms", "500", "--run-for", "10ms", "--threads", "2"};
  EXPECT_FALSE(a.options().parse(in.argc(), in.argv()).has_value());
  EXPECT_EQ(run(a, in.argc(), in.argv()), 0);
  std::size_t warnings = 0;
  for (const auto& line : logged.lines())
    warnings += line == "[banyan] warning: --heartbeat-timeout-ms is deprecated; use --heartbeat-timeout";
  EXPECT_EQ(warnings, 1u);
  args wrong{"--heartbeat-timeout-ms", "soon"};
  app b{"app"};
  EXPECT_EQ(b.options().parse(wrong.argc(), wrong.argv()), 2);
}

// A component added with an option's variable (or a struct holding one) sees the parsed value, not
// the default it held when the tree was described; any other argument is copied when added.
struct probe_config {
  int a = 1;
  std::string b = "x";
};

class probe_leaf : public leaf {
 public:
  probe_leaf(std::shared_ptr<std::string> out, int n, probe_config c, int plain)
      : out_(std::move(out)),
        text_(std::to_string(n) + " " + std::to_string(c.a) + " " + c.b + " " + std::to_string(plain)) {}
  void on_start(context& ctx) override {
    *out_ = text_;
    ctx.quit(0);
  }

 private:
  std::shared_ptr<std::string> out_;
  std::string text_;
};

TEST(Options, ComponentsAddedWithOptionVariablesSeeTheParsedValues) {
  auto out = std::make_shared<std::string>();
  int n = 1, plain = 7;
  probe_config c;
  app a{"app"};
  a.options().add("--n", n, "n");
  a.options().add("--a", c.a, "a");
  a.options().add("--b", c.b, "b");
  a.root().add_leaf<probe_leaf>("probe", out, n, c, plain);
  plain = 8;  // not an option's variable: the leaf keeps the 7 it was added with
  args av{"--n", "5", "--a", "6", "--b", "y", "--threads", "2"};
  EXPECT_EQ(run(a, av.argc(), av.argv()), 0);
  EXPECT_EQ(*out, "5 6 y 7");
}

}  // namespace
}  // namespace banyan
