#include "exact_common.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <unistd.h>

namespace banyan::partitioner::detail {
namespace {

// Integral up to rounding in the last bits, judged relative to x: 1.5e-12 is not integral (it is
// not "close to 0": an absolute test would round such loads to nothing and lose every capacity).
bool integral(double x) { return std::abs(x - std::round(x)) <= 1e-12 * std::abs(x); }

// Finds a power of ten s with every x*s integral and max*s <= limit; 0 when none. Candidates run
// from the one that makes the smallest non-zero value about 1 upwards (so 1.5e-12 tries 10^12,
// 10^13, ... and integers in the billions try 10^-3), ten of them at most.
double exact_scale(const std::vector<const std::vector<double>*>& all, double max, long long limit) {
  double min_nonzero = std::numeric_limits<double>::infinity();
  for (const auto* xs : all) {
    for (double x : *xs) {
      if (std::isfinite(x) && x > 0) min_nonzero = std::min(min_nonzero, x);
    }
  }
  if (!std::isfinite(min_nonzero)) return 1;  // all zero
  const int first = static_cast<int>(std::floor(-std::log10(min_nonzero)));
  for (int e = first; e < first + 10; ++e) {
    const double s = std::pow(10.0, e);
    if (!(max * s <= static_cast<double>(limit))) break;
    bool ok = true;
    for (const auto* xs : all) {
      for (double x : *xs) {
        if (std::isfinite(x) && !integral(x * s)) {
          ok = false;
          break;
        }
      }
      if (!ok) break;
    }
    if (ok) return s;
  }
  return 0;
}

}  // namespace

integer_loads scale_loads(const problem& p, long long max_value) {
  integer_loads r;
  const auto& t = p.t;
  auto one_dim = [&](const std::vector<double>& load, const std::vector<double>& cap, std::vector<long long>& out_load,
                     std::vector<long long>& out_cap) {
    double max = 0;
    for (double c : cap)
      if (std::isfinite(c)) max = std::max(max, c);
    for (double l : load) max = std::max(max, l);
    double s = exact_scale({&load, &cap}, max, max_value);
    const bool exact = s > 0;
    if (!exact) s = max > 0 ? static_cast<double>(max_value) / max : 1;
    r.exact = r.exact && exact;
    out_load.resize(load.size());
    for (std::size_t i = 0; i < load.size(); ++i) {
      // Inexact: round loads up, so the integer sums never understate the real ones.
      out_load[i] = exact ? std::llround(load[i] * s) : static_cast<long long>(std::ceil(load[i] * s));
    }
    out_cap.resize(cap.size());
    for (std::size_t i = 0; i < cap.size(); ++i) {
      if (!std::isfinite(cap[i])) {
        out_cap[i] = -1;
        continue;
      }  // unconstrained
      // The same relative tolerance as `evaluate`: exact integer data then admits exactly the
      // mappings evaluate admits (cap x s <= 10^8, so the tolerance adds less than 1 and only
      // absorbs rounding of cap x s); inexact data rounds down, so integer-feasible implies
      // within_capacity for the real loads.
      out_cap[i] = static_cast<long long>(std::floor(cap[i] * s * (1 + capacity_tolerance)));
    }
  };
  one_dim(t.cpu, p.cpu_capacity, r.cpu, r.cpu_cap);
  if (!p.memory_capacity.empty()) one_dim(t.memory, p.memory_capacity, r.mem, r.mem_cap);
  return r;
}

integer_weights scale_weights(const problem& p, double max_total) {
  integer_weights r;
  double total = 0, max_cost = 1;
  for (double x : p.c.link_cost) max_cost = std::max(max_cost, x);
  for (double w : p.t.weight) total += w * max_cost;
  bool integral_all = true;
  for (double w : p.t.weight) {
    if (!integral(w)) {
      integral_all = false;
      break;
    }
  }
  for (double x : p.c.link_cost) {
    if (!integral(x)) {
      integral_all = false;
      break;
    }
  }
  if (integral_all && total <= max_total) return r;
  r.exact = false;
  r.scale = total > 0 ? max_total / total : 1;
  return r;
}

void fall_back_to_warm_start(const problem& p, const solve_options& o, solution& s) {
  // The solver's own mapping is checked even when it says `optimal`: a solver's feasibility
  // tolerance is not ours, so its "optimum" may be over capacity by our rule.
  bool own_ok = false;
  double own_cost = 0;
  if (!s.map.empty()) {
    const evaluation own = evaluate(p, s.map);
    own_ok = own.feasible;
    own_cost = own.cost;
  }
  if (!own_ok && !s.map.empty()) {
    // Never passed on: an over-capacity mapping is not a result (status `unknown` unless the warm
    // start below replaces it).
    s.map.clear();
    s.status = solve_status::unknown;
    s.message = "the solver's mapping is over capacity (by evaluate); discarded";
  }
  if (!o.warm_start) return;
  const evaluation warm = evaluate(p, *o.warm_start);
  if (!warm.feasible) return;
  if (own_ok && own_cost <= warm.cost) return;
  const bool was_optimal = s.status == solve_status::optimal && own_ok;
  s.map = *o.warm_start;
  // An own optimum costlier than a feasible warm start is impossible in exact arithmetic; if it
  // happens (rounded traffic) the claim is dropped.
  s.status = solve_status::feasible;
  if (was_optimal) s.message = "solver's optimum cost more than the warm start (rounding); warm start kept";
  else if (s.message.empty()) s.message = "warm start kept: the solver found nothing better in time";
}

std::vector<std::vector<node_id>> interchangeable_nodes(const problem& p) {
  const auto k = static_cast<node_id>(p.k());
  auto same = [&](node_id a, node_id b) {
    if (p.cpu_capacity[a] != p.cpu_capacity[b]) return false;
    if (!p.memory_capacity.empty() && p.memory_capacity[a] != p.memory_capacity[b]) return false;
    for (node_id m = 0; m < k; ++m) {
      if (m != a && m != b && p.c.cost(a, m) != p.c.cost(b, m)) return false;
    }
    return true;
  };
  std::vector<std::vector<node_id>> classes;
  std::vector<char> done(k, 0);
  for (node_id a = 0; a < k; ++a) {
    if (done[a]) continue;
    std::vector<node_id> cls{a};
    for (node_id b = a + 1; b < k; ++b) {
      if (!done[b] && same(a, b)) {
        cls.push_back(b);
        done[b] = 1;
      }
    }
    if (cls.size() >= 2) classes.push_back(std::move(cls));
  }
  return classes;
}

namespace {

bool write_all(int fd, const char* p, std::size_t size) {
  while (size > 0) {
    const ssize_t w = ::write(fd, p, size);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    size -= static_cast<std::size_t>(w);
  }
  return true;
}

}  // namespace

std::optional<std::string> run_bounded(const std::function<std::string(const emit_fn&)>& work, double deadline_s,
                                       const stopwatch& clock, bool* overran) {
  *overran = false;
  const emit_fn none = [](const std::string&) {};
  int fds[2];
  if (::pipe(fds) != 0) return work(none);
  [[maybe_unused]] const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return work(none);
  }
  if (pid == 0) {  // child: frames of [u64 length][bytes]; the final answer is the last frame
    ::close(fds[0]);
#ifdef __linux__
    // Dies with the parent (Ctrl-C of `banyan partition`) instead of solving on as an orphan.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
#endif
    bool ok = true;
    auto frame = [&](const std::string& m) {
      const std::uint64_t len = m.size();
      ok = ok && write_all(fds[1], reinterpret_cast<const char*>(&len), sizeof len) &&
           write_all(fds[1], m.data(), m.size());
    };
    const std::string out = work(frame);
    frame(out);
    ::_exit(ok ? 0 : 1);  // no destructors or atexit handlers of the parent's objects
  }
  ::close(fds[1]);
  std::string bytes, last;
  bool eof = false, any = false;
  char buf[1 << 16];
  auto take_frames = [&] {
    std::size_t at = 0;
    std::uint64_t len = 0;
    while (bytes.size() - at >= sizeof len) {
      std::memcpy(&len, bytes.data() + at, sizeof len);
      if (bytes.size() - at - sizeof len < len) break;
      last.assign(bytes, at + sizeof len, len);
      any = true;
      at += sizeof len + len;
    }
    bytes.erase(0, at);
  };
  while (!eof) {
    const double left = deadline_s - clock.seconds();
    if (left <= 0) break;
    pollfd pfd{fds[0], POLLIN, 0};
    const int pr = ::poll(&pfd, 1, static_cast<int>(std::ceil(left * 1000)));
    if (pr <= 0) continue;  // EINTR or timeout: the loop condition decides
    const ssize_t got = ::read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      eof = true;
      break;
    }
    bytes.append(buf, static_cast<std::size_t>(got));
    take_frames();
  }
  ::close(fds[0]);
  if (!eof) ::kill(pid, SIGKILL);
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (!eof) {
    *overran = true;
    if (any) return last;
    return std::nullopt;
  }
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0 || !any || !bytes.empty()) return std::nullopt;
  return last;
}

void put_solution(std::string& out, const solution& s) {
  put(out, static_cast<std::int32_t>(s.status));
  put(out, s.lower_bound);
  put(out, static_cast<std::uint64_t>(s.message.size()));
  out += s.message;
  put(out, static_cast<std::uint64_t>(s.map.size()));
  out.append(reinterpret_cast<const char*>(s.map.data()), s.map.size() * sizeof(node_id));
}

bool get_solution(const std::string& in, solution& s) {
  std::size_t at = 0;
  std::int32_t status = 0;
  std::uint64_t len = 0, n = 0;
  if (!get(in, at, status) || !get(in, at, s.lower_bound) || !get(in, at, len) || in.size() - at < len) return false;
  s.status = static_cast<solve_status>(status);
  s.message.assign(in, at, len);
  at += len;
  if (!get(in, at, n) || (in.size() - at) != n * sizeof(node_id)) return false;
  s.map.resize(n);
  std::memcpy(s.map.data(), in.data() + at, n * sizeof(node_id));
  return true;
}

}  // namespace banyan::partitioner::detail
