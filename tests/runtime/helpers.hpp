// Test fixtures for the transport: a temp dir for ipc endpoints and a node that records what it sees.
#pragma once

#include "../support/reported_threshold.hpp"

#include "banyan/runtime/transport.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace banyan::runtime::test {

using banyan::test::reported_threshold;

using namespace std::chrono_literals;

// A private directory for ipc:// endpoints, removed with everything in it.
struct temp_dir {
  std::filesystem::path path;
  temp_dir() {
    std::string t = (std::filesystem::temp_directory_path() / "banyan-rt-XXXXXX").string();
    path = ::mkdtemp(t.data());
  }
  ~temp_dir() { std::filesystem::remove_all(path); }
  std::string ipc(const std::string& name) const { return "ipc://" + (path / name).string(); }
};

// A gate: a callback passes it only once the test opens it (to hold an I/O thread on purpose).
struct gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false, reached = false;
  void pass() {
    std::unique_lock lk(mu);
    reached = true;
    cv.notify_all();
    cv.wait(lk, [&] { return open; });
  }
  bool wait_reached(std::chrono::milliseconds timeout) {
    std::unique_lock lk(mu);
    return cv.wait_for(lk, timeout, [&] { return reached; });
  }
  void release() {
    {
      std::lock_guard lk(mu);
      open = true;
    }
    cv.notify_all();
  }
};

// Records envelopes, peer events and log lines; waits on them without sleeping.
struct recorder {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, std::vector<envelope>> got;                 // by sending peer
  std::map<std::string, int> ups, downs, credits, stalls, resumes;  // credits: on_credit calls
  std::map<std::string, std::vector<envelope>> undelivered;         // handed back by on_undelivered (receipts dropped)
  std::map<std::string, std::string> down_reasons;                  // on_peer_down's reason, the latest per peer
  std::vector<std::string> logs;
  std::function<void(const std::string&, const envelope&)> on_envelope_hook;  // runs before recording
  bool keep = true;                                           // store envelopes (off for large runs: count only)
  std::size_t chunk_bytes = transport_options{}.chunk_bytes;  // the sender's
  bool hold_receipts = false;  // keep delivery receipts in `receipts` (the sender's credit waits for them)
  std::vector<std::shared_ptr<const void>> receipts;
  std::map<std::string, std::uint64_t> count, next_seq;
  std::uint64_t order_errors = 0;

  callbacks make() {
    callbacks c;
    c.on_envelope = [this](const std::string& peer, envelope&& e) {
      if (on_envelope_hook) on_envelope_hook(peer, e);
      std::lock_guard lk(mu);
      auto& n = next_seq[peer];
      // Consecutive, but for a payload sent in chunks: delivered with its last chunk's sequence.
      if (e.sequence <= n || (e.sequence != n + 1 && e.payload.size() <= chunk_bytes)) ++order_errors;
      n = e.sequence;
      ++count[peer];
      // A kept envelope must not keep its receipt: that would withhold the sender's credit.
      if (hold_receipts) receipts.push_back(std::move(e.receipt));
      e.receipt.reset();
      if (keep) got[peer].push_back(std::move(e));
      cv.notify_all();
    };
    c.on_peer_up = [this](const std::string& peer) {
      std::lock_guard lk(mu);
      ++ups[peer];
      next_seq[peer] = 0;
      cv.notify_all();
    };
    c.on_peer_down = [this](const std::string& peer, const std::string& reason) {
      std::lock_guard lk(mu);
      ++downs[peer];
      down_reasons[peer] = reason;
      cv.notify_all();
    };
    c.on_peer_stalled = [this](const std::string& peer, const std::string&) {
      std::lock_guard lk(mu);
      ++stalls[peer];
      cv.notify_all();
    };
    c.on_peer_resumed = [this](const std::string& peer) {
      std::lock_guard lk(mu);
      ++resumes[peer];
      cv.notify_all();
    };
    c.on_undelivered = [this](const std::string& peer, std::vector<envelope>&& lost, const std::string&) {
      std::lock_guard lk(mu);
      for (auto& e : lost) {
        e.receipt.reset();
        undelivered[peer].push_back(std::move(e));
      }
      cv.notify_all();
    };
    c.on_credit = [this](const std::string& peer) {
      std::lock_guard lk(mu);
      ++credits[peer];
      cv.notify_all();
    };
    c.on_log = [this](log_level, const std::string& line) {
      std::lock_guard lk(mu);
      logs.push_back(line);
      cv.notify_all();
    };
    return c;
  }

  // Reads a counter under the lock (the I/O thread writes them).
  template <class Map>
  auto locked(Map& m, const std::string& peer) {
    std::lock_guard lk(mu);
    return m[peer];
  }

  // Waits (bounded) until `pred()` holds under the lock; returns whether it did.
  template <class Pred>
  bool wait(Pred pred, std::chrono::milliseconds timeout = 20s) {
    std::unique_lock lk(mu);
    return cv.wait_for(lk, timeout, pred);
  }
  bool logged(const std::string& needle) {
    std::lock_guard lk(mu);
    return logged_locked(needle);
  }
  bool logged_locked(const std::string& needle) const {  // in wait() predicates (the lock is held)
    for (const auto& l : logs) {
      if (l.find(needle) != std::string::npos) return true;
    }
    return false;
  }
};

inline envelope make_envelope(std::uint64_t i, std::size_t payload_bytes = 8) {
  envelope e;
  e.kind = 1;
  e.sender = 1;  // tree vertices (the publisher, its scope)
  e.scope = 0;
  e.topic = "t/" + std::to_string(i % 7);
  std::vector<std::byte> p(std::max<std::size_t>(payload_bytes, 8));
  for (std::size_t b = 0; b < 8; ++b) p[b] = std::byte((i >> (8 * b)) & 0xff);
  e.payload = shared_bytes(std::move(p));
  return e;
}

inline std::uint64_t index_of(const envelope& e) {
  std::uint64_t i = 0;
  for (std::size_t b = 0; b < 8; ++b) i |= std::uint64_t(e.payload.data()[b]) << (8 * b);
  return i;
}

}  // namespace banyan::runtime::test
