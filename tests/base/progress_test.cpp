#include "banyan/base/progress.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace {

using banyan::progress;
using banyan::progress_options;
using namespace std::chrono_literals;

// A file standing in for stderr when it is not a terminal.
struct capture_file {
  std::FILE* f = std::tmpfile();
  ~capture_file() { std::fclose(f); }
  std::string text() const {
    std::fflush(f);
    std::string s;
    std::rewind(f);
    for (int c; (c = std::fgetc(f)) != EOF;) s += static_cast<char>(c);
    return s;
  }
};

TEST(Progress, LineShowsCountPercentRateAndEta) {
  progress p("simulate", 1000, {.unit = "cycles"});
  EXPECT_EQ(p.format(250, 2.0, "", false), "simulate  250/1000 cycles (25%)  125.0 cycles/s  ETA 6s");
  EXPECT_EQ(p.format(1000, 8.0, "done", true), "simulate  1000/1000 cycles  125.0 cycles/s  in 8.00s  done");
}

TEST(Progress, UnknownTotalHasNoPercentOrEta) {
  progress p("solve", 0, {.rate_decimals = 0});
  EXPECT_EQ(p.format(30, 3.0, "bottom-up", false), "solve  30  10/s  bottom-up");
}

TEST(Progress, BarAndLongEtas) {
  progress p("train", 100, {.unit = "steps", .bar_width = 10});
  EXPECT_EQ(p.format(40, 400.0, "", false), "train [====      ]  40/100 steps (40%)  0.1 steps/s  ETA 10m00s");
  EXPECT_EQ(p.format(1, 100.0, "", false), "train [          ]  1/100 steps (1%)  0.0 steps/s  ETA 2h45m");
}

TEST(Progress, OffATerminalOnlyTheFinalLineIsWritten) {
  capture_file out;
  {
    progress p("gen", 3, {.tty_period = 0ms, .log_period = 0ms, .stream = out.f});
    EXPECT_FALSE(p.on_terminal());
    p.update(1, "tree");
    p.update(2, "profile");
    p.event("an event line");
    p.update(3);
    p.finish("written");
    p.finish("twice");  // ignored
  }
  const std::string text = out.text();
  EXPECT_EQ(text.find("tree"), std::string::npos) << text;
  EXPECT_NE(text.find("an event line\n"), std::string::npos) << text;
  EXPECT_NE(text.find("gen  3/3"), std::string::npos) << text;
  EXPECT_NE(text.find("written\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("twice"), std::string::npos) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos) << text;
}

TEST(Progress, AlwaysWritesPlainPeriodicLinesOffATerminal) {
  capture_file out;
  progress p("gen", 3, {.show = progress_options::display::always, .log_period = 0ms, .stream = out.f});
  p.update(1, "tree");
  p.update(2, "profile");
  const std::string text = out.text();
  EXPECT_NE(text.find("gen  1/3 (33%)"), std::string::npos) << text;
  EXPECT_NE(text.find("profile\n"), std::string::npos) << text;
}

TEST(Progress, FinalOnlyWritesNothingButTheSummary) {
  capture_file out;
  {
    progress p("train", 10, {.show = progress_options::display::final_only, .log_period = 0ms, .stream = out.f});
    p.update(5);
    p.event("eval");
    p.update(10);
    p.finish("loss 1.0");
  }
  const std::string text = out.text();
  EXPECT_EQ(text.find("eval"), std::string::npos) << text;
  EXPECT_NE(text.find("train  10/10"), std::string::npos) << text;
  EXPECT_NE(text.find("loss 1.0\n"), std::string::npos) << text;
}

TEST(Progress, QuickRunsCanSkipTheSummary) {
  capture_file out;
  {
    progress p("x", 1, {.summary_after = std::chrono::hours(1), .stream = out.f});
    p.update(1);
    p.finish("done");
  }
  EXPECT_EQ(out.text(), "");
}

TEST(Progress, ClearWritesNothingWhenNoBarIsShown) {
  capture_file out;
  {
    progress p("x", 0, {.stream = out.f});
    p.update(1);
    p.clear();
  }
  EXPECT_EQ(out.text(), "");
}

}  // namespace
