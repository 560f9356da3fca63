#include "banyan/trainer/state.hpp"

#include <banyan/cpu/error.hpp>

#include <banyan/base/log.hpp>
#include <banyan/nn/checkpoint.hpp>

#include <unistd.h>

#include <algorithm>

namespace banyan::trainer {

result<std::unique_ptr<nn::checkpoint_store>> open_checkpoints(const common_options& o, std::string_view flag,
                                                               std::shared_ptr<store::memory_budget> host_budget) {
  if (auto ok = check_checkpoint_path(o.checkpoint, flag); !ok) return std::move(ok).error();
  auto store =
      nn::checkpoint_store::open(o.checkpoint, {.synchronous = o.checkpoint_sync, .budget = std::move(host_budget)});
  if (!store) return error{nn::errc::invalid_argument, std::string(flag) + ": " + store.error().message};
  return store;
}

std::shared_ptr<store::memory_budget> shared_host_budget() {
  const std::uint64_t ceiling = nn::checkpoint_store_options{}.buffer_ceiling;
  const std::uint64_t available = store::system_memory_source()->available().value_or(0);
  return std::make_shared<store::memory_budget>(std::max(ceiling, available / 2));
}

result<void> save_state(nn::checkpoint_store& store, const nn::checkpoint_identity& id, const nn::arena& params,
                        nn::backend& be, const nn::adamw& opt) {
  const nn::checkpoint head{id.model, id.config, static_cast<std::uint64_t>(opt.steps()), {}, {}, {}, id.vocabulary};
  auto saved = store.save_state(state_blob, head, be, params.base(), opt.m_data(), opt.v_data(), params.numel());
  if (!saved) return std::move(saved).error();
  return {};
}

result<void> finish_checkpoints(nn::checkpoint_store& store) {
  auto ok = store.flush(std::chrono::hours(1));
  if (ok) return {};
  const std::int64_t step = store.durable_step();
  error e = std::move(ok).error();
  e.message = "checkpoint folder `" + store.dir().string() + "`: " + e.message + "; " +
              (step < 0 ? std::string("no checkpoint of this run is durable")
                        : "the checkpoint of step " + std::to_string(step) + " is the last durable one");
  return e;
}

result<int> restore_state(const std::filesystem::path& dir, const nn::checkpoint_identity& id, nn::arena& params,
                          nn::backend& be, nn::adamw& opt) {
  auto ck = nn::read_checkpoint(dir, state_blob);
  if (!ck) return std::move(ck).error();
  nn::checkpoint_identity expected = id;
  expected.stored_floats = params.numel();
  if (auto s = nn::check_matches(*ck, dir, expected); !s) return std::move(s).error();
  params.from_host(be, ck->params);
  opt.restore(ck->m, ck->v, static_cast<int>(ck->step));
  return static_cast<int>(ck->step);
}

result<void> check_checkpoint_path(const std::filesystem::path& folder, std::string_view flag) {
  namespace fs = std::filesystem;
  const std::string name = std::string(flag) + " `" + folder.string() + "`";
  std::error_code ec;
  if (fs::exists(folder, ec) && !fs::is_directory(folder, ec)) {
    return error{nn::errc::invalid_argument,
                 name + ": is a file; checkpoints are a folder (docs/store.md): give a folder name"};
  }
  if (fs::is_directory(folder, ec)) {
    if (::access(folder.c_str(), W_OK | X_OK) != 0)
      return error{nn::errc::invalid_argument, name + ": cannot write in this folder"};
    return {};
  }
  fs::path plain = folder;
  if (!plain.has_filename()) plain = plain.parent_path();  // "run/" names the folder run
  const fs::path dir = plain.parent_path().empty() ? fs::path(".") : plain.parent_path();
  if (!fs::is_directory(dir, ec)) {
    return error{nn::errc::invalid_argument, name + ": directory `" + dir.string() + "` does not exist"};
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return error{nn::errc::invalid_argument, name + ": cannot write in directory `" + dir.string() + "`"};
  }
  return {};
}

error input_error(std::string_view flag, const error& e) {
  return error{nn::errc::invalid_argument, std::string(flag) + ": " + e.message};
}

void fail(context& ctx, std::string_view message, int exit_code) {
  log::error(ctx.path(), message);
  ctx.quit(exit_code);
}

void fail(context& ctx, const error& e) {
  const bool argument = e.code == nn::errc::invalid_argument || e.code == cpu::errc::invalid_argument;
  fail(ctx, e.message, argument ? 2 : 1);
}

std::string app_name(std::string_view component_path) {
  const std::size_t begin = component_path.starts_with('/') ? 1 : 0;
  return std::string(component_path.substr(begin, component_path.find('/', begin) - begin));
}

}  // namespace banyan::trainer
