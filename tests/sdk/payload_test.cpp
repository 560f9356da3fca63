#include "banyan/sdk/payload.hpp"

#include "test_schemas.capnp.h"

#include <gtest/gtest.h>

namespace banyan {
namespace {

TEST(Payload, CopiesBytesOnceAndSharesOnCopy) {
  auto p = payload::copy_of(std::string_view("hello, tree"));
  EXPECT_EQ(p.size(), 11u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(p.bytes().data()), p.size()), "hello, tree");
  payload q = p;
  EXPECT_TRUE(q.same_buffer(p));
  EXPECT_FALSE(payload::copy_of(std::string_view("hello, tree")).same_buffer(p));
}

TEST(Payload, TypedRoundTrip) {
  auto p = payload::build<Sample>([](Sample::Builder b) {
    b.setValue(42);
    b.setText("carry");
    auto items = b.initItems(3);
    for (unsigned i = 0; i < 3; ++i) items.set(i, i * 7);
  });
  std::uint64_t value = 0;
  std::string text;
  std::uint32_t last = 0;
  auto ok = read_as<Sample>(p, "topic `t`", [&](Sample::Reader r) {
    value = r.getValue();
    text = r.getText().cStr();
    last = r.getItems()[2];
  });
  ASSERT_TRUE(ok.has_value()) << ok.error().what();
  EXPECT_EQ(value, 42u);
  EXPECT_EQ(text, "carry");
  EXPECT_EQ(last, 14u);
}

TEST(Payload, GarbageFailsValidationWithAClearError) {
  // A segment table claiming a huge segment: Cap'n Proto must reject it, not read past the buffer.
  std::string garbage("\x00\x00\x00\x00\xff\xff\xff\x0f" "abcdefgh", 16);
  bool called = false;
  auto r = read_as<Sample>(payload::copy_of(garbage), "topic `net/x`", [&](Sample::Reader) { called = true; });
  ASSERT_FALSE(r.has_value());
  EXPECT_FALSE(called);
  EXPECT_EQ(r.error().code, sdk::errc::invalid_payload);
  EXPECT_NE(r.error().message.find("topic `net/x`"), std::string::npos) << r.error().message;
}

TEST(Payload, TruncatedMessageFailsValidation) {
  auto p = payload::build<Sample>([](Sample::Builder b) { b.setText("a text long enough to need words"); });
  auto bytes = p.bytes();
  auto cut = payload::copy_of(bytes.subspan(0, bytes.size() - 16));
  auto r = read_as<Sample>(cut, "topic `t`", [](Sample::Reader r) { (void)r.getText(); });
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, sdk::errc::invalid_payload);
}

TEST(Payload, EmptyPayloadFailsValidation) {
  auto r = read_as<Sample>(payload{}, "topic `t`", [](Sample::Reader) {});
  EXPECT_FALSE(r.has_value());
}

}  // namespace
}  // namespace banyan
