// The MLP: gradients by finite differences, and a short Fashion-MNIST run that must beat chance by far.
#include "banyan/nn/mlp.hpp"
#include "banyan/nn/adamw.hpp"
#include "banyan/nn/data.hpp"

#include "grad_check.hpp"

#include <gtest/gtest.h>

#include <filesystem>

namespace banyan::nn {
namespace {

TEST(Mlp, ConfigValidationNamesTheField) {
  auto be = make_backend({});
  auto m = mlp::create({.inputs = 4, .hidden = {8, 0}, .classes = 3}, 2, **be);
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("hidden[1] = 0"), std::string::npos) << m.error().message;
}

TEST(Mlp, GradientMatchesFiniteDifferences) {
  const std::uint64_t seed = 11;
  SCOPED_TRACE("seed " + std::to_string(seed));
  auto be = make_backend({.threads = 1});
  const int B = 5;
  auto m = mlp::create({.inputs = 6, .hidden = {7, 5}, .classes = 4}, B, **be);
  ASSERT_TRUE(m);
  m->init(seed);
  rng r(seed);
  auto x = testing::random_vector(r, B * 6);
  std::vector<int> y{0, 1, 2, 3, 1};
  m->forward(x.data(), y.data(), B);
  m->zero_grad();
  m->backward();
  const auto g = m->grads().to_host(**be);
  auto p = m->params().to_host(**be);
  auto loss = [&] {
    m->params().from_host(**be, p);
    return static_cast<double>(m->forward(x.data(), y.data(), B));
  };
  // h small enough that no ReLU input crosses zero between the two evaluations.
  testing::expect_gradient("mlp params", p, g, loss, seed, 80, 1e-3f, 2e-2, 5e-4);
}

TEST(Mlp, ShortFashionMnistRunBeatsChanceByFar) {
  if (!std::filesystem::exists(std::string(default_fashion_mnist_dir) + "/t10k-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed (tools/setup installs it)";
  }
  const std::uint64_t seed = 2026;
  SCOPED_TRACE("seed " + std::to_string(seed));
  // The 10k test file is smaller to decompress: train on its first 8000 images, test on the rest.
  auto data = load_fashion_mnist(default_fashion_mnist_dir, "t10k");
  ASSERT_TRUE(data) << data.error().message;
  auto be = make_backend({.threads = 2});
  const int B = 100;
  auto m = mlp::create({.inputs = 784, .hidden = {128}, .classes = 10}, B, **be);
  m->init(seed);
  adamw opt(**be, m->params());
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (int start = 0; start < 8000; start += B) {
      m->forward(data->pixels.data() + static_cast<std::size_t>(start) * 784, data->labels.data() + start, B);
      m->zero_grad();
      m->backward();
      opt.step(m->params().base(), m->grads().base(), {.lr = 1e-3f});
    }
  }
  int correct = 0;
  for (int start = 8000; start < 10000; start += B) {
    m->forward(data->pixels.data() + static_cast<std::size_t>(start) * 784, nullptr, B);
    const auto pred = m->predictions();
    for (int i = 0; i < B; ++i) correct += pred[i] == data->labels[start + i];
  }
  const double acc = correct / 2000.0;
  std::printf("held-out accuracy after 2 epochs on 8000 images: %.3f\n", acc);
  EXPECT_GT(acc, 0.70) << "chance is 0.10";
}

}  // namespace
}  // namespace banyan::nn
