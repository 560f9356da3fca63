#include "move_state.hpp"

#include "banyan/sdk/error.hpp"

#include <algorithm>
#include <cstring>
#include <set>

namespace banyan::detail {
namespace {

void put_u(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_s(std::string& out, std::string_view s) {
  put_u(out, s.size(), 4);
  out.append(s);
}

class reader {
 public:
  explicit reader(std::string_view b) : b_(b) {}
  bool u(std::uint64_t& v, int bytes) {
    if (b_.size() - at_ < static_cast<std::size_t>(bytes)) return false;
    v = 0;
    for (int i = 0; i < bytes; ++i) v |= std::uint64_t(static_cast<unsigned char>(b_[at_ + i])) << (8 * i);
    at_ += bytes;
    return true;
  }
  bool s(std::string& out) {
    std::uint64_t n;
    if (!u(n, 4) || b_.size() - at_ < n) return false;
    out.assign(b_.substr(at_, n));
    at_ += n;
    return true;
  }
  bool done() const { return at_ == b_.size(); }
  std::size_t at() const { return at_; }

 private:
  std::string_view b_;
  std::size_t at_ = 0;
};

}  // namespace

std::string encode(const std::vector<vertex_state>& states) {
  std::string out;
  put_u(out, states.size(), 4);
  for (const auto& s : states) {
    put_u(out, s.vertex, 4);
    put_u(out, s.snapshot ? 1 : 0, 1);
    if (s.snapshot) put_s(out, *s.snapshot);
    put_u(out, s.sequence, 8);
    put_u(out, s.subscriptions.size(), 4);
    for (const auto& [id, filter] : s.subscriptions) {
      put_u(out, id, 8);
      put_s(out, filter);
    }
    put_u(out, s.held.size(), 4);
    for (const auto& h : s.held) {
      put_s(out, h.topic);
      put_u(out, h.scope, 4);
      put_s(out, h.data);
    }
  }
  return out;
}

std::vector<vertex_id> subtree_of(const component_tree& tree, vertex_id v) {
  std::vector<vertex_id> out{v};
  for (std::size_t i = 0; i < out.size(); ++i)
    for (auto c : tree.children(out[i])) out.push_back(c);
  return out;
}

result<std::vector<vertex_state>> decode(std::string_view bytes, const component_tree& tree, vertex_id root) {
  reader r(bytes);
  auto bad = [&](const std::string& what) {
    return error{sdk::errc::invalid_argument, "moved state of `" + tree.path(root) + "`: " + what + " at byte " +
                                                  std::to_string(r.at()) + " of " + std::to_string(bytes.size())};
  };
  std::uint64_t count;
  if (!r.u(count, 4)) return bad("no component count");
  if (count > tree.size()) return bad("more components than the tree has");
  std::vector<vertex_state> out(count);
  std::set<vertex_id> seen;
  for (auto& s : out) {
    std::uint64_t v, flag, n;
    if (!r.u(v, 4)) return bad("truncated vertex");
    if (v >= tree.size() || !tree.contains(root, static_cast<vertex_id>(v)))
      return bad("vertex " + std::to_string(v) + " is not in the moved subtree");
    if (!seen.insert(static_cast<vertex_id>(v)).second) return bad("vertex " + std::to_string(v) + " twice");
    s.vertex = static_cast<vertex_id>(v);
    if (!r.u(flag, 1) || flag > 1) return bad("bad snapshot flag");
    if (flag) {
      s.snapshot.emplace();
      if (!r.s(*s.snapshot)) return bad("truncated snapshot");
    }
    if (!r.u(s.sequence, 8)) return bad("truncated sequence");
    if (!r.u(n, 4) || n > bytes.size()) return bad("bad subscription count");
    s.subscriptions.resize(n);
    for (auto& [id, filter] : s.subscriptions)
      if (!r.u(id, 8) || !r.s(filter)) return bad("truncated subscription");
    if (!r.u(n, 4) || n > bytes.size()) return bad("bad held publish count");
    s.held.resize(n);
    for (auto& h : s.held) {
      std::uint64_t scope;
      if (!r.s(h.topic) || !r.u(scope, 4) || !r.s(h.data)) return bad("truncated held publish");
      if (scope >= tree.size() || !tree.contains(static_cast<vertex_id>(scope), s.vertex))
        return bad("held publish scope " + std::to_string(scope) + " does not contain its publisher");
      h.scope = static_cast<vertex_id>(scope);
    }
  }
  if (!r.done()) return bad("trailing bytes");
  return out;
}

void orphaned_publishes::add(vertex_id v, std::vector<moved_publish> publishes, std::uint64_t after_sequence) {
  std::lock_guard lock(mutex_);
  auto& e = held_[v];
  if (e.publishes.empty()) e.after_sequence = after_sequence;
  for (auto& p : publishes) e.publishes.push_back(std::move(p));
}

std::optional<orphaned_publishes::entry> orphaned_publishes::take(vertex_id v) {
  std::lock_guard lock(mutex_);
  auto it = held_.find(v);
  if (it == held_.end()) return std::nullopt;
  auto e = std::move(it->second);
  held_.erase(it);
  return e;
}

std::vector<vertex_id> orphaned_publishes::vertices() const {
  std::lock_guard lock(mutex_);
  std::vector<vertex_id> out;
  for (const auto& [v, e] : held_) out.push_back(v);
  std::sort(out.begin(), out.end());
  return out;
}

void move_arrivals::put(std::vector<vertex_state> states) {
  std::lock_guard lock(mutex_);
  for (auto& s : states) states_[s.vertex] = std::move(s);
}

std::optional<vertex_state> move_arrivals::take(vertex_id v) {
  std::lock_guard lock(mutex_);
  auto it = states_.find(v);
  if (it == states_.end()) return std::nullopt;
  auto s = std::move(it->second);
  states_.erase(it);
  return s;
}

void move_arrivals::begin(vertex_id root) {
  std::lock_guard lock(mutex_);
  roots_.insert(root);
}

void move_arrivals::over(vertex_id root) {
  std::lock_guard lock(mutex_);
  roots_.erase(root);
}

bool move_arrivals::arriving(vertex_id root) const {
  std::lock_guard lock(mutex_);
  return roots_.count(root) != 0;
}

}  // namespace banyan::detail
