#include "banyan/nn/adamw.hpp"

#include <cassert>
#include <cmath>
#include <string>

namespace banyan::nn {

result<void> adamw_config::validate() const {
  auto bad = [](const std::string& what) { return error{errc::invalid_argument, "adamw: " + what}; };
  if (!(lr > 0.0f) || !std::isfinite(lr)) return bad("lr must be a positive number, got " + std::to_string(lr));
  if (!(beta1 >= 0.0f && beta1 < 1.0f)) return bad("beta1 must be in [0,1), got " + std::to_string(beta1));
  if (!(beta2 >= 0.0f && beta2 < 1.0f)) return bad("beta2 must be in [0,1), got " + std::to_string(beta2));
  if (!(eps > 0.0f)) return bad("eps must be positive, got " + std::to_string(eps));
  if (!(weight_decay >= 0.0f)) return bad("weight_decay must be >= 0, got " + std::to_string(weight_decay));
  return {};
}

adamw::adamw(backend& be, const arena& params)
    : be_(&be), n_(params.numel()), m_(be, n_ * sizeof(float)), v_(be, n_ * sizeof(float)) {}

float adamw::step(float* params, float* grads, const adamw_config& cfg) {
  const double norm = std::sqrt(be_->sum_squares(grads, n_));
  if (cfg.grad_clip > 0.0f) {
    // clip_grad_norm_: scale by max_norm / (norm + 1e-6) only when that is below 1.
    const double coef = cfg.grad_clip / (norm + 1e-6);
    if (coef < 1.0) be_->scale(grads, static_cast<float>(coef), n_);
  }
  ++t_;
  be_->adamw_update(params, grads, m_.f32(), v_.f32(), n_, cfg.lr, cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay, t_);
  return static_cast<float>(norm);
}

void adamw::update_range(float* params, const float* grads, std::size_t begin, std::size_t end, const adamw_config& cfg,
                         int t) {
  assert(begin <= end && end <= n_);
  be_->adamw_update(params + begin, grads + begin, m_.f32() + begin, v_.f32() + begin, end - begin, cfg.lr, cfg.beta1,
                    cfg.beta2, cfg.eps, cfg.weight_decay, t);
}

std::vector<float> adamw::m_host() const {
  std::vector<float> h(n_);
  if (n_) be_->download(h.data(), m_.get(), n_ * sizeof(float));
  return h;
}
std::vector<float> adamw::v_host() const {
  std::vector<float> h(n_);
  if (n_) be_->download(h.data(), v_.get(), n_ * sizeof(float));
  return h;
}
void adamw::restore(const std::vector<float>& m, const std::vector<float>& v, int steps) {
  assert(m.size() == n_ && v.size() == n_);
  if (n_) {
    be_->upload(m_.get(), m.data(), n_ * sizeof(float));
    be_->upload(v_.get(), v.data(), n_ * sizeof(float));
  }
  t_ = steps;
}

}  // namespace banyan::nn
