#include "banyan/trainer/state.hpp"

#include <banyan/base/log.hpp>
#include <banyan/nn/checkpoint.hpp>

namespace banyan::trainer {

result<void> save_state(const std::filesystem::path& file, const std::string& kind, std::vector<std::int64_t> config,
                        const nn::arena& params, nn::backend& be, const nn::adamw& opt) {
  const nn::checkpoint ck{kind, std::move(config), static_cast<std::uint64_t>(opt.steps()), params.to_host(be),
                          opt.m_host(), opt.v_host()};
  return nn::save_checkpoint(file, ck);
}

result<int> restore_state(const std::filesystem::path& file, const std::string& kind,
                          const std::vector<std::int64_t>& config, nn::arena& params, nn::backend& be, nn::adamw& opt) {
  auto ck = nn::load_checkpoint(file);
  if (!ck) return std::move(ck).error();
  if (auto s = nn::check_matches(*ck, file, kind, config, params.numel()); !s) return std::move(s).error();
  params.from_host(be, ck->params);
  opt.restore(ck->m, ck->v, static_cast<int>(ck->step));
  return static_cast<int>(ck->step);
}

void fail(context& ctx, std::string_view message) {
  log::error(ctx.path(), message);
  ctx.quit(1);
}

std::string app_name(std::string_view component_path) {
  const std::size_t begin = component_path.starts_with('/') ? 1 : 0;
  return std::string(component_path.substr(begin, component_path.find('/', begin) - begin));
}

}  // namespace banyan::trainer
