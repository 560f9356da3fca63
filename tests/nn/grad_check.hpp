// Finite-difference gradient checking for the layer tests: central differences of a scalar loss
// against the analytic gradient, at a seeded sample of coordinates.
#pragma once

#include "banyan/nn/rng.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace banyan::nn::testing {

inline std::vector<float> random_vector(rng& r, std::size_t n, float scale = 1.0f) {
  std::vector<float> v(n);
  for (auto& x : v) x = scale * r.normal();
  return v;
}

inline double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

// Checks up to `samples` coordinates of x: (loss(x+h) - loss(x-h)) / 2h against analytic[i], with
// |diff| <= rtol * max|analytic| + atol. loss() must read x afresh each call.
inline void expect_gradient(const std::string& what, std::vector<float>& x, const std::vector<float>& analytic,
                            const std::function<double()>& loss, std::uint64_t seed, int samples = 48, float h = 1e-2f,
                            double rtol = 1e-2, double atol = 1e-4) {
  ASSERT_EQ(x.size(), analytic.size()) << what;
  double scale = 0.0;
  for (float g : analytic) scale = std::max(scale, static_cast<double>(std::fabs(g)));
  rng r(seed);
  const int n = static_cast<int>(x.size());
  for (int s = 0; s < std::min(samples, n); ++s) {
    const int i = samples >= n ? s : static_cast<int>(r.below(static_cast<std::uint32_t>(n)));
    const float orig = x[i];
    x[i] = orig + h;
    const double up = loss();
    x[i] = orig - h;
    const double down = loss();
    x[i] = orig;
    const double numeric = (up - down) / (2.0 * h);
    EXPECT_NEAR(analytic[i], numeric, rtol * scale + atol) << what << " at index " << i;
  }
}

}  // namespace banyan::nn::testing
