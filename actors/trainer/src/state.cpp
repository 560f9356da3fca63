#include "banyan/trainer/state.hpp"

#include <banyan/cpu/error.hpp>

#include <banyan/base/log.hpp>
#include <banyan/nn/checkpoint.hpp>

#include <unistd.h>

namespace banyan::trainer {

result<void> save_state(const std::filesystem::path& file, const nn::checkpoint_identity& id, const nn::arena& params,
                        nn::backend& be, const nn::adamw& opt) {
  const nn::checkpoint ck{id.model,           id.config,    static_cast<std::uint64_t>(opt.steps()),
                          params.to_host(be), opt.m_host(), opt.v_host(),
                          id.vocabulary};
  return nn::save_checkpoint(file, ck);
}

result<int> restore_state(const std::filesystem::path& file, const nn::checkpoint_identity& id, nn::arena& params,
                          nn::backend& be, nn::adamw& opt) {
  auto ck = nn::load_checkpoint(file);
  if (!ck) return std::move(ck).error();
  nn::checkpoint_identity expected = id;
  expected.stored_floats = params.numel();
  if (auto s = nn::check_matches(*ck, file, expected); !s) return std::move(s).error();
  params.from_host(be, ck->params);
  opt.restore(ck->m, ck->v, static_cast<int>(ck->step));
  return static_cast<int>(ck->step);
}

result<void> check_checkpoint_path(const std::filesystem::path& file, std::string_view flag) {
  namespace fs = std::filesystem;
  const std::string name = std::string(flag) + " `" + file.string() + "`";
  std::error_code ec;
  if (fs::is_directory(file, ec)) return error{nn::errc::invalid_argument, name + ": is a directory; give a file name"};
  const fs::path dir = file.parent_path().empty() ? fs::path(".") : file.parent_path();
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
