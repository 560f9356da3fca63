#include "wire.hpp"

#include "envelope.capnp.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/io.h>

#include <cstring>

namespace banyan::runtime::detail {
namespace {

capnp::Text::Reader text(const std::string& s) { return capnp::Text::Reader(s.data(), s.size()); }

// A received ZeroMQ frame kept alive by the payloads that point into it.
struct frame_owner {
  zmq_msg_t msg;
  frame_owner() { zmq_msg_init(&msg); }
  ~frame_owner() { zmq_msg_close(&msg); }
  frame_owner(const frame_owner&) = delete;
  frame_owner& operator=(const frame_owner&) = delete;
};

// A header claiming more segments than this is not one of ours (we write a handful at most).
constexpr std::uint32_t max_segments = 64;

}  // namespace

const char* to_string(verdict v) {
  switch (v) {
    case verdict::ok: return "ok";
    case verdict::garbage: return "garbage";
    case verdict::truncated: return "truncated";
    case verdict::oversized: return "oversized";
    case verdict::version: return "version";
  }
  return "?";
}

void encode(const frame_header& h, std::span<const envelope* const> batch, zmq_msg_t* header, zmq_msg_t* blob) {
  capnp::MallocMessageBuilder mb(256 + 16 * static_cast<unsigned>(batch.size()));
  auto f = mb.initRoot<wire::Frame>();
  f.setVersion(wire_version);
  f.setIncarnation(h.incarnation);
  f.setTarget(h.target);
  f.setDelivered(h.delivered);
  f.setWindow(h.window);
  f.setSession(h.session);
  f.setAckSession(h.ack_session);
  f.setSender(text(h.sender));
  f.setReceived(h.received);
  f.setSent(h.sent);
  f.setResendFrom(h.resend_from);
  f.setSuspect(h.suspect);
  f.setWindowBytes(h.window_bytes);
  f.setMaxFrame(h.max_frame);
  f.setDigest(h.digest);
  f.setControl(h.control);
  f.setMaxPayload(h.max_payload);
  std::size_t payload_bytes = 0, chunks = 0;
  if (!batch.empty()) {
    auto list = f.initEnvelopes(static_cast<unsigned>(batch.size()));
    for (unsigned i = 0; i < batch.size(); ++i) {
      const envelope& e = *batch[i];
      auto w = list[i];
      w.setKind(e.kind);
      w.setSender(e.sender);
      w.setScope(e.scope);
      if (!e.topic.empty()) w.setTopic(text(e.topic));
      if (!e.target.empty()) w.setTarget(text(e.target));
      if (!e.text.empty()) w.setText(text(e.text));
      w.setId(e.id);
      w.setOriginSequence(e.origin_sequence);
      w.setEntry(e.entry);
      w.setFrom(e.from);
      w.setCode(e.code);
      w.setTimeoutMs(e.timeout_ms);
      w.setUrgent(e.urgent);
      w.setSequence(e.sequence);
      w.setPayloadSize(static_cast<std::uint32_t>(e.payload.size()));
      chunks += e.chunk.of != 0;
      payload_bytes += e.payload.size();
    }
  }
  if (chunks != 0) {
    auto list = f.initChunks(static_cast<unsigned>(chunks));
    unsigned at = 0;
    for (unsigned i = 0; i < batch.size(); ++i) {
      const envelope::chunk_info& c = batch[i]->chunk;
      if (c.of == 0) continue;
      auto w = list[at++];
      w.setEnvelope(i);
      w.setOf(c.of);
      w.setTotal(c.total);
      w.setOffset(c.offset);
    }
  }
  const std::size_t words = capnp::computeSerializedSizeInWords(mb);
  zmq_msg_init_size(header, words * sizeof(capnp::word));
  kj::ArrayOutputStream out(kj::arrayPtr(static_cast<kj::byte*>(zmq_msg_data(header)), words * sizeof(capnp::word)));
  capnp::writeMessage(out, mb);
  zmq_msg_init_size(blob, payload_bytes);
  auto* p = static_cast<std::byte*>(zmq_msg_data(blob));
  for (const envelope* e : batch) {
    if (!e->payload.empty()) std::memcpy(p, e->payload.data(), e->payload.size());
    p += e->payload.size();
  }
}

decoded decode(std::span<zmq_msg_t> frames, std::size_t max_frame_bytes) {
  decoded d;
  auto fail = [&](verdict v, std::string why) {
    d.v = v;
    d.detail = std::move(why);
    d.envelopes.clear();
    return std::move(d);
  };
  if (frames.size() != 2) return fail(verdict::garbage, std::to_string(frames.size()) + " frames, expected 2");
  for (auto& f : frames) {
    if (zmq_msg_size(&f) > max_frame_bytes) {
      return fail(verdict::oversized,
                  std::to_string(zmq_msg_size(&f)) + " bytes, limit " + std::to_string(max_frame_bytes));
    }
  }
  const std::size_t hbytes = zmq_msg_size(&frames[0]);
  if (hbytes < sizeof(capnp::word)) return fail(verdict::truncated, "header of " + std::to_string(hbytes) + " bytes");
  std::uint32_t segs_minus_one = 0;
  std::memcpy(&segs_minus_one, zmq_msg_data(&frames[0]), 4);
  if (segs_minus_one >= max_segments) {
    return fail(verdict::garbage, "header claims " + std::to_string(std::uint64_t(segs_minus_one) + 1) + " segments");
  }
  // Read in place when word-aligned; else copied into aligned memory (ZeroMQ keeps small frames
  // unaligned inside the message).
  const auto* at = static_cast<const capnp::word*>(zmq_msg_data(&frames[0]));
  if (reinterpret_cast<std::uintptr_t>(at) % alignof(capnp::word) != 0) {
    thread_local std::vector<capnp::word> words;
    if (words.size() * sizeof(capnp::word) < hbytes)
      words.resize((hbytes + sizeof(capnp::word) - 1) / sizeof(capnp::word));
    std::memcpy(words.data(), at, hbytes);
    at = words.data();
  }
  kj::ArrayPtr<const capnp::word> wp(at, hbytes / sizeof(capnp::word));
  const std::size_t expected = capnp::expectedSizeInWordsFromPrefix(wp);
  if (hbytes % sizeof(capnp::word) != 0 || expected > wp.size()) {
    return fail(verdict::truncated, "header of " + std::to_string(hbytes) + " bytes, its segment table needs " +
                                        std::to_string(expected * sizeof(capnp::word)));
  }
  const std::size_t blob_bytes = zmq_msg_size(&frames[1]);
  try {
    capnp::ReaderOptions ro;
    ro.traversalLimitInWords = 4 * wp.size() + 64;  // a frame cannot make us walk more than it holds
    capnp::FlatArrayMessageReader reader(wp, ro);
    auto f = reader.getRoot<wire::Frame>();
    if (f.getVersion() != wire_version) {
      return fail(verdict::version, "wire version " + std::to_string(f.getVersion()) + ", this node speaks " +
                                        std::to_string(wire_version));
    }
    d.h.incarnation = f.getIncarnation();
    d.h.target = f.getTarget();
    d.h.delivered = f.getDelivered();
    d.h.window = f.getWindow();
    d.h.session = f.getSession();
    d.h.ack_session = f.getAckSession();
    auto sender = f.getSender();
    d.h.sender.assign(sender.cStr(), sender.size());
    d.h.received = f.getReceived();
    d.h.sent = f.getSent();
    d.h.resend_from = f.getResendFrom();
    d.h.suspect = f.getSuspect();
    d.h.window_bytes = f.getWindowBytes();
    d.h.max_frame = f.getMaxFrame();
    d.h.max_payload = f.getMaxPayload();
    d.h.digest = f.getDigest();
    d.h.control = f.getControl();
    if (d.h.sender.empty() || d.h.sender.size() > 255) {
      return fail(verdict::garbage, "sender name of " + std::to_string(d.h.sender.size()) + " bytes");
    }
    if (d.h.incarnation == 0) return fail(verdict::garbage, "incarnation 0");
    auto list = f.getEnvelopes();
    if (d.h.control && list.size() != 0) return fail(verdict::garbage, "a control frame carrying envelopes");
    if (list.size() != 0 && d.h.session == 0) return fail(verdict::garbage, "data of send session 0");
    for (unsigned i = 1; i < list.size(); ++i) {
      if (list[i].getSequence() != list[i - 1].getSequence() + 1) {
        return fail(verdict::garbage, "envelopes of one frame with sequences " +
                                          std::to_string(list[i - 1].getSequence()) + " and " +
                                          std::to_string(list[i].getSequence()));
      }
    }
    if (list.size() != 0 && (list[0].getSequence() == 0 || d.h.sent < list[list.size() - 1].getSequence())) {
      return fail(verdict::garbage, "envelope sequences beyond the frame's `sent`");
    }
    const auto chunks = f.getChunks();
    for (unsigned i = 0; i < chunks.size(); ++i) {
      if (chunks[i].getEnvelope() >= list.size() || chunks[i].getOf() == 0 ||
          (i > 0 && chunks[i].getEnvelope() <= chunks[i - 1].getEnvelope())) {
        return fail(verdict::garbage, "chunk entry " + std::to_string(i) + " names envelope " +
                                          std::to_string(chunks[i].getEnvelope()) + " of " +
                                          std::to_string(list.size()) + " (in order, once each) with first sequence " +
                                          std::to_string(chunks[i].getOf()));
      }
    }
    std::size_t need = 0;
    for (auto e : list) need += e.getPayloadSize();
    if (need > blob_bytes) {
      return fail(verdict::truncated,
                  "payload frame of " + std::to_string(blob_bytes) + " bytes, envelopes need " + std::to_string(need));
    }
    if (need < blob_bytes) {
      return fail(verdict::garbage, "payload frame of " + std::to_string(blob_bytes) + " bytes, envelopes need only " +
                                        std::to_string(need));
    }
    if (list.size() == 0) return d;
    auto owner = std::make_shared<frame_owner>();
    zmq_msg_move(&owner->msg, &frames[1]);
    const auto* base = static_cast<const std::byte*>(zmq_msg_data(&owner->msg));
    std::shared_ptr<const void> keep = owner;
    d.envelopes.reserve(list.size());
    std::size_t off = 0;
    for (auto e : list) {
      envelope& out = d.envelopes.emplace_back();
      out.kind = e.getKind();
      // Most envelopes leave some texts empty (not set): those are not read.
      auto take = [](std::string& to, bool has, auto get) {
        if (!has) return;
        const capnp::Text::Reader t = get();
        to.assign(t.cStr(), t.size());
      };
      out.sender = e.getSender();
      out.scope = e.getScope();
      take(out.topic, e.hasTopic(), [&] { return e.getTopic(); });
      take(out.target, e.hasTarget(), [&] { return e.getTarget(); });
      take(out.text, e.hasText(), [&] { return e.getText(); });
      out.id = e.getId();
      out.origin_sequence = e.getOriginSequence();
      out.entry = e.getEntry();
      out.from = e.getFrom();
      out.code = e.getCode();
      out.timeout_ms = e.getTimeoutMs();
      out.urgent = e.getUrgent();
      out.sequence = e.getSequence();
      const std::size_t n = e.getPayloadSize();
      out.payload = shared_bytes(keep, base + off, n);
      off += n;
    }
    for (auto c : chunks) d.envelopes[c.getEnvelope()].chunk = {c.getOf(), c.getTotal(), c.getOffset()};
  } catch (const kj::Exception& ex) {
    return fail(verdict::garbage, std::string("not a frame: ") + ex.getDescription().cStr());
  }
  return d;
}

}  // namespace banyan::runtime::detail
