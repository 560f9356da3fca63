// The transport's I/O thread and its link state machine (see transport.hpp for the contract and
// docs/runtime.md for the protocol).
#include "banyan/runtime/transport.hpp"

#include "banyan/base/log.hpp"
#include "banyan/runtime/curve.hpp"
#include "wire.hpp"

#include <zmq.h>

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <unordered_map>

namespace banyan::runtime {
namespace {

using steady = std::chrono::steady_clock;
using detail::verdict;

std::string zmq_error(const std::string& what) { return what + ": " + zmq_strerror(zmq_errno()); }

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
  std::atomic<std::uint64_t> released{0};
  std::atomic<std::uint64_t> wake_every{1};  // wake the I/O thread each time this many more are released
  std::shared_ptr<waker> io;
};

// Attached to every received envelope: releasing its last copy delivers the envelope.
struct receipt {
  explicit receipt(std::shared_ptr<credit_counter> c) : counter(std::move(c)) {}
  ~receipt() {
    const auto n = counter->released.fetch_add(1, std::memory_order_acq_rel) + 1;
    if (n % counter->wake_every.load(std::memory_order_relaxed) == 0) counter->io->wake();
  }
  std::shared_ptr<credit_counter> counter;
};

struct peer {
  peer_config cfg;
  void* dealer = nullptr;
  // Guarded by transport_impl::mu_ (written on the I/O thread only, except by send()).
  std::deque<envelope> queue;  // accepted by send(), not yet written
  // Receipts of written envelopes, by sequence, kept until the peer has delivered them.
  std::deque<std::pair<std::uint64_t, std::shared_ptr<const void>>> held;
  std::uint32_t session = 1;   // our send session towards the peer (a new one after each loss)
  std::uint64_t next_seq = 1;  // sequence of the next accepted envelope, this session
  std::uint64_t acked = 0;     // envelopes of this session the peer has delivered
  bool up = false;
  link_stats stats;
  // I/O thread only: the direction from the peer to us.
  std::uint64_t remote_incarnation = 0;  // 0: never heard
  std::uint32_t recv_session = 0;        // the peer's send session we are receiving
  std::uint64_t recv_expected = 1;
  std::uint64_t received = 0;            // envelopes of recv_session handed to on_envelope
  std::shared_ptr<credit_counter> credit;  // their receipts
  std::uint64_t delivered_told = 0;      // last release count we sent back (credit granted)
  std::uint64_t ack_every = 1;           // a quarter of the peer's credit window
  bool blocked = false;                  // the DEALER refused a write; poll it for POLLOUT
  steady::time_point last_heard{}, last_sent{};

  std::uint64_t outstanding() const { return next_seq - 1 - acked; }
  std::uint64_t released() const { return credit ? credit->released.load(std::memory_order_acquire) : 0; }
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

  void run();
  void receive_all(bool& drained);
  void handle_parts(std::span<zmq_msg_t> frames, bool too_many);
  void reject(verdict v, const std::string& from, const std::string& why);
  void reject_counted(std::uint64_t& counter, const std::string& reason, const std::string& from, const std::string& why);
  void start_receiving(peer& p, std::uint32_t session);
  void lose(peer& p, const std::string& reason);
  void report_credit(peer& p);
  bool write(peer& p, std::span<const envelope> batch);
  void write_queues();
  void heartbeats(steady::time_point now);
  void handle_zap();
  void close_sockets();

  transport_options opt_;
  callbacks cb_;
  std::uint64_t incarnation_ = 0;
  std::uint32_t window32_ = 0;
  steady::duration hb_interval_, lost_after_, check_every_;
  std::string bound_;
  bool curve_ = false;
  std::set<std::string> authorized_;
  std::unordered_map<std::string, std::string> key_owner_;  // peer public key -> peer name

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

result<void> invalid(const std::string& what) { return error{errc::invalid_argument, what}; }

bool valid_endpoint(const std::string& e) {
  return (e.rfind("tcp://", 0) == 0 && e.size() > 6) || (e.rfind("ipc://", 0) == 0 && e.size() > 6) ||
         (e.rfind("inproc://", 0) == 0 && e.size() > 9);
}

result<void> validate(const transport_options& o) {
  if (o.self.empty()) return invalid("transport options: `self` (this node's name) is empty");
  if (!valid_endpoint(o.bind_endpoint)) {
    return invalid("node `" + o.self + "`: bind endpoint `" + o.bind_endpoint + "` is not tcp://host:port or ipc://path");
  }
  if (o.credit_window == 0) return invalid("node `" + o.self + "`: credit_window must be at least 1");
  if (o.max_batch == 0) return invalid("node `" + o.self + "`: max_batch must be at least 1");
  if (o.heartbeat_timeout < std::chrono::milliseconds(10)) {
    return invalid("node `" + o.self + "`: heartbeat_timeout must be at least 10 ms");
  }
  const bool curve = !o.curve_secret_key.empty() || !o.curve_public_key.empty();
  if (curve && (!is_z85_key(o.curve_secret_key) || !is_z85_key(o.curve_public_key))) {
    return invalid("node `" + o.self + "`: CURVE keys must both be 40 Z85 characters (secret " +
                   std::to_string(o.curve_secret_key.size()) + ", public " + std::to_string(o.curve_public_key.size()) +
                   " characters)");
  }
  std::set<std::string> names{o.self}, endpoints{o.bind_endpoint};
  for (std::size_t i = 0; i < o.peers.size(); ++i) {
    const auto& p = o.peers[i];
    const std::string where = "peer " + std::to_string(i) + " (`" + p.name + "`)";
    if (p.name.empty()) return invalid("peer " + std::to_string(i) + ": empty name");
    if (!names.insert(p.name).second) return invalid(where + ": duplicate node name");
    if (p.endpoint.empty()) return invalid(where + ": no endpoint");
    if (!valid_endpoint(p.endpoint)) return invalid(where + ": endpoint `" + p.endpoint + "` is not tcp:// or ipc://");
    if (!endpoints.insert(p.endpoint).second) return invalid(where + ": duplicate endpoint `" + p.endpoint + "`");
    if (curve && !is_z85_key(p.curve_public_key)) {
      return invalid(where + ": CURVE is on but its public key is missing or not 40 Z85 characters");
    }
  }
  for (std::size_t i = 0; i < o.authorized_keys.size(); ++i) {
    if (!is_z85_key(o.authorized_keys[i])) {
      return invalid("authorized key " + std::to_string(i) + ": not 40 Z85 characters");
    }
  }
  return {};
}

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
  for (auto r : {set_int(router_, ZMQ_LINGER, 0, "LINGER"), set_int(router_, ZMQ_ROUTER_HANDOVER, 1, "ROUTER_HANDOVER"),
                 set_int(router_, ZMQ_RCVHWM, window + 64, "RCVHWM")}) {
    if (!r) return r;
  }
  zmq_setsockopt(router_, ZMQ_MAXMSGSIZE, &max_msg, sizeof max_msg);
  if (curve_) {
    if (auto r = set_int(router_, ZMQ_CURVE_SERVER, 1, "CURVE_SERVER"); !r) return r;
    zmq_setsockopt(router_, ZMQ_CURVE_SECRETKEY, opt_.curve_secret_key.c_str(), 40);
    zmq_setsockopt(router_, ZMQ_ZAP_DOMAIN, "banyan", 6);
  }
  if (zmq_bind(router_, opt_.bind_endpoint.c_str()) != 0) {
    return error{errc::io, zmq_error("node `" + opt_.self + "`: cannot bind `" + opt_.bind_endpoint + "`")};
  }
  char last[512] = {};
  std::size_t len = sizeof last;
  zmq_getsockopt(router_, ZMQ_LAST_ENDPOINT, last, &len);
  bound_ = last;

  peers_.resize(opt_.peers.size());
  for (std::size_t i = 0; i < opt_.peers.size(); ++i) {
    peer& p = peers_[i];
    p.cfg = opt_.peers[i];
    index_[p.cfg.name] = i;
    p.dealer = zmq_socket(ctx_, ZMQ_DEALER);
    zmq_setsockopt(p.dealer, ZMQ_ROUTING_ID, opt_.self.data(), opt_.self.size());
    // What flush() handed to ZeroMQ before stop() (a last `quit`, say) still goes out, for at most a
    // heartbeat timeout; with ZMQ_IMMEDIATE nothing waits for a peer that is not connected.
    const int linger = static_cast<int>(opt_.heartbeat_timeout.count());
    for (auto r : {set_int(p.dealer, ZMQ_LINGER, linger, "LINGER"), set_int(p.dealer, ZMQ_IMMEDIATE, 1, "IMMEDIATE"),
                   set_int(p.dealer, ZMQ_SNDHWM, window + 64, "SNDHWM"),
                   set_int(p.dealer, ZMQ_RECONNECT_IVL, 50, "RECONNECT_IVL"),
                   set_int(p.dealer, ZMQ_RECONNECT_IVL_MAX, 500, "RECONNECT_IVL_MAX")}) {
      if (!r) return r;
    }
    if (curve_) {
      zmq_setsockopt(p.dealer, ZMQ_CURVE_SERVERKEY, p.cfg.curve_public_key.c_str(), 40);
      zmq_setsockopt(p.dealer, ZMQ_CURVE_PUBLICKEY, opt_.curve_public_key.c_str(), 40);
      zmq_setsockopt(p.dealer, ZMQ_CURVE_SECRETKEY, opt_.curve_secret_key.c_str(), 40);
    }
    if (zmq_connect(p.dealer, p.cfg.endpoint.c_str()) != 0) {
      return error{errc::invalid_argument, zmq_error("peer `" + p.cfg.name + "`: cannot connect to `" + p.cfg.endpoint + "`")};
    }
  }
  waker_->fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (waker_->fd < 0) return error{errc::io, "eventfd failed"};
  io_ = std::thread([this] { run(); });
  return {};
}

void transport_impl::close_sockets() {
  for (auto& p : peers_) {
    if (p.dealer) zmq_close(p.dealer);
    p.dealer = nullptr;
  }
  if (router_) zmq_close(router_);
  if (zap_) zmq_close(zap_);
  router_ = zap_ = nullptr;
  if (ctx_) zmq_ctx_term(ctx_);
  ctx_ = nullptr;
}

void transport_impl::stop() {
  std::lock_guard stop_lk(stop_mu_);
  if (io_.joinable()) {
    stopping_ = true;
    waker_->pending = false;
    wake();
    io_.join();
  }
  std::vector<std::shared_ptr<const void>> released;  // receipts of downstream nodes, dropped unlocked
  {
    std::lock_guard lk(mu_);
    if (stopped_) return;
    stopped_ = true;
    for (auto& p : peers_) {
      p.up = false;
      for (auto& e : p.queue) released.push_back(std::move(e.receipt));
      for (auto& h : p.held) released.push_back(std::move(h.second));
      p.queue.clear();
      p.held.clear();
    }
  }
  space_cv_.notify_all();
  close_sockets();
}

result<void> transport_impl::send(const std::string& name, envelope e, std::size_t block_at) {
  peer* p = find(name);
  if (!p) return invalid("send: `" + name + "` is not a peer of node `" + opt_.self + "`");
  // The I/O thread must never wait for credit: only it can receive the grant.
  if (std::this_thread::get_id() == io_id_) block_at = never_block;
  const std::size_t limit = block_at == at_window ? opt_.credit_window : block_at;
  std::unique_lock lk(mu_);
  if (p->outstanding() >= limit && p->up && !stopped_) {
    ++p->stats.credit_waits;
    space_cv_.wait(lk, [&] { return stopped_ || !p->up || p->outstanding() < limit; });
  }
  if (stopped_ || !p->up) {
    ++p->stats.send_failures;
    return error{errc::io, stopped_ ? "send to `" + name + "`: transport stopped" : "send to `" + name + "`: peer is down"};
  }
  e.sequence = p->next_seq++;
  p->queue.push_back(std::move(e));
  p->stats.max_outstanding = std::max(p->stats.max_outstanding, p->outstanding());
  lk.unlock();
  wake();
  return {};
}

bool transport_impl::window_full(const std::string& name) const {
  const peer* p = find(name);
  if (!p) return false;
  std::lock_guard lk(mu_);
  return p->up && !stopped_ && p->outstanding() >= opt_.credit_window;
}

void transport_impl::flush() {
  std::unique_lock lk(mu_);
  space_cv_.wait(lk, [&] {
    if (stopped_) return true;
    for (auto& p : peers_) {
      if (p.up && !p.queue.empty()) return false;
    }
    return true;
  });
}

result<void> transport_impl::wait_until_up(const std::string& name, std::chrono::milliseconds timeout) {
  peer* p = find(name);
  if (!p) return invalid("wait: `" + name + "` is not a peer of node `" + opt_.self + "`");
  std::unique_lock lk(mu_);
  if (!space_cv_.wait_for(lk, timeout, [&] { return p->up || stopped_; }) || !p->up) {
    return error{errc::timeout, "peer `" + name + "` (" + p->cfg.endpoint + ") not up after " +
                                    std::to_string(timeout.count()) + " ms"};
  }
  return {};
}

link_stats transport_impl::stats(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) return {};
  std::lock_guard lk(mu_);
  link_stats s = peers_[it->second].stats;
  s.up = peers_[it->second].up;
  return s;
}

// ---------------------------------------------------------------------------------------------
// I/O thread

void transport_impl::run() {
  io_id_ = std::this_thread::get_id();
  auto next_check = steady::now();
  std::vector<zmq_pollitem_t> items;
  while (!stopping_) {
    items.clear();
    items.push_back({router_, 0, ZMQ_POLLIN, 0});
    items.push_back({nullptr, waker_->fd, ZMQ_POLLIN, 0});
    if (zap_) items.push_back({zap_, 0, ZMQ_POLLIN, 0});
    std::vector<std::size_t> blocked;
    for (std::size_t i = 0; i < peers_.size(); ++i) {
      if (peers_[i].blocked) {
        items.push_back({peers_[i].dealer, 0, ZMQ_POLLOUT, 0});
        blocked.push_back(i);
      }
    }
    const auto now = steady::now();
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_check - now).count();
    zmq_poll(items.data(), static_cast<int>(items.size()), std::max<long>(0, wait));
    if (items[1].revents & ZMQ_POLLIN) {
      std::uint64_t v;
      [[maybe_unused]] auto n = ::read(waker_->fd, &v, sizeof v);
    }
    waker_->pending = false;
    if (zap_ && (items[2].revents & ZMQ_POLLIN)) handle_zap();
    for (std::size_t k = 0; k < blocked.size(); ++k) {
      if (items[items.size() - blocked.size() + k].revents & ZMQ_POLLOUT) peers_[blocked[k]].blocked = false;
    }
    bool drained = true;
    receive_all(drained);
    write_queues();
    for (auto& p : peers_) report_credit(p);
    const auto t = steady::now();
    if (t >= next_check) {
      heartbeats(t);
      // Liveness is judged only when the ROUTER is drained: frames waiting in it prove their
      // senders alive even if this thread was slow to read them.
      if (drained) {
        for (auto& p : peers_) {
          bool up;
          {
            std::lock_guard lk(mu_);
            up = p.up;
          }
          if (up && t - p.last_heard > lost_after_) {
            const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - p.last_heard).count();
            lose(p, "no frame for " + std::to_string(ms) + " ms (heartbeat timeout " +
                        std::to_string(opt_.heartbeat_timeout.count()) + " ms)");
          }
        }
      }
      next_check = t + check_every_;
    }
  }
}

void transport_impl::receive_all(bool& drained) {
  // Frames are received in place (a zmq_msg_t must not be copied); a message of more parts than
  // any of ours is drained and rejected as garbage.
  // At most 64 messages and a quarter heartbeat interval per call, so that a flood of incoming data
  // never delays our own heartbeats and credit frames (a peer would take the silence for loss).
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

void transport_impl::reject_counted(std::uint64_t& counter, const std::string& reason, const std::string& from,
                                    const std::string& why) {
  std::uint64_t n;
  {
    std::lock_guard lk(mu_);
    n = ++counter;
  }
  // Logged the first 10 times per reason, then at every power of ten, so a flood cannot drown the log.
  bool pow10 = true;
  for (std::uint64_t x = n; x > 1; x /= 10) {
    if (x % 10 != 0) { pow10 = false; break; }
  }
  if (n <= 10 || pow10) {
    // `from` and `why` may quote what a stranger sent: escaped, so they cannot forge log lines.
    log(log_level::warning, "node `" + opt_.self + "`: rejected " + reason + " frame from `" + banyan::log::escape(from) +
                                "`: " + banyan::log::escape(why) + " (" + std::to_string(n) + " so far)");
  }
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

void transport_impl::handle_parts(std::span<zmq_msg_t> frames, bool too_many) {
  const std::string from(static_cast<const char*>(zmq_msg_data(&frames[0])), zmq_msg_size(&frames[0]));
  peer* p = find(from);
  if (!p) return reject_counted(rejects_.unknown_peer, "unknown-sender", from, "not a peer of this node");
  if (curve_ && !p->cfg.curve_public_key.empty()) {
    // The ROUTER trusts the routing id the DEALER claims; CURVE tells us whose key it really is.
    // (The identity frame is made by the ROUTER and carries no metadata; the peer's frames do.)
    const char* user = frames.size() > 1 ? zmq_msg_gets(&frames[1], "User-Id") : nullptr;
    if (!user || from != user) {
      return reject_counted(rejects_.auth, "impersonating", from,
                            std::string("its CURVE key belongs to `") + (user ? user : "?") + "`");
    }
  }
  if (too_many) return reject(verdict::garbage, from, "more than 8 ZeroMQ frames");
  auto d = detail::decode(frames.subspan(1), opt_.max_frame_bytes);
  if (d.v != verdict::ok) return reject(d.v, from, d.detail);
  p->last_heard = steady::now();
  if (d.h.incarnation != p->remote_incarnation) {
    // A restarted peer has forgotten both directions: give ours up (counted) and hear it afresh.
    if (p->remote_incarnation != 0) lose(*p, "peer restarted (new incarnation)");
    p->remote_incarnation = d.h.incarnation;
    start_receiving(*p, d.h.session);
  } else if (d.h.session > p->recv_session) {
    start_receiving(*p, d.h.session);
  }
  bool up;
  {
    std::lock_guard lk(mu_);
    up = p->up;
    if (!up) {
      p->up = true;
      ++p->stats.sessions;
    }
  }
  if (!up) {
    space_cv_.notify_all();
    log(log_level::info, "node `" + opt_.self + "`: link to `" + p->cfg.name + "` up");
    if (cb_.on_peer_up) cb_.on_peer_up(p->cfg.name);
  }
  p->ack_every = std::max<std::uint64_t>(1, d.h.window / 4);
  if (p->credit) p->credit->wake_every.store(p->ack_every, std::memory_order_relaxed);
  if (!d.envelopes.empty()) {
    if (d.h.target != incarnation_) {
      return reject_counted(rejects_.stale, "stale", from, "data for an earlier incarnation of this node");
    }
    if (d.h.session < p->recv_session) {
      return reject_counted(rejects_.stale, "stale", from, "data of a send session the peer has given up");
    }
  }
  if (!d.envelopes.empty()) {  // counted before delivery, so whoever sees an envelope sees it counted
    std::uint64_t bytes = 0;
    for (const auto& e : d.envelopes) bytes += e.payload.size();
    std::lock_guard lk(mu_);
    p->stats.messages_received += d.envelopes.size();
    p->stats.bytes_received += bytes;
    ++p->stats.batches_received;
  }
  for (auto& e : d.envelopes) {
    if (e.sequence != p->recv_expected) {
      {
        std::lock_guard lk(mu_);
        ++p->stats.sequence_gaps;
      }
      log(log_level::error, "link `" + banyan::log::escape(from) + "` -> `" + opt_.self + "`: sequence " + std::to_string(e.sequence) +
                                ", expected " + std::to_string(p->recv_expected));
    }
    p->recv_expected = e.sequence + 1;
    e.receipt = std::make_shared<receipt>(p->credit);
    if (cb_.on_envelope) cb_.on_envelope(from, std::move(e));
    ++p->received;
  }
  bool grant = false;
  std::vector<std::shared_ptr<const void>> done;  // downstream receipts, released unlocked
  {
    std::lock_guard lk(mu_);
    if (!d.envelopes.empty())
      p->stats.max_undelivered = std::max(p->stats.max_undelivered, p->received - p->released());
    if (d.h.target == incarnation_ && d.h.ack_session == p->session && d.h.delivered > p->acked &&
        d.h.delivered < p->next_seq) {
      p->acked = d.h.delivered;
      while (!p->held.empty() && p->held.front().first <= p->acked) {
        done.push_back(std::move(p->held.front().second));
        p->held.pop_front();
      }
      grant = true;
    }
  }
  if (grant) {
    space_cv_.notify_all();
    if (cb_.on_credit) cb_.on_credit(p->cfg.name);
  }
  report_credit(*p);
}

void transport_impl::start_receiving(peer& p, std::uint32_t session) {
  p.recv_session = session;
  p.recv_expected = 1;
  p.received = 0;
  p.delivered_told = 0;
  p.credit = std::make_shared<credit_counter>();
  p.credit->io = waker_;
  p.credit->wake_every = p.ack_every;
}

void transport_impl::report_credit(peer& p) {
  if (p.credit && p.released() - p.delivered_told >= p.ack_every) write(p, {});  // a credit-only frame
}

void transport_impl::lose(peer& p, const std::string& reason) {
  // Only our direction is given up: the peer resets its receiving side when it sees our next
  // session, and our receiving side stays as it is until the peer starts a session of its own.
  std::uint64_t lost;
  std::deque<envelope> queued;
  std::deque<std::pair<std::uint64_t, std::shared_ptr<const void>>> held;
  {
    std::lock_guard lk(mu_);
    if (!p.up) return;
    p.up = false;
    lost = p.outstanding();
    p.stats.lost_on_down += lost;
    queued.swap(p.queue);
    held.swap(p.held);
    ++p.session;
    p.next_seq = 1;
    p.acked = 0;
  }
  space_cv_.notify_all();
  const std::string why = reason + "; " + std::to_string(lost) + " envelopes unacknowledged";
  log(log_level::error, "node `" + opt_.self + "`: peer `" + p.cfg.name + "` lost: " + why);
  if (cb_.on_peer_down) cb_.on_peer_down(p.cfg.name, why);
}

bool transport_impl::write(peer& p, std::span<const envelope> batch) {
  if (p.blocked) return false;
  zmq_msg_t header, blob;
  const std::uint64_t released = p.released();
  detail::encode({incarnation_, p.remote_incarnation, released, window32_, p.session, p.recv_session}, batch,
                 &header, &blob);
  if (zmq_msg_send(&header, p.dealer, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
    zmq_msg_close(&header);
    zmq_msg_close(&blob);
    p.blocked = true;
    return false;
  }
  zmq_msg_send(&blob, p.dealer, 0);  // ZeroMQ takes a multipart message whole once its first part is in
  p.delivered_told = released;
  p.last_sent = steady::now();
  return true;
}

void transport_impl::write_queues() {
  // A batch stays at the front of its queue (moved-from) until it is written, so flush() and the
  // statistics never see it gone before it is. Only this thread removes entries from a queue.
  std::vector<envelope> batch;
  for (auto& p : peers_) {
    while (!p.blocked) {
      batch.clear();
      {
        std::lock_guard lk(mu_);
        if (!p.up || p.queue.empty()) break;
        const std::size_t n = std::min(opt_.max_batch, p.queue.size());
        for (std::size_t i = 0; i < n; ++i) batch.push_back(std::move(p.queue[i]));
      }
      const bool written = write(p, batch);
      std::uint64_t bytes = 0;
      for (const auto& e : batch) bytes += e.payload.size();
      std::lock_guard lk(mu_);
      if (!written) {
        for (std::size_t i = 0; i < batch.size(); ++i) p.queue[i] = std::move(batch[i]);
        break;
      }
      for (auto& e : batch)
        if (e.receipt) p.held.emplace_back(e.sequence, std::move(e.receipt));
      p.queue.erase(p.queue.begin(), p.queue.begin() + static_cast<std::ptrdiff_t>(batch.size()));
      p.stats.messages_sent += batch.size();
      p.stats.bytes_sent += bytes;
      ++p.stats.batches_sent;
    }
  }
  space_cv_.notify_all();  // flush() waiters
}

void transport_impl::heartbeats(steady::time_point now) {
  for (auto& p : peers_) {
    if (now - p.last_sent >= hb_interval_) {
      if (!p.blocked) write(p, {});  // a heartbeat that does not fit is skipped (the next one follows)
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
      reject_counted(rejects_.auth, "unauthorised", req[3], std::string("CURVE key ") + z85 + " is not authorised");
    }
  }
  const std::string version = "1.0", id = req.size() > 1 ? req[1] : std::string();
  const std::string* parts[] = {&version, &id, &status, &text, &user};
  for (int i = 0; i < 5; ++i) zmq_send(zap_, parts[i]->data(), parts[i]->size(), ZMQ_SNDMORE);
  zmq_send(zap_, "", 0, 0);  // metadata
}

}  // namespace

result<std::unique_ptr<transport>> transport::start(transport_options options, callbacks cbs) {
  if (auto v = validate(options); !v) return v.error();
  auto t = std::make_unique<transport_impl>(std::move(options), std::move(cbs));
  if (auto r = t->open(); !r) {
    t->stop();
    return r.error();
  }
  return std::unique_ptr<transport>(std::move(t));
}

}  // namespace banyan::runtime
