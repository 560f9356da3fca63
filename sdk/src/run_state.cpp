#include "run_state.hpp"

#include <cstdio>

namespace banyan::detail {

namespace {
std::shared_ptr<component_tree> make_tree(const spec& root) {
  auto tree = std::make_shared<component_tree>(root.name());
  // Breadth-first is not required; depth-first keeps a subtree's vertices contiguous.
  std::vector<std::pair<const spec*, vertex_id>> stack{{&root, 0}};
  while (!stack.empty()) {
    auto [s, v] = stack.back();
    stack.pop_back();
    std::vector<std::pair<const spec*, vertex_id>> kids;
    for (const auto& child : s->children()) {
      auto c = tree->add(v, child.name());
      if (!c) throw std::invalid_argument(c.error().what());
      kids.emplace_back(&child, *c);
    }
    for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.push_back(*it);
  }
  tree->freeze();
  return tree;
}
}  // namespace

run_state::run_state(const app& application, const run_options& options)
    : tree_(make_tree(application.root())),
      specs_(tree_->size(), nullptr),
      options_(options),
      routing_(tree_, options.mode),
      loads_(tree_->size()),
      actors_(tree_->size()) {
  add_specs(application.root(), 0);
}

void run_state::add_specs(const spec& s, vertex_id v) {
  specs_[v] = &s;
  const auto& kids = tree_->children(v);
  std::size_t i = 0;
  for (const auto& child : s.children()) add_specs(child, kids[i++]);
}

void run_state::set_actor(vertex_id v, caf::actor a) {
  std::lock_guard lock(directory_mutex_);
  actors_[v] = std::move(a);
  directory_version_.fetch_add(1, std::memory_order_acq_rel);
}

caf::actor run_state::actor_of(vertex_id v) {
  std::lock_guard lock(directory_mutex_);
  return actors_[v];
}

void run_state::log(std::string_view path, std::string_view line) {
  std::lock_guard lock(log_mutex_);
  std::fprintf(stderr, "[banyan] %.*s: %.*s\n", static_cast<int>(path.size()), path.data(),
               static_cast<int>(line.size()), line.data());
}

void run_state::request_quit(int exit_code) {
  std::lock_guard lock(done_mutex_);
  if (!quit_requested_) {
    quit_requested_ = true;
    exit_code_ = exit_code;
  }
  done_cv_.notify_all();
}

void run_state::root_down(bool failed) {
  std::lock_guard lock(done_mutex_);
  root_down_ = true;
  root_failed_ = failed;
  done_cv_.notify_all();
}

run_state::wake run_state::wait(std::optional<std::chrono::steady_clock::time_point> deadline,
                                std::chrono::milliseconds slice) {
  std::unique_lock lock(done_mutex_);
  auto until = std::chrono::steady_clock::now() + slice;
  if (deadline && *deadline < until) until = *deadline;
  done_cv_.wait_until(lock, until, [&] { return quit_requested_ || root_down_; });
  if (root_down_) return wake::root_down;
  if (quit_requested_) return wake::quit;
  if (deadline && std::chrono::steady_clock::now() >= *deadline) return wake::deadline;
  return wake::idle;
}

void run_state::wait_root_down() {
  std::unique_lock lock(done_mutex_);
  done_cv_.wait(lock, [&] { return root_down_; });
}

int run_state::exit_code() const {
  std::lock_guard lock(done_mutex_);
  if (quit_requested_) return exit_code_;
  return root_failed_ ? 1 : 0;
}

bool run_state::root_failed() const {
  std::lock_guard lock(done_mutex_);
  return root_failed_;
}

}  // namespace banyan::detail
