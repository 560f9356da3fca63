#include "banyan/sdk/payload.hpp"

#include "test_schemas.capnp.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

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
  std::string garbage(
      "\x00\x00\x00\x00\xff\xff\xff\x0f"
      "abcdefgh",
      16);
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

// What a node does with a payload that arrived in a batch frame: read it in place when Cap'n Proto
// can (aligned whole words), copy it once when it cannot.
TEST(Payload, ViewOfAlignedWordsSharesTheFrameAndReadsInPlace) {
  auto message = payload::build<Sample>([](Sample::Builder b) {
    b.setValue(7);
    b.setText("in place");
  });
  // A "frame" holding an odd-sized raw payload, then the message at a word-aligned offset.
  auto frame = std::make_shared<std::vector<capnp::word>>(1 + message.words().size());
  auto* base = reinterpret_cast<std::byte*>(frame->data());
  std::memcpy(base + 8, message.bytes().data(), message.size());
  auto view = payload::view_of(frame, base + 8, message.size());
  EXPECT_EQ(view.bytes().data(), base + 8);  // no copy
  EXPECT_EQ(view.owner(), frame);
  EXPECT_TRUE(view.same_buffer(payload(view)));
  std::uint64_t value = 0;
  auto ok = read_as<Sample>(view, "topic `t`", [&](Sample::Reader r) { value = r.getValue(); });
  ASSERT_TRUE(ok.has_value()) << ok.error().what();
  EXPECT_EQ(value, 7u);

  auto unaligned = payload::view_of(frame, base + 3, 8);
  EXPECT_NE(unaligned.bytes().data(), base + 3);  // copied into its own aligned buffer
  EXPECT_EQ(std::memcmp(unaligned.bytes().data(), base + 3, 8), 0);
  auto odd = payload::view_of(frame, base + 8, 5);
  EXPECT_NE(odd.bytes().data(), base + 8);  // not whole words: copied and zero-padded
  EXPECT_EQ(odd.size(), 5u);
  EXPECT_EQ(odd.words().size(), 1u);
  EXPECT_TRUE(payload::view_of(frame, base, 0).empty());
}

TEST(Payload, EmptyPayloadFailsValidation) {
  auto r = read_as<Sample>(payload{}, "topic `t`", [](Sample::Reader) {});
  EXPECT_FALSE(r.has_value());
}

}  // namespace
}  // namespace banyan
