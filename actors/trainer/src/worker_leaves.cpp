#include "banyan/trainer/worker_leaves.hpp"

#include <banyan/cpu/error.hpp>

#include <charconv>
#include <stdexcept>

namespace banyan::trainer {

namespace {

std::string_view text_of(const delivery& d) {
  return {reinterpret_cast<const char*>(d.bytes().data()), d.bytes().size()};
}

// "<worker>" or "<worker>\n<error>": which worker, and what went wrong if anything.
struct worker_note {
  int worker = -1;
  std::string error;
};

std::optional<worker_note> parse_note(std::string_view text) {
  worker_note n;
  const auto nl = text.find('\n');
  const auto number = text.substr(0, nl);
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), n.worker);
  if (ec != std::errc() || end != number.data() + number.size() || n.worker < 0) return std::nullopt;
  if (nl != std::string_view::npos) n.error = std::string(text.substr(nl + 1));
  return n;
}

}  // namespace

void worker_hub::open(cpu::worker_group* group, std::string trainer_path) {
  std::lock_guard lock(m_);
  group_ = group;
  trainer_path_ = std::move(trainer_path);
  gave_up_ = false;
}

void worker_hub::give_up() {
  std::lock_guard lock(m_);
  gave_up_ = true;
}

void worker_hub::close(cpu::worker_group* group) {
  std::unique_lock lock(m_);
  if (group_ == group) group_ = nullptr;  // else the trainer's next incarnation opened its own already
  idle_.wait(lock, [&] { return in_use_.count(group) == 0; });
}

cpu::worker_group* worker_hub::group(std::string* trainer_path, bool* gave_up) const {
  std::lock_guard lock(m_);
  if (trainer_path) *trainer_path = trainer_path_;
  if (gave_up) *gave_up = gave_up_;
  return group_;
}

bool worker_hub::use(cpu::worker_group* group, const std::function<void(cpu::worker_group&)>& f) {
  {
    std::lock_guard lock(m_);
    if (!group || group_ != group) return false;
    in_use_.insert(group);
  }
  auto leave = [&] {
    {
      std::lock_guard lock(m_);
      in_use_.erase(in_use_.find(group));
    }
    idle_.notify_all();
  };
  try {
    f(*group);
  } catch (...) {
    leave();
    throw;
  }
  leave();
  return true;
}

// --- worker leaf ---------------------------------------------------------------------------------

void worker_leaf::on_start(context& ctx) {
  std::string trainer;
  bool gave_up = false;
  cpu::worker_group* group = hub_->group(&trainer, &gave_up);
  if (!group && gave_up) return;  // the trainer has reported why the run ends
  if (!group) {
    const auto& t = ctx.tree();
    throw std::runtime_error("worker `" + ctx.path() + "`: no worker group from its node trainer `" +
                             t.path(t.parent(t.parent(ctx.id()))) +
                             "` in this process (a node trainer's workers must be deployed on its node, and it "
                             "must have started them)");
  }
  // Subscribed before saying ready, so no run of steps can be missed.
  auto ok = ctx.subscribe(work_steps_topic, [this, group, trainer, &ctx](const delivery&) {
    // Blocks this leaf's own thread, and only it, for the run's steps; nothing once the trainer's
    // incarnation that sent them has ended (its group is going).
    if (!hub_->use(group, [this](cpu::worker_group& g) { g.work(worker_); })) return;
    auto sent = ctx.publish(work_done_topic, std::to_string(worker_), scope::at(trainer));
    if (!sent) throw std::runtime_error(sent.error().what());
  });
  if (!ok) throw std::runtime_error(ok.error().what());
  // On this leaf's own thread (spec::own_thread): bind it, build the replica here.
  result<void> attached;
  if (!hub_->use(group, [&](cpu::worker_group& g) { attached = g.attach(worker_); })) return;  // its trainer has ended
  auto sent = ctx.publish(work_ready_topic,
                          std::to_string(worker_) + (attached ? "" : "\n" + std::string(attached.error().what())),
                          scope::at(trainer));
  if (!sent) throw std::runtime_error(sent.error().what());
}

void add_worker_leaves(spec& trainer, const cpu::placement& where, const std::shared_ptr<worker_hub>& hub) {
  for (std::size_t d = 0; d < where.domains.size(); ++d) {
    // A worker's failure cannot be repaired by restarting it alone (its replica is part of a step
    // every worker takes together): the domain gives up at once, and its trainer hears of it.
    auto& domain = trainer.add_composite("numa" + std::to_string(d),
                                         supervision{.strategy = restart_strategy::one_for_all, .max_restarts = 0});
    for (int w : where.domains[d]) domain.add_leaf<worker_leaf>("w" + std::to_string(w), hub, w).own_thread();
  }
}

// --- the node trainer's side ----------------------------------------------------------------------

worker_driver::worker_driver(context& ctx, std::shared_ptr<worker_hub> hub, cpu::worker_group& group,
                             std::function<void()> on_ready, std::function<void(const error&)> on_error)
    : ctx_(ctx), hub_(std::move(hub)), group_(group), on_ready_(std::move(on_ready)), on_error_(std::move(on_error)) {
  ready_.assign(static_cast<std::size_t>(group.size()), false);
  finished_.assign(static_cast<std::size_t>(group.size()), false);
  for (auto [topic, handler] :
       {std::pair{work_ready_topic, &worker_driver::ready}, std::pair{work_done_topic, &worker_driver::finished}}) {
    auto ok = ctx.subscribe(topic, [this, h = handler](const delivery& d) { (this->*h)(d); });
    if (!ok) throw std::runtime_error(ok.error().what());
  }
  hub_->open(&group, ctx.path());
}

worker_driver::~worker_driver() { hub_->close(&group_); }

void worker_driver::ready(const delivery& d) {
  auto note = parse_note(text_of(d));
  if (!note || note->worker >= group_.size() || ready_[static_cast<std::size_t>(note->worker)]) {
    return on_error_(error{cpu::errc::worker, "`" + d.topic() + "` from `" + d.sender() + "`: unexpected"});
  }
  if (!note->error.empty()) return on_error_(error{cpu::errc::worker, "worker `" + d.sender() + "`: " + note->error});
  ready_[static_cast<std::size_t>(note->worker)] = true;
  if (++ready_count_ == group_.size()) on_ready_();
}

void worker_driver::run(std::int64_t first, int count, std::function<void(std::vector<float>)> done) {
  done_ = std::move(done);
  finished_.assign(finished_.size(), false);
  finished_count_ = 0;
  group_.begin(first, count);
  auto sent = ctx_.publish(work_steps_topic, std::string_view(""), scope::self());
  if (!sent) on_error_(sent.error());
}

void worker_driver::finished(const delivery& d) {
  auto note = parse_note(text_of(d));
  if (!done_ || !note || note->worker >= group_.size() || finished_[static_cast<std::size_t>(note->worker)]) {
    return on_error_(error{cpu::errc::worker, "`" + d.topic() + "` from `" + d.sender() + "`: unexpected"});
  }
  finished_[static_cast<std::size_t>(note->worker)] = true;
  if (++finished_count_ < group_.size()) return;
  auto done = std::move(done_);
  done_ = nullptr;
  done(group_.end());
}

}  // namespace banyan::trainer
