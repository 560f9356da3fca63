#include <banyan/pipeline/csv.hpp>
#include <banyan/pipeline/lower.hpp>
#include <banyan/pipeline/validate.hpp>

#include <gtest/gtest.h>

namespace bp = banyan::pipeline;

TEST(Action, TextFormRoundTrips) {
  for (const char* s : {"2F0", "0B13", "1I2", "3W7", "1SEND_F3", "2RECV_F3", "0RECV_B1", "1SEND_B1"}) {
    auto a = bp::parse_action(s);
    ASSERT_TRUE(a) << s << ": " << a.error().message;
    EXPECT_EQ(bp::to_string(*a), s);
  }
  auto a = bp::parse_action("2F0");
  EXPECT_EQ(a->stage, 2);
  EXPECT_EQ(a->op, bp::kind::F);
  EXPECT_EQ(a->microbatch, 0);
}

TEST(Action, BadTextNamesTheInput) {
  auto a = bp::parse_action("2X0");
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().message.find("`2X0`"), std::string::npos) << a.error().message;
  EXPECT_EQ(a.error().code, bp::errc::parse);
  EXPECT_FALSE(bp::parse_action("F0"));
  EXPECT_FALSE(bp::parse_action("1F"));
  EXPECT_FALSE(bp::parse_action("1F0x"));
}

TEST(Csv, ReadsTorchFormAndInfersPlacement) {
  // Two ranks, two stages, two microbatches, GPipe order, with an idle (empty) cell.
  auto t = bp::read_csv("0F0,0F1,,0B0,0B1\n1F0,1F1,1B0,1B1\n", "g.csv");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->stages, 2);
  EXPECT_EQ(t->microbatches, 2);
  EXPECT_EQ(t->stage_rank, (std::vector<int>{0, 1}));
  EXPECT_EQ(t->ranks[0].size(), 4u);
  EXPECT_EQ(bp::write_csv(*t), "0F0,0F1,0B0,0B1\n1F0,1F1,1B0,1B1\n");
  auto again = bp::read_csv(bp::write_csv(*t));
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *t);
}

TEST(Csv, ErrorGivesLineAndColumn) {
  auto t = bp::read_csv("0F0,0B0\n1F0,1Q0\n", "x.csv");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("x.csv:2:5"), std::string::npos) << t.error().message;
  EXPECT_EQ(t.error().code, bp::errc::parse);
}

// A huge microbatch or stage number is refused before anything is sized by it (it used to allocate
// ~40 GB), and a huge or binary cell is cut and escaped in the message.
TEST(Csv, HugeNumbersAndHugeCellsAreClearErrors) {
  for (const char* text : {"0F0,0F999999999\n", "999999999F0,0B0\n"}) {
    auto t = bp::read_csv(text, "x.csv");
    ASSERT_FALSE(t) << text;
    EXPECT_EQ(t.error().code, bp::errc::invalid);
    EXPECT_NE(t.error().message.find("the table has only 2 compute actions"), std::string::npos) << t.error().message;
  }
  const std::string cell = "0F0" + std::string(10 << 20, 'x') + std::string("\x01\xff", 2);
  auto t = bp::read_csv(cell + "\n", "big.csv");
  ASSERT_FALSE(t);
  EXPECT_LT(t.error().message.size(), 300u);
  EXPECT_NE(t.error().message.find("big.csv:1:1"), std::string::npos) << t.error().message;
  EXPECT_EQ(t.error().message.find('\x01'), std::string::npos);
}

TEST(Csv, StageOnTwoRanksIsAnError) {
  auto t = bp::read_csv("0F0,0B0\n0F1,0B1\n", "x.csv");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("rank 1 step 0"), std::string::npos) << t.error().message;
  EXPECT_EQ(t.error().code, bp::errc::invalid);
}

TEST(Lower, InsertsSendsAndReceivesThatValidate) {
  auto t = bp::read_csv("0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n");
  ASSERT_TRUE(t);
  bp::table low = bp::lower_comms(*t);
  EXPECT_EQ(bp::write_csv(low),
            "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1\n"
            "1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1\n");
  EXPECT_FALSE(bp::validate(low)) << bp::validate(low)->message;
  EXPECT_EQ(bp::strip_comms(low), *t);
}

TEST(Validate, AcceptsGPipe) {
  auto t = bp::read_csv("0F0,0F1,0B0,0B1\n1F0,1F1,1B0,1B1\n");
  ASSERT_TRUE(t);
  EXPECT_FALSE(bp::validate(*t));
}

TEST(Validate, MissingBackwardNamesRankAndStep) {
  auto t = bp::read_csv("0F0,0F1,0B0\n1F0,1F1,1B0,1B1\n");
  ASSERT_TRUE(t);
  auto v = bp::validate(*t);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->rank, 0);
  EXPECT_EQ(v->step, 3);
  EXPECT_NE(v->message.find("microbatch 1"), std::string::npos) << v->message;
}

TEST(Validate, BackwardBeforeForwardIsReported) {
  auto t = bp::read_csv("0F0,0B1,0F1,0B0\n1F0,1F1,1B0,1B1\n");
  ASSERT_TRUE(t);
  auto v = bp::validate(*t);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->rank, 0);
  EXPECT_EQ(v->step, 1);
}

TEST(Validate, WeightBeforeInputIsReported) {
  auto t = bp::read_csv("0F0,0W0,0I0\n1F0,1B0\n");
  ASSERT_TRUE(t);
  auto v = bp::validate(*t);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->step, 1);
  EXPECT_NE(v->message.find("W before"), std::string::npos) << v->message;
}

TEST(Validate, CrossStageDeadlockIsReported) {
  // Rank 1 wants the backward of microbatch 1 first, but rank 0 waits for microbatch 0's gradient
  // before it sends microbatch 1 forward.
  auto t = bp::read_csv("0F0,0B0,0F1,0B1\n1F1,1B1,1F0,1B0\n");
  ASSERT_TRUE(t);
  auto v = bp::validate(*t);
  ASSERT_TRUE(v);
  EXPECT_NE(v->message.find("deadlock"), std::string::npos) << v->message;
  EXPECT_EQ(v->rank, 0);
  EXPECT_EQ(v->step, 1);
}

TEST(Validate, LoweredReceiveOutOfOrderDeadlocks) {
  // Both ranks receive before they send: rank 0 waits for rank 1's gradient before sending F.
  auto t = bp::read_csv("0F0,0RECV_B0,0SEND_F0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0\n");
  ASSERT_TRUE(t);
  auto v = bp::validate(*t);
  ASSERT_TRUE(v);
  EXPECT_NE(v->message.find("deadlock"), std::string::npos) << v->message;
}

TEST(Validate, MissingReceiveIsReported) {
  auto t = bp::read_csv("0F0,0SEND_F0,0RECV_B0,0B0\n1F0,1B0,1SEND_B0\n");
  ASSERT_TRUE(t);
  auto v = bp::validate(*t);
  ASSERT_TRUE(v);
  EXPECT_NE(v->message.find("RECV_F"), std::string::npos) << v->message;
}
