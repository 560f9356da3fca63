// The transport's I/O thread and its link state machine (see transport.hpp for the contract and
// docs/runtime.md for the protocol).
#include "banyan/runtime/transport.hpp"

#include "banyan/base/log.hpp"
#include "failure_detector.hpp"
#include "options.hpp"
#include "outbox.hpp"
#include "wire.hpp"

#include <zmq.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <random>
#include <set>
#include <thread>
#include <unordered_map>

namespace banyan::runtime {
namespace {

using steady = std::chrono::steady_clock;
using detail::verdict;

std::string zmq_error(const std::string& what) { return what + ": " + zmq_strerror(zmq_errno()); }
std::string ms_of(steady::duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

// Bytes an envelope takes in a batch: payload, text, and a bound on its share of the header.
constexpr std::size_t envelope_overhead = 64;
std::size_t text_bytes(const envelope& e) { return e.topic.size() + e.target.size() + e.text.size(); }

// `tcp://HOST:PORT` with HOST a name: the same endpoint with HOST's first IPv4 address; empty when
// it is not such an endpoint (another transport, `*`, a bracketed IPv6 address).
result<std::string> numeric_tcp_endpoint(const std::string& endpoint) {
  constexpr std::string_view scheme = "tcp://";
  if (endpoint.rfind(scheme, 0) != 0) return std::string{};
  const auto colon = endpoint.rfind(':');
  if (colon == std::string::npos || colon < scheme.size()) return std::string{};
  const std::string host = endpoint.substr(scheme.size(), colon - scheme.size());
  if (host.empty() || host == "*" || host.front() == '[' || host.find(';') != std::string::npos) return std::string{};
  addrinfo hints{};
  hints.ai_family = AF_INET;  // our sockets are IPv4, as ZeroMQ's connect resolves names by default
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found); rc != 0)
    return error{errc::invalid_argument,
                 "host `" + host + "` does not resolve to an IPv4 address (" + gai_strerror(rc) + ")"};
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, text, sizeof text);
  ::freeaddrinfo(found);
  return std::string(scheme) + text + endpoint.substr(colon);
}

// The I/O thread's wake-up eventfd. Shared with the delivery receipts, which may outlive the
// transport (the fd then just stays unread until the last receipt is gone).
struct waker {
  int fd = -1;
  std::atomic<bool> pending{false};
  ~waker() {
    if (fd >= 0) ::close(fd);
  }
  void wake() {
    if (!pending.exchange(true)) {
      std::uint64_t one = 1;
      [[maybe_unused]] auto n = ::write(fd, &one, sizeof one);
    }
  }
};

// Receipts released for one receive session of one peer.
struct credit_counter {
  std::atomic<std::uint64_t> released{0}, released_bytes{0};
  // Wake the I/O thread each time this many more envelopes, or bytes, are released.
  std::atomic<std::uint64_t> wake_every{1}, wake_bytes{1};
  std::shared_ptr<waker> io;
};

// Attached to every received envelope: releasing its last copy delivers the envelope. Its counter
// is kept alive by the arena the receipt lives in.
struct receipt {
  receipt(credit_counter* c, std::uint64_t bytes) : counter(c), bytes(bytes) {}
  ~receipt() {
    const auto b = counter->released_bytes.fetch_add(bytes, std::memory_order_acq_rel);
    const auto n = counter->released.fetch_add(1, std::memory_order_acq_rel) + 1;
    const auto wb = counter->wake_bytes.load(std::memory_order_relaxed);
    if (n % counter->wake_every.load(std::memory_order_relaxed) == 0 || b / wb != (b + bytes) / wb) counter->io->wake();
  }
  credit_counter* counter;
  std::uint64_t bytes;
};

// The receipts of one received batch, allocated together (each still released on its own, from any
// thread): one allocation per batch instead of one per envelope. Freed when its creator and every
// receipt carved from it are gone.
class alignas(std::max_align_t) receipt_arena {
 public:
  static receipt_arena* create(std::shared_ptr<credit_counter> counter, std::size_t receipts) {
    void* mem = ::operator new(sizeof(receipt_arena) + receipts * slot);
    return new (mem) receipt_arena(std::move(counter), receipts);
  }
  // A receipt for `bytes` payload bytes; at most `receipts` of them.
  std::shared_ptr<const void> make(std::uint64_t bytes) {
    return std::allocate_shared<receipt>(allocator<receipt>{this}, counter_.get(), bytes);
  }
  void release() {
    if (live_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      this->~receipt_arena();
      ::operator delete(this);
    }
  }

 private:
  static constexpr std::size_t slot = 64;  // a shared_ptr control block with its receipt
  receipt_arena(std::shared_ptr<credit_counter> c, std::size_t n) : counter_(std::move(c)), capacity_(n) {}

  template <class T>
  struct allocator {
    using value_type = T;
    receipt_arena* arena;
    template <class U>
    allocator(const allocator<U>& o) : arena(o.arena) {}
    explicit allocator(receipt_arena* a) : arena(a) {}
    T* allocate(std::size_t n) {
      static_assert(sizeof(T) <= slot && alignof(T) <= alignof(std::max_align_t));
      if (n != 1 || arena->used_ == arena->capacity_) throw std::bad_alloc();
      arena->live_.fetch_add(1, std::memory_order_relaxed);
      return reinterpret_cast<T*>(arena->storage() + slot * arena->used_++);
    }
    void deallocate(T*, std::size_t) { arena->release(); }
    template <class U>
    bool operator==(const allocator<U>& o) const {
      return arena == o.arena;
    }
  };

  std::byte* storage() { return reinterpret_cast<std::byte*>(this + 1); }

  std::shared_ptr<credit_counter> counter_;
  std::atomic<std::size_t> live_{1};  // the creator's reference and one per receipt not yet freed
  std::size_t used_ = 0, capacity_;
};
static_assert(sizeof(receipt_arena) % alignof(std::max_align_t) == 0);

enum class link_state { down, up, stalled };

// A payload arriving in chunks (envelope::chunk): its bytes so far, in their final place.
struct assembly {
  std::shared_ptr<std::byte[]> bytes;
  std::uint64_t total = 0, filled = 0;
};

// How many chunked payloads one link assembles at once: blocking senders take turns below it, and
// a peer that starts more is refused (the forwarders that never wait stay far below the margin).
constexpr std::size_t max_chunked_sends = 16, max_assembling = 64;

struct peer {
  peer_config cfg;
  void* data = nullptr;     // DEALER for envelopes (and `sent` sync frames)
  void* control = nullptr;  // DEALER for heartbeats and credit
  void* monitor = nullptr;  // PAIR reading the control DEALER's connect / disconnect events

  // --- Guarded by transport_impl::mu_ (written on the I/O thread, except by send()).
  detail::outbox out;          // accepted by send(): written, not yet delivered by the peer, then not yet written
  std::uint32_t session = 1;   // our send session towards the peer (a new one each time it is gone)
  std::uint64_t next_seq = 1;  // sequence of the next accepted envelope, this session
  std::uint64_t acked = 0;     // envelopes of this session the peer has delivered
  std::uint64_t outstanding_bytes = 0;  // payload bytes in `out`
  std::uint64_t resend_at = 0;          // nonzero: write written envelopes again from this sequence before the rest
  std::uint64_t peer_max_frame = 0;     // the largest frame the peer accepts (0: not known yet)
  std::uint64_t peer_max_payload = 0;   // the largest payload the peer accepts (0: not known yet)
  std::size_t chunked_sends = 0;        // send() calls queueing chunks now
  link_state state = link_state::down;
  bool ever_up = false;
  std::string incompatible;  // why the peer is refused (another digest); for wait_until_up
  link_stats stats;

  // --- I/O thread only. Our direction:
  std::uint64_t written_hi = 0;    // highest sequence written this session
  std::uint64_t confirmed = 0;     // the peer's `received` for our session
  std::uint64_t req_value = 0;     // the peer's current `resendFrom` (0: it misses nothing)
  steady::time_point req_since{};  // since when it has asked for exactly that
  bool data_blocked = false, control_blocked = false, control_due = false;
  bool connected = false;                // the control DEALER's connection is established
  steady::time_point suspected_since{};  // when the peer first said it no longer hears us
  steady::time_point last_data_sent{}, last_control_sent{}, last_reconnect{}, next_missing_log{};
  // The peer's direction:
  std::uint64_t remote_incarnation = 0;            // bound by the handshake; 0: never
  std::uint64_t candidate = 0;                     // an incarnation that said hello, echoed as `target` until bound
  std::uint32_t recv_session = 0;                  // the peer's send session we are receiving
  std::uint64_t recv_expected = 1;                 // next sequence to deliver
  std::uint64_t sent_seen = 0;                     // highest `sent` the peer reported on its data channel
  bool missing = false;                            // sent_seen >= recv_expected: asking for a resend
  std::uint64_t received = 0, received_bytes = 0;  // envelopes / bytes of recv_session handed to on_envelope
  std::unordered_map<std::uint64_t, assembly> assembling;  // payloads arriving in chunks, by first sequence
  std::shared_ptr<credit_counter> credit;                  // their receipts
  std::uint64_t delivered_told = 0, bytes_told = 0;
  std::uint64_t ack_every = 1, ack_bytes = 1;  // a quarter of the peer's windows
  steady::time_point last_heard{}, stalled_since{};
  detail::failure_detector detector{std::chrono::milliseconds(1), std::chrono::milliseconds(1),
                                    std::chrono::milliseconds(1)};

  std::uint64_t outstanding() const { return next_seq - 1 - acked; }
  bool live() const { return state != link_state::down; }
  std::uint64_t released() const { return credit ? credit->released.load(std::memory_order_acquire) : 0; }
  std::uint64_t released_bytes() const { return credit ? credit->released_bytes.load(std::memory_order_acquire) : 0; }
};

class transport_impl final : public transport {
 public:
  transport_impl(transport_options o, callbacks c) : opt_(std::move(o)), cb_(std::move(c)) {
    std::random_device rd;
    std::uniform_int_distribution<std::uint64_t> dist(1, ~std::uint64_t{0});
    incarnation_ = dist(rd);
    window32_ = static_cast<std::uint32_t>(std::min<std::size_t>(opt_.credit_window, 1u << 30));
    hb_interval_ = std::max<steady::duration>(opt_.heartbeat_timeout / 5, std::chrono::milliseconds(1));
    lost_after_ = opt_.heartbeat_timeout * 4 / 5;
    check_every_ = std::max<steady::duration>(opt_.heartbeat_timeout / 20, std::chrono::milliseconds(1));
    rewind_every_ = opt_.heartbeat_timeout / 2;
    if (!cb_.on_log) {
      cb_.on_log = [self = opt_.self](log_level l, const std::string& line) {
        switch (l) {
          case log_level::info: return banyan::log::info(self, line);
          case log_level::warning: return banyan::log::warning(self, line);
          case log_level::error: return banyan::log::error(self, line);
        }
      };
    }
  }

  ~transport_impl() override { stop(); }

  result<void> open();

  result<void> send(const std::string& name, envelope e, std::size_t block_at) override;
  bool window_full(const std::string& name) const override;
  void flush() override;
  result<void> wait_until_up(const std::string& name, std::chrono::milliseconds timeout) override;
  result<void> wait_until_all_up(std::chrono::milliseconds timeout) override;
  link_stats stats(const std::string& name) const override;
  reject_stats rejects() const override {
    std::lock_guard lk(mu_);
    return rejects_;
  }
  std::string bound_endpoint() const override { return bound_; }
  void stop() override;

 private:
  void log(log_level l, const std::string& line) { cb_.on_log(l, line); }
  void wake() { waker_->wake(); }
  peer* find(const std::string& name) {
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : &peers_[it->second];
  }
  const peer* find(const std::string& name) const {
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : &peers_[it->second];
  }
  std::string who(const peer& p) const { return "peer `" + banyan::log::escape(p.cfg.name) + "`"; }
  // Whether a send of `bytes` must wait at limits (msgs, bytes). Under mu_.
  static bool full(const peer& p, std::uint64_t msgs, std::uint64_t bytes, std::uint64_t size) {
    return p.outstanding() >= msgs || (p.outstanding_bytes > 0 && p.outstanding_bytes + size > bytes);
  }

  result<void> connect_dealers(peer& p);
  void close_dealers(peer& p, int linger_ms);
  void run();
  void receive_all(bool& drained);
  void read_monitor(peer& p);
  void handle_parts(std::span<zmq_msg_t> frames, bool too_many);
  bool bind_or_refuse(peer& p, const detail::frame_header& h, const std::string& origin);
  void deliver(peer& p, detail::decoded& d);
  // Puts a chunk in its payload; true when that completes it (`e` then holds the whole payload).
  bool assemble(peer& p, envelope& e);
  void take_acknowledgements(peer& p, const detail::frame_header& h);
  void count_and_log(std::uint64_t& counter, const std::string& line);
  void reject(verdict v, const std::string& from, const std::string& why);
  void reject_counted(std::uint64_t& counter, const std::string& reason, const std::string& from,
                      const std::string& why);
  void start_receiving(peer& p, std::uint32_t session);
  void come_up(peer& p, bool returned = false);
  void stall(peer& p, const std::string& reason);
  void gone(peer& p, const std::string& reason);
  void reconnect(peer& p, const std::string& reason);
  bool credit_due(const peer& p) const;
  bool write(peer& p, bool control, std::span<const envelope* const> batch, std::uint64_t sent);
  bool write_data(peer& p, std::size_t budget);
  void timers(steady::time_point now, bool drained);
  void handle_zap();

  transport_options opt_;
  callbacks cb_;
  std::uint64_t incarnation_ = 0;
  std::uint32_t window32_ = 0;
  steady::duration hb_interval_, lost_after_, check_every_, rewind_every_;
  std::string bound_;
  bool curve_ = false;
  std::set<std::string> authorized_;
  std::unordered_map<std::string, std::string> key_owner_;  // peer public key -> peer name
  std::uint64_t monitors_made_ = 0;
  steady::time_point last_timers_{};  // when timers() last ran

  void* ctx_ = nullptr;
  void* router_ = nullptr;
  void* zap_ = nullptr;
  std::shared_ptr<waker> waker_ = std::make_shared<waker>();
  std::atomic<bool> stopping_{false};
  std::thread io_;
  std::atomic<std::thread::id> io_id_{};

  std::vector<peer> peers_;  // fixed after open(); addresses stable
  std::unordered_map<std::string, std::size_t> index_;

  mutable std::mutex mu_;
  std::condition_variable space_cv_;  // window space, peer state, flush progress
  bool stopped_ = false;
  reject_stats rejects_;
  std::mutex stop_mu_;
};

result<void> set_int(void* s, int opt, int v, const char* name) {
  if (zmq_setsockopt(s, opt, &v, sizeof v) != 0) return error{errc::io, zmq_error(std::string("setting ") + name)};
  return {};
}

result<void> transport_impl::open() {
  ctx_ = zmq_ctx_new();
  if (!ctx_) return error{errc::io, zmq_error("creating a ZeroMQ context")};
  curve_ = !opt_.curve_secret_key.empty();
  if (curve_) {
    if (!zmq_has("curve")) return error{errc::io, "this ZeroMQ was built without CURVE"};
    authorized_.insert(opt_.authorized_keys.begin(), opt_.authorized_keys.end());
    for (const auto& p : opt_.peers) key_owner_[p.curve_public_key] = p.name;
    // The ZAP handler must be bound before the ROUTER accepts anyone, or ZeroMQ admits every key.
    zap_ = zmq_socket(ctx_, ZMQ_REP);
    if (zmq_bind(zap_, "inproc://zeromq.zap.01") != 0) return error{errc::io, zmq_error("binding the ZAP handler")};
  }
  const int window = static_cast<int>(std::min<std::size_t>(opt_.credit_window, 1 << 24));
  router_ = zmq_socket(ctx_, ZMQ_ROUTER);
  const std::int64_t max_msg = static_cast<std::int64_t>(opt_.max_frame_bytes) * 4 + 4096;
  // No ROUTER_HANDOVER: routing ids are the ROUTER's own (our DEALERs set none), so a connection
  // claiming one that is taken is refused by ZeroMQ, never handed a live peer's route.
  for (auto r : {set_int(router_, ZMQ_LINGER, 0, "LINGER"), set_int(router_, ZMQ_RCVHWM, window + 64, "RCVHWM")}) {
    if (!r) return r;
  }
  zmq_setsockopt(router_, ZMQ_MAXMSGSIZE, &max_msg, sizeof max_msg);
  if (curve_) {
    if (auto r = set_int(router_, ZMQ_CURVE_SERVER, 1, "CURVE_SERVER"); !r) return r;
    zmq_setsockopt(router_, ZMQ_CURVE_SECRETKEY, opt_.curve_secret_key.c_str(), 40);
    zmq_setsockopt(router_, ZMQ_ZAP_DOMAIN, "banyan", 6);
  }
  if (zmq_bind(router_, opt_.bind_endpoint.c_str()) != 0) {
    const int bind_errno = zmq_errno();
    const std::string failed =
        "node `" + opt_.self + "`: cannot bind `" + opt_.bind_endpoint + "`: " + zmq_strerror(bind_errno);
    // ZeroMQ binds tcp:// only to an interface or a numeric address; peers connect to a host name
    // (tcp://node7:7100, as a deployment names it): bind to the address that name resolves to.
    if (bind_errno != ENODEV) return error{errc::io, failed};
    auto numeric = numeric_tcp_endpoint(opt_.bind_endpoint);
    if (!numeric) return error{errc::io, failed + " (" + numeric.error().message + ")"};
    if (numeric->empty()) return error{errc::io, failed};
    if (zmq_bind(router_, numeric->c_str()) != 0)
      return error{errc::io,
                   zmq_error("node `" + opt_.self + "`: cannot bind `" + opt_.bind_endpoint + "` (" + *numeric + ")")};
  }
  char last[512] = {};
  std::size_t len = sizeof last;
  zmq_getsockopt(router_, ZMQ_LAST_ENDPOINT, last, &len);
  bound_ = last;

  peers_.resize(opt_.peers.size());
  const auto now = steady::now();
  for (std::size_t i = 0; i < opt_.peers.size(); ++i) {
    peer& p = peers_[i];
    p.cfg = opt_.peers[i];
    index_[p.cfg.name] = i;
    p.detector = detail::failure_detector(hb_interval_, lost_after_, opt_.heartbeat_timeout * 4);
    p.next_missing_log = now + opt_.missing_peer_log_every;
    if (auto r = connect_dealers(p); !r) return r;
  }
  waker_->fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (waker_->fd < 0) return error{errc::io, "eventfd failed"};
  io_ = std::thread([this] { run(); });
  return {};
}

result<void> transport_impl::connect_dealers(peer& p) {
  const int window = static_cast<int>(std::min<std::size_t>(opt_.credit_window, 1 << 24));
  // What flush() handed to ZeroMQ before stop() (a last `quit`, say) still goes out, for at most a
  // heartbeat timeout; with ZMQ_IMMEDIATE nothing waits for a peer that is not connected.
  const int linger = static_cast<int>(opt_.heartbeat_timeout.count());
  for (int k = 0; k < 2; ++k) {
    void*& s = k == 0 ? p.data : p.control;
    s = zmq_socket(ctx_, ZMQ_DEALER);
    for (auto r : {set_int(s, ZMQ_LINGER, linger, "LINGER"), set_int(s, ZMQ_IMMEDIATE, 1, "IMMEDIATE"),
                   set_int(s, ZMQ_SNDHWM, k == 0 ? window + 64 : 64, "SNDHWM"),
                   set_int(s, ZMQ_RECONNECT_IVL, 50, "RECONNECT_IVL"),
                   set_int(s, ZMQ_RECONNECT_IVL_MAX, 500, "RECONNECT_IVL_MAX")}) {
      if (!r) return r;
    }
    if (curve_) {
      zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, p.cfg.curve_public_key.c_str(), 40);
      zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, opt_.curve_public_key.c_str(), 40);
      zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, opt_.curve_secret_key.c_str(), 40);
    }
  }
  // The control connection's state tells a dead peer (closed) from a stalled one (still connected).
  const std::string mon = "inproc://banyan-monitor-" + std::to_string(++monitors_made_);
  if (zmq_socket_monitor(p.control, mon.c_str(), ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED) != 0) {
    return error{errc::io, zmq_error("monitoring the connection to `" + p.cfg.name + "`")};
  }
  p.monitor = zmq_socket(ctx_, ZMQ_PAIR);
  if (auto r = set_int(p.monitor, ZMQ_LINGER, 0, "LINGER"); !r) return r;
  zmq_connect(p.monitor, mon.c_str());
  p.connected = false;
  for (void* s : {p.data, p.control}) {
    if (zmq_connect(s, p.cfg.endpoint.c_str()) != 0) {
      return error{errc::invalid_argument,
                   zmq_error("peer `" + p.cfg.name + "`: cannot connect to `" + p.cfg.endpoint + "`")};
    }
  }
  p.data_blocked = p.control_blocked = false;
  return {};
}

void transport_impl::close_dealers(peer& p, int linger_ms) {
  for (void** s : {&p.data, &p.control}) {
    if (!*s) continue;
    zmq_setsockopt(*s, ZMQ_LINGER, &linger_ms, sizeof linger_ms);
    if (s == &p.control) zmq_socket_monitor(*s, nullptr, 0);
    zmq_close(*s);
    *s = nullptr;
  }
  if (p.monitor) zmq_close(p.monitor);
  p.monitor = nullptr;
}

void transport_impl::stop() {
  std::lock_guard stop_lk(stop_mu_);
  if (io_.joinable()) {
    stopping_ = true;
    waker_->pending = false;
    wake();
    io_.join();
  }
  std::vector<envelope> released;  // with receipts of downstream nodes, dropped unlocked
  {
    std::lock_guard lk(mu_);
    if (stopped_) return;
    stopped_ = true;
    for (auto& p : peers_) {
      p.state = link_state::down;
      p.out.drain_into(released);
    }
  }
  space_cv_.notify_all();
  for (auto& p : peers_) close_dealers(p, static_cast<int>(opt_.heartbeat_timeout.count()));
  if (router_) zmq_close(router_);
  if (zap_) zmq_close(zap_);
  router_ = zap_ = nullptr;
  if (ctx_) zmq_ctx_term(ctx_);
  ctx_ = nullptr;
}

result<void> transport_impl::send(const std::string& name, envelope e, std::size_t block_at) {
  peer* p = find(name);
  if (!p) return error{errc::invalid_argument, "send: `" + name + "` is not a peer of node `" + opt_.self + "`"};
  const std::uint64_t text = text_bytes(e);
  const std::uint64_t size = e.payload.size() + text;
  // The I/O thread must never wait for credit: only it can receive the grant.
  if (std::this_thread::get_id() == io_id_) block_at = never_block;
  const bool blocking = block_at != never_block;
  const std::uint64_t msgs = block_at == at_window ? opt_.credit_window : block_at;
  const std::uint64_t bytes = blocking ? opt_.credit_window_bytes : ~std::uint64_t{0};
  std::unique_lock lk(mu_);
  const std::uint64_t limit = p->peer_max_payload ? std::min<std::uint64_t>(opt_.max_payload_bytes, p->peer_max_payload)
                                                  : opt_.max_payload_bytes;
  const std::uint64_t frame = p->peer_max_frame ? p->peer_max_frame : opt_.max_frame_bytes;
  const std::uint64_t room = frame - std::min<std::uint64_t>(frame, envelope_overhead + text);
  auto refuse = [&](const std::string& why) -> result<void> {
    ++p->stats.send_failures;
    return error{errc::payload_too_large, "send to `" + name + "`: an envelope of " + std::to_string(size) +
                                              " bytes (payload " + std::to_string(e.payload.size()) + ") " + why};
  };
  if (size > limit) {
    return refuse("is larger than the limit of " + std::to_string(limit) + " bytes (max_payload_bytes" +
                  (limit < opt_.max_payload_bytes ? ", lowered to what the peer accepts)" : ")"));
  }
  if (room == 0) return refuse("has " + std::to_string(text) + " bytes of text, more than a frame holds");
  // Waits for credit for `chunk` bytes; an error when the link is gone or the transport stopped.
  auto admit = [&](std::uint64_t chunk, std::uint32_t session) -> result<void> {
    if (p->live() && !stopped_ && full(*p, msgs, bytes, chunk)) {
      ++p->stats.credit_waits;
      space_cv_.wait(lk, [&] { return stopped_ || !p->live() || !full(*p, msgs, bytes, chunk); });
    }
    if (!stopped_ && p->live() && p->session == session) return {};
    ++p->stats.send_failures;
    if (stopped_) return error{errc::io, "send to `" + name + "`: transport stopped"};
    return error{errc::peer_lost,
                 "send to `" + name + "`: " + (p->ever_up ? "the peer is gone" : "the peer has not been up yet")};
  };
  auto queue = [&](envelope&& c) {
    c.sequence = p->next_seq++;
    p->outstanding_bytes += c.payload.size();
    p->out.push_back(std::move(c));
    p->stats.max_outstanding = std::max(p->stats.max_outstanding, p->outstanding());
    p->stats.max_outstanding_bytes = std::max(p->stats.max_outstanding_bytes, p->outstanding_bytes);
  };
  const std::uint64_t chunk = std::min<std::uint64_t>(opt_.chunk_bytes, room);
  if (e.payload.size() <= chunk) {
    if (auto ok = admit(e.payload.size(), p->session); !ok) return ok;
    queue(std::move(e));
    lk.unlock();
    wake();
    return {};
  }
  // Chunks, each waiting for credit as an envelope would. A blocking sender waits for its turn, so
  // that a receiver never has to assemble more than max_assembling payloads at once from one link.
  if (blocking) space_cv_.wait(lk, [&] { return stopped_ || p->chunked_sends < max_chunked_sends; });
  ++p->chunked_sends;
  const std::uint32_t session = p->session;
  const shared_bytes whole = std::move(e.payload);
  auto receipt = std::move(e.receipt);
  std::uint64_t first = 0;
  result<void> out;
  for (std::uint64_t off = 0; off < whole.size(); off += chunk) {
    const std::uint64_t n = std::min<std::uint64_t>(chunk, whole.size() - off);
    if (out = admit(n, session); !out) break;
    envelope c = e;  // the fields, on every chunk
    c.payload = shared_bytes(whole.owner(), whole.data() + off, n);
    if (off == 0) first = p->next_seq;
    c.chunk = {first, whole.size(), off};
    if (off + n == whole.size()) c.receipt = std::move(receipt);  // kept until the whole is delivered
    queue(std::move(c));
    lk.unlock();
    wake();
    lk.lock();
  }
  --p->chunked_sends;
  lk.unlock();
  space_cv_.notify_all();
  return out;
}

bool transport_impl::window_full(const std::string& name) const {
  const peer* p = find(name);
  if (!p) return false;
  std::lock_guard lk(mu_);
  return p->live() && !stopped_ && full(*p, opt_.credit_window, opt_.credit_window_bytes, 1);
}

void transport_impl::flush() {
  std::unique_lock lk(mu_);
  auto written = [&](bool stalled_too) {
    if (stopped_) return true;
    for (auto& p : peers_) {
      const bool queued = p.out.unwritten() != 0 || p.resend_at != 0;
      if (queued && (p.state == link_state::up || (stalled_too && p.state == link_state::stalled))) return false;
    }
    return true;
  };
  // A stalled link (silent a while under load, still connected) is written to again once it is
  // heard: what is queued for it (a last `quit`, say) gets up to a heartbeat timeout to go out.
  if (space_cv_.wait_until(lk, steady::now() + opt_.heartbeat_timeout, [&] { return written(true); })) return;
  space_cv_.wait(lk, [&] { return written(false); });
}

result<void> transport_impl::wait_until_up(const std::string& name, std::chrono::milliseconds timeout) {
  peer* p = find(name);
  if (!p) return error{errc::invalid_argument, "wait: `" + name + "` is not a peer of node `" + opt_.self + "`"};
  std::unique_lock lk(mu_);
  space_cv_.wait_for(lk, timeout, [&] { return p->live() || !p->incompatible.empty() || stopped_; });
  if (!p->incompatible.empty()) return error{errc::incompatible_peer, p->incompatible};
  if (!p->live()) {
    return error{errc::timeout, "peer `" + name + "` (" + p->cfg.endpoint + ") not up after " +
                                    std::to_string(timeout.count()) + " ms"};
  }
  return {};
}

result<void> transport_impl::wait_until_all_up(std::chrono::milliseconds timeout) {
  std::unique_lock lk(mu_);
  auto settled = [&] {
    if (stopped_) return true;
    for (auto& p : peers_) {
      if (!p.incompatible.empty()) return true;
      if (p.cfg.required && !p.live()) return false;
    }
    return true;
  };
  space_cv_.wait_for(lk, timeout, settled);
  std::string missing;
  for (auto& p : peers_) {
    if (!p.incompatible.empty()) return error{errc::incompatible_peer, p.incompatible};
    if (p.cfg.required && !p.live())
      missing += std::string(missing.empty() ? "" : ", ") + "`" + p.cfg.name + "` (" + p.cfg.endpoint + ")";
  }
  if (!missing.empty()) {
    return error{errc::timeout,
                 "node `" + opt_.self + "`: peers not up after " + std::to_string(timeout.count()) + " ms: " + missing};
  }
  return {};
}

link_stats transport_impl::stats(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) return {};
  std::lock_guard lk(mu_);
  const peer& p = peers_[it->second];
  link_stats s = p.stats;
  s.up = p.live();
  s.stalled = p.state == link_state::stalled;
  s.outstanding = p.outstanding();
  s.outstanding_bytes = p.outstanding_bytes;
  return s;
}

// ---------------------------------------------------------------------------------------------
// I/O thread

void transport_impl::run() {
  io_id_ = std::this_thread::get_id();
  auto next_check = steady::now();
  std::vector<zmq_pollitem_t> items;
  bool more = false;  // data left to write after this round's budget
  while (!stopping_) {
    items.clear();
    items.push_back({router_, 0, ZMQ_POLLIN, 0});
    items.push_back({nullptr, waker_->fd, ZMQ_POLLIN, 0});
    items.push_back({zap_, 0, static_cast<short>(zap_ ? ZMQ_POLLIN : 0), 0});
    for (auto& p : peers_) {
      items.push_back({p.monitor, 0, ZMQ_POLLIN, 0});
      items.push_back({p.data, 0, static_cast<short>(p.data_blocked ? ZMQ_POLLOUT : 0), 0});
      items.push_back({p.control, 0, static_cast<short>(p.control_blocked ? ZMQ_POLLOUT : 0), 0});
    }
    const auto now = steady::now();
    const long wait =
        more ? 0 : std::max<long>(0, std::chrono::duration_cast<std::chrono::milliseconds>(next_check - now).count());
    zmq_poll(items.data(), static_cast<int>(items.size()), wait);
    if (items[1].revents & ZMQ_POLLIN) {
      std::uint64_t v;
      [[maybe_unused]] auto n = ::read(waker_->fd, &v, sizeof v);
    }
    waker_->pending = false;
    if (zap_ && (items[2].revents & ZMQ_POLLIN)) handle_zap();
    for (std::size_t i = 0; i < peers_.size(); ++i) {
      const auto* it = &items[3 + 3 * i];
      if (it[0].revents & ZMQ_POLLIN) read_monitor(peers_[i]);
      if (it[1].revents & ZMQ_POLLOUT) peers_[i].data_blocked = false;
      if (it[2].revents & ZMQ_POLLOUT) peers_[i].control_blocked = false;
    }
    bool drained = true;
    receive_all(drained);
    // Control first (credit, resend requests, handshake answers), then a bounded share of data, so
    // a long queue never holds up heartbeats, credit or reading.
    for (auto& p : peers_) {
      if (p.control_due || credit_due(p)) write(p, true, {}, 0);
    }
    more = false;
    for (auto& p : peers_) more |= write_data(p, 4 * opt_.max_batch_bytes);
    const auto t = steady::now();
    if (t >= next_check) {
      timers(t, drained);
      next_check = t + check_every_;
    }
  }
}

void transport_impl::read_monitor(peer& p) {
  for (;;) {
    zmq_msg_t ev, addr;
    zmq_msg_init(&ev);
    if (zmq_msg_recv(&ev, p.monitor, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&ev);
      return;
    }
    std::uint16_t event = 0;
    if (zmq_msg_size(&ev) >= 2) std::memcpy(&event, zmq_msg_data(&ev), 2);
    const bool more = zmq_msg_more(&ev);
    zmq_msg_close(&ev);
    if (more) {
      zmq_msg_init(&addr);
      zmq_msg_recv(&addr, p.monitor, 0);
      zmq_msg_close(&addr);
    }
    if (event == ZMQ_EVENT_CONNECTED) p.connected = true;
    if (event == ZMQ_EVENT_DISCONNECTED) p.connected = false;
  }
}

void transport_impl::receive_all(bool& drained) {
  // Frames are received in place (a zmq_msg_t must not be copied); a message of more parts than
  // any of ours is drained and rejected as garbage.
  // At most 64 messages and a quarter heartbeat interval per call, so that a flood of incoming data
  // never delays our own heartbeats and credit frames (a peer would take the silence for a stall).
  constexpr std::size_t max_parts = 8;
  std::vector<zmq_msg_t> frames(max_parts);
  const auto until = steady::now() + hb_interval_ / 4;
  for (int budget = 0; budget < 64 && steady::now() < until; ++budget) {
    std::size_t n = 0;
    zmq_msg_init(&frames[0]);
    if (zmq_msg_recv(&frames[0], router_, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&frames[0]);
      return;
    }
    n = 1;
    bool too_many = false;
    while (zmq_msg_more(&frames[n - 1])) {
      if (n == max_parts) {
        too_many = true;
        zmq_msg_t extra;
        zmq_msg_init(&extra);
        bool more = true;
        while (more && zmq_msg_recv(&extra, router_, 0) >= 0) more = zmq_msg_more(&extra);
        zmq_msg_close(&extra);
        break;
      }
      zmq_msg_init(&frames[n]);
      if (zmq_msg_recv(&frames[n], router_, 0) < 0) {
        zmq_msg_close(&frames[n]);
        break;
      }
      ++n;
    }
    handle_parts(std::span(frames.data(), n), too_many);
    for (std::size_t i = 0; i < n; ++i) zmq_msg_close(&frames[i]);
  }
  drained = false;
}

void transport_impl::count_and_log(std::uint64_t& counter, const std::string& line) {
  std::uint64_t n;
  {
    std::lock_guard lk(mu_);
    n = ++counter;
  }
  if (banyan::log::worth_logging(n)) log(log_level::warning, line + " (" + std::to_string(n) + " so far)");
}

void transport_impl::reject_counted(std::uint64_t& counter, const std::string& reason, const std::string& from,
                                    const std::string& why) {
  // `from` and `why` may quote what a stranger sent: escaped, so they cannot forge log lines.
  count_and_log(counter, "node `" + opt_.self + "`: rejected " + reason + " frame from " + banyan::log::escape(from) +
                             ": " + banyan::log::escape(why));
}

void transport_impl::reject(verdict v, const std::string& from, const std::string& why) {
  switch (v) {
    case verdict::garbage: return reject_counted(rejects_.garbage, "garbage", from, why);
    case verdict::truncated: return reject_counted(rejects_.truncated, "truncated", from, why);
    case verdict::oversized: return reject_counted(rejects_.oversized, "oversized", from, why);
    case verdict::version: return reject_counted(rejects_.version, "wrong-version", from, why);
    case verdict::ok: return;
  }
}

// Who sent a frame, for a log line, before its name is known or trusted: the connection's address
// where the transport has one (tcp), else its routing id (the ROUTER's number for the connection).
std::string origin_of(std::span<zmq_msg_t> frames) {
  const char* addr = frames.size() > 1 ? zmq_msg_gets(&frames[1], "Peer-Address") : nullptr;
  if (addr && *addr) return std::string("connection ") + addr;
  std::string hex;
  const auto* id = static_cast<const unsigned char*>(zmq_msg_data(&frames[0]));
  for (std::size_t i = 0; i < zmq_msg_size(&frames[0]) && i < 16; ++i) {
    static const char digits[] = "0123456789abcdef";
    hex += digits[id[i] >> 4];
    hex += digits[id[i] & 15];
  }
  return "connection #" + hex;
}

void transport_impl::handle_parts(std::span<zmq_msg_t> frames, bool too_many) {
  const std::string origin = origin_of(frames);
  if (too_many) return reject(verdict::garbage, origin, "more than 8 ZeroMQ frames");
  auto d = detail::decode(frames.subspan(1), opt_.max_frame_bytes);
  if (d.v != verdict::ok) return reject(d.v, origin, d.detail);
  const std::string claim = "`" + d.h.sender + "` (" + origin + ")";
  peer* p = find(d.h.sender);
  if (!p) return reject_counted(rejects_.unknown_peer, "unknown-sender", claim, "not a peer of this node");
  if (curve_) {
    // CURVE proves the key; the ZAP handler named its owner (User-Id). A name claimed with another
    // node's key, or with a key that is no node's, is refused.
    const char* user = zmq_msg_gets(&frames[1], "User-Id");
    if (!user || d.h.sender != user) {
      return reject_counted(rejects_.impostor, "impersonating", claim,
                            std::string("its CURVE key belongs to `") + (user ? user : "?") + "`");
    }
  }
  if (!bind_or_refuse(*p, d.h, claim)) return;
  if (d.h.session > p->recv_session) start_receiving(*p, d.h.session);
  p->last_heard = steady::now();
  if (d.h.control) p->detector.heard(p->last_heard);
  p->ack_every = std::max<std::uint64_t>(1, d.h.window / 4);
  p->ack_bytes = std::max<std::uint64_t>(1, d.h.window_bytes / 4);
  if (p->credit) {
    p->credit->wake_every.store(p->ack_every, std::memory_order_relaxed);
    p->credit->wake_bytes.store(p->ack_bytes, std::memory_order_relaxed);
  }
  // Two-way liveness: the peer says it no longer hears us although we hear it. Once that has held
  // for half a timeout (not just frames it wrote while it was itself stalled), our connections to
  // it are broken somewhere: make new ones.
  if (!d.h.suspect || d.h.target != incarnation_) {
    p->suspected_since = {};
  } else if (p->suspected_since == steady::time_point{}) {
    p->suspected_since = p->last_heard;
  } else if (p->last_heard - p->suspected_since > opt_.heartbeat_timeout / 2 &&
             p->last_heard - p->last_reconnect > opt_.heartbeat_timeout) {
    reconnect(*p, "it has not heard us for " + ms_of(p->last_heard - p->suspected_since) + " although we hear it");
  }
  take_acknowledgements(*p, d.h);
  if (!d.envelopes.empty() || !d.h.control) deliver(*p, d);
}

// The handshake: a frame counts only if it is from the incarnation bound to the peer's name, or
// binds a new one. Returns whether to go on with the frame.
bool transport_impl::bind_or_refuse(peer& p, const detail::frame_header& h, const std::string& claim) {
  // A peer's claims are believed only once its handshake completes: a digest that is not ours in a
  // hello (anyone can send one) is not news; in the frame that completes the handshake, it is.
  const bool mismatched = opt_.digest != 0 && h.digest != 0 && h.digest != opt_.digest;
  if (h.incarnation == p.remote_incarnation) {
    if (mismatched) {
      reject_counted(rejects_.mismatch, "mismatched", claim, "deployment digest " + std::to_string(h.digest));
      return false;
    }
    if (p.state == link_state::down) {
      come_up(p, true);  // the same incarnation, gone (given up) and heard again: a new link
    } else if (p.state == link_state::stalled) {
      {
        std::lock_guard lk(mu_);
        p.state = link_state::up;
      }
      space_cv_.notify_all();
      log(log_level::warning, "node `" + opt_.self + "`: " + who(p) + " heard again after " +
                                  ms_of(steady::now() - p.stalled_since) + "; the link goes on");
      p.control_due = true;
      if (cb_.on_peer_resumed) cb_.on_peer_resumed(p.cfg.name);
    }
    return true;
  }
  if (p.state == link_state::up) {
    // Never hand a live link to a newcomer: a restarted peer is bound once the old incarnation has
    // fallen silent (stalled), a stranger never.
    reject_counted(rejects_.impostor, "impostor", claim,
                   "incarnation " + std::to_string(h.incarnation) + " claims a name whose incarnation " +
                       std::to_string(p.remote_incarnation) +
                       " is live (a restart is accepted once that one falls silent)");
    return false;
  }
  if (h.target != incarnation_) {
    // A hello: echo its incarnation so that, if it really is the node at the peer's endpoint, its
    // next frame names ours (only that node hears what we send).
    if (p.candidate != h.incarnation) p.control_due = true;
    p.candidate = h.incarnation;
    return false;
  }
  if (mismatched) {
    // The node at the peer's endpoint (it heard our echo) runs another deployment: this link ends
    // here, with a clear message; the others go on.
    reject_counted(rejects_.mismatch, "mismatched", claim, "deployment digest " + std::to_string(h.digest));
    bool first;
    const std::string why = "peer `" + p.cfg.name + "` runs another deployment (digest " + std::to_string(h.digest) +
                            ", ours " + std::to_string(opt_.digest) + "): start every node from the same deployment";
    {
      std::lock_guard lk(mu_);
      first = p.incompatible.empty();
      p.incompatible = why;
    }
    if (first) {
      space_cv_.notify_all();
      log(log_level::error, "node `" + opt_.self + "`: " + why);
      // Our digest, at once, naming its incarnation: its handshake completes too, and it refuses us.
      p.candidate = h.incarnation;
      p.control_due = true;
    }
    return false;
  }
  if (p.state == link_state::stalled) gone(p, "restarted (a new incarnation is up)");
  p.remote_incarnation = h.incarnation;
  p.candidate = 0;
  p.detector.reset();
  start_receiving(p, h.session);
  {
    std::lock_guard lk(mu_);
    p.peer_max_frame = h.max_frame;
    p.peer_max_payload = h.max_payload;
  }
  come_up(p);
  return true;
}

void transport_impl::come_up(peer& p, bool returned) {
  {
    std::lock_guard lk(mu_);
    p.state = link_state::up;
    p.ever_up = true;
    ++p.stats.sessions;
  }
  p.last_heard = steady::now();
  p.suspected_since = {};
  p.control_due = true;
  space_cv_.notify_all();
  log(log_level::info, "node `" + opt_.self + "`: link to `" + p.cfg.name + "` up" +
                           (returned ? " again (the same incarnation, heard after it was given up)" : ""));
  if (returned && cb_.on_peer_returned) return cb_.on_peer_returned(p.cfg.name);
  if (cb_.on_peer_up) cb_.on_peer_up(p.cfg.name);
}

void transport_impl::take_acknowledgements(peer& p, const detail::frame_header& h) {
  if (h.target != incarnation_ || h.ack_session != p.session) return;  // about an older session of ours
  p.confirmed = std::max(p.confirmed, std::min(h.received, p.written_hi));
  bool grant = false;
  std::vector<detail::outbox::kept> done;  // payloads and downstream receipts, released unlocked
  {
    std::lock_guard lk(mu_);
    if (h.delivered > p.acked && h.delivered <= p.written_hi) {
      done.reserve(h.delivered - p.acked);
      p.acked = h.delivered;
      while (p.out.written() != 0 && p.out.front().sequence <= p.acked) {
        p.outstanding_bytes -= p.out.front().payload.size();
        p.out.pop_front(done);
      }
      if (p.resend_at != 0 && p.resend_at <= p.acked) p.resend_at = p.out.written() == 0 ? 0 : p.out.front().sequence;
      grant = true;
    }
    // Go-back-N: the peer misses envelopes from `resend_from` on, and says so in every frame until
    // they arrive. We write them again at once when it starts asking, and again only if it then
    // asks for the same one for half a heartbeat timeout (the resent ones were lost too): while
    // the resent envelopes arrive its request moves on, and nothing is written a third time.
    const auto now = steady::now();
    const std::uint64_t r = h.resend_from;
    bool rewind = false;
    if (r == 0) {
      p.req_value = 0;
    } else if (p.req_value == 0) {
      rewind = true;
    } else if (r != p.req_value) {
      p.req_since = now;
    } else if (now - p.req_since >= rewind_every_) {
      rewind = true;
    }
    if (r != 0) p.req_value = r;
    if (rewind) {
      p.req_since = now;
      if (r <= p.written_hi && r > p.acked && p.out.written() != 0) p.resend_at = std::max(r, p.out.front().sequence);
    }
  }
  if (grant) {
    space_cv_.notify_all();
    if (cb_.on_credit) cb_.on_credit(p.cfg.name);
  }
}

void transport_impl::deliver(peer& p, detail::decoded& d) {
  const std::string& from = p.cfg.name;
  if (d.h.target != incarnation_) {
    if (!d.envelopes.empty())
      reject_counted(rejects_.stale, "stale", "`" + from + "`", "data for an earlier incarnation of this node");
    return;
  }
  if (d.h.session < p.recv_session) {
    if (!d.envelopes.empty())
      reject_counted(rejects_.stale, "stale", "`" + from + "`", "data of a send session the peer has given up");
    return;
  }
  std::uint64_t n = 0, bytes = 0, dups = 0;
  for (auto& e : d.envelopes) {
    if (e.sequence != p.recv_expected) {
      ++dups;  // had it already, or beyond a gap (asked for again below)
      continue;
    }
    ++n;
    bytes += e.payload.size();
    ++p.recv_expected;
  }
  {  // counted before delivery, so whoever sees an envelope sees it counted
    std::lock_guard lk(mu_);
    p.stats.messages_received += n;
    p.stats.bytes_received += bytes;
    p.stats.duplicates += dups;
    if (!d.envelopes.empty()) ++p.stats.batches_received;
  }
  const std::uint64_t first = p.recv_expected - n;
  const std::unique_ptr<receipt_arena, void (*)(receipt_arena*)> receipts(
      n != 0 ? receipt_arena::create(p.credit, n) : nullptr, [](receipt_arena* a) { a->release(); });
  for (auto& e : d.envelopes) {
    if (e.sequence < first || e.sequence >= p.recv_expected) continue;
    const std::uint64_t size = e.payload.size();
    e.receipt = receipts->make(size);
    ++p.received;
    p.received_bytes += size;
    // A chunk's credit goes back once its bytes are in place, unless it completes its payload.
    if (e.chunk.of != 0 && !assemble(p, e)) continue;
    if (cb_.on_envelope) cb_.on_envelope(from, std::move(e));
  }
  p.sent_seen = std::max(p.sent_seen, d.h.sent);
  const bool missing = p.sent_seen >= p.recv_expected;
  if (missing && !p.missing) {
    {
      std::lock_guard lk(mu_);
      ++p.stats.sequence_gaps;
    }
    log(log_level::warning, "link `" + from + "` -> `" + opt_.self + "`: sequence " + std::to_string(p.recv_expected) +
                                " missing (the peer has written up to " + std::to_string(p.sent_seen) +
                                "); asking for a resend");
    p.control_due = true;
  }
  p.missing = missing;
  if (n != 0) {
    std::lock_guard lk(mu_);
    p.stats.max_undelivered = std::max(p.stats.max_undelivered, p.received - p.released());
    p.stats.max_undelivered_bytes = std::max(p.stats.max_undelivered_bytes, p.received_bytes - p.released_bytes());
  }
}

bool transport_impl::assemble(peer& p, envelope& e) {
  const envelope::chunk_info c = e.chunk;
  const std::uint64_t n = e.payload.size();
  auto refuse = [&](const std::string& why) {
    p.assembling.erase(c.of);
    reject_counted(rejects_.chunks, "chunk", "`" + p.cfg.name + "`",
                   "sequence " + std::to_string(e.sequence) + " (chunk at " + std::to_string(c.offset) + " of " +
                       std::to_string(c.total) + " bytes from sequence " + std::to_string(c.of) + "): " + why +
                       "; the payload is dropped");
    return false;
  };
  auto it = p.assembling.find(c.of);
  if (c.offset == 0) {
    if (c.of != e.sequence) return refuse("a first chunk must name its own sequence");
    if (c.total > opt_.max_payload_bytes)
      return refuse("larger than max_payload_bytes (" + std::to_string(opt_.max_payload_bytes) + ")");
    if (n == 0 || n >= c.total) return refuse("a first chunk must hold part of its payload");
    if (p.assembling.size() >= max_assembling)
      return refuse("more than " + std::to_string(max_assembling) + " payloads assembled at once");
    try {
      it = p.assembling.emplace(c.of, assembly{std::make_shared_for_overwrite<std::byte[]>(c.total), c.total, 0}).first;
    } catch (const std::bad_alloc&) {
      return refuse("out of memory");
    }
  } else if (it == p.assembling.end()) {
    return refuse("no payload is being assembled from that sequence");
  }
  assembly& a = it->second;
  if (c.total != a.total || c.offset != a.filled || n == 0 || n > a.total - a.filled)
    return refuse("out of place (" + std::to_string(a.filled) + " bytes had arrived)");
  std::memcpy(a.bytes.get() + a.filled, e.payload.data(), n);
  a.filled += n;
  if (a.filled < a.total) return false;
  e.payload = shared_bytes(std::shared_ptr<const void>(a.bytes, a.bytes.get()), a.bytes.get(), a.total);
  e.chunk = {};
  p.assembling.erase(it);
  return true;
}

namespace {

// What on_undelivered hands back: each payload once, whole. The receiver delivers a chunked payload
// only with its last chunk, so one whose last chunk is here was not delivered; chunks without their
// last are of a send() that failed and said so.
std::vector<envelope> whole_payloads(std::vector<envelope>&& lost) {
  std::vector<envelope> out;
  out.reserve(lost.size());
  for (auto& e : lost) {
    if (e.chunk.of == 0) {
      out.push_back(std::move(e));
    } else if (e.chunk.offset + e.payload.size() == e.chunk.total) {
      e.payload = shared_bytes(e.payload.owner(), e.payload.data() - e.chunk.offset, e.chunk.total);
      e.chunk = {};
      out.push_back(std::move(e));
    }
  }
  return out;
}

}  // namespace

void transport_impl::start_receiving(peer& p, std::uint32_t session) {
  p.recv_session = session;
  p.recv_expected = 1;
  p.sent_seen = 0;
  p.missing = false;
  p.received = p.received_bytes = 0;
  p.assembling.clear();
  p.delivered_told = p.bytes_told = 0;
  p.credit = std::make_shared<credit_counter>();
  p.credit->io = waker_;
  p.credit->wake_every = p.ack_every;
  p.credit->wake_bytes = p.ack_bytes;
}

bool transport_impl::credit_due(const peer& p) const {
  return p.credit &&
         (p.released() - p.delivered_told >= p.ack_every || p.released_bytes() - p.bytes_told >= p.ack_bytes);
}

void transport_impl::stall(peer& p, const std::string& reason) {
  {
    std::lock_guard lk(mu_);
    if (p.state != link_state::up) return;
    p.state = link_state::stalled;
    ++p.stats.stalls;
  }
  p.stalled_since = steady::now();
  p.control_due = true;  // tell it (suspect): if it hears us, it reconnects
  log(log_level::warning, "node `" + opt_.self + "`: " + who(p) + " stalled: " + reason +
                              "; nothing is dropped, sends wait for it (given up after " + ms_of(opt_.give_up_after) +
                              ")");
  if (cb_.on_peer_stalled) cb_.on_peer_stalled(p.cfg.name, reason);
}

void transport_impl::gone(peer& p, const std::string& reason) {
  // Only our direction is given up: the peer resets its receiving side when it sees our next
  // session, and our receiving side stays as it is until the peer starts a session of its own.
  std::vector<envelope> lost;
  {
    std::lock_guard lk(mu_);
    if (p.state == link_state::down) return;
    p.state = link_state::down;
    p.out.drain_into(lost);
    p.stats.lost_on_down += lost.size();
    ++p.session;
    p.next_seq = 1;
    p.acked = 0;
    p.outstanding_bytes = 0;
    p.resend_at = 0;
  }
  p.written_hi = p.confirmed = 0;
  space_cv_.notify_all();
  lost = whole_payloads(std::move(lost));
  const std::string why = reason + "; " + std::to_string(lost.size()) + " envelopes undelivered";
  log(log_level::error, "node `" + opt_.self + "`: " + who(p) + " lost: " + why);
  if (cb_.on_undelivered) cb_.on_undelivered(p.cfg.name, std::move(lost), why);
  lost.clear();
  if (cb_.on_peer_down) cb_.on_peer_down(p.cfg.name, why);
}

void transport_impl::reconnect(peer& p, const std::string& reason) {
  close_dealers(p, 0);
  if (auto r = connect_dealers(p); !r) {
    log(log_level::error, "node `" + opt_.self + "`: reconnecting to " + who(p) + " failed: " + r.error().what());
    return;
  }
  p.last_reconnect = steady::now();
  p.suspected_since = {};
  {
    std::lock_guard lk(mu_);
    ++p.stats.reconnects;
    // What was in the old connections may be lost: write again what the peer has not confirmed.
    if (p.confirmed < p.written_hi && p.out.written() != 0)
      p.resend_at = std::max(p.confirmed + 1, p.out.front().sequence);
  }
  log(log_level::warning, "node `" + opt_.self + "`: reconnecting to " + who(p) + ": " + reason);
}

bool transport_impl::write(peer& p, bool control, std::span<const envelope* const> batch, std::uint64_t sent) {
  if (control ? p.control_blocked : p.data_blocked) return false;
  zmq_msg_t header, blob;
  detail::frame_header h;
  h.incarnation = incarnation_;
  h.target = p.remote_incarnation != 0 && (p.state != link_state::down || p.candidate == 0) ? p.remote_incarnation
                                                                                            : p.candidate;
  h.delivered = p.released();
  const std::uint64_t released_bytes = p.released_bytes();
  h.window = window32_;
  h.session = p.session;
  h.ack_session = p.recv_session;
  h.sender = opt_.self;
  h.received = p.recv_expected - 1;
  h.sent = control ? 0 : sent;
  h.resend_from = p.missing ? p.recv_expected : 0;
  h.suspect = p.state == link_state::stalled;
  h.window_bytes = opt_.credit_window_bytes;
  h.max_frame = opt_.max_frame_bytes;
  h.max_payload = opt_.max_payload_bytes;
  h.digest = opt_.digest;
  h.control = control;
  detail::encode(h, batch, &header, &blob);
  void* s = control ? p.control : p.data;
  if (zmq_msg_send(&header, s, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
    zmq_msg_close(&header);
    zmq_msg_close(&blob);
    (control ? p.control_blocked : p.data_blocked) = true;
    return false;
  }
  zmq_msg_send(&blob, s, 0);  // ZeroMQ takes a multipart message whole once its first part is in
  p.delivered_told = h.delivered;
  p.bytes_told = released_bytes;
  (control ? p.last_control_sent : p.last_data_sent) = steady::now();
  if (control) p.control_due = false;
  return true;
}

// Writes batches for `p` until nothing is left unwritten, its socket is full or `budget` bytes are
// written. Returns whether more is left. A batch is encoded from where its envelopes are in the
// outbox, by address, outside the lock: only this thread removes envelopes, and send()'s push_back
// leaves the others where they are. A batch counts as written once it is, so flush() and the
// statistics never see it gone before.
bool transport_impl::write_data(peer& p, std::size_t budget) {
  std::vector<const envelope*> batch;
  std::size_t spent = 0;
  while (!p.data_blocked && spent < budget) {
    batch.clear();
    bool resend = false;
    std::size_t bytes = 0;
    {
      std::lock_guard lk(mu_);
      if (p.state != link_state::up) return false;
      const std::size_t frame_limit =
          p.peer_max_frame ? std::min<std::size_t>(opt_.max_batch_bytes, p.peer_max_frame) : opt_.max_batch_bytes;
      auto fits = [&](const envelope& e) {
        const std::size_t size = e.payload.size() + text_bytes(e) + envelope_overhead;
        if (!batch.empty() && (batch.size() >= opt_.max_batch || bytes + size > frame_limit)) return false;
        bytes += size;
        return true;
      };
      if (p.resend_at != 0) {
        resend = true;
        const std::uint64_t base = p.out.written() == 0 ? p.resend_at : p.out.front().sequence;
        for (std::size_t i = std::max(p.resend_at, base) - base; i < p.out.written() && fits(p.out[i]); ++i)
          batch.push_back(&p.out[i]);
      } else {
        for (std::size_t i = p.out.written(); i < p.out.size() && fits(p.out[i]); ++i) batch.push_back(&p.out[i]);
      }
    }
    if (batch.empty()) {
      if (!resend) return false;
      std::lock_guard lk(mu_);
      p.resend_at = 0;  // nothing left to write again
      continue;
    }
    const std::uint64_t last = batch.back()->sequence;
    const bool written = write(p, false, batch, std::max(p.written_hi, last));
    std::uint64_t payload = 0;
    for (const envelope* e : batch) payload += e->payload.size();
    std::lock_guard lk(mu_);
    if (!written) return false;
    if (resend) {
      p.stats.resent += batch.size();
      p.resend_at = last < p.written_hi ? last + 1 : 0;
    } else {
      p.out.mark_written(batch.size());
      p.stats.messages_sent += batch.size();
      p.stats.bytes_sent += payload;
      p.written_hi = last;
    }
    ++p.stats.batches_sent;
    spent += bytes;
    space_cv_.notify_all();  // flush() waiters
  }
  std::lock_guard lk(mu_);
  return !p.data_blocked && (p.out.unwritten() != 0 || p.resend_at != 0) && p.state == link_state::up;
}

void transport_impl::timers(steady::time_point now, bool drained) {
  // Timers run every check_every_: a longer gap means this process did not run (SIGSTOP, a paused
  // machine, starvation). The peers' silence meanwhile is ours, not theirs.
  if (last_timers_ != steady::time_point{} && now - last_timers_ > opt_.heartbeat_timeout) {
    log(log_level::warning, "node `" + opt_.self + "`: this process did not run for " + ms_of(now - last_timers_) +
                                " (stopped, or starved of CPU); its peers' silence meanwhile is not held against them");
    for (auto& p : peers_) {
      p.last_heard = now;
      p.detector.reset();
    }
  }
  last_timers_ = now;
  for (auto& p : peers_) {
    // Heartbeats on the control connection; on the data connection a `sent` frame while some of
    // what we wrote is unconfirmed, so a peer that lost the tail of it finds out.
    if (now - p.last_control_sent >= hb_interval_) write(p, true, {}, 0);
    if (p.state == link_state::up && p.written_hi > p.confirmed && now - p.last_data_sent >= hb_interval_) {
      write(p, false, {}, p.written_hi);
    }
    if (!p.ever_up && p.cfg.required && now >= p.next_missing_log) {
      p.next_missing_log = now + opt_.missing_peer_log_every;
      std::string state = p.candidate != 0 ? "its hello arrived, the handshake has not completed"
                          : p.connected    ? "connected, nothing heard from it"
                                           : "not connected";
      bool incompatible;
      {
        std::lock_guard lk(mu_);
        incompatible = !p.incompatible.empty();
        if (incompatible) state = p.incompatible;
      }
      log(log_level::warning,
          "node `" + opt_.self + "`: still waiting for " + who(p) + " at " + p.cfg.endpoint + ": " + state);
    }
    // Liveness is judged only when the ROUTER is drained: frames waiting in it prove their senders
    // alive even if this thread was slow to read them.
    if (!drained || p.state == link_state::down) continue;
    const auto silent = now - p.last_heard;
    const auto threshold = p.detector.threshold();
    if (p.state == link_state::up && silent > threshold) {
      const std::string why = "no frame for " + ms_of(silent) + " (threshold " + ms_of(threshold) +
                              ", heartbeat timeout " + ms_of(opt_.heartbeat_timeout) + ")";
      if (!p.connected) {
        gone(p, why + " and its connection is closed");
      } else {
        stall(p, why);
      }
    } else if (p.state == link_state::stalled) {
      if (!p.connected) {
        gone(p, "stalled for " + ms_of(now - p.stalled_since) + ", then its connection closed");
      } else if (silent > opt_.give_up_after) {
        gone(p, "silent for " + ms_of(silent) + " (give_up_after " + ms_of(opt_.give_up_after) + ")");
      }
    }
  }
}

void transport_impl::handle_zap() {
  std::vector<std::string> req;
  for (;;) {
    zmq_msg_t m;
    zmq_msg_init(&m);
    if (zmq_msg_recv(&m, zap_, 0) < 0) {
      zmq_msg_close(&m);
      return;
    }
    req.emplace_back(static_cast<const char*>(zmq_msg_data(&m)), zmq_msg_size(&m));
    const bool more = zmq_msg_more(&m);
    zmq_msg_close(&m);
    if (!more) break;
  }
  // ZAP 1.0: version, request id, domain, address, identity, mechanism, credentials...
  std::string status = "400", text = "not a CURVE request", user;
  if (req.size() >= 7 && req[0] == "1.0" && req[5] == "CURVE" && req[6].size() == 32) {
    char z85[41] = {};
    zmq_z85_encode(z85, reinterpret_cast<const std::uint8_t*>(req[6].data()), 32);
    if (authorized_.count(z85)) {
      status = "200";
      text = "OK";
      auto it = key_owner_.find(z85);
      user = it == key_owner_.end() ? std::string(z85) : it->second;
    } else {
      text = "key not authorised";
      const std::string from = req[3].empty() ? "a local connection" : banyan::log::escape(req[3]);
      count_and_log(rejects_.auth, "node `" + opt_.self + "`: refused CURVE handshake from " + from + ": key " + z85 +
                                       " is not authorised (handshakes refused)");
    }
  }
  const std::string version = "1.0", id = req.size() > 1 ? req[1] : std::string();
  const std::string* parts[] = {&version, &id, &status, &text, &user};
  for (int i = 0; i < 5; ++i) zmq_send(zap_, parts[i]->data(), parts[i]->size(), ZMQ_SNDMORE);
  zmq_send(zap_, "", 0, 0);  // metadata
}

}  // namespace

result<std::unique_ptr<transport>> transport::start(transport_options options, callbacks cbs) {
  if (auto v = detail::validate(options); !v) return v.error();
  auto t = std::make_unique<transport_impl>(std::move(options), std::move(cbs));
  if (auto r = t->open(); !r) {
    t->stop();
    return r.error();
  }
  return std::unique_ptr<transport>(std::move(t));
}

}  // namespace banyan::runtime
